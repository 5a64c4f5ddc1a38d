/**
 * Account deletion in the hosted pages:
 * - a dashboard section linking to `/dashboard/account/delete`: what deletion does, what stops it
 *   (an organization to hand over first, a sign-in that is not recent), and a confirmed form;
 *   `POST /dashboard/account/delete` deletes, clears the cookies and shows `/auth/account-deleted`;
 * - a section of the administrators' page of a user, with a confirmed form posting to
 *   `POST /admin/users/:id/delete` (under the route guard: current ADMINs only).
 * Register where form bodies are parsed.
 */
import { join } from 'node:path';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { PageSection } from '../module.ts';
import type { Config } from '../config.ts';
import type { Csrf } from '../http/csrf.ts';
import { AppError } from '../errors.ts';
import { requestSource } from '../audit/request-source.ts';
import type { RequestAuthenticator } from '../sessions/request-authentication.ts';
import { clearSessionCookies } from '../sessions/session-cookie.ts';
import { signInRedirect } from '../http/sign-in-redirect.ts';
import type { UserService } from '../users/user.service.ts';
import type { Clock } from '../lib/clock.ts';
import { messageFor, type PageError } from '../web/messages.ts';
import { shownCode } from '../web/page-query.ts';
import { createPageRenderer, sendPage, templatesIn, englishPage } from '../web/render.ts';
import type { AccountDeletionService } from './account-deletion.service.ts';
import { deletionRefusal } from './account-deletion.routes.ts';

const DELETE_PAGE = '/dashboard/account/delete';
const DELETED_PAGE = '/auth/account-deleted';

interface AccountDeletionPages {
  'account-deletion-dashboard-section': object;
  'account-deletion-admin-section': { userId: string; email: string; isSelf: boolean; csrfToken: string };
  'account-delete': {
    email: string;
    csrfToken: string;
    blockers: ReadonlyArray<{ id: string; slug: string; name: string }>;
    needsRecentSignIn: boolean;
    signInUrl: string;
    error: PageError | null;
  };
  'account-deleted': object;
}

/** What the deletion page says about the codes a refused form comes back with. */
const DELETE_PAGE_ERRORS: Readonly<Record<string, string>> = {
  REAUTH_REQUIRED: 'Deleting your account needs a recent sign-in, and your second factor if you have one. Sign in again, then come back here. Nothing was deleted.',
  ORGANIZATION_OWNERSHIP_TRANSFER_REQUIRED: 'You are the only owner of an organization with other members: hand it over first. Nothing was deleted.',
  LAST_ADMIN: 'You are the only administrator: make someone else an ADMIN first. Nothing was deleted.',
  VALIDATION_ERROR: 'Tick the box to confirm that you want your account deleted. Nothing was deleted.',
  RATE_LIMITED: 'Too many requests. Wait a moment, then try again.',
  SERVICE_UNAVAILABLE: 'The service is temporarily unavailable. Nothing was deleted; try again shortly.',
};

const renderer = () => createPageRenderer<AccountDeletionPages>(templatesIn(join(import.meta.dirname, 'templates')));

export function accountDeletionPageSections(users: UserService): PageSection[] {
  const pages = renderer();
  return [
    {
      page: 'dashboard',
      async render({ userId }) {
        return userId === null ? null : pages.render('account-deletion-dashboard-section', { title: '' });
      },
    },
    {
      page: 'admin-user',
      async render({ userId, viewerId, csrfToken }) {
        const user = userId === null ? null : await users.findUserById(userId);
        if (user === null) return null;
        return pages.render('account-deletion-admin-section', { title: '', userId: user.id, email: user.email, isSelf: user.id === viewerId, csrfToken });
      },
    },
  ];
}

