/**
 * `/admin`: the operators' pages (users with search, one user with roles, access and sessions, the
 * audit log) and the form endpoints behind their buttons. The forms call the admin service the
 * JSON admin API calls, with the same audit source (the acting admin, their IP and user agent),
 * then answer 303 back to the page with `?notice=CODE` or `?error=CODE`, so a reload never posts
 * twice. Register this plugin where form bodies are parsed; CSRF (origin + token) is checked for
 * every form post before these handlers run. Hidden from the OpenAPI document.
 *
 * ADMIN only: every route declares it (`access.role(ADMIN_ROLE)`), on top of the prefix rules that
 * refuse `/admin/**` to everyone else, so the caller is refused before any request body or query is
 * read. The forms change a user, so they also need a recent second factor from an admin who has one.
 */
import { join } from 'node:path';
import { z } from 'zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Config } from '../config.ts';
import { renderPageSections, type AdminNavEntry, type PageSection } from '../module.ts';
import { clearSessionCookies } from '../sessions/session-cookie.ts';
import type { AdminService } from './admin.service.ts';
import { MAX_ROLES } from './admin.routes.ts';
import type { AuditEvent } from '../audit/audit.service.ts';
import { requestSource } from '../audit/request-source.ts';
import { decodeCursor, encodeCursor, type KeysetPosition } from '../lib/keyset-cursor.ts';
import { access, RECENT_SECOND_FACTOR, signedIn } from '../authorization/access.ts';
import { ADMIN_ROLE, isValidRole } from '../users/user.service.ts';
import { toSessionItems } from '../sessions/session-items.ts';
import type { PlaceFinder } from '../sessions/place.ts';
import { createForbiddenPage } from '../web/forbidden-page.ts';
import { queryText, shownCode } from '../web/page-query.ts';
import { templatesIn, type PageLanguage } from '../web/render.ts';
import { createAdminPageRenderer } from './admin-area.ts';
import { formatTime } from '../web/time-text.ts';
import { adminError, adminNotice } from './admin-pages.messages.ts';
import type { AdminEventItem, AdminPages, PageAlert } from './admin-pages.types.ts';

export interface AdminPageOptions {
  admin: AdminService;
  config: Config;
  /** What other modules add to the page of one user. */
  sections: readonly PageSection[];
  /** Sessions' approximate places (none unless GEOIP_DATABASE_FILE is set). */
  places: PlaceFinder;
  /** The admin area's navigation (its header's): every module's links. */
  adminNav: readonly AdminNavEntry[];
}

export const ADMIN_PAGE = '/admin';
export const ADMIN_EVENTS_PAGE = '/admin/events';
export const ADMIN_PAGE_SIZE = 50;
/** Room for MAX_ROLES names of the longest kind with separators; more is refused, not cut. */
const MAX_ROLES_INPUT_LENGTH = MAX_ROLES * 66;

export const adminUserPage = (id: string) => `${ADMIN_PAGE}/users/${encodeURIComponent(id)}`;

/** A page with its query, leaving out what is unset. */
function pageUrl(path: string, query: Record<string, string | undefined>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, value);
  const text = params.toString();
  return text === '' ? path : `${path}?${text}`;
}

/** The notice and error a form's redirect put in the URL, in the page's language. */
function alertsOf(query: { notice?: string | undefined; error?: string | undefined }, i18n: PageLanguage): PageAlert[] {
  const alerts: PageAlert[] = [];
  const notice = query.notice === undefined ? null : adminNotice(query.notice, i18n);
  if (notice !== null) alerts.push(notice);
  if (query.error !== undefined) alerts.push(adminError(query.error, i18n));
  return alerts;
}

/** Parses the roles text field: names separated by spaces or commas, each once. */
function parseRoles(text: string): { ok: true; roles: string[] } | { ok: false; code: 'INVALID_ROLE' | 'TOO_MANY_ROLES' } {
  const roles = [...new Set(text.split(/[\s,]+/).filter((name) => name !== ''))];
  if (!roles.every(isValidRole)) return { ok: false, code: 'INVALID_ROLE' };
  if (roles.length > MAX_ROLES) return { ok: false, code: 'TOO_MANY_ROLES' };
  return { ok: true, roles };
}

const linkToUser = (id: string | null) => (id === null ? null : { id, href: adminUserPage(id) });

function toEventItem(event: AuditEvent, i18n: PageLanguage): AdminEventItem {
  return {
    createdAt: formatTime(event.createdAt, i18n.locale),
    type: event.type,
    user: linkToUser(event.userId),
    actor: linkToUser(event.actorUserId),
    email: event.email,
    ip: event.ip,
    userAgent: event.userAgent,
    reason: event.reason,
    details: event.details === null ? null : JSON.stringify(event.details),
  };
}

