/**
 * What the organizations module deals in: roles, slugs, the shapes its service hands out and the
 * outcomes it answers with, and the mapping from its rows. No I/O (see organizations.service.ts).
 */
import { randomSecret } from '../lib/random.ts';
import { isValidRole, type User } from '../users/user.service.ts';
import type { Db } from '../storage/database.ts';
import type * as store from './organizations.store.ts';

export const OWNER = 'OWNER';
export const ADMIN = 'ADMIN';
export const MEMBER = 'MEMBER';
export const BUILT_IN_ROLES: readonly string[] = [OWNER, ADMIN, MEMBER];

/** The page an invitation link opens (it shows Accept and Decline; a GET never uses the token). */
export const INVITATION_PAGE = '/organizations/invitations/accept';

export const MAX_SLUG_LENGTH = 48;
/** Lower-case letters, digits and inner hyphens, 1 to 48 characters. */
export const SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,46}[a-z0-9])?$/;
/** Slugs that name pages rather than organizations. */
export const RESERVED_SLUGS = new Set(['new', 'active', 'invitations', 'admin', 'api']);
export const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;
export const MAX_ID_LENGTH = 64;

export interface Organization {
  id: string;
  slug: string;
  name: string;
  /** Epoch ms. */
  createdAt: number;
  updatedAt: number;
}

/** One of the user's organizations, with their role in it. */
export interface Membership extends Organization {
  role: string;
  joinedAt: number;
  /** Whether it is the active organization of the session asked about. */
  isActive: boolean;
}

export interface Member {
  userId: string;
  email: string;
  name: string;
  role: string;
  joinedAt: number;
}

export interface Invitation {
  id: string;
  organizationId: string;
  email: string;
  role: string;
  invitedBy: string | null;
  createdAt: number;
  expiresAt: number;
}

/** What an invitation link shows before it is answered. */
export interface InvitationPreview {
  id: string;
  organization: Pick<Organization, 'id' | 'slug' | 'name'>;
  email: string;
  role: string;
  expiresAt: number;
}

/** The `org` claim of an access token. */
export interface OrganizationClaim {
  id: string;
  slug: string;
  /** One role today; a list so that tokens need not change if members ever hold several. */
  roles: string[];
}

/** Whoever acts: a member (their role decides), or an operator (the CLI, the admin API). */
export type Actor = { readonly userId: string } | typeof OPERATOR;
export const OPERATOR = Object.freeze({ operator: true as const });

export type NotFound = { ok: false; reason: 'ORGANIZATION_NOT_FOUND' };
export type RoleRequired = { ok: false; reason: 'ORGANIZATION_ROLE_REQUIRED' };
export type Refused = NotFound | RoleRequired;

export type CreateResult =
  | { ok: true; organization: Organization }
  | { ok: false; reason: 'ORGANIZATION_CREATION_DISABLED' | 'ORGANIZATION_LIMIT_REACHED' | 'SLUG_TAKEN' }
  | { ok: false; reason: 'INVALID_NAME' | 'INVALID_SLUG'; message: string };

export type UpdateResult = { ok: true; organization: Organization } | Refused | { ok: false; reason: 'SLUG_TAKEN' } | { ok: false; reason: 'INVALID_NAME' | 'INVALID_SLUG'; message: string };
export type MemberChangeResult = { ok: true; member: Member } | Refused | { ok: false; reason: 'MEMBER_NOT_FOUND' | 'LAST_OWNER' | 'INVALID_ROLE' | 'ALREADY_MEMBER' };
export type RemoveResult = { ok: true } | Refused | { ok: false; reason: 'MEMBER_NOT_FOUND' | 'LAST_OWNER' };
export type InviteResult =
  | { ok: true; invitation: Invitation }
  | Refused
  | { ok: false; reason: 'ALREADY_MEMBER' | 'INVALID_ROLE' }
  // RATE_LIMITED: the organization's limit; INVITATION_LIMIT_REACHED: the inviter's or the address's budget.
  | { ok: false; reason: 'RATE_LIMITED' | 'INVITATION_LIMIT_REACHED'; retryAfterSeconds: number };
