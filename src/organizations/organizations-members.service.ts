/**
 * Changes to an organization's members: an operator adds a user, an OWNER or ADMIN changes roles
 * and removes members, a member leaves, an OWNER hands over ownership. Every change runs under the
 * organization's lock (`withOrganization`, from the organizations service, which hands these
 * methods out as its own) and keeps at least one OWNER.
 */
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import * as store from './organizations.store.ts';
import {
  ADMIN,
  OPERATOR,
  OWNER,
  Rollback,
  eventDetails,
  isOperator,
  isValidOrganizationRole,
  toMember,
  type Actor,
  type Member,
  type MemberChangeResult,
  type RemoveResult,
  type WithOrganization,
} from './organizations.model.ts';

export type OrganizationMembersService = ReturnType<typeof createOrganizationMembersService>;

export function createOrganizationMembersService(deps: {
  clock: Clock;
  audit: AuditService;
  /** The organizations service's lock: runs a change when the actor may act on the organization. */
  withOrganization: WithOrganization;
}) {
  const { clock, audit, withOrganization } = deps;

  /** Before committing a change to members: the organization still has an OWNER, or the change is undone. */
  async function assertOwnerRemains(trx: Db, organizationId: string): Promise<void> {
    if ((await store.countMembers(trx, organizationId)).owners < 1) throw new Rollback({ ok: false, reason: 'LAST_OWNER' });
  }

  async function memberOf(trx: Db, organizationId: string, userId: string): Promise<Member | null> {
    const rows = await store.listMembers(trx, organizationId);
    const row = rows.find((candidate) => candidate.user_id === userId);
    return row === undefined ? null : toMember(row);
  }

  const members = {
    /** Adds an existing user (an operator: the CLI); refused when they are a member already. */
    async addMember(organizationId: string, userId: string, role: string, source: AuditSource): Promise<MemberChangeResult> {
      if (!isValidOrganizationRole(role)) return { ok: false, reason: 'INVALID_ROLE' };
      return withOrganization(organizationId, OPERATOR, 'member', async (trx, row): Promise<MemberChangeResult> => {
        if (await store.findMember(trx, organizationId, userId)) return { ok: false, reason: 'ALREADY_MEMBER' };
        const now = clock();
        await store.insertMember(trx, { organization_id: organizationId, user_id: userId, role, created_at: now, updated_at: now });
        await audit.record({ type: 'organization.member.added', userId, source, details: eventDetails(row, { role }) }, { db: trx });
        return { ok: true, member: (await memberOf(trx, organizationId, userId))! };
      });
    },

    /**
     * Changes a member's role (OWNER or ADMIN). Only an OWNER grants OWNER or changes an OWNER's
     * role; the last OWNER keeps theirs.
     */
    async setRole(organizationId: string, actor: Actor, userId: string, role: string, source: AuditSource): Promise<MemberChangeResult> {
      if (!isValidOrganizationRole(role)) return { ok: false, reason: 'INVALID_ROLE' };
      return withOrganization(organizationId, actor, 'manager', async (trx, row, actorRole): Promise<MemberChangeResult> => {
        const target = await store.findMember(trx, organizationId, userId);
        if (target === undefined) return { ok: false, reason: 'MEMBER_NOT_FOUND' };
        if (actorRole !== null && actorRole !== OWNER && (role === OWNER || target.role === OWNER)) return { ok: false, reason: 'ORGANIZATION_ROLE_REQUIRED' };
        if (target.role === role) return { ok: true, member: (await memberOf(trx, organizationId, userId))! };
        if (target.role === OWNER && (await store.countMembers(trx, organizationId)).owners <= 1) return { ok: false, reason: 'LAST_OWNER' };
        await store.setMemberRole(trx, organizationId, userId, role, clock());
        await assertOwnerRemains(trx, organizationId);
        await audit.record({ type: 'organization.member.updated', userId, source, details: eventDetails(row, { role, previousRole: target.role }) }, { db: trx });
        return { ok: true, member: (await memberOf(trx, organizationId, userId))! };
      });
    },

    /**
     * Removes a member (OWNER or ADMIN; an ADMIN cannot remove an OWNER), or the actor themself
     * (as `leave`). The last OWNER stays. Their sessions stop having it active. With `on` (the
     * caller's transaction: SCIM deprovisioning), the removal commits or rolls back with the
     * caller's change; a refusal then writes nothing, and the caller decides whether to roll back.
     */
    async removeMember(organizationId: string, actor: Actor, userId: string, source: AuditSource, on?: Db): Promise<RemoveResult> {
      const isSelf = !isOperator(actor) && actor.userId === userId;
      return withOrganization(organizationId, actor, isSelf ? 'member' : 'manager', async (trx, row, actorRole): Promise<RemoveResult> => {
        const target = await store.findMember(trx, organizationId, userId);
        if (target === undefined) return { ok: false, reason: 'MEMBER_NOT_FOUND' };
        if (!isSelf && actorRole !== null && actorRole !== OWNER && target.role === OWNER) return { ok: false, reason: 'ORGANIZATION_ROLE_REQUIRED' };
        if (target.role === OWNER && (await store.countMembers(trx, organizationId)).owners <= 1) return { ok: false, reason: 'LAST_OWNER' };
        await store.deleteMember(trx, organizationId, userId);
        await assertOwnerRemains(trx, organizationId);
        await store.clearActiveFor(trx, organizationId, userId);
        await audit.record({ type: 'organization.member.removed', userId, source, reason: isSelf ? 'LEFT' : 'REMOVED', details: eventDetails(row, { role: target.role }) }, { db: trx });
        return { ok: true };
      }, on);
    },

    /** The actor leaves; the last OWNER cannot (they transfer ownership or delete the organization). */
    async leave(organizationId: string, userId: string, source: AuditSource): Promise<RemoveResult> {
      return members.removeMember(organizationId, { userId }, userId, source);
    },

    /** An OWNER makes another member OWNER and becomes ADMIN. */
    async transferOwnership(organizationId: string, actor: { userId: string }, toUserId: string, source: AuditSource): Promise<MemberChangeResult> {
      return withOrganization(organizationId, actor, 'owner', async (trx, row): Promise<MemberChangeResult> => {
        if (toUserId === actor.userId) return { ok: false, reason: 'ALREADY_MEMBER' };
        const target = await store.findMember(trx, organizationId, toUserId);
        if (target === undefined) return { ok: false, reason: 'MEMBER_NOT_FOUND' };
        const now = clock();
        if (target.role !== OWNER) {
          await store.setMemberRole(trx, organizationId, toUserId, OWNER, now);
          await audit.record({ type: 'organization.member.updated', userId: toUserId, source, details: eventDetails(row, { role: OWNER, previousRole: target.role }) }, { db: trx });
        }
        await store.setMemberRole(trx, organizationId, actor.userId, ADMIN, now);
        await audit.record({ type: 'organization.member.updated', userId: actor.userId, source, details: eventDetails(row, { role: ADMIN, previousRole: OWNER }) }, { db: trx });
        await assertOwnerRemains(trx, organizationId);
        await audit.record({ type: 'organization.ownership_transferred', userId: toUserId, source, details: eventDetails(row, { fromUserId: actor.userId, toUserId }) }, { db: trx });
        return { ok: true, member: (await memberOf(trx, organizationId, toUserId))! };
      });
    },
  };
  return members;
}
