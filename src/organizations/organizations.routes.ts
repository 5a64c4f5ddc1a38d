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
 */
import { z } from 'zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { access, signedIn } from '../authorization/access.ts';
import { AppError } from '../errors.ts';
import type { Config } from '../config.ts';
import { bodyErrorResponses, errorResponse } from '../http/schemas.ts';
import type { RequestAuth } from '../sessions/request-authentication.ts';
import type { SessionService } from '../sessions/session.service.ts';
import { setAccessCookie } from '../sessions/session-cookie.ts';
import { requestSource } from '../audit/request-source.ts';
import type { UserService } from '../users/user.service.ts';
import { isoTime, type Clock } from '../lib/clock.ts';
import type { Membership, OrganizationsService } from './organizations.service.ts';
import {
  activeBody,
  activeView,
  createBody,
  invitationParams,
  invitationPreviewView,
  invitationRefBody,
  invitationView,
  inviteBody,
  memberParams,
  memberView,
  membershipView,
  noBody,
  okView,
  organizationParams,
  organizationView,
  refusal,
  roleBody,
  signedInErrors,
  toInvitationJson,
  toInvitationPreviewJson,
  toMemberJson,
  toMembershipJson,
  toOrganizationJson,
  transferBody,
  updateBody,
} from './organizations.schemas.ts';

export interface OrganizationRouteOptions {
  organizations: OrganizationsService;
  users: UserService;
  sessions: SessionService;
  config: Config;
  clock: Clock;
}

type AccessToken = { accessToken: string; accessTokenExpiresAt: number };

/** Sets the active organization (null clears it) and gives the session a token that says so. */
export async function activateAndReissue(
  deps: { organizations: OrganizationsService; sessions: SessionService; config: Config; clock: Clock },
  auth: RequestAuth,
  reply: FastifyReply,
  organizationId: string | null,
): Promise<{ organization: Membership | null; access: AccessToken }> {
  const result = await deps.organizations.activate(auth, organizationId);
  if (!result.ok) throw refusal(result);
  // Re-signed for the live session (roles, amr, auth_time, every module's claims): the jwt
  // strategy's token carries the new `org` at once.
  const access = await deps.sessions.reissueAccessToken(auth);
  if (access === null) throw new AppError('UNAUTHENTICATED');
  if (auth.via === 'cookie') setAccessCookie(reply, deps.config, access, deps.clock());
  return { organization: result.organization, access };
}

const tags = ['organizations'];
const security = [{ bearer: [] }];
const config = { access: access.user() };

