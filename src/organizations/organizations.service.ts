/**
 * Organizations: create one (its creator is its first OWNER), its members and their roles, and
 * the organization a session has made active (its access tokens then carry the `org` claim, see
 * `activeOrganizationClaim` in the store). Member changes live in organizations-members.service.ts and the invitations mailed
 * to addresses in organizations-invitations.service.ts; this service hands their methods out as its
 * own, so callers see one `organizations` service.
 *
 * Roles: one per member, `OWNER`, `ADMIN`, `MEMBER` or a custom UPPER_SNAKE role (the user role
 * rule). OWNER and ADMIN manage the members and invitations; only an OWNER grants or takes OWNER,
 * renames nothing more than an ADMIN may, and deletes. Every organization keeps at least one OWNER:
 * every change to members runs in a transaction that first locks the organization's row
 * (`SELECT … FOR UPDATE` on PostgreSQL; SQLite runs one writer at a time), so two OWNERs demoting
 * or removing each other at once run one after the other, and the owners are counted again before
 * the commit.
 *
 * Who acts: a member (`{ userId }`: their role decides what they may do, and to someone who is not
 * a member the organization does not exist), or an operator (`OPERATOR`: the CLI and the admin
 * API, with no role needed; the rules that keep an OWNER still hold).
 *
 * Every change records its domain event (`organization.*`) in its transaction; events name the
 * organization, the member concerned and roles, never an invited address (an invitation is named
 * by its id) nor a token. Expected outcomes are values: `{ ok: false, reason }` or null.
 */
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { randomId } from '../lib/random.ts';
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';
import type { MailService } from '../mail/mail.service.ts';
import { ADMIN_ROLE, type User, type UserService } from '../users/user.service.ts';
import { nameProblem } from '../users/name.ts';
import type { OrganizationsConfig } from './organizations.config.ts';
import * as store from './organizations.store.ts';
import { createOrganizationInvitationsService, type InvitationLimiters } from './organizations-invitations.service.ts';
import { createOrganizationMembersService } from './organizations-members.service.ts';
import { parseSearchText } from '../lib/search-text.ts';
import { toPage, type KeysetPosition } from '../lib/keyset-cursor.ts';
import {
  ADMIN,
  OWNER,
  Rollback,
  eventDetails,
  isOperator,
  isPlausibleId,
  slugFromName,
  slugProblem,
  suffix,
  toMember,
  toOrganization,
  toListedOrganization,
  type Actor,
  type CreateResult,
  type Member,
  type Membership,
  type NotFound,
  type Organization,
  type Refused,
  type RemoveUserResult,
  type UpdateResult,
} from './organizations.model.ts';

export * from './organizations.model.ts';

export type OrganizationsService = ReturnType<typeof createOrganizationsService>;

