/**
 * SCIM Users of an organization (RFC 7644 §3): create, read, list with filters and pages,
 * replace, patch, delete. A User is bound to one Gatehouse account:
 * - created: a new account (no password, address unverified: the directory does not vouch for
 *   addresses it may not own; the person signs in by SSO or sets a password by reset), or an
 *   existing account that is already a member of the organization (linked: its password, name and
 *   address are never changed). An existing account outside the organization is refused
 *   (`uniqueness`): provisioning never takes over an account. Invite the person first.
 * - `active` and delete: see scim-membership.ts. A deleted User's account is not deleted.
 * Results are values: the resource, or the SCIM error (status, scimType, detail) to answer with.
 */
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import { randomId } from '../lib/random.ts';
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import type { UserService } from '../users/user.service.ts';
import type { OrganizationsService } from '../organizations/organizations.service.ts';
import * as store from './scim.store.ts';
import { applyPatch, type Doc } from './scim-patch.ts';
import { patchableUser, readUser, userJson, type UserInput } from './scim-resources.ts';
import { filterToWhere, FilterError } from './scim-filter.ts';
import type { createMembershipSync } from './scim-membership.ts';
import type { ScimCaller } from './scim-tokens.service.ts';

export type ScimFailure = { ok: false; status: number; scimType?: string; detail: string };
export type ScimResult<T> = ({ ok: true } & T) | ScimFailure;
export interface Page {
  startIndex: number;
  count: number;
}

export const notFound = (what: string): ScimFailure => ({ ok: false, status: 404, detail: `${what} not found` });
const lastOwner: ScimFailure = { ok: false, status: 400, scimType: 'mutability', detail: "the organization's last OWNER cannot be deprovisioned: make another member OWNER first" };

/** The columns a checked User document sets. */
function columnsOf(input: UserInput) {
  return {
    user_name: input.userName,
    user_name_key: input.userNameKey,
    external_id: input.externalId,
    display_name: input.displayName,
    given_name: input.givenName,
    family_name: input.familyName,
    email: input.email,
    active: input.active ? 1 : 0,
    attributes: JSON.stringify(input.attributes),
  };
}

/** A filter, or the SCIM error for it. */
export function whereOf(filter: string | undefined, resource: 'User' | 'Group'): ScimResult<{ where: store.Where | null }> {
  if (filter === undefined || filter.trim() === '') return { ok: true, where: null };
  try {
    return { ok: true, where: filterToWhere(filter, resource) };
  } catch (error) {
    if (error instanceof FilterError) return { ok: false, status: 400, scimType: 'invalidFilter', detail: error.message };
    throw error;
  }
}

