/** The error codes the admin module's routes answer with (see `defineErrorCodes` in errors.ts). */
import { defineErrorCodes } from '../errors.ts';

export const ADMIN_ERRORS = defineErrorCodes('admin', {
  SELF_LOCKOUT: { status: 409, message: 'You cannot disable your own account or remove your own ADMIN role.' },
});

type AdminErrorCodes = typeof ADMIN_ERRORS;
declare module '../errors.ts' {
  interface ErrorCodes extends AdminErrorCodes {}
}
