/**
 * Managing SSO connections over the API:
 * - an organization's OWNERs and ADMINs: `/api/organizations/:id/sso-connections[/:connectionId]`;
 * - Gatehouse administrators (role ADMIN): `/api/admin/sso-connections[/:connectionId]`, any organization.
 * Changes (create, update, delete) need a recent use of the caller's second factor when they have
 * one (RECENT_SECOND_FACTOR), as the other administrative changes do. Answers never carry a private
 * key or a client secret; the SP's values to paste at the IdP are in `serviceProvider`.
 */
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { access, RECENT_SECOND_FACTOR, signedIn } from '../authorization/access.ts';
import { AppError } from '../errors.ts';
import { errorResponse } from '../http/schemas.ts';
import { requestSource } from '../audit/request-source.ts';
import { isoTime } from '../lib/clock.ts';
import { ADMIN_ROLE } from '../users/user.service.ts';
import type { OrganizationsService } from '../organizations/organizations.service.ts';
import { oidcRedirectUri, samlEndpoints } from './sso-endpoints.ts';
import { connectionChanges, connectionInput, type Connection } from './sso.model.ts';
import type { SsoService } from './sso.service.ts';
import type { ConnectionResult } from './sso-connections.ts';

export interface SsoAdminRouteOptions {
  sso: SsoService;
  organizations: OrganizationsService;
  authUrl: string;
}

