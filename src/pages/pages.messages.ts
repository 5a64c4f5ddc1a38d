/** What the sign-in, error and dashboard pages say about the codes in their URL, in the page's language (texts: `messages/*.json`). */
import type { Translator } from '../i18n/translator.ts';
import { passwordRejectionMessage } from '../credentials/password-rejection-messages.ts';

/**
 * Codes on `/auth/signin?error=`: our API codes (form posts redirect there) and SessionRequired.
 * Their texts are in the catalogs (`messages/*.json`, `pages.signin.error.<code>`).
 */
export const SIGN_IN_CODES: ReadonlySet<string> = new Set([
  'INVALID_CREDENTIALS',
  'ACCOUNT_DISABLED',
  'EMAIL_NOT_VERIFIED',
  'VALIDATION_ERROR',
  'CSRF_FAILED',
  'RATE_LIMITED',
  'SERVICE_UNAVAILABLE',
  'SessionRequired',
]);

export interface ErrorExplanation {
  heading: string;
  message: string;
  /** The code, shown small for support; null for a code we do not know (never echoed back). */
  code: string | null;
}

/**
 * Codes on `/auth/error?error=`, named as Auth.js names them, so apps moving over keep their links
 * (texts: `pages.error.<code>.heading` and `.message`).
 */
export const AUTH_ERROR_CODES: ReadonlySet<string> = new Set([
  'Configuration',
  'AccessDenied',
  'Verification',
  'OAuthSignin',
  'OAuthCallback',
  'OAuthAccountNotLinked',
  'AccountNotFound',
  'EmailNotVerified',
  'RateLimited',
  'SessionRequired',
  'AccountDisabled',
  'OAuthEmailUnverified',
  'ProviderUnreachable',
]);

/**
 * Codes on `/dashboard?error=`: from its session and provider forms, the provider link's return,
 * and the change-password form (INVALID_CREDENTIALS; a refused new password is VALIDATION_ERROR with
 * a `reason`). Texts: `pages.dashboard.error.<code>`.
 */
export const DASHBOARD_ERROR_CODES: ReadonlySet<string> = new Set([
  'NOT_FOUND',
  'IdentityInUse',
  'ProviderAlreadyLinked',
  'EmailNotVerified',
  'LAST_SIGN_IN_METHOD',
  'AccessDenied',
  'OAuthCallback',
  'OAuthSignin',
  'ProviderUnreachable',
  'INVALID_CREDENTIALS',
  'VALIDATION_ERROR',
  'RATE_LIMITED',
  'SERVICE_UNAVAILABLE',
  'REAUTH_REQUIRED',
]);

/** Codes on `/dashboard?notice=`: what a form just did (`pages.dashboard.notice.<code>`). */
export const DASHBOARD_NOTICE_CODES: ReadonlySet<string> = new Set(['PASSWORD_CHANGED', 'PROVIDER_LINKED', 'PROVIDER_UNLINKED']);

/** The sign-in page's message for `code`, in the page's language; a code we do not know gets the general one and is not shown. */
export function signInError(code: string, i18n: Pick<Translator, 't'>): { code: string | null; message: string } {
  const isKnown = SIGN_IN_CODES.has(code);
  return { code: isKnown ? code : null, message: i18n.t(isKnown ? `pages.signin.error.${code}` : 'pages.signin.error.default') };
}

/** The error page's heading and message for `code`; an unknown one gets the general text, never its own words back. */
export function authErrorExplanation(code: string, i18n: Pick<Translator, 't'>): ErrorExplanation {
  const known = AUTH_ERROR_CODES.has(code) ? code : null;
  const key = `pages.error.${known ?? 'default'}`;
  return { heading: i18n.t(`${key}.heading`), message: i18n.t(`${key}.message`), code: known };
}

/**
 * The dashboard's error for `?error=` (and `&reason=` for a new password the policy refused), in
 * the page's language; a code we do not know gets the general message and is not shown back.
 */
export function dashboardError(code: string, reason: string | undefined, limits: { minLength: number; maxLength: number }, i18n: Pick<Translator, 't'>): { code: string | null; message: string } {
  const refused = passwordRejectionMessage(code, reason, limits, i18n);
  if (refused !== null) return { code, message: refused };
  const known = DASHBOARD_ERROR_CODES.has(code);
  return { code: known ? code : null, message: i18n.t(`pages.dashboard.error.${known ? code : 'default'}`) };
}

/** The message for the dashboard's `?notice=`, or null for an unknown code (nothing is shown). */
export function dashboardNotice(code: string, i18n: Pick<Translator, 't'>): string | null {
  return DASHBOARD_NOTICE_CODES.has(code) ? i18n.t(`pages.dashboard.notice.${code}`) : null;
}
