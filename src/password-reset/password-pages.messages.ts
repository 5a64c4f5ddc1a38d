/** What the password reset pages say about the codes in their URL (see web/messages.ts). */
import { messageFor } from '../web/messages.ts';
import { passwordRejectionMessage } from '../credentials/password-rejection-messages.ts';

/** Codes on `/auth/forgot-password?error=`, from its form. */
const FORGOT_PASSWORD_ERRORS: Readonly<Record<string, string>> = {
  VALIDATION_ERROR: 'Enter a valid email address.',
  RATE_LIMITED: 'Too many requests. Wait a moment, then try again.',
  SERVICE_UNAVAILABLE: 'The service is temporarily unavailable. Try again shortly.',
};
const FORGOT_PASSWORD_ERROR_DEFAULT = 'That did not work. Please try again.';

/** Codes on `/auth/reset-password?error=`: the state of the link's token, or why its form came back. */
const RESET_PASSWORD_ERRORS: Readonly<Record<string, string>> = {
  INVALID_TOKEN: 'This password reset link is not valid: it was used already, or a newer link replaced it. Ask for a new one below.',
  TOKEN_EXPIRED: 'This password reset link has expired. Ask for a new one below.',
  VALIDATION_ERROR: 'Enter a new password.',
  RATE_LIMITED: 'Too many requests. Wait a moment, then try again.',
  SERVICE_UNAVAILABLE: 'The service is temporarily unavailable. Open the link from your email again in a moment.',
};
const RESET_PASSWORD_ERROR_DEFAULT = 'That did not work. Open the link from your email again.';

export function forgotPasswordErrorMessage(code: string): string {
  return messageFor(FORGOT_PASSWORD_ERRORS, code, FORGOT_PASSWORD_ERROR_DEFAULT);
}

/** The message for the reset page's `?error=` (and `&reason=` for a refused password). */
export function resetPasswordErrorMessage(code: string, reason: string | undefined, limits: { minLength: number; maxLength: number }): string {
  return passwordRejectionMessage(code, reason, limits) ?? messageFor(RESET_PASSWORD_ERRORS, code, RESET_PASSWORD_ERROR_DEFAULT);
}
