/** The error codes the signin module's routes answer with (see `defineErrorCodes` in errors.ts). */
import { defineErrorCodes } from '../errors.ts';

export const SIGNIN_ERRORS = defineErrorCodes('signin', {
  ACCOUNT_DISABLED: { status: 403, message: 'This account is disabled.' },
  EMAIL_NOT_VERIFIED: { status: 403, message: 'Verify your e-mail address before signing in.' },
});

type SigninErrorCodes = typeof SIGNIN_ERRORS;
declare module '../errors.ts' {
  interface ErrorCodes extends SigninErrorCodes {}
}
