/**
 * The organizations API (JSON, signed in: Bearer, or the session cookie with a CSRF token):
 * - `/api/organizations`: list yours, create one;
 * - `/api/organizations/:id`: show, rename, delete; `/members`: list, change a role, remove;
 *   `/leave`, `/transfer`; `/invitations`: list pending, invite, revoke;
 * - `/api/organizations/invitations`: the invitations to your verified address; `/accept`, `/decline`;
 * - `/api/organizations/active` and `/api/organizations/:id/activate`: the session's active
 *   organization, answered with a new access token that carries the `org` claim.
 * To someone who is not a member, an organization does not exist (404 ORGANIZATION_NOT_FOUND).
 * Every route is for a signed-in user (`access.user()`); the role a member holds in an organization
 * is the organizations service's to check.
 * The members and invitations routes live in organizations-members.routes.ts and
 * organizations-invitations.routes.ts; this plugin adds them, in the order the document lists them.
 */
import { z } from 'zod';
import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { AppError } from '../errors.ts';
import type { Config } from '../config.ts';
import { bodyErrorResponses, errorResponse } from '../http/schemas.ts';
import type { RequestAuth } from '../sessions/request-authentication.ts';
import type { SessionService } from '../sessions/session.service.ts';
import { setAccessCookie } from '../sessions/session-cookie.ts';
import { isoTime, type Clock } from '../lib/clock.ts';
import type { Membership, OrganizationsService } from './organizations.service.ts';
import {
  activeBody,
  activeView,
  createBody,
  membershipView,
  noBody,
  okView,
  organizationParams,
  organizationView,
  refusal,
  signedInErrors,
  toMembershipJson,
  toOrganizationJson,
  updateBody,
} from './organizations.schemas.ts';
import { caller, config, currentUser, security, tags, type OrganizationRouteOptions } from './organizations-routes.shared.ts';
import { registerMemberRoutes } from './organizations-members.routes.ts';
import { registerOrganizationInvitationRoutes, registerReceivedInvitationRoutes } from './organizations-invitations.routes.ts';

export type { OrganizationRouteOptions } from './organizations-routes.shared.ts';

type AccessToken = { accessToken: string; accessTokenExpiresAt: number };

/** Sets the active organization (null clears it) and gives the session a token that says so. */
export async function activateAndReissue(
  deps: { organizations: OrganizationsService; sessions: SessionService; config: Config; clock: Clock },
  auth: RequestAuth,
  reply: FastifyReply,
  organizationId: string | null,
): Promise<{ organization: Membership | null; access: AccessToken }> {
  // The active organization is a session's: a credential without one (an API key, say) has none to set.
  if ((await deps.sessions.describeSession(auth)) === null) throw new AppError('FORBIDDEN');
  const result = await deps.organizations.activate(auth, organizationId);
  if (!result.ok) throw refusal(result);
  // Re-signed for the live session (roles, amr, auth_time, every module's claims): the jwt
  // strategy's token carries the new `org` at once.
  const access = await deps.sessions.reissueAccessToken(auth);
  if (access === null) throw new AppError('UNAUTHENTICATED');
  if (auth.via === 'cookie') setAccessCookie(reply, deps.config, access, deps.clock());
  return { organization: result.organization, access };
}

