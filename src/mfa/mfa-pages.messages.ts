/** What the second-factor pages say about the codes they show (see web/messages.ts). */
import { messageFor } from '../web/messages.ts';

/** Codes on `/auth/mfa?error=` and under the setup form. */
const PROMPT_ERRORS: Readonly<Record<string, string>> = {
  INVALID_CODE: 'That code is not right, or was already used. Check the app and try again.',
  RATE_LIMITED: 'Too many wrong codes. Wait a moment, then try again.',
  CSRF_FAILED: 'The form expired or did not come from this site. Please try again.',
  VALIDATION_ERROR: 'Enter a code.',
  SERVICE_UNAVAILABLE: 'The service is temporarily unavailable. Try again shortly.',
};

export function mfaPromptErrorMessage(code: string): string {
  return messageFor(PROMPT_ERRORS, code, 'The code could not be checked. Please try again.');
}

/** The error page of the dashboard's second-factor forms. */
const PAGE_ERRORS: Readonly<Record<string, { heading: string; message: string }>> = {
  REAUTH_REQUIRED: { heading: 'Sign in again first', message: 'Changing your second factors needs a recent sign-in. Sign out, sign in again, and come back to your dashboard within 10 minutes.' },
  INVALID_CODE: { heading: 'That code did not work', message: 'The code was not right, or was already used. Go back to your dashboard and try again with a new code.' },
  RATE_LIMITED: { heading: 'Too many wrong codes', message: 'Wait a moment, then try again from your dashboard.' },
  MFA_SETUP_REQUIRED: { heading: 'Setup expired', message: 'The setup waited too long for a code. Start it again from your dashboard.' },
  MFA_NOT_ENABLED: { heading: 'No second factor', message: 'No authenticator app is set up for your account.' },
  TOTP_ALREADY_ENABLED: { heading: 'Already set up', message: 'An authenticator app is already set up: remove it first to set up another.' },
};

export function mfaPageErrorMessage(code: string): { heading: string; message: string } {
  return messageFor(PAGE_ERRORS, code, { heading: 'Something went wrong', message: 'Go back to your dashboard and try again.' });
}
