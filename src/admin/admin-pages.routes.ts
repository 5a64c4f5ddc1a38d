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
import { requestSource } from '../audit/request-source.ts';
import { signedIn } from '../authorization/access.ts';
import type { UserCondition } from '../users/user.store.ts';
import type { UserService } from '../users/user.service.ts';
import type { AccountDeletionService } from '../account-deletion/account-deletion.service.ts';
import type { PasswordResetService } from '../password-reset/password-reset.service.ts';
import { toSessionItems } from '../sessions/session-items.ts';
import type { PlaceFinder } from '../sessions/place.ts';
import { createForbiddenPage } from '../web/forbidden-page.ts';
import { templatesIn } from '../web/render.ts';
import { createAdminPageRenderer } from './admin-area.ts';
import { formatTime } from '../web/time-text.ts';
import type { AdminPages } from './admin-pages.types.ts';
import { ADMIN_EVENTS_PAGE, ADMIN_PAGE, adminUserPage, alertsOf, csrfField, forAdmins, forAdminsRecentlyVerified, hidden, pageQuery, pageUrl, userParams } from './admin-page-kit.ts';
import { parseRoles } from './admin-roles.ts';
import { addressesOf, toReadableEvent, type AdminAuditView } from './admin-events.ts';
import { adminListRoutes, type AdminListOptions } from './admin-lists.routes.ts';
import { adminConsoleRoutes } from './admin-console.routes.ts';
import { adminOverviewRoutes } from './admin-overview.routes.ts';
import type { Clock } from '../lib/clock.ts';

export interface AdminPageOptions {
  admin: AdminService;
  /** The log's event types and their owners, and the last-sign-in condition (the audit service's: the admin service's code loads at its first call). */
  audit: AdminAuditView;
  config: Config;
  /** What other modules add to the page of one user. */
  sections: readonly PageSection[];
  /** Sessions' approximate places (none unless GEOIP_DATABASE_FILE is set). */
  places: PlaceFinder;
  /** The admin area's navigation (its header's): every module's links. */
  adminNav: readonly AdminNavEntry[];
  users: UserService;
  clock: Clock;
  /** The condition "has / has no second factor" (the mfa module's); null without it. */
  secondFactor?: ((isPresent: boolean) => UserCondition) | null;
  /** The condition "is a member of the organization" (the organizations module's); null without it. */
  memberOf?: ((organizationId: string) => UserCondition) | null;
  /** The organizations, for the list's filter; null without that module. */
  organizations?: AdminListOptions['organizations'];
  /** Rate-limit refusals by limiter since start; null when metrics are off. */
  refusals?: (() => Promise<Array<{ limiter: string; count: number }>>) | null;
  /** The configured OAuth providers' names, by id. */
  providerNames?: ReadonlyMap<string, string>;
  /** The invitation of Add user (a set-password link), when that module is on. */
  passwordReset: PasswordResetService | null;
  /** The bulk delete, when that module is on. */
  accountDeletion: AccountDeletionService | null;
}

/** Room for MAX_ROLES names of the longest kind with separators; more is refused, not cut. */
const MAX_ROLES_INPUT_LENGTH = MAX_ROLES * 66;
/** The newest events about the user shown on their page; the log has the rest. */
const USER_TRAIL_SIZE = 10;

export { ADMIN_EVENTS_PAGE, ADMIN_PAGE, ADMIN_PAGE_SIZE, adminUserPage } from './admin-page-kit.ts';

export const adminPageRoutes: FastifyPluginAsyncZod<AdminPageOptions> = async (app, options) => {
  const { admin, config } = options;
  const pages = createAdminPageRenderer<AdminPages>(templatesIn(join(import.meta.dirname, 'templates')), options.adminNav);
  const sendForbiddenPage = createForbiddenPage();
  await app.register(adminListRoutes, { admin, audit: options.audit, users: options.users, pages, clock: options.clock, secondFactor: options.secondFactor ?? null, memberOf: options.memberOf ?? null, organizations: options.organizations ?? null });
  await app.register(adminOverviewRoutes, { admin, users: options.users, pages, clock: options.clock, secondFactor: options.secondFactor ?? null, refusals: options.refusals ?? null, providerNames: options.providerNames ?? new Map() });
  await app.register(adminConsoleRoutes, {
    admin,
    users: options.users,
    pages,
    // (`?.`: a plugin test mounts the pages with an empty config)
    canInvite: config.mail?.kind === 'smtp',
    passwordReset: options.passwordReset,
    accountDeletion: options.accountDeletion,
  });

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
      const trail = await admin.listEvents({ about: { userId: user.id, email: user.email }, limit: USER_TRAIL_SIZE });
      const addresses = await addressesOf(trail.events, options.users.findUsersByIds);
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
        eventsHref: pageUrl(ADMIN_EVENTS_PAGE, { email: user.email }),
        events: trail.events.map((event) => toReadableEvent(event, addresses, i18n, adminUserPage, options.audit.eventOwners)),
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
