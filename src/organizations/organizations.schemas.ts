/** The request and response schemas of the organizations API (and so of its OpenAPI document), and their JSON views. */
import { z } from 'zod';
import { errorResponse } from '../http/schemas.ts';
import { emailField } from '../users/email.ts';
import { nameField } from '../users/name.ts';
import { isoTime } from '../lib/clock.ts';
import { AppError } from '../errors.ts';
import { MAX_SLUG_LENGTH, SLUG_PATTERN, type Invitation, type InvitationPreview, type Member, type Membership, type Organization } from './organizations.service.ts';

const required = (issue: { input: unknown }) => (issue.input === undefined ? 'is required' : 'must be a string');

export const slugField = z
  .string({ error: required })
  .trim()
  .max(MAX_SLUG_LENGTH, `must be at most ${MAX_SLUG_LENGTH} characters`)
  .regex(SLUG_PATTERN, 'must be lower-case letters, digits and inner hyphens')
  .describe('Lower-case letters, digits and inner hyphens; unique');

export const roleField = z
  .string({ error: required })
  .regex(/^[A-Z][A-Z0-9_]{0,63}$/, 'must be UPPER_SNAKE (OWNER, ADMIN, MEMBER or a custom role)')
  .describe('OWNER, ADMIN, MEMBER, or a custom UPPER_SNAKE role');

export const idField = z.string({ error: required }).min(1, 'is required').max(64, 'must be at most 64 characters');
export const tokenField = z.string({ error: required }).min(1, 'is required').max(200, 'must be at most 200 characters').describe('The `token` of the invitation link');

export const organizationParams = z.object({ id: idField });
export const memberParams = z.object({ id: idField, userId: idField });
export const invitationParams = z.object({ id: idField, invitationId: idField });

export const organizationView = z
  .object({ id: z.string(), slug: z.string(), name: z.string(), createdAt: z.iso.datetime(), updatedAt: z.iso.datetime() })
  .meta({ id: 'Organization' });
export const membershipView = organizationView
  .extend({ role: z.string().describe('Your role in it'), isActive: z.boolean().describe('Whether it is the active organization of this session') })
  .meta({ id: 'OrganizationMembership' });
export const memberView = z
  .object({ userId: z.string(), email: z.string(), name: z.string(), role: z.string(), joinedAt: z.iso.datetime() })
  .meta({ id: 'OrganizationMember' });
export const invitationView = z
  .object({ id: z.string(), email: z.string(), role: z.string(), createdAt: z.iso.datetime(), expiresAt: z.iso.datetime() })
  .meta({ id: 'OrganizationInvitation' });
export const invitationPreviewView = z
  .object({ id: z.string(), organization: z.object({ id: z.string(), slug: z.string(), name: z.string() }), role: z.string(), expiresAt: z.iso.datetime() })
  .meta({ id: 'OrganizationInvitationForYou' });

export const createBody = z.object({ name: nameField.describe('Its display name'), slug: slugField.optional().describe('Made from the name when not given') }, { error: 'must be a JSON object' }).meta({ id: 'OrganizationCreateRequest' });
export const updateBody = z
  .object({ name: nameField.optional(), slug: slugField.optional() }, { error: 'must be a JSON object' })
  .refine((body) => body.name !== undefined || body.slug !== undefined, { message: 'send name or slug', path: ['name'] })
  .meta({ id: 'OrganizationUpdateRequest' });
export const roleBody = z.object({ role: roleField }, { error: 'must be a JSON object' }).meta({ id: 'OrganizationRoleRequest' });
export const transferBody = z.object({ userId: idField.describe('The member who becomes OWNER') }, { error: 'must be a JSON object' }).meta({ id: 'OrganizationTransferRequest' });
export const inviteBody = z.object({ email: emailField, role: roleField.default('MEMBER') }, { error: 'must be a JSON object' }).meta({ id: 'OrganizationInviteRequest' });
export const invitationRefBody = z
  .object({ token: tokenField.optional(), invitationId: idField.optional().describe('Or the id of an invitation to your verified address') }, { error: 'must be a JSON object' })
  .refine((body) => (body.token === undefined) !== (body.invitationId === undefined), { message: 'send either token or invitationId', path: ['token'] })
  .meta({ id: 'OrganizationInvitationAnswer' });
export const activeBody = z
  .object({ organizationId: idField.nullable().describe('The organization to make active, or null to clear') }, { error: 'must be a JSON object' })
  .meta({ id: 'ActiveOrganizationRequest' });
export const noBody = z.object({}, { error: 'must be a JSON object' }).nullish();
export const okView = z.object({ ok: z.literal(true) });
export const activeView = z
  .object({
    organization: membershipView.nullable(),
    token: z.string().describe('A new access token carrying (or no longer carrying) the `org` claim; a browser gets it as its access cookie'),
    expiresAt: z.iso.datetime(),
  })
  .meta({ id: 'ActiveOrganization' });

export const signedInErrors = {
  401: errorResponse.describe('No valid session (UNAUTHENTICATED)'),
  403: errorResponse.describe('Your role in the organization does not allow this (ORGANIZATION_ROLE_REQUIRED), or a cookie-authenticated request without a valid CSRF token (CSRF_FAILED)'),
  404: errorResponse.describe('No such organization among yours (ORGANIZATION_NOT_FOUND): also for one you are not a member of'),
};

export const toOrganizationJson = (organization: Organization) => ({
  id: organization.id,
  slug: organization.slug,
  name: organization.name,
  createdAt: isoTime(organization.createdAt),
  updatedAt: isoTime(organization.updatedAt),
});
export const toMembershipJson = (membership: Membership) => ({ ...toOrganizationJson(membership), role: membership.role, isActive: membership.isActive });
export const toMemberJson = (member: Member) => ({ userId: member.userId, email: member.email, name: member.name, role: member.role, joinedAt: isoTime(member.joinedAt) });
export const toInvitationJson = (invitation: Invitation) => ({ id: invitation.id, email: invitation.email, role: invitation.role, createdAt: isoTime(invitation.createdAt), expiresAt: isoTime(invitation.expiresAt) });
export const toInvitationPreviewJson = (invitation: InvitationPreview) => ({ id: invitation.id, organization: invitation.organization, role: invitation.role, expiresAt: isoTime(invitation.expiresAt) });

/** The HTTP error for an outcome the service refused. */
export function refusal(result: { reason: string; message?: string; retryAfterSeconds?: number }): AppError {
  switch (result.reason) {
    case 'INVALID_NAME':
      return new AppError('VALIDATION_ERROR', { errors: [{ field: 'name', message: result.message ?? 'is invalid' }] });
    case 'INVALID_SLUG':
      return new AppError('VALIDATION_ERROR', { errors: [{ field: 'slug', message: result.message ?? 'is invalid' }] });
    case 'INVALID_ROLE':
      return new AppError('VALIDATION_ERROR', { errors: [{ field: 'role', message: 'must be UPPER_SNAKE (OWNER, ADMIN, MEMBER or a custom role)' }] });
    case 'RATE_LIMITED':
    case 'INVITATION_LIMIT_REACHED':
      return new AppError(result.reason, { retryAfterSeconds: result.retryAfterSeconds ?? 60 });
    default:
      return new AppError(result.reason as never);
  }
}
