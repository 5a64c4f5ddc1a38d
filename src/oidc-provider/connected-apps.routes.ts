/**
 * An administrator revokes a user's connected app (the user's grants, tokens and remembered
 * consent for it), from the admin's page of the user or the admin API:
 * - `POST /admin/users/:id/connected-apps/:clientId/revoke` (the form of the "Connected apps"
 *   section, CSRF-protected as every form post is), back to the user's page;
 * - `POST /api/admin/users/:id/connected-apps/:clientId/revoke` (bearer), `{ ok, revoked }`.
 * A current ADMIN only, with a recent second factor if they have one (as every admin change to a
 * user); audited `oidc_app.disconnected` with the administrator as actor.
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { access, RECENT_SECOND_FACTOR, signedIn } from '../authorization/access.ts';
import { AppError } from '../errors.ts';
import { requestSource } from '../audit/request-source.ts';
import { ADMIN_ROLE, type UserService } from '../users/user.service.ts';
import type { OidcProviderService } from './oidc-provider.service.ts';

const hidden = { hide: true } as const;

export const adminConnectedAppRoutes: FastifyPluginAsyncZod<{ oidc: OidcProviderService; users: UserService }> = async (app, { oidc, users }) => {
  const adminChange = { access: access.role(ADMIN_ROLE, { requires: [RECENT_SECOND_FACTOR] }) };
  for (const [path, isApi] of [['/admin/users/:id/connected-apps/:clientId/revoke', false], ['/api/admin/users/:id/connected-apps/:clientId/revoke', true]] as const) {
    app.post(
      path,
      {
        config: adminChange,
        schema: {
          ...(isApi ? { tags: ['admin'], summary: "Revoke a user's connected app: its grants, tokens and remembered consent (audited)", security: [{ bearer: [] }] } : hidden),
          params: z.object({ id: z.string().max(64), clientId: z.string().min(1).max(255) }),
          ...(isApi
            ? { response: { 200: z.object({ ok: z.literal(true), revoked: z.boolean().describe('false: the user had given the app nothing to revoke') }), 404: z.object({ error: z.string(), message: z.string() }).describe('NOT_FOUND') } }
            : { body: z.object({ csrfToken: z.string().max(200).optional() }).optional() }),
        },
      },
      async (request, reply) => {
        const user = await users.findUserById(request.params.id);
        if (user === null) throw new AppError('NOT_FOUND');
        const revoked = await oidc.disconnect(user.id, request.params.clientId, requestSource(request, signedIn(request).userId));
        return isApi ? { ok: true as const, revoked } : reply.redirect(`/admin/users/${encodeURIComponent(user.id)}#oidc-admin-apps-heading`, 303);
      },
    );
  }
};
