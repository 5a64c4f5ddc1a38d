/** What the sign-up and e-mail verification pages say about the codes in their URL, in the page's language (texts: `messages/*.json`). */
import { passwordRejectionMessage } from '../credentials/password-rejection-messages.ts';
import type { Translator } from '../i18n/translator.ts';

/** Codes on `/auth/signup?error=`, from its form (`verification.signup.error.<code>`). */
export const SIGNUP_CODES: ReadonlySet<string> = new Set(['VALIDATION_ERROR', 'SIGNUP_DISABLED', 'CSRF_FAILED', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE']);

/** Codes on `/auth/verify-email?error=`, and the state of a link's token (`verification.verify.error.<code>`). */
export const VERIFY_EMAIL_CODES: ReadonlySet<string> = new Set(['INVALID_TOKEN', 'TOKEN_EXPIRED', 'VALIDATION_ERROR', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE']);

/** A page's error: the message, and the code when it is one we know (an unknown one is never shown back). */
export interface ShownError {
  code: string | null;
  message: string;
}

/**
 * A sign-up error; with `reason` (a password refusal), the reason's own message. Both arrive in the
 * query string, so unknown values get the general message.
 */
export function signupError(code: string, reason: string | undefined, limits: { minLength: number; maxLength: number }, i18n: Pick<Translator, 't'>): ShownError {
  const refused = passwordRejectionMessage(code, reason, limits, i18n);
  if (refused !== null) return { code, message: refused };
  const known = SIGNUP_CODES.has(code);
  return { code: known ? code : null, message: i18n.t(`verification.signup.error.${known ? code : 'default'}`) };
}

export function verifyEmailError(code: string, i18n: Pick<Translator, 't'>): ShownError {
  const known = VERIFY_EMAIL_CODES.has(code);
  return { code: known ? code : null, message: i18n.t(`verification.verify.error.${known ? code : 'default'}`) };
}