export interface AccountDeletionPageOptions {
  accountDeletion: AccountDeletionService;
  users: UserService;
  authenticate: RequestAuthenticator;
  csrf: Csrf;
  config: Config;
  clock: Clock;
  /** Whether the user has a second factor (then deleting needs it used recently, see mfa/mfa-policy.ts). */
  hasSecondFactor(userId: string): Promise<boolean>;
}

const hidden = { hide: true } as const;
const confirmedForm = z.object({ csrfToken: z.string().max(200).optional(), confirm: z.literal('yes', { error: 'must be ticked' }) }, { error: 'must be a form' });

export const accountDeletionPageRoutes: FastifyPluginAsyncZod<AccountDeletionPageOptions> = async (app, { accountDeletion, users, authenticate, csrf, config, clock, hasSecondFactor }) => {
  const pages = renderer();
  const isRecent = (authTime: number) => authTime >= clock() - config.mfa.reauthWindowSeconds * 1000;
  /** Signed in (or stepped up) within REAUTH_WINDOW, with the second factor when there is one. */
  const isRecentEnough = async (auth: { userId: string; authTime: number; amr: readonly string[] }) =>
    isRecent(auth.authTime) && (auth.amr.includes('mfa') || !(await hasSecondFactor(auth.userId)));

  app.get(DELETE_PAGE, { schema: { ...hidden, querystring: z.object({ error: shownCode }) } }, async (request, reply) => {
    const auth = await authenticate(request, reply);
    const user = auth === null ? null : await users.findUserById(auth.userId);
    if (auth === null || user === null) return reply.redirect(signInRedirect(DELETE_PAGE), 303);
    const code = request.query.error;
    return sendPage(
      reply,
      pages.render('account-delete', { i18n: englishPage(request), 
        title: 'Delete your account',
        email: user.email,
        csrfToken: csrf.issueToken(request, reply),
        blockers: await accountDeletion.blockers(user.id),
        needsRecentSignIn: !(await isRecentEnough(auth)),
        signInUrl: signInRedirect(DELETE_PAGE),
        error: code === undefined ? null : { code, message: messageFor(DELETE_PAGE_ERRORS, code, 'That did not work. Nothing was deleted; please try again.') },
      }),
    );
  });

  app.post(DELETE_PAGE, { config: { formErrorPage: DELETE_PAGE }, schema: { ...hidden, body: confirmedForm } }, async (request, reply) => {
    const auth = await authenticate(request, reply);
    if (auth === null) return reply.redirect(signInRedirect(DELETE_PAGE), 303);
    if (!isRecent(auth.authTime)) throw new AppError('REAUTH_REQUIRED');
    const result = await accountDeletion.deleteOwnAccount(auth.userId, requestSource(request, auth.userId));
    if (!result.ok && result.reason !== 'NOT_FOUND') throw deletionRefusal(result);
    clearSessionCookies(reply, config);
    return reply.redirect(DELETED_PAGE, 303);
  });

  app.get(DELETED_PAGE, { schema: hidden }, async (_request, reply) => sendPage(reply, pages.render('account-deleted', { i18n: englishPage(reply.request), title: 'Account deleted' })));

  app.post(
    '/admin/users/:id/delete',
    { schema: { ...hidden, params: z.object({ id: z.string().min(1).max(64) }), body: confirmedForm } },
    async (request, reply) => {
      const auth = await authenticate.withCurrentRoles(request, reply);
      if (auth === null) throw new AppError('UNAUTHENTICATED');
      const { id } = request.params;
      const back = (code: string) => reply.redirect(`/admin/users/${encodeURIComponent(id)}?${new URLSearchParams({ error: code })}`, 303);
      if (id === auth.userId) return back('SELF_DELETION_VIA_ADMIN');
      const result = await accountDeletion.deleteUser(id, requestSource(request, auth.userId));
      if (!result.ok) return result.reason === 'NOT_FOUND' ? reply.redirect('/admin?error=USER_NOT_FOUND', 303) : back(result.reason);
      return reply.redirect('/admin?notice=USER_DELETED', 303);
    },
  );
};
