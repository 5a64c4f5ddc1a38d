/**
 * What the admin pages say about the codes in their URL (`?notice=`, `?error=`), in the page's
 * language (texts: `messages/*.json`, `admin.notice.<CODE>` and `admin.error.<CODE>`). The same
 * alerts head the client registry's and the webhook pages (the shared `admin-header.eta`).
 */
import type { Translator } from '../i18n/translator.ts';
import type { PageAlert } from './admin-pages.types.ts';

/** Codes on `?notice=`: what a form just did. An unknown one shows nothing. */
export const ADMIN_NOTICE_CODES: ReadonlySet<string> = new Set([
  'ROLES_SAVED',
  'USER_DISABLED',
  'USER_ENABLED',
  'SESSION_ENDED',
  'SESSIONS_ENDED',
  'USER_DELETED',
  'USER_CREATED',
  'USER_INVITED',
  'BULK_DISABLED',
  'BULK_SIGNED_OUT',
  'BULK_DELETED',
]);

/** Codes on `?error=`: why a form did nothing, or what a link got wrong. */
export const ADMIN_ERROR_CODES: ReadonlySet<string> = new Set([
  'SELF_LOCKOUT',
  'INVALID_ROLE',
  'TOO_MANY_ROLES',
  'USER_NOT_FOUND',
  'SELF_DELETION_VIA_ADMIN',
  'LAST_ADMIN',
  'ORGANIZATION_OWNERSHIP_TRANSFER_REQUIRED',
  'SESSION_NOT_FOUND',
  'INVALID_CURSOR',
  'INVALID_DATE',
  'EMAIL_TAKEN',
  'WEAK_PASSWORD',
  'NOTHING_SELECTED',
  'BULK_PARTLY_DONE',
  'UNKNOWN_EVENT_TYPE',
  'UNKNOWN_ORGANIZATION',
  'NOT_FOUND',
  'VALIDATION_ERROR',
  'RATE_LIMITED',
  'SERVICE_UNAVAILABLE',
]);

/** The notice for `code`, or null for an unknown code (nothing is shown). */
export function adminNotice(code: string, i18n: Pick<Translator, 't'>, values: { count: number } = { count: 0 }): PageAlert | null {
  return ADMIN_NOTICE_CODES.has(code) ? { isError: false, code, message: i18n.t(`admin.notice.${code}`, values) } : null;
}

/** The error for `code`: an unknown one gets the general message, and its code is never shown back. */
export function adminError(code: string, i18n: Pick<Translator, 't'>): PageAlert {
  const known = ADMIN_ERROR_CODES.has(code);
  return { isError: true, code: known ? code : null, message: i18n.t(`admin.error.${known ? code : 'default'}`) };
}