export const organizationRoutes: FastifyPluginAsyncZod<OrganizationRouteOptions> = async (app, options) => {
  const { organizations, users } = options;

  app.get(
    '/api/organizations',
    { config, schema: { tags, summary: 'List your organizations', description: 'With your role in each, and which one is active in this session.', security, response: { 200: z.object({ organizations: z.array(membershipView) }), 401: signedInErrors[401] } } },
    async (request) => {
      const { auth } = caller(request);
      return { organizations: (await organizations.listFor(auth.userId, auth.sessionId)).map(toMembershipJson) };
    },
  );

  app.post(
    '/api/organizations',
    {
      config,
      schema: {
        tags,
        summary: 'Create an organization',
        description: 'You become its first OWNER. Who may create one is ALLOW_ORGANIZATION_CREATION (default: users with a verified e-mail address); the slug is made from the name when not given.',
        security,
        body: createBody,
        response: {
          201: z.object({ organization: membershipView }),
          ...bodyErrorResponses,
          401: signedInErrors[401],
          403: errorResponse.describe('You may not create organizations (ORGANIZATION_CREATION_DISABLED), or CSRF_FAILED'),
          409: errorResponse.describe('The slug is taken (SLUG_TAKEN), or you own as many organizations as you may (ORGANIZATION_LIMIT_REACHED)'),
        },
      },
    },
    async (request, reply) => {
      const { auth, source } = caller(request);
      const user = await currentUser(users, auth.userId);
      const result = await organizations.create(request.body, auth.userId, source, { policyFor: user });
      if (!result.ok) throw refusal(result);
      return reply.code(201).send({ organization: toMembershipJson({ ...result.organization, role: 'OWNER', joinedAt: result.organization.createdAt, isActive: false }) });
    },
  );

  registerReceivedInvitationRoutes(app, options);

  const activeResponse = { 200: activeView, ...bodyErrorResponses, 401: signedInErrors[401], 403: errorResponse.describe('CSRF_FAILED'), 404: signedInErrors[404] };
  const answerActive = ({ organization, access }: Awaited<ReturnType<typeof activateAndReissue>>, reply: FastifyReply) => {
    reply.header('cache-control', 'no-store');
    return { organization: organization === null ? null : toMembershipJson(organization), token: access.accessToken, expiresAt: isoTime(access.accessTokenExpiresAt) };
  };

  app.post(
    '/api/organizations/active',
    {
      config,
      schema: {
        tags,
        summary: 'Set or clear the active organization of this session',
        description:
          'Access tokens of this session then carry `org: {id, slug, roles}` (your role in it) while you are a member. Answers with a new access token that says so at once (a browser gets it as its access cookie); `organizationId: null` clears it.',
        security,
        body: activeBody,
        response: activeResponse,
      },
    },
    async (request, reply) => {
      const { auth } = caller(request);
      return answerActive(await activateAndReissue(options, auth, reply, request.body.organizationId), reply);
    },
  );

  app.post(
    '/api/organizations/:id/activate',
    {
      config,
      schema: { tags, summary: 'Make this organization active in this session', description: 'As `POST /api/organizations/active` with its id.', security, params: organizationParams, body: noBody, response: activeResponse },
    },
    async (request, reply) => {
      const { auth } = caller(request);
      return answerActive(await activateAndReissue(options, auth, reply, request.params.id), reply);
    },
  );

  app.get(
    '/api/organizations/:id',
    { config, schema: { tags, summary: 'Show one of your organizations', security, params: organizationParams, response: { 200: z.object({ organization: organizationView, role: z.string() }), ...signedInErrors } } },
    async (request) => {
      const { actor } = caller(request);
      const found = await organizations.get(request.params.id, actor);
      if (found === null) throw new AppError('ORGANIZATION_NOT_FOUND');
      return { organization: toOrganizationJson(found.organization), role: found.role! };
    },
  );

  app.patch(
    '/api/organizations/:id',
    {
      config,
      schema: {
        tags,
        summary: 'Rename an organization, or change its slug',
        description: 'OWNER or ADMIN.',
        security,
        params: organizationParams,
        body: updateBody,
        response: { 200: z.object({ organization: organizationView }), ...bodyErrorResponses, ...signedInErrors, 409: errorResponse.describe('The slug is taken (SLUG_TAKEN)') },
      },
    },
    async (request) => {
      const { actor, source } = caller(request);
      const result = await organizations.update(request.params.id, actor, request.body, source);
      if (!result.ok) throw refusal(result);
      return { organization: toOrganizationJson(result.organization) };
    },
  );

  app.delete(
    '/api/organizations/:id',
    { config, schema: { tags, summary: 'Delete an organization', description: 'OWNER only: its members, invitations and every session\'s choice of it go with it.', security, params: organizationParams, response: { 200: okView, ...signedInErrors } } },
    async (request) => {
      const { actor, source } = caller(request);
      const result = await organizations.delete(request.params.id, actor, source);
      if (!result.ok) throw refusal(result);
      return { ok: true as const };
    },
  );

  registerMemberRoutes(app, options);
  registerOrganizationInvitationRoutes(app, options);
};
