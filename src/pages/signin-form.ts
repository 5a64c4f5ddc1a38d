/** The sign-in form after an error: which of its fields each code concerns (web/form-errors.ts). */
import type { Translator } from '../i18n/translator.ts';
import type { KeptForm } from '../http/form-values.ts';
import { formView, type FormView } from '../web/form-errors.ts';
import { signInError } from './pages.messages.ts';

/** The form's inputs, in page order. */
export const SIGN_IN_FIELDS: readonly string[] = ['email', 'password'];

/**
 * The fields a known code concerns. A wrong e-mail or password cannot say which (it must not): one
 * message, linked to the first field, both marked, as GOV.UK does for a sign-in. A validation error
 * marks the fields the server refused, or both. Anything else (too many attempts, an account
 * disabled, a form that expired) concerns no field: only the summary says it.
 */
function fieldsOf(code: string, invalidFields: readonly string[]): readonly string[] {
  if (code === 'INVALID_CREDENTIALS') return SIGN_IN_FIELDS;
  if (code === 'VALIDATION_ERROR') {
    const refused = SIGN_IN_FIELDS.filter((field) => invalidFields.includes(field));
    return refused.length > 0 ? refused : SIGN_IN_FIELDS;
  }
  return [];
}

/** The sign-in form for `?error=` (none: a fresh form) with what was kept of the last post. */
export function signInForm(error: string | undefined, kept: KeptForm, i18n: Pick<Translator, 't'>): FormView {
  if (error === undefined) return formView({ fieldOrder: SIGN_IN_FIELDS });
  const labels = { email: i18n.t('pages.signin.email'), password: i18n.t('pages.signin.password') };
  const shown = signInError(error, i18n);
  return formView({
    fieldOrder: SIGN_IN_FIELDS,
    problems: [{ message: shown.message, fields: shown.code === null ? [] : fieldsOf(shown.code, kept.invalidFields) }],
    code: shown.code,
    values: kept.values,
    labels,
  });
}
