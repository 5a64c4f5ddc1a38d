/**
 * Setup links over the API (sso-setup.service.ts):
 * - an organization's OWNERs: `/api/organizations/:id/sso-setup-links` (list, create) and
 *   `DELETE …/:linkId` (revoke);
 * - Gatehouse administrators (role ADMIN): the same under `/api/admin/organizations/:id/sso-setup-links`.
 * Creating one needs a recent use of the caller's second factor when they have one, as every
 * credential made over the API does. The link's URL is in the answer to its creation only.
 */
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { access, RECENT_SECOND_FACTOR, signedIn } from '../authorization/access.ts';
import { AppError } from '../errors.ts';
import { bodyErrorResponses, errorResponse } from '../http/schemas.ts';
import { requestSource } from '../audit/request-source.ts';
import { isoTime } from '../lib/clock.ts';
import { ADMIN_ROLE } from '../users/user.service.ts';
import { OPERATOR, type Actor } from '../organizations/organizations.model.ts';
import type { SsoService } from './sso.service.ts';
import type { SetupLink } from './sso-setup.service.ts';
import { SETUP_LINK_DEFAULT_DAYS, SETUP_LINK_MAX_DAYS } from './sso-setup.rules.ts';

const params = z.object({ id: z.string().min(1).max(64) });
const linkParams = params.extend({ linkId: z.string().min(1).max(64) });
const security = [{ bearer: [] }];
const linkView = z
  .object({
    id: z.string(),
    organizationId: z.string(),
    connectionId: z.string().describe('The connection the link sets up: an existing one, or the id it will create it with'),
    createdBy: z.string().nullable(),
    createdAt: z.iso.datetime(),
    expiresAt: z.iso.datetime(),
    revokedAt: z.iso.datetime().nullable(),
    lastUsedAt: z.iso.datetime().nullable(),
    status: z.enum(['active', 'expired', 'revoked']),
  })
  .meta({ id: 'SsoSetupLink' });
const createBody = z
  .object({
    expiresInDays: z.number().int().min(1).max(SETUP_LINK_MAX_DAYS).optional().describe(`How long the link works (default ${SETUP_LINK_DEFAULT_DAYS} days)`),
    connectionId: z.string().min(1).max(32).optional().describe('One of the organization’s connections for the link to change; without it, the link creates a new one'),
  })
  .optional();
const createdView = z.object({ url: z.string().describe('The link, shown this once: send it to the IT admin'), setupLink: linkView });
const refusals = {
  401: errorResponse.describe('UNAUTHENTICATED'),
  403: errorResponse.describe('Not the organization’s OWNER (ORGANIZATION_ROLE_REQUIRED), FORBIDDEN, REAUTH_REQUIRED'),
  404: errorResponse.describe('ORGANIZATION_NOT_FOUND, SSO_CONNECTION_NOT_FOUND, SSO_SETUP_LINK_NOT_FOUND'),
};

export const toLinkJson = (link: SetupLink) => ({
  id: link.id,
  organizationId: link.organizationId,
  connectionId: link.connectionId,
  createdBy: link.createdBy,
  createdAt: isoTime(link.createdAt),
  expiresAt: isoTime(link.expiresAt),
  revokedAt: link.revokedAt === null ? null : isoTime(link.revokedAt),
  lastUsedAt: link.lastUsedAt === null ? null : isoTime(link.lastUsedAt),
  status: link.status,
});

export const ssoSetupRoutes: FastifyPluginAsyncZod<{ sso: SsoService }> = async (app, { sso }) => {
  for (const asAdmin of [false, true]) {
    const base = asAdmin ? '/api/admin/organizations/:id/sso-setup-links' : '/api/organizations/:id/sso-setup-links';
    const read = { access: asAdmin ? access.role(ADMIN_ROLE) : access.user() };
    const change = { access: asAdmin ? access.role(ADMIN_ROLE, { requires: [RECENT_SECOND_FACTOR] }) : access.user({ requires: [RECENT_SECOND_FACTOR] }) };
    const tags = asAdmin ? ['admin', 'sso'] : ['sso'];
    const who = asAdmin ? ' (administrators)' : ' (OWNER)';
    const id = asAdmin ? 'Admin' : '';
    const actor = (request: FastifyRequest): Actor => (asAdmin ? OPERATOR : { userId: signedIn(request).userId });
    const source = (request: FastifyRequest) => requestSource(request, signedIn(request).userId);

    app.get(base, { config: read, schema: { tags, security, operationId: `list${id}SsoSetupLinks`, summary: `The organization’s SSO setup links${who}`, params, response: { 200: z.object({ setupLinks: z.array(linkView) }), ...refusals } } }, async (request) => {
      const listed = await sso.setup.list(request.params.id, actor(request));
      if (!listed.ok) throw new AppError(listed.reason);
      return { setupLinks: listed.links.map(toLinkJson) };
    });

    app.post(
      base,
      {
        config: change,
        schema: {
          tags,
          security,
          operationId: `create${id}SsoSetupLink`,
          summary: `Create an SSO setup link for the organization’s IT admin${who}`,
          description:
            'The link opens a guided page (no Gatehouse account needed) where the IT admin sees our SP values, enters the IdP’s metadata or OIDC client, tests a sign-in, verifies the domain and creates the SCIM token, for this organization only. Its URL is in this answer only; audited as `sso.setup_link_created`.',
          params,
          body: createBody,
          response: { 201: createdView, ...refusals, ...bodyErrorResponses },
        },
      },
      async (request, reply) => {
        const created = await sso.setup.create(request.params.id, request.body ?? {}, actor(request), source(request));
        if (!created.ok) throw new AppError(created.reason);
        return reply.code(201).send({ url: created.url, setupLink: toLinkJson(created.link) });
      },
    );

    app.delete(`${base}/:linkId`, { config: read, schema: { tags, security, operationId: `revoke${id}SsoSetupLink`, summary: `Revoke an SSO setup link${who}`, description: 'The link stops working now; audited as `sso.setup_link_revoked`.', params: linkParams, response: { 200: z.object({ ok: z.literal(true) }), ...refusals } } }, async (request) => {
      const revoked = await sso.setup.revoke(request.params.id, request.params.linkId, actor(request), source(request));
      if (!revoked.ok) throw new AppError(revoked.reason);
      return { ok: true as const };
    });
  }
};