export function createOrganizationsService(deps: {
  db: Db;
  isPostgres: boolean;
  clock: Clock;
  logger: Logger;
  audit: AuditService;
  mail: MailService;
  /**
   * An invitation mail is in the invitee's language when their address has an account; a creation
   * under MAX_ORGANIZATIONS_PER_USER locks its owner's row.
   */
  users: Pick<UserService, 'findLocaleByEmail' | 'lockUser'>;
  config: OrganizationsConfig;
  /** The budgets invitations are counted against: per organization, per inviter, per address. */
  invitationLimiters: InvitationLimiters;
}) {
  const { db, isPostgres, clock, audit, mail, users, config, invitationLimiters } = deps;

  /**
   * Runs `fn` in a transaction holding the organization's lock, when the actor may act with
   * `need`: any member, a manager (OWNER or ADMIN) or an OWNER. A result `fn` throws as a
   * `Rollback` is returned after the transaction is rolled back.
   */
  async function withOrganization<T>(
    organizationId: string,
    actor: Actor,
    need: 'member' | 'manager' | 'owner',
    fn: (trx: Db, organization: store.OrganizationRow, actorRole: string | null) => Promise<T>,
    on?: Db,
  ): Promise<T | Refused> {
    if (!isPlausibleId(organizationId)) return { ok: false, reason: 'ORGANIZATION_NOT_FOUND' };
    const run = async (trx: Db): Promise<T | Refused> => {
      const organization = await store.lockOrganization(trx, organizationId, isPostgres);
      if (organization === undefined) return { ok: false, reason: 'ORGANIZATION_NOT_FOUND' };
      let actorRole: string | null = null;
      if (!isOperator(actor)) {
        const membership = await store.findMember(trx, organizationId, actor.userId);
        if (membership === undefined) return { ok: false, reason: 'ORGANIZATION_NOT_FOUND' };
        actorRole = membership.role;
        const allowed = need === 'member' || (need === 'manager' ? actorRole === OWNER || actorRole === ADMIN : actorRole === OWNER);
        if (!allowed) return { ok: false, reason: 'ORGANIZATION_ROLE_REQUIRED' };
      }
      return fn(trx, organization, actorRole);
    };
    try {
      return on === undefined ? await db.transaction().execute(run) : await run(on);
    } catch (error) {
      if (error instanceof Rollback) return error.result as T;
      throw error;
    }
  }

  /**
   * Writes the organization with its first OWNER, under a free slug. With `isCapped`, the owner's
   * row is locked first and the organizations they own are counted in the same transaction, so
   * concurrent creations by one user run one after the other and never pass MAX_ORGANIZATIONS_PER_USER
   * together (SQLite runs one writing transaction at a time anyway).
   */
  async function insertWithSlug(row: Omit<store.OrganizationRow, 'slug'>, slug: string, isGenerated: boolean, ownerId: string, isCapped: boolean, source: AuditSource): Promise<CreateResult> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const candidate = attempt === 0 ? slug : `${slug}-${suffix()}`;
      if (await store.findOrganizationBySlug(db, candidate)) {
        if (!isGenerated) return { ok: false, reason: 'SLUG_TAKEN' };
        continue;
      }
      const organization: store.OrganizationRow = { ...row, slug: candidate };
      try {
        const isWithinCap = await db.transaction().execute(async (trx) => {
          if (isCapped) {
            await users.lockUser(trx, ownerId);
            if ((await store.countOwned(trx, ownerId)) >= config.maxOwnedPerUser) return false;
          }
          await store.insertOrganization(trx, organization);
          await store.insertMember(trx, { organization_id: row.id, user_id: ownerId, role: OWNER, created_at: row.created_at, updated_at: row.created_at });
          await audit.record({ type: 'organization.created', userId: ownerId, source, details: eventDetails(organization, { name: organization.name }) }, { db: trx });
          await audit.record({ type: 'organization.member.added', userId: ownerId, source, details: eventDetails(organization, { role: OWNER }) }, { db: trx });
          return true;
        });
        return isWithinCap ? { ok: true, organization: toOrganization(organization) } : { ok: false, reason: 'ORGANIZATION_LIMIT_REACHED' };
      } catch (error) {
        // Two creations with one slug at once: the unique index decides, the loser is told (or
        // tries another suffix, for a slug it did not choose).
        if (!(await store.findOrganizationBySlug(db, candidate))) throw error;
        if (!isGenerated) return { ok: false, reason: 'SLUG_TAKEN' };
      }
    }
    return { ok: false, reason: 'SLUG_TAKEN' };
  }

  /** Who may create organizations by ALLOW_ORGANIZATION_CREATION. */
  function mayCreate(user: Pick<User, 'roles' | 'emailVerifiedAt'>): boolean {
    switch (config.creation) {
      case 'all':
        return true;
      case 'verified':
        return user.emailVerifiedAt !== null;
      case 'admins':
        return user.roles.includes(ADMIN_ROLE);
      case 'none':
        return false;
    }
  }

  const members = createOrganizationMembersService({ clock, audit, withOrganization });

  const invitations = createOrganizationInvitationsService({
    db,
    clock,
    audit,
    mail,
    users,
    config,
    invitationLimiters,
    withOrganization,
    get: (organizationId, actor) => service.get(organizationId, actor),
  });

  const service = {
    /** Whether this user may create organizations (ALLOW_ORGANIZATION_CREATION); the pages show the form only then. */
    mayCreate,

    /**
     * Creates an organization with `ownerId` as its first OWNER. The slug is checked, or made from
     * the name (with a random suffix while taken). With `policyFor` (the API and pages), the
     * creation policy and MAX_ORGANIZATIONS_PER_USER apply to that user; the CLI skips them (it passes none).
     */
    async create(input: { name: string; slug?: string | undefined }, ownerId: string, source: AuditSource, options: { policyFor?: Pick<User, 'roles' | 'emailVerifiedAt'> } = {}): Promise<CreateResult> {
      const name = input.name.trim();
      const nameIssue = nameProblem(name);
      if (nameIssue !== null) return { ok: false, reason: 'INVALID_NAME', message: nameIssue };
      if (input.slug !== undefined) {
        const slugIssue = slugProblem(input.slug);
        if (slugIssue !== null) return { ok: false, reason: 'INVALID_SLUG', message: slugIssue };
      }
      if (options.policyFor !== undefined && !mayCreate(options.policyFor)) return { ok: false, reason: 'ORGANIZATION_CREATION_DISABLED' };
      const now = clock();
      const row = { id: randomId(), name, created_at: now, updated_at: now };
      // MAX_ORGANIZATIONS_PER_USER is counted in the creating transaction (see insertWithSlug).
      const isCapped = options.policyFor !== undefined;
      return input.slug === undefined ? insertWithSlug(row, slugFromName(name), true, ownerId, isCapped, source) : insertWithSlug(row, input.slug, false, ownerId, isCapped, source);
    },

    /** The user's organizations with their role, by name; `sessionId` marks that session's active one. `on`: read in the caller's transaction. */
    async listFor(userId: string, sessionId?: string, on: Db = db): Promise<Membership[]> {
      const [rows, activeId] = await Promise.all([store.listMemberships(on, userId), sessionId === undefined ? undefined : store.findActiveOrganizationId(on, sessionId)]);
      return rows.map((row) => ({ ...toOrganization(row), role: row.role, joinedAt: row.joined_at, isActive: row.id === activeId }));
    },

    /** The organization and the actor's role in it (null for an operator); null when it is not one of theirs. */
    async get(organizationId: string, actor: Actor): Promise<{ organization: Organization; role: string | null } | null> {
      if (!isPlausibleId(organizationId)) return null;
      const row = await store.findOrganization(db, organizationId);
      if (row === undefined) return null;
      if (isOperator(actor)) return { organization: toOrganization(row), role: null };
      const membership = await store.findMember(db, organizationId, actor.userId);
      return membership === undefined ? null : { organization: toOrganization(row), role: membership.role };
    },

    /** An operator's lookup: by id, else by slug. */
    async find(idOrSlug: string): Promise<Organization | null> {
      if (!isPlausibleId(idOrSlug)) return null;
      const row = (await store.findOrganization(db, idOrSlug)) ?? (await store.findOrganizationBySlug(db, idOrSlug.toLowerCase()));
      return row === undefined ? null : toOrganization(row);
    },

    /** The condition "is a member of `organizationId`" on a users query (the administrators' list filter). */
    memberCondition: (organizationId: string) => store.isMemberOf(organizationId),

    /**
     * Organizations, newest first, with their member counts (the admin list). `query` is in the admin
     * lists' syntax (lib/search-text.ts): by default a word of the slug or of the name starts with it.
     */
    async list(filter: { query?: string | undefined; limit?: number } = {}): Promise<Array<Organization & { memberCount: number }>> {
      return (await listedRows(db, filter, filter.limit ?? 100)).map(toListedOrganization);
    },

    /** The same, a keyset page at a time: at most `limit` after `before`, and where the next page starts (null: this was the last). */
    async listPage(filter: { query?: string | undefined; before?: KeysetPosition | undefined; limit: number }): Promise<{ organizations: Array<Organization & { memberCount: number }>; next: KeysetPosition | null }> {
      const page = toPage(await listedRows(db, filter, filter.limit + 1), filter.limit, (row) => ({ createdAt: row.created_at, id: row.id }));
      return { organizations: page.items.map(toListedOrganization), next: page.next };
    },

    /** Renames it (OWNER or ADMIN), and changes the slug when one is given. */
    async update(organizationId: string, actor: Actor, changes: { name?: string | undefined; slug?: string | undefined }, source: AuditSource): Promise<UpdateResult> {
      const set: { name?: string; slug?: string } = {};
      if (changes.name !== undefined) {
        const name = changes.name.trim();
        const issue = nameProblem(name);
        if (issue !== null) return { ok: false, reason: 'INVALID_NAME', message: issue };
        set.name = name;
      }
      if (changes.slug !== undefined) {
        const issue = slugProblem(changes.slug);
        if (issue !== null) return { ok: false, reason: 'INVALID_SLUG', message: issue };
        set.slug = changes.slug;
      }
      try {
        return await withOrganization(organizationId, actor, 'manager', async (trx, row): Promise<UpdateResult> => {
          const fields = (Object.keys(set) as Array<'name' | 'slug'>).filter((key) => set[key] !== row[key]);
          if (fields.length === 0) return { ok: true, organization: toOrganization(row) };
          if (set.slug !== undefined && set.slug !== row.slug && (await store.findOrganizationBySlug(trx, set.slug))) return { ok: false, reason: 'SLUG_TAKEN' };
          const now = clock();
          await store.updateOrganization(trx, organizationId, set, now);
          const after = { ...row, ...set, updated_at: now };
          await audit.record({ type: 'organization.updated', source, details: eventDetails(after, { fields, name: after.name, ...(set.slug !== undefined && set.slug !== row.slug && { previousSlug: row.slug }) }) }, { db: trx });
          return { ok: true, organization: toOrganization(after) };
        });
      } catch (error) {
        // A concurrent change took the slug between the check and the update: the index decided.
        if (set.slug !== undefined && (await store.findOrganizationBySlug(db, set.slug))) return { ok: false, reason: 'SLUG_TAKEN' };
        throw error;
      }
    },

    /** Deletes it, with its members, invitations and every session's choice of it (OWNER). */
    async delete(organizationId: string, actor: Actor, source: AuditSource): Promise<{ ok: true } | Refused> {
      return withOrganization(organizationId, actor, 'owner', async (trx, row) => {
        const counts = await store.countMembers(trx, organizationId);
        await store.deleteOrganization(trx, organizationId);
        await audit.record({ type: 'organization.deleted', source, details: eventDetails(row, { name: row.name, memberCount: counts.members }) }, { db: trx });
        return { ok: true as const };
      });
    },

    /** Its members (any member may see them), by when they joined; null when it is not one of the actor's. */
    async listMembers(organizationId: string, actor: Actor): Promise<Member[] | null> {
      const result = await service.get(organizationId, actor);
      if (result === null) return null;
      return (await store.listMembers(db, organizationId)).map(toMember);
    },

    // Member changes: see organizations-members.service.ts.
    addMember: members.addMember,
    setRole: members.setRole,
    removeMember: members.removeMember,
    leave: members.leave,
    transferOwnership: members.transferOwnership,

    // Invitations: see organizations-invitations.service.ts.
    invite: invitations.invite,
    listInvitations: invitations.listInvitations,
    revokeInvitation: invitations.revokeInvitation,
    previewInvitation: invitations.previewInvitation,
    invitationsFor: invitations.invitationsFor,
    acceptInvitation: invitations.acceptInvitation,
    declineInvitation: invitations.declineInvitation,
    purgeExpiredInvitations: invitations.purgeExpiredInvitations,

    /**
     * Makes an organization the session's active one (the user must be a member), or clears it
     * with null. The session's next access token carries the `org` claim (see `activeOrganizationClaim` in the store).
     */
    async activate(auth: { userId: string; sessionId: string }, organizationId: string | null): Promise<{ ok: true; organization: Membership | null } | NotFound> {
      if (organizationId === null) {
        await store.clearActiveOrganization(db, auth.sessionId);
        return { ok: true, organization: null };
      }
      const found = await service.get(organizationId, { userId: auth.userId });
      if (found === null || found.role === null) return { ok: false, reason: 'ORGANIZATION_NOT_FOUND' };
      const now = clock();
      await store.setActiveOrganization(db, auth.sessionId, organizationId, now);
      return { ok: true, organization: { ...found.organization, role: found.role, joinedAt: 0, isActive: true } };
    },


    /**
     * The organizations where this user is the only OWNER and other members remain: deleting the
     * account must wait until they have transferred ownership (or deleted them).
     */
    async ownershipBlockers(userId: string, on: Db = db): Promise<Array<Pick<Organization, 'id' | 'slug' | 'name'>>> {
      const blockers: Array<Pick<Organization, 'id' | 'slug' | 'name'>> = [];
      for (const membership of await store.listMemberships(on, userId)) {
        if (membership.role !== OWNER) continue;
        const counts = await store.countMembers(on, membership.id);
        if (counts.owners <= 1 && counts.members > 1) blockers.push({ id: membership.id, slug: membership.slug, name: membership.name });
      }
      return blockers;
    },

    /**
     * For account deletion, inside the caller's transaction `trx`: removes the user from every
     * organization (`organization.member.removed`, reason ACCOUNT_DELETED), deletes those they
     * were the only member of (`organization.deleted`) and the invitations still pending for their
     * address (`organization.invitation.revoked`, reason ACCOUNT_DELETED). Each member's role is
     * judged as it is once its organization is locked. Refused, with nothing written, while the
     * user is the only OWNER of an organization with other members (see `ownershipBlockers`):
     * the caller must then roll back its deletion.
     */
    async removeUser(userId: string, trx: Db, source: AuditSource = SYSTEM_SOURCE): Promise<RemoveUserResult> {
      const memberships = (await store.listMemberships(trx, userId)).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      const plans: Array<{ organization: store.OrganizationRow; role: string; isOnlyMember: boolean }> = [];
      const blockers: Array<Pick<Organization, 'id' | 'slug' | 'name'>> = [];
      for (const membership of memberships) {
        // Locked in id order, so two deletions never wait on each other in a cycle.
        const organization = await store.lockOrganization(trx, membership.id, isPostgres);
        if (organization === undefined) continue;
        // The role as it is now that the organization is locked: the list above was read before
        // waiting for the lock, and a transfer committed meanwhile may have made this user its OWNER.
        const current = await store.findMember(trx, membership.id, userId);
        if (current === undefined) continue;
        const counts = await store.countMembers(trx, membership.id);
        if (current.role === OWNER && counts.owners <= 1 && counts.members > 1) blockers.push({ id: organization.id, slug: organization.slug, name: organization.name });
        plans.push({ organization, role: current.role, isOnlyMember: counts.members <= 1 });
      }
      if (blockers.length > 0) return { ok: false, reason: 'LAST_OWNER', organizations: blockers };
      let organizationsDeleted = 0;
      for (const { organization, role, isOnlyMember } of plans) {
        await store.deleteMember(trx, organization.id, userId);
        await audit.record({ type: 'organization.member.removed', userId, source, reason: 'ACCOUNT_DELETED', details: eventDetails(organization, { role }) }, { db: trx });
        if (isOnlyMember) {
          await store.deleteOrganization(trx, organization.id);
          await audit.record({ type: 'organization.deleted', userId, source, reason: 'ACCOUNT_DELETED', details: eventDetails(organization, { name: organization.name, memberCount: 1 }) }, { db: trx });
          organizationsDeleted++;
        }
      }
      // The invitations still waiting for the address: it is erased with the account (its mails are forgotten too).
      for (const invitation of await store.deleteInvitationsToAddressOf(trx, userId)) {
        await audit.record(
          { type: 'organization.invitation.revoked', source, reason: 'ACCOUNT_DELETED', details: { organizationId: invitation.organization_id, slug: invitation.slug, invitationId: invitation.id, role: invitation.role } },
          { db: trx },
        );
      }
      return { ok: true, membershipsRemoved: plans.length, organizationsDeleted };
    },
  };
  return service;
}

/** The admin list's rows: `query` read in the admin lists' syntax, strictly after `before`, at most `limit`. */
async function listedRows(db: Db, filter: { query?: string | undefined; before?: KeysetPosition | undefined }, limit: number) {
  const search = filter.query === undefined ? null : parseSearchText(filter.query);
  return store.listOrganizations(db, { ...(search !== null && { search }), ...(filter.before !== undefined && { before: filter.before }), limit });
}