export type InvitationLinkResult<T> = { ok: true } & T | { ok: false; reason: 'INVITATION_INVALID' | 'INVITATION_EXPIRED' | 'INVITATION_NOT_FOUND' };
export type AcceptResult =
  | { ok: true; organization: Organization; role: string }
  | { ok: false; reason: 'INVITATION_INVALID' | 'INVITATION_EXPIRED' | 'INVITATION_NOT_FOUND' | 'INVITATION_EMAIL_MISMATCH' | 'INVITATION_EMAIL_UNVERIFIED' | 'ALREADY_MEMBER' };
export type RemoveUserResult =
  | { ok: true; membershipsRemoved: number; organizationsDeleted: number }
  | { ok: false; reason: 'LAST_OWNER'; organizations: Array<Pick<Organization, 'id' | 'slug' | 'name'>> };

/** How a referenced invitation is named: by the link's token, or by id (its invitee, signed in). */
export type InvitationRef = { token: string } | { invitationId: string };

/** The invitee as the accept and decline checks read them. */
export type Invitee = Pick<User, 'id' | 'email' | 'emailVerifiedAt'>;

/**
 * Runs `fn` in a transaction holding the organization's lock (or in `on`, a transaction already
 * open), when the actor may act with `need`: any member, a manager (OWNER or ADMIN) or an OWNER.
 * The organizations service's; its invitations part acts through it too.
 */
export type WithOrganization = <T>(
  organizationId: string,
  actor: Actor,
  need: 'member' | 'manager' | 'owner',
  fn: (trx: Db, organization: store.OrganizationRow, actorRole: string | null) => Promise<T>,
  on?: Db,
) => Promise<T | Refused>;

/** The details every `organization.*` event carries (the organization's id and slug), and `more`. */
export function eventDetails(organization: Pick<store.OrganizationRow, 'id' | 'slug'>, more: Record<string, unknown> = {}): Record<string, unknown> {
  return { organizationId: organization.id, slug: organization.slug, ...more };
}

export class Rollback<T> extends Error {
  readonly result: T;
  constructor(result: T) {
    super('rollback');
    this.result = result;
  }
}

export const isOperator = (actor: Actor): actor is typeof OPERATOR => actor === OPERATOR;
export const isPlausibleId = (id: string) => id.length > 0 && id.length <= MAX_ID_LENGTH;

/** A slug made from a name: ASCII letters and digits, the rest hyphens; `org` when nothing is left. */
export function slugFromName(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, MAX_SLUG_LENGTH - 7)
    .replace(/-+$/g, '');
  return slug === '' || RESERVED_SLUGS.has(slug) ? `org${slug === '' ? '' : `-${slug}`}` : slug;
}

/** Why a slug is refused ("must …"), or null when it is valid. */
export function slugProblem(slug: string): string | null {
  if (!SLUG_PATTERN.test(slug)) return `must be 1 to ${MAX_SLUG_LENGTH} lower-case letters, digits or inner hyphens`;
  if (RESERVED_SLUGS.has(slug)) return 'is reserved';
  return null;
}

/** Whether `role` may be a member's role: a built-in one or a custom UPPER_SNAKE one. */
export function isValidOrganizationRole(role: string): boolean {
  return isValidRole(role);
}

export function toOrganization(row: store.OrganizationRow): Organization {
  return { id: row.id, slug: row.slug, name: row.name, createdAt: row.created_at, updatedAt: row.updated_at };
}

/** A row of the admin list: the organization and how many members it has. */
export function toListedOrganization(row: store.OrganizationRow & { member_count: number }): Organization & { memberCount: number } {
  return { ...toOrganization(row), memberCount: row.member_count };
}

export function toMember(row: store.MemberWithUserRow): Member {
  return { userId: row.user_id, email: row.email, name: row.name, role: row.role, joinedAt: row.created_at };
}

export function toInvitation(row: store.InvitationRow): Invitation {
  return { id: row.id, organizationId: row.organization_id, email: row.email, role: row.role, invitedBy: row.invited_by, createdAt: row.created_at, expiresAt: row.expires_at };
}

/** Small random suffix for a generated slug that is taken. */
export function suffix(): string {
  return randomSecret(6).replace(/[^a-zA-Z0-9]/g, '').toLowerCase().slice(0, 6).padEnd(6, '0');
}
