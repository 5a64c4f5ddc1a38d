/**
 * The administrators' API of organizations (`/api/admin/organizations`, ADMIN as held now, like
 * every admin route): list with a search, show one with its members, delete one.
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { AppError } from '../errors.ts';
import { errorResponse } from '../http/schemas.ts';
import { requireAdminApi } from '../authorization/admin-only.ts';
import type { RequestAuthenticator } from '../sessions/request-authentication.ts';
import { queryText } from '../web/page-query.ts';
import { OPERATOR, type OrganizationsService } from './organizations.service.ts';
import { memberView, okView, organizationView, toMemberJson, toOrganizationJson } from './organizations.schemas.ts';

export const ADMIN_ORGANIZATIONS_API = '/api/admin/organizations';

const adminErrors = {
  401: errorResponse.describe('No valid session (UNAUTHENTICATED)'),
  403: errorResponse.describe('Not an ADMIN (FORBIDDEN), or CSRF_FAILED'),
};
const tags = ['admin'];
const security = [{ bearer: [] }];
const params = z.object({ id: z.string().min(1).max(64).describe('Its id or slug') });

export const adminOrganizationRoutes: FastifyPluginAsyncZod<{ organizations: OrganizationsService; authenticate: RequestAuthenticator }> = async (app, { organizations, authenticate }) => {
  const actingAdmin = requireAdminApi(app, authenticate);

  app.get(
    ADMIN_ORGANIZATIONS_API,
    {
      schema: {
        tags,
        summary: 'List organizations',
        description: 'Newest first, at most `limit` (default 100); `query` matches part of the name or slug.',
        security,
        querystring: z.object({ query: queryText(200), limit: z.coerce.number().int().min(1).max(500).optional() }),
        response: { 200: z.object({ organizations: z.array(organizationView.extend({ memberCount: z.number() })) }), ...adminErrors },
      },
    },
    async (request) => {
      const list = await organizations.list({ query: request.query.query, limit: request.query.limit ?? 100 });
      return { organizations: list.map((organization) => ({ ...toOrganizationJson(organization), memberCount: organization.memberCount })) };
    },
  );

  app.get(
    `${ADMIN_ORGANIZATIONS_API}/:id`,
    { schema: { tags, summary: 'Show an organization with its members', security, params, response: { 200: z.object({ organization: organizationView, members: z.array(memberView) }), ...adminErrors, 404: errorResponse.describe('ORGANIZATION_NOT_FOUND') } } },
    async (request) => {
      const organization = await organizations.find(request.params.id);
      if (organization === null) throw new AppError('ORGANIZATION_NOT_FOUND');
      const members = (await organizations.listMembers(organization.id, OPERATOR)) ?? [];
      return { organization: toOrganizationJson(organization), members: members.map(toMemberJson) };
    },
  );

  app.delete(
    `${ADMIN_ORGANIZATIONS_API}/:id`,
    { schema: { tags, summary: 'Delete an organization', description: 'With its members and invitations; audited with the acting admin.', security, params, response: { 200: okView, ...adminErrors, 404: errorResponse.describe('ORGANIZATION_NOT_FOUND') } } },
    async (request, reply) => {
      const source = await actingAdmin(request, reply);
      const organization = await organizations.find(request.params.id);
      if (organization === null) throw new AppError('ORGANIZATION_NOT_FOUND');
      const result = await organizations.delete(organization.id, OPERATOR, source);
      if (!result.ok) throw new AppError('ORGANIZATION_NOT_FOUND');
      return { ok: true as const };
    },
  );
};
