/**
 * The dashboard's change-password form after an error (web/form-errors.ts): which of its fields a
 * code concerns. Nothing typed comes back: both fields are passwords.
 */
import { passwordRejectionMessage } from '../credentials/password-rejection-messages.ts';
import type { Translator } from '../i18n/translator.ts';
import { formView, type FormView } from '../web/form-errors.ts';

/** The form's inputs, in page order. */
export const CHANGE_PASSWORD_FIELDS: readonly string[] = ['current-password', 'new-password'];

/**
 * The form's view for the dashboard's `?error=` (and `&reason=`), or null when the code is not the
 * form's (a provider link's, say: the page's alert says those). A wrong current password is the
 * first field's; a new password the policy refused is the second's. (An incomplete post may be
 * another form's: the page's alert says it.)
 */
export function changePasswordForm(code: string | undefined, reason: string | undefined, limits: { minLength: number; maxLength: number }, i18n: Pick<Translator, 't'>): FormView | null {
  if (code === undefined) return null;
  const labels = { 'current-password': i18n.t('pages.dashboard.password.current'), 'new-password': i18n.t('pages.dashboard.password.new') };
  const refused = passwordRejectionMessage(code, reason, limits, i18n);
  if (refused !== null) return formView({ fieldOrder: CHANGE_PASSWORD_FIELDS, problems: [{ message: refused, fields: ['new-password'] }], code, labels });
  if (code === 'INVALID_CREDENTIALS') {
    return formView({ fieldOrder: CHANGE_PASSWORD_FIELDS, problems: [{ message: i18n.t('pages.dashboard.error.INVALID_CREDENTIALS'), fields: ['current-password'] }], code, labels });
  }
  return null;
}
