/** The error codes the credentials module's routes answer with (see `defineErrorCodes` in errors.ts). */
import { defineErrorCodes } from '../errors.ts';

export const CREDENTIALS_ERRORS = defineErrorCodes('credentials', {
  INVALID_CREDENTIALS: { status: 401, message: 'The e-mail or password is invalid.' },
  SIGNUP_DISABLED: { status: 403, message: 'Sign-up is disabled on this service.' },
  EMAIL_TAKEN: { status: 409, message: 'A user with this e-mail address already exists.' },
});

type CredentialsErrorCodes = typeof CREDENTIALS_ERRORS;
declare module '../errors.ts' {
  interface ErrorCodes extends CredentialsErrorCodes {}
}