const hidden = { hide: true } as const;
const csrfField = z.string().max(200).optional();
const pageQuery = { notice: shownCode, error: shownCode };
const cursorQuery = queryText(200);
/** Ids are ours and short; a longer one names nobody (the API refuses it the same way). */
const userParams = z.object({ id: z.string().min(1).max(64) });
/** The pages. */
const forAdmins = { access: access.role(ADMIN_ROLE) };
/** The forms, each a change to a user: an admin who has a second factor used it within REAUTH_WINDOW. */
const forAdminsRecentlyVerified = { access: access.role(ADMIN_ROLE, { requires: [RECENT_SECOND_FACTOR] }) };

export const adminPageRoutes: FastifyPluginAsyncZod<AdminPageOptions> = async (app, options) => {
  const { admin, config } = options;
  const pages = createAdminPageRenderer<AdminPages>(templatesIn(join(import.meta.dirname, 'templates')), options.adminNav);
  const sendForbiddenPage = createForbiddenPage();
  /** A continuation cursor from a link: its position, none, or null for one we did not make. */
  const positionOf = (cursor: string | undefined): KeysetPosition | undefined | null => (cursor === undefined ? undefined : decodeCursor(cursor));

  app.get(
    ADMIN_PAGE,
    { config: forAdmins, schema: { ...hidden, querystring: z.object({ query: queryText(200), cursor: cursorQuery, ...pageQuery }) } },
    async (request, reply) => {
      const { query, cursor, ...codes } = request.query;
      const { i18n } = reply.page;
      const before = positionOf(cursor);
      const alerts = alertsOf(codes, i18n);
      // A cursor we did not make (edited, or from another build): the list starts again from the top.
      if (before === null) alerts.push(adminError('INVALID_CURSOR', i18n));
      const page = await admin.listUsers({ ...(query !== undefined && { query }), ...(before && { before }), limit: ADMIN_PAGE_SIZE });
      return pages.send(reply, 'admin-users', {
        title: i18n.t('admin.users.title'),
        isFull: true,
        section: 'users',
        alerts,
        query: query ?? '',
        users: page.users.map((user) => ({
          href: adminUserPage(user.id),
          name: user.name,
          email: user.email,
          roles: user.roles,
          isDisabled: user.disabledAt !== null,
          createdAt: formatTime(user.createdAt, i18n.locale),
        })),
        nextHref: page.next === null ? null : pageUrl(ADMIN_PAGE, { query, cursor: encodeCursor(page.next) }),
        firstHref: before ? pageUrl(ADMIN_PAGE, { query }) : null,
      });
    },
  );

  app.get(
    `${ADMIN_PAGE}/users/:id`,
    { config: forAdmins, schema: { ...hidden, params: z.object({ id: z.string() }), querystring: z.object(pageQuery) } },
    async (request, reply) => {
      const { id } = request.params;
      const found = id.length > 0 && id.length <= 64 ? await admin.getUser(id) : null;
      if (found === null) return reply.redirect(pageUrl(ADMIN_PAGE, { error: 'USER_NOT_FOUND' }), 303);
      const auth = signedIn(request);
      const { user } = found;
      const isSelf = user.id === auth.userId;
      const base = adminUserPage(user.id);
      const { i18n } = reply.page;
      const sections = await renderPageSections(options.sections, { userId: user.id, page: reply.page });
      return pages.send(reply, 'admin-user', {
        title: user.name,
        isWide: true,
        section: 'users',
        alerts: alertsOf(request.query, i18n),
        sections: sections.html,
        scripts: sections.scripts,
        user: {
          id: user.id,
          name: user.name,
          email: user.email,
          roles: user.roles,
          isEmailVerified: user.emailVerifiedAt !== null,
          disabledAt: user.disabledAt === null ? null : formatTime(user.disabledAt, i18n.locale),
          createdAt: formatTime(user.createdAt, i18n.locale),
          updatedAt: formatTime(user.updatedAt, i18n.locale),
        },
        isSelf,
        sessions: toSessionItems(found.sessions, isSelf ? auth.sessionId : null, { i18n, locate: await options.places.locator(i18n.locale) }),
        eventsHref: pageUrl(ADMIN_EVENTS_PAGE, { userId: user.id }),
        actions: {
          roles: `${base}/roles`,
          disable: `${base}/disable`,
          enable: `${base}/enable`,
          endSession: `${base}/sessions/end`,
          endAllSessions: `${base}/sessions/end-all`,
        },
      });
    },
  );

  app.get(
    ADMIN_EVENTS_PAGE,
    { config: forAdmins, schema: { ...hidden, querystring: z.object({ userId: queryText(64), type: queryText(64), cursor: cursorQuery, ...pageQuery }) } },
    async (request, reply) => {
      const { userId, type: requestedType, cursor, ...codes } = request.query;
      const { i18n } = reply.page;
      const isKnownType = requestedType !== undefined && (options.admin.eventTypes as readonly string[]).includes(requestedType);
      const type = isKnownType ? requestedType : undefined;
      const before = positionOf(cursor);
      const alerts = alertsOf(codes, i18n);
      if (requestedType !== undefined && !isKnownType) alerts.push(adminError('UNKNOWN_EVENT_TYPE', i18n));
      if (before === null) alerts.push(adminError('INVALID_CURSOR', i18n));
      const page = await admin.listEvents({ ...(userId !== undefined && { userId }), ...(type !== undefined && { type }), ...(before && { before }), limit: ADMIN_PAGE_SIZE });
      return pages.send(reply, 'admin-events', {
        title: i18n.t('admin.events.title'),
        isFull: true,
        section: 'events',
        alerts,
        filter: { userId: userId ?? '', type: type ?? '' },
        types: options.admin.eventTypes,
        isFiltered: userId !== undefined || type !== undefined,
        events: page.events.map((event) => toEventItem(event, i18n)),
        nextHref: page.next === null ? null : pageUrl(ADMIN_EVENTS_PAGE, { userId, type, cursor: encodeCursor(page.next) }),
        firstHref: before ? pageUrl(ADMIN_EVENTS_PAGE, { userId, type }) : null,
      });
    },
  );

  // The forms. What cannot be told apart by the handlers (a malformed id, a database outage)
  // goes back to the user list with the error code.
  const formRoute = { config: { ...forAdminsRecentlyVerified, formErrorPage: ADMIN_PAGE } };
  const back = (reply: FastifyReply, userId: string, result: { notice: string } | { error: string }) =>
    reply.redirect(pageUrl(adminUserPage(userId), result), 303);
  const noSuchUser = (reply: FastifyReply) => reply.redirect(pageUrl(ADMIN_PAGE, { error: 'USER_NOT_FOUND' }), 303);

  /** Applies one change through the admin service, as `PATCH /api/admin/users/:id` does. */
  async function updateUser(request: FastifyRequest, reply: FastifyReply, id: string, changes: { roles?: string[]; disabled?: boolean }, notice: string) {
    const result = await admin.updateUser(id, changes, requestSource(request, signedIn(request).userId));
    if (result.ok) return back(reply, id, { notice });
    if (result.reason === 'NOT_FOUND') return noSuchUser(reply);
    // Demoted or disabled by another admin's change that came first: what the hook shows a non-admin.
    if (result.reason === 'FORBIDDEN') return sendForbiddenPage(reply);
    return back(reply, id, { error: result.reason });
  }

  app.post(
    `${ADMIN_PAGE}/users/:id/roles`,
    { ...formRoute, schema: { ...hidden, params: userParams, body: z.object({ roles: z.string().max(MAX_ROLES_INPUT_LENGTH).optional(), csrfToken: csrfField }) } },
    async (request, reply) => {
      const { id } = request.params;
      const parsed = parseRoles(request.body.roles ?? '');
      if (!parsed.ok) return back(reply, id, { error: parsed.code });
      return updateUser(request, reply, id, { roles: parsed.roles }, 'ROLES_SAVED');
    },
  );

  const stateBody = z.object({ csrfToken: csrfField }).optional();

  app.post(`${ADMIN_PAGE}/users/:id/disable`, { ...formRoute, schema: { ...hidden, params: userParams, body: stateBody } }, async (request, reply) =>
    updateUser(request, reply, request.params.id, { disabled: true }, 'USER_DISABLED'),
  );

  app.post(`${ADMIN_PAGE}/users/:id/enable`, { ...formRoute, schema: { ...hidden, params: userParams, body: stateBody } }, async (request, reply) =>
    updateUser(request, reply, request.params.id, { disabled: false }, 'USER_ENABLED'),
  );

  app.post(
    `${ADMIN_PAGE}/users/:id/sessions/end`,
    { ...formRoute, schema: { ...hidden, params: userParams, body: z.object({ sessionId: z.string().max(64).optional(), csrfToken: csrfField }) } },
    async (request, reply) => {
      const auth = signedIn(request);
      const { id } = request.params;
      const sessionId = request.body.sessionId ?? '';
      if (sessionId === '' || !(await admin.endSession(id, sessionId, requestSource(request, auth.userId)))) {
        return back(reply, id, { error: 'SESSION_NOT_FOUND' });
      }
      if (sessionId === auth.sessionId) return signedOut(reply);
      return back(reply, id, { notice: 'SESSION_ENDED' });
    },
  );

  app.post(`${ADMIN_PAGE}/users/:id/sessions/end-all`, { ...formRoute, schema: { ...hidden, params: userParams, body: stateBody } }, async (request, reply) => {
    const auth = signedIn(request);
    const { id } = request.params;
    const ended = await admin.endAllSessions(id, requestSource(request, auth.userId));
    if (ended === null) return noSuchUser(reply);
    // An admin ending all of their own sessions has ended this one too.
    if (id === auth.userId) return signedOut(reply);
    return back(reply, id, { notice: 'SESSIONS_ENDED' });
  });

  /** This browser's session has just been ended from here: that is signing out. */
  function signedOut(reply: FastifyReply) {
    clearSessionCookies(reply, config);
    return reply.redirect('/', 303);
  }
};