export const organizationRoutes: FastifyPluginAsyncZod<OrganizationRouteOptions> = async (app, options) => {
  const { organizations, users } = options;

  /** The signed-in caller: as the service's actor, and as the audit log's source. */
  function caller(request: FastifyRequest) {
    const auth = signedIn(request);
    return { auth, actor: { userId: auth.userId }, source: requestSource(request, auth.userId) };
  }

  async function currentUser(userId: string) {
    const user = await users.findUserById(userId);
    if (user === null) throw new AppError('UNAUTHENTICATED');
    return user;
  }

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
      const user = await currentUser(auth.userId);
      const result = await organizations.create(request.body, auth.userId, source, { policyFor: user });
      if (!result.ok) throw refusal(result);
      return reply.code(201).send({ organization: toMembershipJson({ ...result.organization, role: 'OWNER', joinedAt: result.organization.createdAt, isActive: false }) });
    },
  );

  app.get(
    '/api/organizations/invitations',
    {
      config,
      schema: {
        tags,
        summary: 'List the invitations to your address',
        description: 'Pending invitations to your e-mail address, once it is verified (none before).',
        security,
        response: { 200: z.object({ invitations: z.array(invitationPreviewView) }), 401: signedInErrors[401] },
      },
    },
    async (request) => {
      const { auth } = caller(request);
      return { invitations: (await organizations.invitationsFor(await currentUser(auth.userId))).map(toInvitationPreviewJson) };
    },
  );

  app.post(
    '/api/organizations/invitations/accept',
    {
      config,
      schema: {
        tags,
        summary: 'Accept an invitation',
        description: 'With the `token` of the invitation link, or the `invitationId` of an invitation to your address. Your verified address must be the invited one; you join with the invited role. Works once.',
        security,
        body: invitationRefBody,
        response: {
          200: z.object({ organization: organizationView, role: z.string() }),
          ...bodyErrorResponses,
          400: errorResponse.describe('The link is not valid: used, declined, revoked or unknown (INVITATION_INVALID), or expired (INVITATION_EXPIRED); or malformed JSON'),
          401: signedInErrors[401],
          403: errorResponse.describe('The invitation is for another address (INVITATION_EMAIL_MISMATCH), or yours is not verified (INVITATION_EMAIL_UNVERIFIED); or CSRF_FAILED'),
          404: errorResponse.describe('No pending invitation to your address with that id (INVITATION_NOT_FOUND)'),
          409: errorResponse.describe('You are a member already (ALREADY_MEMBER); the invitation is used up'),
        },
      },
    },
    async (request) => {
      const { auth, source } = caller(request);
      const ref = request.body.token !== undefined ? { token: request.body.token } : { invitationId: request.body.invitationId! };
      const result = await organizations.acceptInvitation(ref, await currentUser(auth.userId), source);
      if (!result.ok) throw refusal(result);
      return { organization: toOrganizationJson(result.organization), role: result.role };
    },
  );

  app.post(
    '/api/organizations/invitations/decline',
    {
      config,
      schema: {
        tags,
        summary: 'Decline an invitation',
        description: 'With the `token` of the invitation link (whoever holds the link may decline it), or the `invitationId` of an invitation to your verified address. The link stops working.',
        security,
        body: invitationRefBody,
        response: {
          200: okView,
          ...bodyErrorResponses,
          400: errorResponse.describe('INVITATION_INVALID or INVITATION_EXPIRED; or malformed JSON'),
          401: signedInErrors[401],
          403: errorResponse.describe('INVITATION_EMAIL_UNVERIFIED (by id), or CSRF_FAILED'),
          404: errorResponse.describe('No pending invitation to your address with that id (INVITATION_NOT_FOUND)'),
        },
      },
    },
    async (request) => {
      const { auth, source } = caller(request);
      const ref = request.body.token !== undefined ? { token: request.body.token } : { invitationId: request.body.invitationId! };
      const result = await organizations.declineInvitation(ref, await currentUser(auth.userId), source);
      if (!result.ok) throw refusal(result);
      return { ok: true as const };
    },
  );

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

  app.get(
    '/api/organizations/:id/invitations',
    { config, schema: { tags, summary: 'List pending invitations', description: 'OWNER or ADMIN.', security, params: organizationParams, response: { 200: z.object({ invitations: z.array(invitationView) }), ...signedInErrors } } },
    async (request) => {
      const { actor } = caller(request);
      const result = await organizations.listInvitations(request.params.id, actor);
      if (!Array.isArray(result)) throw refusal(result);
      return { invitations: result.map(toInvitationJson) };
    },
  );

  app.post(
    '/api/organizations/:id/invitations',
    {
      config,
      schema: {
        tags,
        summary: 'Invite someone by e-mail',
        description:
          'OWNER or ADMIN (only an OWNER invites an OWNER). Mails a link that works once, for ORGANIZATION_INVITATION_TTL (default 7 days); a new invitation to the same address replaces the pending one. The answer is the same whether or not the address has an account. Counted per organization (RATE_LIMIT_ORGANIZATION_INVITATIONS), per inviter over all their organizations (RATE_LIMIT_ORGANIZATION_INVITATIONS_PER_INVITER) and per invited address from everyone (RATE_LIMIT_ORGANIZATION_INVITATIONS_PER_ADDRESS); an invitation refused or not sent is not counted.',
        security,
        params: organizationParams,
        body: inviteBody,
        response: {
          201: z.object({ invitation: invitationView }),
          ...bodyErrorResponses,
          ...signedInErrors,
          409: errorResponse.describe('The address belongs to a member already (ALREADY_MEMBER)'),
          429: errorResponse.describe('Too many invitations from this organization (RATE_LIMITED), or from you or to this address (INVITATION_LIMIT_REACHED: one code for both); with Retry-After'),
        },
      },
    },
    async (request, reply) => {
      const { actor, source } = caller(request);
      const result = await organizations.invite(request.params.id, actor, request.body, source);
      if (!result.ok) throw refusal(result);
      reply.header('cache-control', 'no-store');
      return reply.code(201).send({ invitation: toInvitationJson(result.invitation) });
    },
  );

  app.delete(
    '/api/organizations/:id/invitations/:invitationId',
    {
      config,
      schema: {
        tags,
        summary: 'Revoke an invitation',
        description: 'OWNER or ADMIN: its link stops working.',
        security,
        params: invitationParams,
        response: { 200: okView, ...signedInErrors, 404: errorResponse.describe('ORGANIZATION_NOT_FOUND, or no such pending invitation (INVITATION_NOT_FOUND)') },
      },
    },
    async (request) => {
      const { actor, source } = caller(request);
      const result = await organizations.revokeInvitation(request.params.id, actor, request.params.invitationId, source);
      if (!result.ok) throw refusal(result);
      return { ok: true as const };
    },
  );
};
