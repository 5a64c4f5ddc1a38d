/**
 * The JSON routes of account deletion:
 * - `DELETE /api/auth/account`: the signed-in user deletes their own account (Bearer, or cookie +
 *   CSRF); they must have signed in (or stepped up) within REAUTH_WINDOW, and a user with a second
 *   factor must have used it then (`RECENT_SIGN_IN`, `RECENT_SECOND_FACTOR`). The session cookies
 *   are cleared.
 * - `DELETE /api/admin/users/:id`: an administrator deletes another user's account (current
 *   ADMINs only; the acting admin is checked again in the deletion's transaction).
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import { errorResponse } from '../http/schemas.ts';
import { requestSource } from '../audit/request-source.ts';
import { access, RECENT_SECOND_FACTOR, RECENT_SIGN_IN, signedIn } from '../authorization/access.ts';
import { ADMIN_ROLE } from '../users/user.service.ts';
import { clearSessionCookies } from '../sessions/session-cookie.ts';
import type { AccountDeletionResult, AccountDeletionService } from './account-deletion.service.ts';

export interface AccountDeletionRouteOptions {
  accountDeletion: AccountDeletionService;
  config: Config;
}

const deleted = z.object({ ok: z.literal(true) }).meta({ id: 'AccountDeleted' });

/** The error a refused deletion answers with. */
export function deletionRefusal(result: Exclude<AccountDeletionResult, { ok: true }>): AppError {
  return new AppError(result.reason);
}

export const accountDeletionRoutes: FastifyPluginAsyncZod<AccountDeletionRouteOptions> = async (app, { accountDeletion, config }) => {
  app.delete(
    '/api/auth/account',
    {
      config: { access: access.user({ requires: [RECENT_SIGN_IN, RECENT_SECOND_FACTOR] }) },
      schema: {
        tags: ['account'],
        summary: 'Delete your own account',
        description:
          'Ends every session (access tokens are refused at once, in both strategies), ends the grants of the apps you signed in to through Gatehouse, removes your organization memberships, sign-in methods, second factors and tokens, erases your e-mail address, network addresses and browsers from the audit history, and deletes the account. Needs a sign-in (or step-up) within REAUTH_WINDOW, and, for an account with a second factor, that factor used then (403 REAUTH_REQUIRED). The only OWNER of an organization with other members must transfer it first (409). Clears the session cookies.',
        security: [{ bearer: [] }],
        response: {
          200: deleted,
          401: errorResponse.describe('No valid session (UNAUTHENTICATED)'),
          403: errorResponse.describe('Signed in longer ago than REAUTH_WINDOW, or without the second factor (REAUTH_REQUIRED); or a cookie-authenticated request without a valid CSRF token (CSRF_FAILED)'),
          409: errorResponse.describe('The only OWNER of an organization with other members (ORGANIZATION_OWNERSHIP_TRANSFER_REQUIRED), or the only enabled administrator (LAST_ADMIN)'),
        },
      },
    },
    async (request, reply) => {
      const auth = signedIn(request);
      const result = await accountDeletion.deleteOwnAccount(auth.userId, requestSource(request, auth.userId));
      if (!result.ok) throw result.reason === 'NOT_FOUND' ? new AppError('UNAUTHENTICATED') : deletionRefusal(result);
      clearSessionCookies(reply, config);
      return { ok: true as const };
    },
  );

  app.delete(
    '/api/admin/users/:id',
    {
      config: { access: access.role(ADMIN_ROLE, { requires: [RECENT_SECOND_FACTOR] }) },
      schema: {
        tags: ['admin'],
        summary: 'Delete a user’s account (audited; user.deleted is emitted)',
        description:
          'As `DELETE /api/auth/account` does for one’s own: sessions and app grants ended, memberships, sign-in methods, factors and tokens removed, personal data erased from the audit history, the account deleted. Your own account is deleted from your dashboard instead (409 SELF_DELETION_VIA_ADMIN).',
        security: [{ bearer: [] }],
        params: z.object({ id: z.string().min(1).max(64) }),
        response: {
          200: deleted,
          401: errorResponse.describe('No valid session (UNAUTHENTICATED)'),
          403: errorResponse.describe('Not an ADMIN now (FORBIDDEN), a second factor needed (STEP_UP_REQUIRED, REAUTH_REQUIRED), or CSRF_FAILED'),
          404: errorResponse.describe('No such user (NOT_FOUND)'),
          409: errorResponse.describe('SELF_DELETION_VIA_ADMIN, LAST_ADMIN, or ORGANIZATION_OWNERSHIP_TRANSFER_REQUIRED (the user must hand over an organization first)'),
        },
      },
    },
    async (request) => {
      const auth = signedIn(request);
      if (request.params.id === auth.userId) throw new AppError('SELF_DELETION_VIA_ADMIN');
      const result = await accountDeletion.deleteUser(request.params.id, requestSource(request, auth.userId));
      if (!result.ok) throw deletionRefusal(result);
      return { ok: true as const };
    },
  );
};
