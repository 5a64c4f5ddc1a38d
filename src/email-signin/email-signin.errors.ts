/** The error codes the email-signin module answers with (see `defineErrorCodes` in errors.ts). */
import { defineErrorCodes } from '../errors.ts';

export const EMAIL_SIGNIN_ERRORS = defineErrorCodes('email-signin', {
  EMAIL_SIGNIN_DISABLED: { status: 403, message: 'Signing in by e-mail is turned off on this service.' },
  EMAIL_SIGNIN_OTHER_BROWSER: { status: 403, message: 'Open this link in the browser where you asked for it, or type the code from the message there.' },
  EMAIL_SIGNIN_VOIDED: { status: 400, message: 'Too many wrong codes: this sign-in request no longer works. Ask for a new message.' },
});

type EmailSignInErrorCodes = typeof EMAIL_SIGNIN_ERRORS;
declare module '../errors.ts' {
  interface ErrorCodes extends EmailSignInErrorCodes {}
}
