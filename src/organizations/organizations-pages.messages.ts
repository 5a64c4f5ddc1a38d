/**
 * What the organization pages say about the codes in their URL (`?error=`, `?notice=`), in the
 * page's language (texts: `messages/*.json`, `organizations.error.<CODE>` and
 * `organizations.notice.<CODE>`). The same codes head the user's pages and the admin's. And a
 * member's role in words (`organizations.role.<ROLE>`).
 */
import type { Translator } from '../i18n/translator.ts';
import { BUILT_IN_ROLES } from './organizations.model.ts';

/** Codes on `?error=`: why a form did nothing, or what an invitation link got wrong. */
export const ORGANIZATION_ERROR_CODES: ReadonlySet<string> = new Set([
  'ORGANIZATION_NOT_FOUND',
  'ORGANIZATION_ROLE_REQUIRED',
  'ORGANIZATION_CREATION_DISABLED',
  'ORGANIZATION_LIMIT_REACHED',
  'SLUG_TAKEN',
  'LAST_OWNER',
  'MEMBER_NOT_FOUND',
  'ALREADY_MEMBER',
  'INVITATION_NOT_FOUND',
  'INVITATION_INVALID',
  'INVITATION_EXPIRED',
  'INVITATION_EMAIL_MISMATCH',
  'INVITATION_EMAIL_UNVERIFIED',
  'CONFIRMATION_MISMATCH',
  'VALIDATION_ERROR',
  'RATE_LIMITED',
  'INVITATION_LIMIT_REACHED',
  'CSRF_FAILED',
  'SERVICE_UNAVAILABLE',
]);

/** Codes on `?notice=`: what a form just did. An unknown one shows nothing. */
export const ORGANIZATION_NOTICE_CODES: ReadonlySet<string> = new Set([
  'ORGANIZATION_CREATED',
  'ORGANIZATION_SAVED',
  'ORGANIZATION_DELETED',
  'ORGANIZATION_LEFT',
  'ROLE_CHANGED',
  'MEMBER_REMOVED',
  'OWNERSHIP_TRANSFERRED',
  'INVITATION_SENT',
  'INVITATION_REVOKED',
  'INVITATION_ACCEPTED',
  'INVITATION_DECLINED',
  'ORGANIZATION_ACTIVATED',
]);

/** A message at the top of a page: what a form just did, or why it did not. */
export interface PageAlert {
  isError: boolean;
  /** Shown small for support; null for a code we do not know (a link's code is never shown back). */
  code: string | null;
  message: string;
}

/** Whose page shows the code: a member's (the organization may exist, just not among theirs) or an administrator's. */
export type AlertAudience = 'member' | 'admin';

/** The error for `code`: an unknown one gets the general message, and its code is never shown back. */
export function organizationError(code: string, i18n: Pick<Translator, 't'>, audience: AlertAudience = 'member'): PageAlert {
  if (!ORGANIZATION_ERROR_CODES.has(code)) return { isError: true, code: null, message: i18n.t('organizations.error.default') };
  const key = audience === 'admin' && code === 'ORGANIZATION_NOT_FOUND' ? 'organizations.admin.error.ORGANIZATION_NOT_FOUND' : `organizations.error.${code}`;
  return { isError: true, code, message: i18n.t(key) };
}

/** The notice for `code`, or null for an unknown code (nothing is shown). */
export function organizationNotice(code: string, i18n: Pick<Translator, 't'>): PageAlert | null {
  return ORGANIZATION_NOTICE_CODES.has(code) ? { isError: false, code, message: i18n.t(`organizations.notice.${code}`) } : null;
}

/** The alerts for a page's `?notice=` and `?error=`. */
export function organizationAlerts(query: { notice?: string | undefined; error?: string | undefined }, i18n: Pick<Translator, 't'>, audience: AlertAudience = 'member'): PageAlert[] {
  const alerts: PageAlert[] = [];
  const notice = query.notice === undefined ? null : organizationNotice(query.notice, i18n);
  if (notice !== null) alerts.push(notice);
  if (query.error !== undefined) alerts.push(organizationError(query.error, i18n, audience));
  return alerts;
}

/**
 * A role as the pages show it: a built-in one in the page's language (`organizations.role.<ROLE>`),
 * a custom one (`BILLING`) as the organization named it. Forms still post the role itself.
 */
export function roleLabel(role: string, i18n: Pick<Translator, 't'>): string {
  return BUILT_IN_ROLES.includes(role) ? i18n.t(`organizations.role.${role}`) : role;
}

/** A role a form offers: the role it posts, and its words. */
export interface RoleChoice {
  value: string;
  label: string;
}

/** The roles a form offers, each with its words (`roleLabel`). */
export function roleChoices(roles: readonly string[], i18n: Pick<Translator, 't'>): RoleChoice[] {
  return roles.map((role) => ({ value: role, label: roleLabel(role, i18n) }));
}
