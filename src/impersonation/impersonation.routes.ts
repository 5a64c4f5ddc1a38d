/**
 * Impersonation in the browser (register in the `browser` scope, where form bodies parse):
 * - `POST /admin/users/:id/impersonate` (a current ADMIN who used a second factor within
 *   REAUTH_WINDOW; the form is the admin user page's section): the administrator's own session
 *   ends and this browser gets the user's impersonation session (cookies, a new CSRF secret);
 * - `POST /dashboard/impersonation/stop` (the banner's button): the impersonation session ends and the
 *   browser is signed out, back to the sign-in page (then the user's page in the admin area).
 * A hook on every page: a page loaded in an impersonation session shows, at its top, who acts as
 * whom, until when, and "Stop" (`request.pageNotices`, printed by the layout). Sensitive actions are
 * refused by the access hook, not here: a route that asks for a step-up (`RECENT_SECOND_FACTOR` or
 * `RECENT_SIGN_IN`: a new password, second factors, passkeys, linked providers, deleting the
 * account, starting another impersonation) also asks for IN_PERSON, which this module enforces
 * (403 IMPERSONATION_FORBIDDEN_ACTION to an impersonation session, whatever its credential).
 */
import { join } from 'node:path';
import { z } from 'zod';
import type { FastifyInstance } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Config } from '../config.ts';
import type { Clock } from '../lib/clock.ts';
import type { Csrf, CsrfRotation } from '../http/csrf.ts';
import type { PageSection } from '../module.ts';
import type { SessionService } from '../sessions/session.service.ts';
import { ADMIN_ROLE, type UserService } from '../users/user.service.ts';
import { AppError } from '../errors.ts';
import { requestSource } from '../audit/request-source.ts';
import { access, DURING_ENROLMENT, RECENT_SECOND_FACTOR, signedIn } from '../authorization/access.ts';
import { clearSessionCookies, setBrowserSession } from '../sessions/session-cookie.ts';
import { signInRedirect } from '../http/sign-in-redirect.ts';
import { createPageRenderer, templatesIn } from '../web/render.ts';
import { formatTime, type TimeText } from '../web/time-text.ts';
import { IMPERSONATION_MINUTES, MAX_REASON_LENGTH, type ImpersonationService } from './impersonation.service.ts';

interface ImpersonationPages {
  'impersonation-admin-section': { userId: string; email: string; isAllowed: boolean; minutes: readonly number[]; maxReasonLength: number; csrfToken: string };
  'impersonation-banner': { email: string; reason: string; endsAt: TimeText; csrfToken: string };
}

const renderer = () => createPageRenderer<ImpersonationPages>(templatesIn(join(import.meta.dirname, 'templates')));

/** The admin's page of a user: the form that starts acting as them (or why it cannot). */
export function impersonationPageSections(users: UserService): PageSection[] {
  const pages = renderer();
  return [
    {
      page: 'admin-user',
      async render({ userId, page }) {
        const user = userId === null ? null : await users.findUserById(userId);
        if (user === null) return null;
        const isAllowed = user.id !== page.viewer?.userId && user.disabledAt === null && !user.roles.includes(ADMIN_ROLE);
        return pages.html(page, 'impersonation-admin-section', { title: '', userId: user.id, email: user.email, isAllowed, minutes: IMPERSONATION_MINUTES, maxReasonLength: MAX_REASON_LENGTH });
      },
    },
  ];
}

export interface ImpersonationRouteOptions {
  impersonation: ImpersonationService;
  users: UserService;
  sessions: SessionService;
  csrf: Csrf & CsrfRotation;
  config: Config;
  clock: Clock;
}

const hidden = { hide: true } as const;

/** The banner on the browser routes (call with the browser scope itself, not a child). */
export function registerImpersonationHooks(app: FastifyInstance, { impersonation, users }: Pick<ImpersonationRouteOptions, 'impersonation' | 'users'>): void {
  const pages = renderer();
  app.addHook('preHandler', async (request, reply) => {
    const auth = request.gatehouseAuth;
    if (auth === null || auth === undefined || (request.method !== 'GET' && request.method !== 'HEAD')) return;
    const active = await impersonation.activeFor(auth.sessionId);
    if (active === null) return;
    const user = await users.findUserById(active.userId);
    const page = reply.page;
    const banner = pages.html(page, 'impersonation-banner', { title: '', email: user?.email ?? active.userId, reason: active.reason, endsAt: formatTime(active.endsAt, page.i18n.locale) });
    request.pageNotices = [...(request.pageNotices ?? []), banner];
  });
}

export const impersonationRoutes: FastifyPluginAsyncZod<ImpersonationRouteOptions> = async (app, { impersonation, sessions, csrf, config, clock }) => {
  app.post(
    '/admin/users/:id/impersonate',
    {
      config: { access: access.role(ADMIN_ROLE, { requires: [RECENT_SECOND_FACTOR] }) },
      schema: {
        ...hidden,
        params: z.object({ id: z.string().min(1).max(64) }),
        body: z.object(
          {
            csrfToken: z.string().max(200).optional(),
            reason: z.string().trim().min(1, { error: 'is required' }).max(MAX_REASON_LENGTH),
            minutes: z.coerce.number().int().refine((value) => (IMPERSONATION_MINUTES as readonly number[]).includes(value), { error: `must be one of ${IMPERSONATION_MINUTES.join(', ')}` }),
          },
          { error: 'must be a form' },
        ),
      },
    },
    async (request, reply) => {
      const auth = signedIn(request);
      const result = await impersonation.start({
        admin: auth,
        userId: request.params.id,
        reason: request.body.reason,
        minutes: request.body.minutes,
        source: requestSource(request, auth.userId),
        ip: request.ip,
        userAgent: request.headers['user-agent'] ?? null,
      });
      if (!result.ok) throw new AppError(result.code);
      // The administrator's own session ends: nothing of theirs stays in this browser while it acts as the user.
      await setBrowserSession(request, reply, { sessions, csrf, config, nowMs: clock() }, { userId: result.impersonation.userId, session: result.session });
      return reply.redirect('/dashboard', 303);
    },
  );

  app.post(
    '/dashboard/impersonation/stop',
    { config: { access: access.user({ exempt: [DURING_ENROLMENT] }) }, schema: { ...hidden, body: z.object({ csrfToken: z.string().max(200).optional() }).optional() } },
    async (request, reply) => {
      const auth = signedIn(request);
      const active = await impersonation.activeFor(auth.sessionId);
      if (active === null) throw new AppError('FORBIDDEN');
      await impersonation.stop(auth.sessionId, requestSource(request, active.adminId));
      clearSessionCookies(reply, config);
      return reply.redirect(signInRedirect(`/admin/users/${encodeURIComponent(active.userId)}`), 303);
    },
  );
};
