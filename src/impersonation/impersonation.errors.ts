/** The error codes the impersonation module answers with (see `defineErrorCodes` in errors.ts). */
import { defineErrorCodes } from '../errors.ts';

export const IMPERSONATION_ERRORS = defineErrorCodes('impersonation', {
  IMPERSONATION_NOT_ALLOWED: { status: 403, message: 'This user cannot be impersonated: an administrator, a disabled account or yourself.' },
  IMPERSONATION_SECOND_FACTOR_REQUIRED: { status: 403, message: 'Impersonating a user needs an administrator who signed in with a second factor: set one up and use it.' },
  IMPERSONATION_FORBIDDEN_ACTION: { status: 403, message: 'This cannot be done while an administrator is acting as the user.' },
  IMPERSONATION_USER_NOT_FOUND: { status: 404, message: 'There is no user with that id.' },
});

type ImpersonationErrorCodes = typeof IMPERSONATION_ERRORS;
declare module '../errors.ts' {
  interface ErrorCodes extends ImpersonationErrorCodes {}
}
