/**
 * The administrators' API of organizations (`/api/admin/organizations`, ADMIN as held now, like
 * every admin route; each route declares it): list with a search, show one with its members, delete one.
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { AppError } from '../errors.ts';
import { errorResponse, keysetCursorField } from '../http/schemas.ts';
import { decodeCursor, encodeCursor } from '../lib/keyset-cursor.ts';
import { access, signedIn } from '../authorization/access.ts';
import { requestSource } from '../audit/request-source.ts';
import { ADMIN_ROLE } from '../users/user.service.ts';
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
const config = { access: access.role(ADMIN_ROLE) };

export const adminOrganizationRoutes: FastifyPluginAsyncZod<{ organizations: OrganizationsService }> = async (app, { organizations }) => {
  app.get(
    ADMIN_ORGANIZATIONS_API,
    {
      config,
      schema: {
        tags,
        summary: 'List organizations',
        description:
          'Newest first, at most `limit` (default 100) a page; `nextCursor`, when not null, asks for the next (as `cursor`). `query`, case-insensitive: `acme` (or `acme*`) finds organizations where a word of the slug (after a hyphen) or of the name (after a space) starts with acme, `*acme` finds acme anywhere in either, `"Acme Inc"` the slug or whole name exactly; any other `*`, `%` or `_` is a character.',
        security,
        querystring: z.object({ query: queryText(200), cursor: keysetCursorField, limit: z.coerce.number().int().min(1).max(500).optional() }),
        response: { 200: z.object({ organizations: z.array(organizationView.extend({ memberCount: z.number() })), nextCursor: z.string().nullable() }), ...adminErrors },
      },
    },
    async (request) => {
      const { query, cursor, limit } = request.query;
      const page = await organizations.listPage({ query, before: cursor === undefined ? undefined : decodeCursor(cursor)!, limit: limit ?? 100 });
      return {
        organizations: page.organizations.map((organization) => ({ ...toOrganizationJson(organization), memberCount: organization.memberCount })),
        nextCursor: page.next === null ? null : encodeCursor(page.next),
      };
    },
  );

  app.get(
    `${ADMIN_ORGANIZATIONS_API}/:id`,
    { config, schema: { tags, summary: 'Show an organization with its members', security, params, response: { 200: z.object({ organization: organizationView, members: z.array(memberView) }), ...adminErrors, 404: errorResponse.describe('ORGANIZATION_NOT_FOUND') } } },
    async (request) => {
      const organization = await organizations.find(request.params.id);
      if (organization === null) throw new AppError('ORGANIZATION_NOT_FOUND');
      const members = (await organizations.listMembers(organization.id, OPERATOR)) ?? [];
      return { organization: toOrganizationJson(organization), members: members.map(toMemberJson) };
    },
  );

  app.delete(
    `${ADMIN_ORGANIZATIONS_API}/:id`,
    { config, schema: { tags, summary: 'Delete an organization', description: 'With its members and invitations; audited with the acting admin.', security, params, response: { 200: okView, ...adminErrors, 404: errorResponse.describe('ORGANIZATION_NOT_FOUND') } } },
    async (request) => {
      const source = requestSource(request, signedIn(request).userId);
      const organization = await organizations.find(request.params.id);
      if (organization === null) throw new AppError('ORGANIZATION_NOT_FOUND');
      const result = await organizations.delete(organization.id, OPERATOR, source);
      if (!result.ok) throw new AppError('ORGANIZATION_NOT_FOUND');
      return { ok: true as const };
    },
  );
};
