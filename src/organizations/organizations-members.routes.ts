/**
 * The organizations API's members routes: `/api/organizations/:id/members` (list, change a role,
 * remove), `/leave` and `/transfer`. Added by `organizationRoutes` (organizations.routes.ts).
 */
import { z } from 'zod';
import { AppError } from '../errors.ts';
import { bodyErrorResponses, errorResponse } from '../http/schemas.ts';
import {
  memberParams,
  memberView,
  noBody,
  okView,
  organizationParams,
  refusal,
  roleBody,
  signedInErrors,
  toMemberJson,
  transferBody,
} from './organizations.schemas.ts';
import { caller, config, security, tags, type OrganizationRouteOptions, type OrganizationsApp } from './organizations-routes.shared.ts';

export function registerMemberRoutes(app: OrganizationsApp, { organizations }: OrganizationRouteOptions): void {
  app.get(
    '/api/organizations/:id/members',
    { config, schema: { tags, summary: 'List the members', description: 'Any member may.', security, params: organizationParams, response: { 200: z.object({ members: z.array(memberView) }), ...signedInErrors } } },
    async (request) => {
      const { actor } = caller(request);
      const members = await organizations.listMembers(request.params.id, actor);
      if (members === null) throw new AppError('ORGANIZATION_NOT_FOUND');
      return { members: members.map(toMemberJson) };
    },
  );

  const memberErrors = {
    ...signedInErrors,
    404: errorResponse.describe('No such organization among yours (ORGANIZATION_NOT_FOUND), or no such member (MEMBER_NOT_FOUND)'),
    409: errorResponse.describe('The organization would be left without an OWNER (LAST_OWNER)'),
  };

  app.patch(
    '/api/organizations/:id/members/:userId',
    {
      config,
      schema: {
        tags,
        summary: 'Change a member\'s role',
        description: 'OWNER or ADMIN; only an OWNER grants OWNER or changes an OWNER\'s role. The last OWNER keeps theirs (409 LAST_OWNER). Tokens show the new role from their next refresh (jwt strategy).',
        security,
        params: memberParams,
        body: roleBody,
        response: { 200: z.object({ member: memberView }), ...bodyErrorResponses, ...memberErrors },
      },
    },
    async (request) => {
      const { actor, source } = caller(request);
      const result = await organizations.setRole(request.params.id, actor, request.params.userId, request.body.role, source);
      if (!result.ok) throw refusal(result);
      return { member: toMemberJson(result.member) };
    },
  );

  app.delete(
    '/api/organizations/:id/members/:userId',
    {
      config,
      schema: {
        tags,
        summary: 'Remove a member',
        description: 'OWNER or ADMIN (an ADMIN cannot remove an OWNER); your own id leaves. The last OWNER stays (409 LAST_OWNER).',
        security,
        params: memberParams,
        response: { 200: okView, ...memberErrors },
      },
    },
    async (request) => {
      const { actor, source } = caller(request);
      const result = await organizations.removeMember(request.params.id, actor, request.params.userId, source);
      if (!result.ok) throw refusal(result);
      return { ok: true as const };
    },
  );

  app.post(
    '/api/organizations/:id/leave',
    { config, schema: { tags, summary: 'Leave an organization', description: 'The last OWNER cannot (409 LAST_OWNER): transfer ownership or delete it first.', security, params: organizationParams, body: noBody, response: { 200: okView, ...bodyErrorResponses, ...memberErrors } } },
    async (request) => {
      const { auth, source } = caller(request);
      const result = await organizations.leave(request.params.id, auth.userId, source);
      if (!result.ok) throw refusal(result);
      return { ok: true as const };
    },
  );

  app.post(
    '/api/organizations/:id/transfer',
    {
      config,
      schema: {
        tags,
        summary: 'Transfer ownership',
        description: 'OWNER only: the member named becomes OWNER and you become ADMIN.',
        security,
        params: organizationParams,
        body: transferBody,
        response: { 200: z.object({ member: memberView }), ...bodyErrorResponses, ...memberErrors, 409: errorResponse.describe('You named yourself (ALREADY_MEMBER)') },
      },
    },
    async (request) => {
      const { auth, source } = caller(request);
      const result = await organizations.transferOwnership(request.params.id, { userId: auth.userId }, request.body.userId, source);
      if (!result.ok) throw refusal(result);
      return { member: toMemberJson(result.member) };
    },
  );
}
