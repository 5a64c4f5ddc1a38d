/**
 * What every `/admin` page route shares: the URLs, the alerts a form's redirect put in the URL, the
 * access declarations (ADMIN for the pages, ADMIN with a recent second factor for a change), the
 * lenient query fields and the continuation cursor.
 */
import { z } from 'zod';
import { access, RECENT_SECOND_FACTOR } from '../authorization/access.ts';
import { decodeCursor, type KeysetPosition } from '../lib/keyset-cursor.ts';
import { ADMIN_ROLE } from '../users/user.service.ts';
import { queryText, shownCode } from '../web/page-query.ts';
import type { PageLanguage } from '../web/render.ts';
import { adminError, adminNotice } from './admin-pages.messages.ts';
import type { PageAlert } from './admin-pages.types.ts';

export const ADMIN_PAGE = '/admin';
export const ADMIN_USERS_PAGE = '/admin/users';
export const ADMIN_NEW_USER_PAGE = '/admin/users/new';
export const ADMIN_BULK = '/admin/users/bulk';
export const ADMIN_EVENTS_PAGE = '/admin/events';
export const ADMIN_EVENTS_EXPORT = '/admin/events/export';
export const ADMIN_PAGE_SIZE = 50;

export const adminUserPage = (id: string) => `${ADMIN_USERS_PAGE}/${encodeURIComponent(id)}`;

/** A page with its query, leaving out what is unset or empty. */
export function pageUrl(path: string, query: { readonly [name: string]: string | undefined }): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== '') params.set(name, value);
  const text = params.toString();
  return text === '' ? path : `${path}?${text}`;
}

/** The notice and error a form's redirect put in the URL, in the page's language (`count`: how many a bulk action changed). */
export function alertsOf(query: { notice?: string | undefined; error?: string | undefined; count?: string | undefined }, i18n: PageLanguage): PageAlert[] {
  const alerts: PageAlert[] = [];
  const count = Number(query.count ?? '0');
  const notice = query.notice === undefined ? null : adminNotice(query.notice, i18n, { count: Number.isSafeInteger(count) && count >= 0 ? count : 0 });
  if (notice !== null) alerts.push(notice);
  if (query.error !== undefined) alerts.push(adminError(query.error, i18n));
  return alerts;
}

/** A continuation cursor from a link: its position, none, or null for one we did not make. */
export const positionOf = (cursor: string | undefined): KeysetPosition | undefined | null => (cursor === undefined ? undefined : decodeCursor(cursor));

export const hidden = { hide: true } as const;
export const csrfField = z.string().max(200).optional();
export const pageQuery = { notice: shownCode, error: shownCode, count: queryText(10) };
export const cursorQuery = queryText(200);
/** Ids are ours and short; a longer one names nobody (the API refuses it the same way). */
export const userParams = z.object({ id: z.string().min(1).max(64) });
/** The pages. */
export const forAdmins = { access: access.role(ADMIN_ROLE) };
/** The forms, each a change to a user: an admin who has a second factor used it within REAUTH_WINDOW. */
export const forAdminsRecentlyVerified = { access: access.role(ADMIN_ROLE, { requires: [RECENT_SECOND_FACTOR] }) };
