/** What the sign-up and e-mail verification pages say about the codes in their URL (see web/messages.ts). */
import { messageFor } from '../web/messages.ts';
import { passwordRejectionMessage } from '../credentials/password-rejection-messages.ts';

/** Codes on `/auth/signup?error=`, from its form. */
const SIGNUP_ERRORS: Readonly<Record<string, string>> = {
  VALIDATION_ERROR: 'Enter your name, a valid email address and a password.',
  SIGNUP_DISABLED: 'Sign-up is turned off on this service. Ask your administrator for an account.',
  CSRF_FAILED: 'Your sign-up form expired or did not come from this site. Please try again.',
  RATE_LIMITED: 'Too many attempts. Wait a moment, then try again.',
  SERVICE_UNAVAILABLE: 'The service is temporarily unavailable. Try again shortly.',
};
const SIGNUP_ERROR_DEFAULT = 'Sign-up failed. Please try again.';

/**
 * The message for a sign-up error; with `reason` (a password refusal), the reason's own message.
 * Both arrive in the query string, so unknown values fall back to the defaults.
 */
export function signupErrorMessage(code: string, reason: string | undefined, limits: { minLength: number; maxLength: number }): string {
  return passwordRejectionMessage(code, reason, limits) ?? messageFor(SIGNUP_ERRORS, code, SIGNUP_ERROR_DEFAULT);
}

/** Codes on `/auth/verify-email?error=`, and the state of a link's token. */
const VERIFY_EMAIL_ERRORS: Readonly<Record<string, string>> = {
  INVALID_TOKEN: 'This verification link is not valid: it may have been used already, or a newer link replaced it. If your address is not verified yet, ask for a new link below.',
  TOKEN_EXPIRED: 'This verification link has expired. Ask for a new one below.',
  VALIDATION_ERROR: 'Enter a valid email address.',
  RATE_LIMITED: 'Too many attempts. Wait a moment, then try again.',
  SERVICE_UNAVAILABLE: 'The service is temporarily unavailable. Try again shortly.',
};
const VERIFY_EMAIL_ERROR_DEFAULT = 'That did not work. Please try again.';

export function verifyEmailErrorMessage(code: string): string {
  return messageFor(VERIFY_EMAIL_ERRORS, code, VERIFY_EMAIL_ERROR_DEFAULT);
}
