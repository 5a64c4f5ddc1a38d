/**
 * The admin console's changes to many or new accounts: **Add user** (an invitation mail to choose a
 * password when mail is delivered, a password typed here otherwise) and the bulk actions on the
 * users list (disable, sign out, delete), each confirmed on a page that names the count. Every form
 * carries the CSRF token (checked before these handlers) and needs ADMIN with a recent second factor.
 */
import { z } from 'zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { requestSource } from '../audit/request-source.ts';
import { signedIn } from '../authorization/access.ts';
import type { AccountDeletionService } from '../account-deletion/account-deletion.service.ts';
import type { PasswordResetService } from '../password-reset/password-reset.service.ts';
import { emailField } from '../users/email.ts';
import { nameField } from '../users/name.ts';
import type { UserService } from '../users/user.service.ts';
import type { PageRenderer } from '../web/render.ts';
import type { AdminService } from './admin.service.ts';
import { MAX_ROLES } from './admin.routes.ts';
import { ADMIN_BULK, ADMIN_NEW_USER_PAGE, ADMIN_PAGE, adminUserPage, alertsOf, csrfField, forAdmins, forAdminsRecentlyVerified, hidden, pageQuery, pageUrl } from './admin-page-kit.ts';
import { parseRoles } from './admin-roles.ts';
import type { AdminPages } from './admin-pages.types.ts';

export interface AdminConsoleOptions {
  admin: AdminService;
  users: UserService;
  pages: PageRenderer<AdminPages>;
  /** Mail reaches people (SMTP): a new user is invited to choose a password instead of being given one. */
  canInvite: boolean;
  passwordReset: PasswordResetService | null;
  accountDeletion: AccountDeletionService | null;
}

export const BULK_ACTIONS = ['disable', 'signOut', 'delete'] as const;
export type BulkAction = (typeof BULK_ACTIONS)[number];
/** A page of the list at most (and a little room): a bulk action is for a screenful, not the whole database. */
export const MAX_BULK = 100;
const BULK_NOTICE: Record<BulkAction, string> = { disable: 'BULK_DISABLED', signOut: 'BULK_SIGNED_OUT', delete: 'BULK_DELETED' };

const idList = z.preprocess((value) => (value === undefined ? [] : Array.isArray(value) ? value : [value]), z.array(z.string().min(1).max(64)).max(MAX_BULK));
const bulkBody = z.object({ ids: idList, action: z.enum(BULK_ACTIONS).optional(), csrfToken: csrfField, confirm: z.string().max(10).optional() });
const newUserForm = z.object({ email: z.string().max(400).optional(), name: z.string().max(400).optional(), roles: z.string().max(MAX_ROLES * 66).optional(), password: z.string().max(4096).optional(), csrfToken: csrfField });

