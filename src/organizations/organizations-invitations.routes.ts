/**
 * The organizations API's invitations routes: those to your verified address
 * (`/api/organizations/invitations`, `/accept`, `/decline`), and an organization's
 * (`/api/organizations/:id/invitations`: list pending, invite, revoke). Added by
 * `organizationRoutes` (organizations.routes.ts).
 */
import { z } from 'zod';
import { bodyErrorResponses, errorResponse } from '../http/schemas.ts';
import {
  invitationParams,
  invitationPreviewView,
  invitationRefBody,
  invitationView,
  inviteBody,
  okView,
  organizationParams,
  organizationView,
  refusal,
  signedInErrors,
  toInvitationJson,
  toInvitationPreviewJson,
  toOrganizationJson,
} from './organizations.schemas.ts';
import { caller, config, currentUser, security, tags, type OrganizationRouteOptions, type OrganizationsApp } from './organizations-routes.shared.ts';

/** The invitations to the caller's verified address: list, accept, decline. */
export function registerReceivedInvitationRoutes(app: OrganizationsApp, { organizations, users }: OrganizationRouteOptions): void {
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
      return { invitations: (await organizations.invitationsFor(await currentUser(users, auth.userId))).map(toInvitationPreviewJson) };
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
      const result = await organizations.acceptInvitation(ref, await currentUser(users, auth.userId), source);
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
      const result = await organizations.declineInvitation(ref, await currentUser(users, auth.userId), source);
      if (!result.ok) throw refusal(result);
      return { ok: true as const };
    },
  );
}

/** An organization's pending invitations: list, invite, revoke (OWNER or ADMIN). */
export function registerOrganizationInvitationRoutes(app: OrganizationsApp, { organizations }: OrganizationRouteOptions): void {
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
}
