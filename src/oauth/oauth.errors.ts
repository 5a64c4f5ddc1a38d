/** The error codes the oauth module's routes answer with (see `defineErrorCodes` in errors.ts). */
import { defineErrorCodes } from '../errors.ts';

export const OAUTH_ERRORS = defineErrorCodes('oauth', {
  LAST_SIGN_IN_METHOD: { status: 409, message: 'This is your last way to sign in: set a password or link another provider first.' },
});

type OauthErrorCodes = typeof OAUTH_ERRORS;
declare module '../errors.ts' {
  interface ErrorCodes extends OauthErrorCodes {}
}
