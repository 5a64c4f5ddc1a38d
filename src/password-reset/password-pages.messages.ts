/** What the password reset pages say about the codes in their URL, in the page's language (texts: `messages/*.json`). */
import { passwordRejectionMessage } from '../credentials/password-rejection-messages.ts';
import type { Translator } from '../i18n/translator.ts';
import type { KeptForm } from '../http/form-values.ts';
import { formView, type FormView } from '../web/form-errors.ts';

/** Codes on `/auth/forgot-password?error=`, from its form (`password-reset.forgot.error.<code>`). */
export const FORGOT_PASSWORD_CODES: ReadonlySet<string> = new Set(['VALIDATION_ERROR', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE']);

/** Codes on `/auth/reset-password?error=`: the state of the link's token, or why its form came back (`password-reset.reset.error.<code>`). */
export const RESET_PASSWORD_CODES: ReadonlySet<string> = new Set(['INVALID_TOKEN', 'TOKEN_EXPIRED', 'VALIDATION_ERROR', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE']);

/** A page's error: the message, and the code when it is one we know (an unknown one is never shown back). */
export interface ShownError {
  code: string | null;
  message: string;
}

export function forgotPasswordError(code: string, i18n: Pick<Translator, 't'>): ShownError {
  const known = FORGOT_PASSWORD_CODES.has(code);
  return { code: known ? code : null, message: i18n.t(`password-reset.forgot.error.${known ? code : 'default'}`) };
}

/** The reset page's error for `?error=` (and `&reason=` for a refused password). */
export function resetPasswordError(code: string, reason: string | undefined, limits: { minLength: number; maxLength: number }, i18n: Pick<Translator, 't'>): ShownError {
  const refused = passwordRejectionMessage(code, reason, limits, i18n);
  if (refused !== null) return { code, message: refused };
  const known = RESET_PASSWORD_CODES.has(code);
  return { code: known ? code : null, message: i18n.t(`password-reset.reset.error.${known ? code : 'default'}`) };
}

/**
 * The forgot-password form for `?error=`, with the address kept from the last post: a validation
 * error is the address's; too many requests or an outage concern no field (the summary says it).
 */
export function forgotPasswordForm(error: string | undefined, kept: KeptForm, i18n: Pick<Translator, 't'>): FormView {
  const fieldOrder = ['email'];
  if (error === undefined) return formView({ fieldOrder });
  const shown = forgotPasswordError(error, i18n);
  return formView({ fieldOrder, problems: [{ message: shown.message, fields: shown.code === 'VALIDATION_ERROR' ? ['email'] : [] }], code: shown.code, values: kept.values, labels: { email: i18n.t('password-reset.forgot.email') } });
}

/**
 * The reset page's form (only a live link gets one) for its error: a missing or refused password is
 * the password field's; a dead link, too many requests or an outage concern no field. Nothing is
 * kept: the form holds only the new password.
 */
export function resetPasswordForm(error: ShownError | null, i18n: Pick<Translator, 't'>, hasForm: boolean): FormView {
  // Without a live link there is no field: whatever went wrong is the summary's to say.
  const fieldOrder = hasForm ? ['password'] : [];
  if (error === null) return formView({ fieldOrder });
  return formView({ fieldOrder, problems: [{ message: error.message, fields: error.code === 'VALIDATION_ERROR' ? ['password'] : [] }], code: error.code, labels: { password: i18n.t('password-reset.reset.password') } });
}
