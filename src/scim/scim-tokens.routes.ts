/**
 * Managing SCIM (JSON API): an organization's tokens and its group → role mappings.
 * - `/api/organizations/:id/scim-tokens` (list, create), `/:tokenId/rotate`, `DELETE /:tokenId`,
 *   and `/api/organizations/:id/scim-role-mappings` (read, replace): for the organization's
 *   OWNERs and ADMINs (signed in; to anyone else the organization does not exist, or their role is
 *   short: the organizations module's codes). Creating and rotating need a recent second factor
 *   when the caller has one.
 * - `/api/admin/organizations/:id/scim-tokens` (the same four): for Gatehouse administrators.
 * A token is in the answer to its creation or rotation only; it is never shown again.
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../errors.ts';
import { bodyErrorResponses, errorResponse } from '../http/schemas.ts';
import { access, signedIn, RECENT_SECOND_FACTOR } from '../authorization/access.ts';
import { requestSource } from '../audit/request-source.ts';
import { isoTime } from '../lib/clock.ts';
import { ADMIN_ROLE } from '../users/user.service.ts';
import { ADMIN, OPERATOR, OWNER } from '../organizations/organizations.model.ts';
import type { OrganizationsService } from '../organizations/organizations.service.ts';
import type { ScimToken, ScimTokensService } from './scim-tokens.service.ts';
import { SCIM_BASE_PATH } from './scim.routes.ts';

const tags = ['scim'];
const security = [{ bearer: [] }];
const params = z.object({ id: z.string().min(1).max(64) });
const tokenParams = params.extend({ tokenId: z.string().min(1).max(64) });
const errors = {
  401: errorResponse.describe('No valid session (UNAUTHENTICATED)'),
  403: errorResponse.describe('Not an OWNER or ADMIN of the organization (ORGANIZATION_ROLE_REQUIRED), FORBIDDEN, REAUTH_REQUIRED or CSRF_FAILED'),
  404: errorResponse.describe('No such organization among yours (ORGANIZATION_NOT_FOUND), or no such active token (SCIM_TOKEN_NOT_FOUND)'),
};
const tokenView = z
  .object({ id: z.string(), name: z.string().nullable(), createdBy: z.string().nullable(), createdAt: z.string(), lastUsedAt: z.string().nullable(), revokedAt: z.string().nullable() })
  .meta({ id: 'ScimToken' });
const issuedView = z.object({
  token: z.string().describe('The token, shown this once: the directory sends it as `Authorization: Bearer …`'),
  scimToken: tokenView,
  baseUrl: z.string().describe('The SCIM base URL to give the directory'),
});
const mappingsView = z.object({ mappings: z.array(z.object({ group: z.string().min(1).max(256), role: z.string().min(1).max(64) })).max(100) });

const toTokenJson = (token: ScimToken) => ({
  id: token.id,
  name: token.name,
  createdBy: token.createdBy,
  createdAt: isoTime(token.createdAt),
  lastUsedAt: token.lastUsedAt === null ? null : isoTime(token.lastUsedAt),
  revokedAt: token.revokedAt === null ? null : isoTime(token.revokedAt),
});

export const scimManagementRoutes: FastifyPluginAsyncZod<{ tokens: ScimTokensService; organizations: OrganizationsService; authUrl: string }> = async (app, { tokens, organizations, authUrl }) => {
  const baseUrl = `${authUrl}${SCIM_BASE_PATH}`;

  /** The organization, when the signed-in caller manages it (an OWNER or ADMIN of it; any organization for the admin API). */
  async function managed(request: FastifyRequest, organizationId: string, asAdmin: boolean): Promise<string> {
    const auth = signedIn(request);
    const found = await organizations.get(organizationId, asAdmin ? OPERATOR : { userId: auth.userId });
    if (found === null) throw new AppError('ORGANIZATION_NOT_FOUND');
    if (!asAdmin && found.role !== OWNER && found.role !== ADMIN) throw new AppError('ORGANIZATION_ROLE_REQUIRED');
    return found.organization.id;
  }

  for (const asAdmin of [false, true]) {
    const prefix = asAdmin ? '/api/admin/organizations/:id/scim-tokens' : '/api/organizations/:id/scim-tokens';
    const read = { access: asAdmin ? access.role(ADMIN_ROLE) : access.user() };
    const change = { access: asAdmin ? access.role(ADMIN_ROLE, { requires: [RECENT_SECOND_FACTOR] }) : access.user({ requires: [RECENT_SECOND_FACTOR] }) };
    const who = asAdmin ? ' (administrators)' : '';
    const id = asAdmin ? 'Admin' : '';
    // The admin API's routes are all tagged `admin`, whoever serves them.
    const tags = asAdmin ? ['admin'] : ['scim'];

    app.get(prefix, { config: read, schema: { tags, operationId: `list${id}ScimTokens`, summary: `List the SCIM tokens of an organization${who}`, security, params, response: { 200: z.object({ tokens: z.array(tokenView) }), ...errors } } }, async (request) => {
      const organizationId = await managed(request, request.params.id, asAdmin);
      return { tokens: (await tokens.list(organizationId)).map(toTokenJson) };
    });

    app.post(
      prefix,
      { config: change, schema: { tags, operationId: `create${id}ScimToken`, summary: `Create a SCIM token${who}`, description: 'The token is in this answer only.', security, params, body: z.object({ name: z.string().trim().min(1).max(200).optional() }).optional(), response: { 201: issuedView, 409: errorResponse.describe('SCIM_TOKEN_LIMIT_REACHED'), ...errors, ...bodyErrorResponses } } },
      async (request, reply) => {
        const organizationId = await managed(request, request.params.id, asAdmin);
        const result = await tokens.create(organizationId, request.body?.name ?? null, requestSource(request, signedIn(request).userId));
        if (!result.ok) throw new AppError(result.reason);
        return reply.code(201).send({ token: result.token, scimToken: toTokenJson(result.record), baseUrl });
      },
    );

    app.post(
      `${prefix}/:tokenId/rotate`,
      { config: change, schema: { tags, operationId: `rotate${id}ScimToken`, summary: `Rotate a SCIM token${who}`, description: 'A new token (in this answer only) replaces it; the old one stops working now.', security, params: tokenParams, response: { 200: issuedView, ...errors } } },
      async (request) => {
        const organizationId = await managed(request, request.params.id, asAdmin);
        const result = await tokens.rotate(organizationId, request.params.tokenId, requestSource(request, signedIn(request).userId));
        if (!result.ok) throw new AppError(result.reason);
        return { token: result.token, scimToken: toTokenJson(result.record), baseUrl };
      },
    );

    app.delete(
      `${prefix}/:tokenId`,
      { config: read, schema: { tags, operationId: `revoke${id}ScimToken`, summary: `Revoke a SCIM token${who}`, security, params: tokenParams, response: { 200: z.object({ ok: z.literal(true) }), ...errors } } },
      async (request) => {
        const organizationId = await managed(request, request.params.id, asAdmin);
        if (!(await tokens.revoke(organizationId, request.params.tokenId, requestSource(request, signedIn(request).userId)))) throw new AppError('SCIM_TOKEN_NOT_FOUND');
        return { ok: true as const };
      },
    );
  }

  const mappingsPath = '/api/organizations/:id/scim-role-mappings';
  app.get(mappingsPath, { config: { access: access.user() }, schema: { tags, summary: 'The group → role mappings of SCIM provisioning', security, params, response: { 200: mappingsView, ...errors } } }, async (request) => {
    const organizationId = await managed(request, request.params.id, false);
    return { mappings: await tokens.roleMappings(organizationId) };
  });
  app.put(
    mappingsPath,
    { config: { access: access.user({ requires: [RECENT_SECOND_FACTOR] }) }, schema: { tags, summary: 'Replace the group → role mappings', description: 'A provisioned member in a mapped group gets its role (ADMIN before custom roles before MEMBER); OWNER cannot be mapped.', security, params, body: mappingsView, response: { 200: mappingsView, ...errors, ...bodyErrorResponses, 400: errorResponse.describe('SCIM_ROLE_MAPPING_INVALID, or malformed JSON') } } },
    async (request) => {
      const organizationId = await managed(request, request.params.id, false);
      const result = await tokens.setRoleMappings(organizationId, request.body.mappings, requestSource(request, signedIn(request).userId));
      if (!result.ok) throw new AppError(result.reason);
      return { mappings: result.mappings };
    },
  );
};
