/**
 * Account deletion in the hosted pages:
 * - a dashboard section linking to `/dashboard/account/delete`: what deletion does, what stops it
 *   (what a module blocks it with, an organization to hand over first say; a sign-in that is not
 *   recent), and a confirmed form;
 *   `POST /dashboard/account/delete` deletes, clears the cookies and shows `/auth/account-deleted`;
 * - a section of the administrators' page of a user, with a confirmed form posting to
 *   `POST /admin/users/:id/delete` (current ADMINs only).
 * Register where form bodies are parsed.
 */
import { join } from 'node:path';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { DeletionBlock, PageSection } from '../module.ts';
import type { Config } from '../config.ts';
import { requestSource } from '../audit/request-source.ts';
import { access, DURING_ENROLMENT, RECENT_SECOND_FACTOR, RECENT_SIGN_IN, signedIn } from '../authorization/access.ts';
import { ADMIN_ROLE } from '../users/user.service.ts';
import { clearSessionCookies } from '../sessions/session-cookie.ts';
import { signInRedirect } from '../http/sign-in-redirect.ts';
import type { UserService } from '../users/user.service.ts';
import type { Clock } from '../lib/clock.ts';
import type { Translator } from '../i18n/translator.ts';
import { shownCode } from '../web/page-query.ts';
import { createPageRenderer, templatesIn } from '../web/render.ts';
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
    /** What the modules say stops the deletion now (an organization to hand over first, say). */
    blockers: readonly DeletionBlock[];
    needsRecentSignIn: boolean;
    signInUrl: string;
    error: ShownError | null;
  };
  'account-deleted': object;
}

/** Codes a refused form comes back to the deletion page with (`account-deletion.delete.error.<code>`). */
export const DELETE_PAGE_CODES: ReadonlySet<string> = new Set([
  'REAUTH_REQUIRED',
  'ORGANIZATION_OWNERSHIP_TRANSFER_REQUIRED',
  'LAST_ADMIN',
  'VALIDATION_ERROR',
  'RATE_LIMITED',
  'SERVICE_UNAVAILABLE',
]);

/** A page's error: the message, and the code when it is one we know (an unknown one is never shown back). */
export interface ShownError {
  code: string | null;
  message: string;
}

/** What the deletion page says about `?error=`, in the page's language. */
export function deletePageError(code: string, i18n: Pick<Translator, 't'>): ShownError {
  const known = DELETE_PAGE_CODES.has(code);
  return { code: known ? code : null, message: i18n.t(`account-deletion.delete.error.${known ? code : 'default'}`) };
}

const renderer = () => createPageRenderer<AccountDeletionPages>(templatesIn(join(import.meta.dirname, 'templates')));

export function accountDeletionPageSections(users: UserService): PageSection[] {
  const pages = renderer();
  return [
    {
      page: 'dashboard',
      group: 'profile',
      async render({ userId, page }) {
        return userId === null ? null : pages.html(page, 'account-deletion-dashboard-section', { title: '' });
      },
    },
    {
      page: 'admin-user',
      async render({ userId, page }) {
        const user = userId === null ? null : await users.findUserById(userId);
        if (user === null) return null;
        return pages.html(page, 'account-deletion-admin-section', { title: '', userId: user.id, email: user.email, isSelf: user.id === page.viewer?.userId });
      },
    },
  ];
}

export interface AccountDeletionPageOptions {
  accountDeletion: AccountDeletionService;
  users: UserService;
  config: Config;
  clock: Clock;
  /** Whether the user has a second factor (then deleting needs it used recently: `RECENT_SECOND_FACTOR`). */
  hasSecondFactor(userId: string): Promise<boolean>;
}

const hidden = { hide: true } as const;
const confirmedForm = z.object({ csrfToken: z.string().max(200).optional(), confirm: z.literal('yes', { error: 'must be ticked' }) }, { error: 'must be a form' });

export const accountDeletionPageRoutes: FastifyPluginAsyncZod<AccountDeletionPageOptions> = async (app, { accountDeletion, users, config, clock, hasSecondFactor }) => {
  const pages = renderer();
  const isRecent = (authTime: number) => authTime >= clock() - config.mfa.reauthWindowSeconds * 1000;
  /** Signed in (or stepped up) within REAUTH_WINDOW, with the second factor when there is one: what the POST requires, shown ahead. */
  const isRecentEnough = async (auth: { userId: string; authTime: number; amr: readonly string[] }) =>
    isRecent(auth.authTime) && (auth.amr.includes('mfa') || !(await hasSecondFactor(auth.userId)));

  app.get(DELETE_PAGE, { config: { access: access.user({ exempt: [DURING_ENROLMENT] }) }, schema: { ...hidden, querystring: z.object({ error: shownCode }) } }, async (request, reply) => {
    const auth = signedIn(request);
    const user = await users.findUserById(auth.userId);
    if (user === null) return reply.redirect(signInRedirect(DELETE_PAGE), 303);
    const code = request.query.error;
    const { i18n } = reply.page;
    return pages.send(reply, 'account-delete', {
      title: i18n.t('account-deletion.delete.title'),
      email: user.email,
      blockers: await accountDeletion.blockers(user.id),
      needsRecentSignIn: !(await isRecentEnough(auth)),
      signInUrl: signInRedirect(DELETE_PAGE),
      error: code === undefined ? null : deletePageError(code, i18n),
    });
  });

  app.post(
    DELETE_PAGE,
    {
      config: {
        access: access.user({
          requires: [RECENT_SIGN_IN, RECENT_SECOND_FACTOR],
          exempt: [DURING_ENROLMENT],
          // Back to the form, which says what to do (sign in again), as for its other refusals.
          refusalPage: (_request, reply, code) => reply.redirect(`${DELETE_PAGE}?${new URLSearchParams({ error: code })}`, 303),
        }),
        formErrorPage: DELETE_PAGE,
      },
      schema: { ...hidden, body: confirmedForm },
    },
    async (request, reply) => {
      const auth = signedIn(request);
      const result = await accountDeletion.deleteOwnAccount(auth.userId, requestSource(request, auth.userId));
      if (!result.ok && result.reason !== 'NOT_FOUND') throw deletionRefusal(result);
      clearSessionCookies(reply, config);
      return reply.redirect(DELETED_PAGE, 303);
    },
  );

  app.get(DELETED_PAGE, { config: { access: access.anyone({ exempt: [DURING_ENROLMENT] }) }, schema: hidden }, async (request, reply) => {
    const { i18n } = reply.page;
    return pages.send(reply, 'account-deleted', { title: i18n.t('account-deletion.deleted.title') });
  });

  app.post(
    '/admin/users/:id/delete',
    {
      config: { access: access.role(ADMIN_ROLE, { requires: [RECENT_SECOND_FACTOR] }) },
      schema: { ...hidden, params: z.object({ id: z.string().min(1).max(64) }), body: confirmedForm },
    },
    async (request, reply) => {
      const auth = signedIn(request);
      const { id } = request.params;
      const back = (code: string) => reply.redirect(`/admin/users/${encodeURIComponent(id)}?${new URLSearchParams({ error: code })}`, 303);
      if (id === auth.userId) return back('SELF_DELETION_VIA_ADMIN');
      const result = await accountDeletion.deleteUser(id, requestSource(request, auth.userId));
      if (!result.ok) return result.reason === 'NOT_FOUND' ? reply.redirect('/admin?error=USER_NOT_FOUND', 303) : back(result.reason);
      return reply.redirect('/admin?notice=USER_DELETED', 303);
    },
  );
};