const connectionView = z
  .object({
    id: z.string(),
    organizationId: z.string(),
    name: z.string(),
    protocol: z.enum(['saml', 'oidc']),
    enforce: z.boolean(),
    idpInitiated: z.boolean(),
    defaultRole: z.string(),
    mapping: z.object({ email: z.string(), name: z.string(), groups: z.string() }),
    groupRoles: z.array(z.object({ group: z.string(), role: z.string() })),
    identityProvider: z.object({
      entityId: z.string().optional(),
      ssoUrl: z.string().optional(),
      metadataUrl: z.string().nullable().optional(),
      certificateCount: z.number().optional(),
      issuer: z.string().optional(),
      clientId: z.string().optional(),
    }),
    serviceProvider: z
      .object({
        entityId: z.string().optional(),
        acsUrl: z.string().optional(),
        metadataUrl: z.string().optional(),
        signingCertificate: z.string().optional(),
        encryptionCertificate: z.string().optional(),
        redirectUri: z.string().optional(),
      })
      .describe('What to paste at the identity provider'),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .meta({ id: 'SsoConnection' });

const listView = z.object({ connections: z.array(connectionView) }).meta({ id: 'SsoConnections' });
// `:id`, as every other route under /api/organizations/:id names it (one router node, one name).
const orgParams = z.object({ id: z.string().min(1).max(64) });
const orgConnectionParams = orgParams.extend({ connectionId: z.string().min(1).max(32) });
const connectionParams = z.object({ connectionId: z.string().min(1).max(32) });
const adminCreate = z.intersection(z.object({ organizationId: z.string().min(1).max(64) }), connectionInput);
const tags = ['sso'];
/** The administrators' routes: under the admin tag first, as every /api/admin route is. */
const adminTags = ['admin', 'sso'];
const security = [{ bearer: [] }];

export function toView(connection: Connection, authUrl: string, oidcRedirectUri: string): z.infer<typeof connectionView> {
  const { saml, oidc, mapping, groupRoles } = connection.settings;
  const sp = samlEndpoints(authUrl, connection.id);
  return {
    id: connection.id,
    organizationId: connection.organizationId,
    name: connection.name,
    protocol: connection.protocol,
    enforce: connection.enforce,
    idpInitiated: connection.idpInitiated,
    defaultRole: connection.defaultRole,
    mapping,
    groupRoles,
    identityProvider:
      saml !== undefined
        ? { entityId: saml.idpEntityId, ssoUrl: saml.idpSsoUrl, metadataUrl: saml.metadataUrl, certificateCount: saml.idpCertificates.length }
        : { issuer: oidc?.issuer ?? '', clientId: oidc?.clientId ?? '' },
    serviceProvider:
      saml !== undefined
        ? { entityId: sp.entityId, acsUrl: sp.acsUrl, metadataUrl: sp.metadataUrl, signingCertificate: saml.spSigningCert, encryptionCertificate: saml.spEncryptionCert }
        : { redirectUri: oidcRedirectUri },
    createdAt: isoTime(connection.createdAt),
    updatedAt: isoTime(connection.updatedAt),
  };
}

function unwrap(result: ConnectionResult): Connection {
  if (result.ok) return result.connection;
  if (result.reason === 'SSO_INVALID_CONNECTION') throw new AppError('SSO_INVALID_CONNECTION', { message: result.message });
  throw new AppError(result.reason);
}

export const ssoAdminRoutes: FastifyPluginAsyncZod<SsoAdminRouteOptions> = async (app, options) => {
  const { sso, organizations, authUrl } = options;
  const view = (connection: Connection) => toView(connection, authUrl, oidcRedirectUri(authUrl, connection.id));
  const source = (request: FastifyRequest) => requestSource(request, signedIn(request).userId);
  const forMembers = { access: access.user() };
  const forMembersRecentlyVerified = { access: access.user({ requires: [RECENT_SECOND_FACTOR] }) };
  const forAdmins = { access: access.role(ADMIN_ROLE) };
  const forAdminsRecentlyVerified = { access: access.role(ADMIN_ROLE, { requires: [RECENT_SECOND_FACTOR] }) };
  const refusals = { 401: errorResponse.describe('UNAUTHENTICATED'), 403: errorResponse.describe('FORBIDDEN, ORGANIZATION_ROLE_REQUIRED, REAUTH_REQUIRED'), 404: errorResponse.describe('ORGANIZATION_NOT_FOUND, SSO_CONNECTION_NOT_FOUND') };
  const invalid = { 422: errorResponse.describe('VALIDATION_ERROR, SSO_INVALID_CONNECTION (the IdP metadata cannot be read, a URL outside the outbound rules)') };

  /** The organization, when the caller manages it (OWNER or ADMIN there). */
  async function managed(request: FastifyRequest, organizationId: string): Promise<void> {
    const found = await organizations.get(organizationId, { userId: signedIn(request).userId });
    if (found === null) throw new AppError('ORGANIZATION_NOT_FOUND');
    if (found.role !== 'OWNER' && found.role !== 'ADMIN') throw new AppError('ORGANIZATION_ROLE_REQUIRED');
  }
  async function inOrganization(organizationId: string, connectionId: string): Promise<Connection> {
    const connection = await sso.connections.get(connectionId);
    if (connection === null || connection.organizationId !== organizationId) throw new AppError('SSO_CONNECTION_NOT_FOUND');
    return connection;
  }
  async function anyConnection(connectionId: string): Promise<Connection> {
    const connection = await sso.connections.get(connectionId);
    if (connection === null) throw new AppError('SSO_CONNECTION_NOT_FOUND');
    return connection;
  }

  // --- An organization's own managers --------------------------------------------------------
  const orgBase = '/api/organizations/:id/sso-connections';
  app.get(orgBase, { config: forMembers, schema: { tags, security, summary: 'The organization’s SSO connections (OWNER or ADMIN)', params: orgParams, response: { 200: listView, ...refusals } } }, async (request) => {
    await managed(request, request.params.id);
    return { connections: (await sso.connections.list(request.params.id)).map(view) };
  });
  app.post(orgBase, { config: forMembersRecentlyVerified, schema: { tags, security, summary: 'Add an SSO connection (SAML or OpenID Connect) to the organization', params: orgParams, body: connectionInput, response: { 201: connectionView, ...refusals, ...invalid } } }, async (request, reply) => {
    await managed(request, request.params.id);
    return reply.code(201).send(view(unwrap(await sso.connections.create(request.params.id, request.body, source(request)))));
  });
  app.get(`${orgBase}/:connectionId`, { config: forMembers, schema: { tags, security, summary: 'One SSO connection of the organization', params: orgConnectionParams, response: { 200: connectionView, ...refusals } } }, async (request) => {
    await managed(request, request.params.id);
    return view(await inOrganization(request.params.id, request.params.connectionId));
  });
  app.patch(`${orgBase}/:connectionId`, { config: forMembersRecentlyVerified, schema: { tags, security, summary: 'Change an SSO connection of the organization', params: orgConnectionParams, body: connectionChanges, response: { 200: connectionView, ...refusals, ...invalid } } }, async (request) => {
    await managed(request, request.params.id);
    await inOrganization(request.params.id, request.params.connectionId);
    return view(unwrap(await sso.connections.update(request.params.connectionId, request.body, source(request))));
  });
  app.delete(`${orgBase}/:connectionId`, { config: forMembersRecentlyVerified, schema: { tags, security, summary: 'Delete an SSO connection of the organization', params: orgConnectionParams, response: { 200: z.object({ ok: z.literal(true) }), ...refusals } } }, async (request) => {
    await managed(request, request.params.id);
    await inOrganization(request.params.id, request.params.connectionId);
    const deleted = await sso.connections.delete(request.params.connectionId, source(request));
    if (!deleted.ok) throw new AppError(deleted.reason);
    return { ok: true as const };
  });

  // --- Gatehouse administrators ---------------------------------------------------------------
  const adminBase = '/api/admin/sso-connections';
  app.get(adminBase, { config: forAdmins, schema: { tags: adminTags, security, summary: 'Every SSO connection, or one organization’s (ADMIN)', querystring: z.object({ organizationId: z.string().max(64).optional() }), response: { 200: listView, ...refusals } } }, async (request) => ({
    connections: (await sso.connections.list(request.query.organizationId)).map(view),
  }));
  app.post(adminBase, { config: forAdminsRecentlyVerified, schema: { tags: adminTags, security, summary: 'Add an SSO connection to an organization (ADMIN)', body: adminCreate, response: { 201: connectionView, ...refusals, ...invalid } } }, async (request, reply) => {
    const { organizationId, ...input } = request.body;
    return reply.code(201).send(view(unwrap(await sso.connections.create(organizationId, input as typeof connectionInput._output, source(request)))));
  });
  app.get(`${adminBase}/:connectionId`, { config: forAdmins, schema: { tags: adminTags, security, summary: 'One SSO connection (ADMIN)', params: connectionParams, response: { 200: connectionView, ...refusals } } }, async (request) => view(await anyConnection(request.params.connectionId)));
  app.patch(`${adminBase}/:connectionId`, { config: forAdminsRecentlyVerified, schema: { tags: adminTags, security, summary: 'Change an SSO connection (ADMIN)', params: connectionParams, body: connectionChanges, response: { 200: connectionView, ...refusals, ...invalid } } }, async (request) =>
    view(unwrap(await sso.connections.update(request.params.connectionId, request.body, source(request)))),
  );
  app.delete(`${adminBase}/:connectionId`, { config: forAdminsRecentlyVerified, schema: { tags: adminTags, security, summary: 'Delete an SSO connection (ADMIN)', params: connectionParams, response: { 200: z.object({ ok: z.literal(true) }), ...refusals } } }, async (request) => {
    const deleted = await sso.connections.delete(request.params.connectionId, source(request));
    if (!deleted.ok) throw new AppError(deleted.reason);
    return { ok: true as const };
  });
};
