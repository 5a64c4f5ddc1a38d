/** What the sign-in, error and dashboard pages say about the codes in their URL (see web/messages.ts). */
import { messageFor } from '../web/messages.ts';
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

/** Codes on `/dashboard?error=`, from its session forms. */
const DASHBOARD_MESSAGES: Readonly<Record<string, string>> = {
  NOT_FOUND: 'That session had already ended.',
  IdentityInUse: 'That account at the provider is already linked to another user here. Nothing was changed.',
  ProviderAlreadyLinked: 'You already have an account at that provider linked. Unlink it first to link another one.',
  EmailNotVerified: 'Verify your email address first (follow the link we sent you), then link a provider.',
  LAST_SIGN_IN_METHOD: 'That provider is your only way to sign in. Set a password or link another provider first. Nothing was changed.',
  AccessDenied: 'You did not allow the provider to share your account, so nothing was linked.',
  OAuthCallback: 'The provider’s answer could not be processed, so nothing was linked. Try again.',
  OAuthSignin: 'Linking could not be started. Try again.',
  ProviderUnreachable: 'The provider could not be reached. Try again in a moment.',
  VALIDATION_ERROR: 'That request was incomplete. Please try again.',
  RATE_LIMITED: 'Too many requests. Wait a moment, then try again.',
  SERVICE_UNAVAILABLE: 'The service is temporarily unavailable. Try again shortly.',
};
const DASHBOARD_DEFAULT = 'That did not work. Please try again.';

/** Codes on `/dashboard?error=` that come from its change-password form. */
const CHANGE_PASSWORD_ERRORS: Readonly<Record<string, string>> = {
  INVALID_CREDENTIALS: 'Your current password is not correct, so your password was not changed.',
};

/** Codes on `/dashboard?notice=`: what a form just did. */
const DASHBOARD_NOTICES: Readonly<Record<string, string>> = {
  PASSWORD_CHANGED: 'Your password has been changed. Your other sessions have been ended; this one stays signed in.',
  PROVIDER_LINKED: 'The provider is linked: you can now sign in with it.',
  PROVIDER_UNLINKED: 'The provider is unlinked: you can no longer sign in with it.',
};

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

export function dashboardErrorMessage(code: string): string {
  return messageFor(DASHBOARD_MESSAGES, code, DASHBOARD_DEFAULT);
}

/** The message for a change-password form's error on the dashboard, or null when the code is none of its own. */
export function changePasswordErrorMessage(code: string, reason: string | undefined, limits: { minLength: number; maxLength: number }, i18n: Pick<Translator, 't'>): string | null {
  return passwordRejectionMessage(code, reason, limits, i18n) ?? messageFor<string | null>(CHANGE_PASSWORD_ERRORS, code, null);
}

/** The message for the dashboard's `?notice=`, or null for an unknown code (nothing is shown). */
export function dashboardNoticeMessage(code: string): string | null {
  return messageFor<string | null>(DASHBOARD_NOTICES, code, null);
}
