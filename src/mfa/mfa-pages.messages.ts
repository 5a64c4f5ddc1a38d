/** What the second-factor pages say about the codes they show, in the page's language (texts: `messages/*.json`). */
import type { Translator } from '../i18n/translator.ts';
import { formView, type FormView } from '../web/form-errors.ts';

/** Codes on `/auth/mfa?error=` (`mfa.prompt.error.<code>`). */
export const PROMPT_CODES: ReadonlySet<string> = new Set(['INVALID_CODE', 'RATE_LIMITED', 'CSRF_FAILED', 'VALIDATION_ERROR', 'SERVICE_UNAVAILABLE']);

/** Why a dashboard form of a second factor did not go through (`mfa.error.<code>.heading` and `.message`). */
export const PAGE_ERROR_CODES: ReadonlySet<string> = new Set(['REAUTH_REQUIRED', 'INVALID_CODE', 'RATE_LIMITED', 'MFA_SETUP_REQUIRED', 'MFA_NOT_ENABLED', 'TOTP_ALREADY_ENABLED']);

/** A page's error: the message, and the code when it is one we know (an unknown one is never shown back). */
export interface ShownError {
  code: string | null;
  message: string;
}

/** The prompt's error for `?error=`: anyone can put anything in a link, so only a known code is shown. */
export function mfaPromptError(code: string, i18n: Pick<Translator, 't'>): ShownError {
  const known = PROMPT_CODES.has(code);
  return { code: known ? code : null, message: i18n.t(`mfa.prompt.error.${known ? code : 'default'}`) };
}

/** The prompt's two fields: the authenticator app's code and a recovery code. */
export const PROMPT_FIELDS = { code: 'mfa-code', recoveryCode: 'recovery-code' } as const;

/**
 * The prompt's form view (web/form-errors.ts) for `?error=`: a wrong code is the field it was typed
 * in (`usedRecoveryCode`: the recovery form posted it), other errors are the summary's alone.
 */
export function mfaPromptForm(code: string | undefined, usedRecoveryCode: boolean, hasTotp: boolean, i18n: Pick<Translator, 't'>): FormView {
  const fieldOrder = hasTotp ? [PROMPT_FIELDS.code, PROMPT_FIELDS.recoveryCode] : [PROMPT_FIELDS.recoveryCode];
  if (code === undefined) return formView({ fieldOrder });
  const shown = mfaPromptError(code, i18n);
  const field = usedRecoveryCode || !hasTotp ? PROMPT_FIELDS.recoveryCode : PROMPT_FIELDS.code;
  const labels = { [PROMPT_FIELDS.code]: i18n.t('mfa.prompt.code'), [PROMPT_FIELDS.recoveryCode]: i18n.t('mfa.prompt.recovery.label') };
  return formView({ fieldOrder, problems: [{ message: shown.message, fields: shown.code === 'INVALID_CODE' ? [field] : [] }], code: shown.code, labels });
}

/**
 * The authenticator-app setup's form view after `error` (null: a fresh form): a wrong code is the
 * code field's (shown beside it, which is then described by it and by the key); anything else is the
 * summary's alone. The code typed is never kept.
 */
export function mfaSetupForm(error: ShownError | null, i18n: Pick<Translator, 't'>): FormView {
  const fieldOrder = [PROMPT_FIELDS.code];
  if (error === null) return formView({ fieldOrder });
  return formView({ fieldOrder, problems: [{ message: error.message, fields: error.code === 'INVALID_CODE' ? fieldOrder : [] }], code: error.code, labels: { [PROMPT_FIELDS.code]: i18n.t('mfa.setup.code') } });
}

/**
 * The error page of the dashboard's second-factor forms (its code comes from the service, never
 * from a link). `reauthWindowSeconds` is how recent a sign-in must be (REAUTH_WINDOW).
 */
export function mfaPageError(code: string, reauthWindowSeconds: number, i18n: Pick<Translator, 't' | 'duration'>): { heading: string; message: string } {
  const key = PAGE_ERROR_CODES.has(code) ? code : 'default';
  return { heading: i18n.t(`mfa.error.${key}.heading`), message: i18n.t(`mfa.error.${key}.message`, { duration: i18n.duration(reauthWindowSeconds) }) };
}