export function createScimUsersService(deps: {
  db: Db;
  clock: Clock;
  audit: AuditService;
  users: Pick<UserService, 'findUserByEmail' | 'createUser' | 'updateUser'>;
  organizations: Pick<OrganizationsService, 'get'>;
  membership: ReturnType<typeof createMembershipSync>;
}) {
  const { db, clock, audit, users, organizations, membership } = deps;

  async function answer(row: store.ScimUserRow, base: string): Promise<Doc> {
    return userJson(row, base, await store.groupsOfUsers(db, [row.id]));
  }

  /** Writes a checked document over an existing User, then syncs the account's membership. */
  async function write(caller: ScimCaller, row: store.ScimUserRow, input: UserInput, source: AuditSource, base: string): Promise<ScimResult<{ resource: Doc }>> {
    if (input.userNameKey !== row.user_name_key && (await store.findUserByName(db, caller.organizationId, input.userNameKey))) return { ok: false, status: 409, scimType: 'uniqueness', detail: 'another User has this userName' };
    const wasActive = row.active === 1;
    // The User's columns, the account's name and the event, in the transaction given.
    const save = async (trx: Db) => {
      await store.updateUser(trx, row.id, { ...columnsOf(input), updated_at: clock() });
      // The account's name follows the directory only for an account provisioning created.
      if (row.owned === 1) {
        await users.updateUser(row.user_id, { name: input.accountName }, { db: trx, onUpdated: async (inner, change) => {
          if (change.before.name !== change.after.name) await audit.record({ type: 'user.updated', userId: row.user_id, source, details: { fields: ['name'] } }, { db: inner });
        } });
      }
      await audit.record({ type: 'scim.user_updated', userId: row.user_id, source, details: { organizationId: caller.organizationId, scimUserId: row.id, active: input.active } }, { db: trx });
    };
    if (wasActive && !input.active) {
      // Deactivation: the membership, sessions and account change commit with these writes, or nothing does.
      const result = await membership.deprovision(row, source, 'DEACTIVATED', save);
      if (!result.ok) return lastOwner;
    } else {
      await db.transaction().execute(save);
      if (!wasActive && input.active) await membership.provision((await store.findUser(db, caller.organizationId, row.id))!, source);
    }
    return { ok: true, resource: await answer((await store.findUser(db, caller.organizationId, row.id))!, base) };
  }

  return {
    async create(caller: ScimCaller, body: unknown, source: AuditSource, base: string): Promise<ScimResult<{ resource: Doc }>> {
      const read = readUser(body);
      if (!read.ok) return { ...read, status: 400 };
      const input = read.user;
      const { organizationId } = caller;
      if (await store.findUserByName(db, organizationId, input.userNameKey)) return { ok: false, status: 409, scimType: 'uniqueness', detail: 'a User with this userName exists' };
      const now = clock();
      const row = (userId: string, owned: boolean): store.ScimUserRow => ({
        id: randomId(),
        organization_id: organizationId,
        user_id: userId,
        ...columnsOf(input),
        owned: owned ? 1 : 0,
        suspended: 0,
        created_at: now,
        updated_at: now,
      });
      let created: store.ScimUserRow;
      const existing = await users.findUserByEmail(input.email);
      if (existing === null) {
        let inserted: store.ScimUserRow | undefined;
        let result;
        try {
          result = await users.createUser({ email: input.email, name: input.accountName, passwordHash: null, emailVerified: false }, {
            onCreated: async (trx, user) => {
              inserted = row(user.id, true);
              await store.insertUser(trx, inserted);
              await audit.record({ type: 'user.created', userId: user.id, source, reason: 'SCIM_PROVISIONED', details: { organizationId, via: 'scim' } }, { db: trx });
            },
          });
        } catch (error) {
          // Two creations of one userName at once: the unique index decides, the loser is told.
          if (await store.findUserByName(db, organizationId, input.userNameKey)) return { ok: false, status: 409, scimType: 'uniqueness', detail: 'a User with this userName exists' };
          throw error;
        }
        if (!result.ok || inserted === undefined) return { ok: false, status: 409, scimType: 'uniqueness', detail: 'an account with this address was created meanwhile: try again' };
        created = inserted;
      } else {
        if (await store.findUserByAccount(db, organizationId, existing.id)) return { ok: false, status: 409, scimType: 'uniqueness', detail: 'another User of this organization is bound to the account with this address' };
        const member = await organizations.get(organizationId, { userId: existing.id });
        if (member === null) return { ok: false, status: 409, scimType: 'uniqueness', detail: 'an account with this address exists outside the organization: invite the person to the organization first, then provision them' };
        created = row(existing.id, false);
        try {
          await store.insertUser(db, created);
        } catch (error) {
          if (await store.findUserByName(db, organizationId, input.userNameKey)) return { ok: false, status: 409, scimType: 'uniqueness', detail: 'a User with this userName exists' };
          throw error;
        }
      }
      if (created.active === 1) await membership.provision(created, source);
      else if (created.owned === 0) {
        const result = await membership.deprovision(created, source, 'DEACTIVATED');
        if (!result.ok) {
          await store.deleteUser(db, created.id);
          return lastOwner;
        }
      }
      return { ok: true, resource: await answer((await store.findUser(db, organizationId, created.id)) ?? created, base) };
    },

    async get(caller: ScimCaller, id: string, base: string): Promise<ScimResult<{ resource: Doc }>> {
      const row = await store.findUser(db, caller.organizationId, id);
      return row === undefined ? notFound(`User ${id}`) : { ok: true, resource: await answer(row, base) };
    },

    async list(caller: ScimCaller, filter: string | undefined, page: Page, base: string): Promise<ScimResult<{ resources: Doc[]; total: number }>> {
      const where = whereOf(filter, 'User');
      if (!where.ok) return where;
      const { rows, total } = await store.listUsers(db, caller.organizationId, where.where, page.startIndex - 1, page.count);
      const groups = await store.groupsOfUsers(db, rows.map((row) => row.id));
      return { ok: true, total, resources: rows.map((row) => userJson(row, base, groups.filter((group) => group.scim_user_id === row.id))) };
    },

    async replace(caller: ScimCaller, id: string, body: unknown, source: AuditSource, base: string): Promise<ScimResult<{ resource: Doc }>> {
      const row = await store.findUser(db, caller.organizationId, id);
      if (row === undefined) return notFound(`User ${id}`);
      const read = readUser(body);
      if (!read.ok) return { ...read, status: 400 };
      return write(caller, row, read.user, source, base);
    },

    async patch(caller: ScimCaller, id: string, body: unknown, source: AuditSource, base: string): Promise<ScimResult<{ resource: Doc }>> {
      const row = await store.findUser(db, caller.organizationId, id);
      if (row === undefined) return notFound(`User ${id}`);
      const patched = applyPatch(patchableUser(row), body);
      if (!patched.ok) return { ok: false, status: 400, scimType: patched.scimType, detail: patched.detail };
      const read = readUser(patched.doc);
      if (!read.ok) return { ...read, status: 400 };
      return write(caller, row, read.user, source, base);
    },

    async delete(caller: ScimCaller, id: string, source: AuditSource): Promise<ScimResult<object>> {
      const row = await store.findUser(db, caller.organizationId, id);
      if (row === undefined) return notFound(`User ${id}`);
      const remove = async (trx: Db) => {
        await store.deleteUser(trx, row.id);
        await audit.record({ type: 'scim.user_deleted', userId: row.user_id, source, details: { organizationId: caller.organizationId, scimUserId: row.id } }, { db: trx });
      };
      if (row.active === 1) {
        // The deprovisioning and the deletion commit together, or nothing does.
        const result = await membership.deprovision(row, source, 'DELETED', remove);
        if (!result.ok) return lastOwner;
      } else await db.transaction().execute(remove);
      return { ok: true };
    },

    /** What the directories sent about an account, in each organization (its data export): no token, nothing secret. */
    async ofAccount(userId: string): Promise<Array<{ organizationId: string; id: string; userName: string; externalId: string | null; active: boolean }>> {
      return (await store.listUsersOfAccount(db, userId)).map((row) => ({ organizationId: row.organization_id, id: row.id, userName: row.user_name, externalId: row.external_id, active: row.active === 1 }));
    },
  };
}
