/**
 * What an administrator sees and does of a user's trusted browsers (a stolen laptop, say):
 * - the section of the admin's page of a user: how many browsers skip their second factor, and
 *   "Forget all" when there are any;
 * - `POST /admin/users/:id/trusted-devices/forget-all` (that form, back to the user's page) and
 *   `POST /api/admin/users/:id/trusted-devices/forget-all` (bearer): `{ok, forgotten}`.
 * A current ADMIN, with a recent second factor if they have one (as every admin change to a user);
 * audited `trusted_device.forgotten` with the administrator as actor.
 */
import { join } from 'node:path';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { access, RECENT_SECOND_FACTOR, signedIn } from '../authorization/access.ts';
import { AppError } from '../errors.ts';
import { requestSource } from '../audit/request-source.ts';
import { ADMIN_ROLE, type UserService } from '../users/user.service.ts';
import { createPageRenderer, templatesIn } from '../web/render.ts';
import type { PageSection } from '../module.ts';
import type { TrustedDevicesService } from './trusted-devices.service.ts';

interface AdminPages {
  'trusted-devices-admin-section': { userId: string; count: number };
}

export function trustedDevicesAdminSection(trustedDevices: TrustedDevicesService): PageSection {
  const pages = createPageRenderer<AdminPages>(templatesIn(join(import.meta.dirname, 'templates')));
  return {
    page: 'admin-user',
    async render({ userId, page }) {
      if (userId === null) return null;
      const count = (await trustedDevices.list(userId)).length;
      return pages.html(page, 'trusted-devices-admin-section', { title: '', userId, count });
    },
  };
}

export const trustedDevicesAdminRoutes: FastifyPluginAsyncZod<{ trustedDevices: TrustedDevicesService; users: UserService }> = async (app, { trustedDevices, users }) => {
  const adminChange = { access: access.role(ADMIN_ROLE, { requires: [RECENT_SECOND_FACTOR] }) };
  for (const [path, isApi] of [['/admin/users/:id/trusted-devices/forget-all', false], ['/api/admin/users/:id/trusted-devices/forget-all', true]] as const) {
    app.post(
      path,
      {
        config: adminChange,
        schema: {
          ...(isApi ? { tags: ['admin'], summary: "Forget every trusted browser of a user: their next sign-ins ask for the second factor (audited)", security: [{ bearer: [] }] } : { hide: true }),
          params: z.object({ id: z.string().max(64) }),
          ...(isApi
            ? { response: { 200: z.object({ ok: z.literal(true), forgotten: z.number().int() }), 404: z.object({ error: z.string(), message: z.string() }).describe('NOT_FOUND') } }
            : { body: z.object({ csrfToken: z.string().max(200).optional() }).optional() }),
        },
      },
      async (request, reply) => {
        const user = await users.findUserById(request.params.id);
        if (user === null) throw new AppError('NOT_FOUND');
        const forgotten = await trustedDevices.forgetAll(user.id, requestSource(request, signedIn(request).userId));
        return isApi ? { ok: true as const, forgotten } : reply.redirect(`/admin/users/${encodeURIComponent(user.id)}#trusted-devices-admin-heading`, 303);
      },
    );
  }
};
