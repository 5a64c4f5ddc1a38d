/** What the sign-up and e-mail verification pages say about the codes in their URL, in the page's language (texts: `messages/*.json`). */
import { passwordRejectionMessage } from '../credentials/password-rejection-messages.ts';
import type { Translator } from '../i18n/translator.ts';
import type { KeptForm } from '../http/form-values.ts';
import { formView, type FormView } from '../web/form-errors.ts';

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

/** The verification page's "send a new link" form: its one input. */
export const VERIFY_EMAIL_FIELDS: readonly string[] = ['email'];

/**
 * The verification page's form for `?error=` (or a link's state), with what was kept of the last
 * resend: a refused address is the e-mail field's; a dead link, too many requests or an outage
 * concern no field and are in the summary only.
 */
export function verifyEmailForm(error: string | undefined, kept: KeptForm, i18n: Pick<Translator, 't'>): FormView {
  if (error === undefined) return formView({ fieldOrder: VERIFY_EMAIL_FIELDS, values: kept.values });
  const shown = verifyEmailError(error, i18n);
  return formView({ fieldOrder: VERIFY_EMAIL_FIELDS, problems: [{ message: shown.message, fields: shown.code === 'VALIDATION_ERROR' ? VERIFY_EMAIL_FIELDS : [] }], code: shown.code, values: kept.values, labels: { email: i18n.t('verification.resend.email') } });
}

/** The sign-up form's inputs, in page order. */
export const SIGNUP_FIELDS: readonly string[] = ['name', 'email', 'password'];

/**
 * The sign-up form for `?error=` (and `&reason=`), with what was kept of the last post. A refused
 * password is the password field's; a validation error marks the fields the server refused (its
 * message names them all); anything else concerns no single field and is in the summary only.
 */
export function signupForm(error: string | undefined, reason: string | undefined, kept: KeptForm, limits: { minLength: number; maxLength: number }, i18n: Pick<Translator, 't'>): FormView {
  if (error === undefined) return formView({ fieldOrder: SIGNUP_FIELDS });
  const shown = signupError(error, reason, limits, i18n);
  const isRefusedPassword = passwordRejectionMessage(error, reason, limits, i18n) !== null;
  const fields = isRefusedPassword ? ['password'] : shown.code === 'VALIDATION_ERROR' ? SIGNUP_FIELDS.filter((field) => kept.invalidFields.includes(field)) : [];
  const labels = { name: i18n.t('verification.signup.name'), email: i18n.t('verification.signup.email'), password: i18n.t('verification.signup.password') };
  return formView({ fieldOrder: SIGNUP_FIELDS, problems: [{ message: shown.message, fields }], code: shown.code, values: kept.values, labels });
}
