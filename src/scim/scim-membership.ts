/**
 * What a SCIM User's `active` does to the Gatehouse side: provisioning makes the account a member
 * of the organization (role from the group mappings), deprovisioning removes the membership, ends
 * every session of the account (its apps' tokens go with them: `user.sessions_ended`), and disables
 * an account provisioning created that belongs to no other organization (`user.disabled`).
 * Reactivation re-enables only an account deprovisioning disabled. Through the organizations,
 * users and sessions services; each step records its domain events. Deprovisioning is one
 * transaction (with the caller's own writes); provisioning's steps are each their own.
 */
import type { Db } from '../storage/database.ts';
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import type { UserService } from '../users/user.service.ts';
import type { SessionService } from '../sessions/session.service.ts';
import type { OrganizationsService } from '../organizations/organizations.service.ts';
import { OPERATOR, OWNER, MEMBER, ADMIN } from '../organizations/organizations.model.ts';
import * as store from './scim.store.ts';

export interface MembershipDeps {
  db: Db;
  audit: AuditService;
  users: Pick<UserService, 'updateUser'>;
  sessions: Pick<SessionService, 'endAllSessions'>;
  organizations: Pick<OrganizationsService, 'addMember' | 'removeMember' | 'setRole' | 'listFor' | 'listMembers'>;
}

export type SyncRefusal = { ok: false; reason: 'LAST_OWNER' };

/** Thrown inside deprovisioning's transaction to roll it back: the organization's last OWNER stays. */
class LastOwner extends Error {
  constructor() {
    super('scim: the last OWNER cannot be deprovisioned');
  }
}

/** The role the mappings give someone in these groups: ADMIN before custom roles before MEMBER; null when the organization maps none. */
export function mappedRole(mappings: readonly store.RoleMappingRow[], groupKeys: readonly string[]): string | null {
  if (mappings.length === 0) return null;
  const roles = mappings.filter((mapping) => groupKeys.includes(mapping.group_name_key)).map((mapping) => mapping.role);
  if (roles.includes(ADMIN)) return ADMIN;
  const custom = roles.filter((role) => role !== MEMBER).sort();
  return custom[0] ?? MEMBER;
}

export function createMembershipSync(deps: MembershipDeps) {
  const { db, audit, users, sessions, organizations } = deps;

  async function roleOf(row: store.ScimUserRow): Promise<string | null> {
    return mappedRole(await store.listRoleMappings(db, row.organization_id), await store.groupKeysOfUser(db, row.id));
  }

  const sync = {
    /** Makes an active User's account a member (re-enabling it when deprovisioning disabled it). */
    async provision(row: store.ScimUserRow, source: AuditSource): Promise<void> {
      if (row.suspended === 1) {
        await users.updateUser(row.user_id, { disabled: false }, { onUpdated: async (trx, { before, after }) => {
          if (before.disabledAt !== null && after.disabledAt === null) await audit.record({ type: 'user.enabled', userId: row.user_id, source, reason: 'SCIM_PROVISIONED' }, { db: trx });
        } });
        await store.updateUser(db, row.id, { suspended: 0 });
      }
      const added = await organizations.addMember(row.organization_id, row.user_id, (await roleOf(row)) ?? MEMBER, source);
      if (!added.ok && added.reason !== 'ALREADY_MEMBER') throw new Error(`scim: could not add the member: ${added.reason}`);
      await audit.record({ type: 'scim.user_provisioned', userId: row.user_id, source, details: { organizationId: row.organization_id, scimUserId: row.id, created: row.owned === 1 } });
    },

    /**
     * Removes the membership, ends the sessions (and with them the apps' tokens), disables an owned
     * account left in no organization, and records the events, all in one transaction with `then`
     * (the caller's own writes: the User marked inactive, or deleted, and its event). Every domain
     * event is recorded in it, so the webhooks' deliveries (their outbox rows) commit with the
     * change: a step that fails leaves nothing done and nothing announced. The organization's last
     * OWNER is refused, with nothing written.
     */
    async deprovision(row: store.ScimUserRow, source: AuditSource, reason: 'DEACTIVATED' | 'DELETED', then?: (trx: Db) => Promise<void>): Promise<{ ok: true } | SyncRefusal> {
      try {
        await db.transaction().execute(async (trx) => {
          const removed = await organizations.removeMember(row.organization_id, OPERATOR, row.user_id, source, trx);
          if (!removed.ok && removed.reason === 'LAST_OWNER') throw new LastOwner();
          const sessionsEnded = await sessions.endAllSessions(row.user_id, { source, reason: 'SCIM_DEPROVISIONED', db: trx });
          let disabled = false;
          if (row.owned === 1 && (await organizations.listFor(row.user_id, undefined, trx)).length === 0) {
            const result = await users.updateUser(row.user_id, { disabled: true }, { db: trx, onUpdated: async (inner, { before, after }) => {
              if (before.disabledAt === null && after.disabledAt !== null) await audit.record({ type: 'user.disabled', userId: row.user_id, source, reason: 'SCIM_DEPROVISIONED' }, { db: inner });
            } });
            disabled = result.ok && result.before.disabledAt === null;
            if (disabled) await store.updateUser(trx, row.id, { suspended: 1 });
          }
          await audit.record({ type: 'scim.user_deprovisioned', userId: row.user_id, source, reason, details: { organizationId: row.organization_id, scimUserId: row.id, sessionsEnded, accountDisabled: disabled } }, { db: trx });
          await then?.(trx);
        });
      } catch (error) {
        if (error instanceof LastOwner) return { ok: false, reason: 'LAST_OWNER' };
        throw error;
      }
      return { ok: true };
    },

    /** Gives the active members among these Users the role their groups map to (OWNERs keep theirs; nothing when no mapping). */
    async applyRoles(organizationId: string, scimUserIds: readonly string[], source: AuditSource): Promise<void> {
      const mappings = await store.listRoleMappings(db, organizationId);
      if (mappings.length === 0 || scimUserIds.length === 0) return;
      const members = new Map(((await organizations.listMembers(organizationId, OPERATOR)) ?? []).map((member) => [member.userId, member.role]));
      for (const row of await store.findUsersByIds(db, organizationId, scimUserIds)) {
        const current = members.get(row.user_id);
        if (row.active !== 1 || current === undefined || current === OWNER) continue;
        const role = mappedRole(mappings, await store.groupKeysOfUser(db, row.id)) ?? MEMBER;
        if (role !== current) await organizations.setRole(organizationId, OPERATOR, row.user_id, role, source);
      }
    },
  };
  return sync;
}