export const adminConsoleRoutes: FastifyPluginAsyncZod<AdminConsoleOptions> = async (app, options) => {
  const { admin, pages } = options;
  const formRoute = (errorPage: string) => ({ config: { ...forAdminsRecentlyVerified, formErrorPage: errorPage } });

  function sendNewUserForm(reply: FastifyReply, values: { email?: string | undefined; name?: string | undefined; roles?: string | undefined }, alerts: AdminPages['admin-user-new']['alerts'], status = 200) {
    const { i18n } = reply.page;
    return pages.send(
      reply,
      'admin-user-new',
      {
        title: i18n.t('admin.newUser.title'),
        section: 'users',
        alerts,
        action: ADMIN_NEW_USER_PAGE,
        canInvite: options.canInvite && options.passwordReset !== null,
        values: { email: values.email ?? '', name: values.name ?? '', roles: values.roles ?? '' },
      },
      { status },
    );
  }

  app.get(ADMIN_NEW_USER_PAGE, { config: forAdmins, schema: { ...hidden, querystring: z.object(pageQuery) } }, async (request, reply) =>
    sendNewUserForm(reply, {}, alertsOf(request.query, reply.page.i18n)),
  );

  app.post(ADMIN_NEW_USER_PAGE, { ...formRoute(ADMIN_NEW_USER_PAGE), schema: { ...hidden, body: newUserForm } }, async (request, reply) => {
    const { i18n } = reply.page;
    const form = request.body;
    const refuse = (field: string, code: string) =>
      sendNewUserForm(reply, form, [{ isError: true, code, message: i18n.t(`admin.newUser.error.${field}`), field } as AdminPages['admin-user-new']['alerts'][number]], 422);
    const email = emailField.safeParse(form.email ?? '');
    if (!email.success) return refuse('email', 'VALIDATION_ERROR');
    const name = nameField.safeParse(form.name ?? '');
    if (!name.success) return refuse('name', 'VALIDATION_ERROR');
    const roles = parseRoles(form.roles ?? '');
    if (!roles.ok) return refuse('roles', roles.code);
    const invite = options.canInvite && options.passwordReset !== null;
    const password = invite || form.password === undefined || form.password === '' ? undefined : form.password;
    const source = requestSource(request, signedIn(request).userId);
    const result = await admin.createUser({ email: email.data, name: name.data, roles: roles.roles, ...(password !== undefined && { password }) }, source);
    if (!result.ok) {
      if (result.reason === 'EMAIL_TAKEN') return refuse('emailTaken', 'EMAIL_TAKEN');
      if (result.reason === 'WEAK_PASSWORD') return refuse('password', 'WEAK_PASSWORD');
      if (result.reason === 'RATE_LIMITED') return refuse('rateLimited', 'RATE_LIMITED');
      return refuse('roles', 'INVALID_ROLE');
    }
    // The invitation is the set-password link of a reset (its mail, its lifetime), in the account's outbox.
    if (invite) await options.passwordReset!.requestReset({ email: result.user.email, source, isInvitation: true });
    return reply.redirect(pageUrl(adminUserPage(result.user.id), { notice: invite ? 'USER_INVITED' : 'USER_CREATED' }), 303);
  });

  /** The accounts named by the form, in one query: unknown ids drop out. */
  async function chosen(ids: readonly string[]) {
    return ids.length === 0 ? [] : options.users.findUsersByIds(ids);
  }

  app.post(ADMIN_BULK, { ...formRoute(ADMIN_PAGE), schema: { ...hidden, body: bulkBody } }, async (request, reply) => {
    const { ids, action, confirm } = request.body;
    const people = await chosen(ids);
    if (people.length === 0 || action === undefined) return reply.redirect(pageUrl(ADMIN_PAGE, { error: 'NOTHING_SELECTED' }), 303);
    if (action === 'delete' && options.accountDeletion === null) return reply.redirect(pageUrl(ADMIN_PAGE, { error: 'NOT_FOUND' }), 303);
    const { i18n } = reply.page;
    if (confirm !== 'yes') {
      return pages.send(reply, 'admin-bulk-confirm', {
        title: i18n.t(`admin.bulk.confirm.${action}.title`, { count: people.length }),
        section: 'users',
        alerts: [],
        action: ADMIN_BULK,
        bulkAction: action,
        count: people.length,
        users: people.map((user) => ({ id: user.id, name: user.name, email: user.email })),
        cancelHref: ADMIN_PAGE,
      });
    }
    const done = await apply(request, action, people.map((user) => user.id));
    const partly = done < people.length;
    return reply.redirect(pageUrl(ADMIN_PAGE, { notice: BULK_NOTICE[action], count: String(done), ...(partly && { error: 'BULK_PARTLY_DONE' }) }), 303);
  });

  /** Applies the action to each account, one at a time through the same services as the single forms; how many it changed. */
  async function apply(request: FastifyRequest, action: BulkAction, ids: readonly string[]): Promise<number> {
    const auth = signedIn(request);
    const source = requestSource(request, auth.userId);
    let done = 0;
    for (const id of ids) {
      // Never oneself: disabling, signing out or deleting the acting admin is done from their own pages.
      if (id === auth.userId) continue;
      if (action === 'disable') done += (await admin.updateUser(id, { disabled: true }, source)).ok ? 1 : 0;
      if (action === 'signOut') done += (await admin.endAllSessions(id, source)) === null ? 0 : 1;
      if (action === 'delete') done += (await options.accountDeletion!.deleteUser(id, source)).ok ? 1 : 0;
    }
    return done;
  }
};
