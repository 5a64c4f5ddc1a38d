/**
 * SCIM Groups of an organization: create, read, list, replace, patch (members added and removed
 * the ways Okta and Entra send them), delete. Members are the organization's SCIM Users; a member
 * id that is not one of them is refused (`invalidValue`). After each change, the members whose
 * groups changed get the organization role the mappings give (scim-membership.ts: `applyRoles`).
 */
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import { randomId } from '../lib/random.ts';
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import * as store from './scim.store.ts';
import { applyPatch, type Doc } from './scim-patch.ts';
import { groupJson, readGroup, type GroupInput } from './scim-resources.ts';
import type { createMembershipSync } from './scim-membership.ts';
import type { ScimCaller } from './scim-tokens.service.ts';
import { notFound, whereOf, type Page, type ScimResult } from './scim-users.service.ts';

export function createScimGroupsService(deps: { db: Db; clock: Clock; audit: AuditService; membership: ReturnType<typeof createMembershipSync> }) {
  const { db, clock, audit, membership } = deps;

  async function answer(row: store.GroupRow, base: string): Promise<Doc> {
    return groupJson(row, base, await store.listGroupMembers(db, [row.id]));
  }

  async function unknownMembers(organizationId: string, ids: readonly string[]): Promise<string[]> {
    const found = new Set((await store.findUsersByIds(db, organizationId, ids)).map((row) => row.id));
    return ids.filter((id) => !found.has(id));
  }

  /** Writes the group's attributes and, when listed, exactly these members; roles follow. */
  async function save(caller: ScimCaller, row: store.GroupRow, input: GroupInput, isNew: boolean, source: AuditSource): Promise<ScimResult<object>> {
    const { organizationId } = caller;
    const clash = await store.findGroupByName(db, organizationId, input.displayNameKey);
    if (clash !== undefined && clash.id !== row.id) return { ok: false, status: 409, scimType: 'uniqueness', detail: 'another Group has this displayName' };
    if (input.memberIds !== null) {
      const unknown = await unknownMembers(organizationId, input.memberIds);
      if (unknown.length > 0) return { ok: false, status: 400, scimType: 'invalidValue', detail: `members: ${unknown.length} value(s) name no User of this organization` };
    }
    const before = isNew ? [] : (await store.listGroupMembers(db, [row.id])).map((member) => member.scim_user_id);
    const after = input.memberIds ?? before;
    const renamed = input.displayNameKey !== row.display_name_key;
    try {
      await db.transaction().execute(async (trx) => {
        const now = clock();
        if (isNew) await store.insertGroup(trx, { ...row, display_name: input.displayName, display_name_key: input.displayNameKey, external_id: input.externalId, created_at: now, updated_at: now });
        else await store.updateGroup(trx, row.id, { display_name: input.displayName, display_name_key: input.displayNameKey, external_id: input.externalId, updated_at: now });
        await store.removeGroupMembers(trx, row.id, before.filter((id) => !after.includes(id)));
        await store.addGroupMembers(trx, row.id, after);
        const added = after.filter((id) => !before.includes(id)).length;
        const removed = before.filter((id) => !after.includes(id)).length;
        await audit.record({ type: 'scim.group_changed', source, reason: isNew ? 'CREATED' : 'UPDATED', details: { organizationId, groupId: row.id, membersAdded: added, membersRemoved: removed } }, { db: trx });
      });
    } catch (error) {
      // Two groups given one displayName at once: the unique index decides, the loser is told.
      const taken = await store.findGroupByName(db, organizationId, input.displayNameKey);
      if (taken !== undefined && taken.id !== row.id) return { ok: false, status: 409, scimType: 'uniqueness', detail: 'another Group has this displayName' };
      throw error;
    }
    // A rename may change what the group maps to for all its members; else only those who came or went.
    const affected = renamed ? [...new Set([...before, ...after])] : [...before.filter((id) => !after.includes(id)), ...after.filter((id) => !before.includes(id))];
    await membership.applyRoles(organizationId, affected, source);
    return { ok: true };
  }

  return {
    async create(caller: ScimCaller, body: unknown, source: AuditSource, base: string): Promise<ScimResult<{ resource: Doc }>> {
      const read = readGroup(body);
      if (!read.ok) return { ...read, status: 400 };
      const row: store.GroupRow = { id: randomId(), organization_id: caller.organizationId, display_name: '', display_name_key: '', external_id: null, created_at: 0, updated_at: 0 };
      const saved = await save(caller, row, read.group, true, source);
      if (!saved.ok) return saved;
      return { ok: true, resource: await answer((await store.findGroup(db, caller.organizationId, row.id))!, base) };
    },

    async get(caller: ScimCaller, id: string, base: string): Promise<ScimResult<{ resource: Doc }>> {
      const row = await store.findGroup(db, caller.organizationId, id);
      return row === undefined ? notFound(`Group ${id}`) : { ok: true, resource: await answer(row, base) };
    },

    /** `excludeMembers`: `excludedAttributes=members`, which Entra and Okta ask for on large groups. */
    async list(caller: ScimCaller, filter: string | undefined, page: Page, base: string, excludeMembers: boolean): Promise<ScimResult<{ resources: Doc[]; total: number }>> {
      const where = whereOf(filter, 'Group');
      if (!where.ok) return where;
      const { rows, total } = await store.listGroups(db, caller.organizationId, where.where, page.startIndex - 1, page.count);
      const members = excludeMembers ? [] : await store.listGroupMembers(db, rows.map((row) => row.id));
      return {
        ok: true,
        total,
        resources: rows.map((row) => {
          const json = groupJson(row, base, members.filter((member) => member.group_id === row.id));
          if (excludeMembers) delete json.members;
          return json;
        }),
      };
    },

    async replace(caller: ScimCaller, id: string, body: unknown, source: AuditSource, base: string): Promise<ScimResult<{ resource: Doc }>> {
      const row = await store.findGroup(db, caller.organizationId, id);
      if (row === undefined) return notFound(`Group ${id}`);
      const read = readGroup(body);
      if (!read.ok) return { ...read, status: 400 };
      // A PUT replaces the members: no list means none.
      const saved = await save(caller, row, { ...read.group, memberIds: read.group.memberIds ?? [] }, false, source);
      if (!saved.ok) return saved;
      return { ok: true, resource: await answer((await store.findGroup(db, caller.organizationId, id))!, base) };
    },

    async patch(caller: ScimCaller, id: string, body: unknown, source: AuditSource, base: string): Promise<ScimResult<{ resource: Doc }>> {
      const row = await store.findGroup(db, caller.organizationId, id);
      if (row === undefined) return notFound(`Group ${id}`);
      const current = groupJson(row, base, await store.listGroupMembers(db, [row.id]));
      const doc: Doc = { displayName: current.displayName, ...(row.external_id !== null && { externalId: row.external_id }), members: (current.members as Doc[]).map((member) => ({ value: member.value })) };
      const patched = applyPatch(doc, body);
      if (!patched.ok) return { ok: false, status: 400, scimType: patched.scimType, detail: patched.detail };
      const read = readGroup(patched.doc);
      if (!read.ok) return { ...read, status: 400 };
      const saved = await save(caller, row, { ...read.group, memberIds: read.group.memberIds ?? [] }, false, source);
      if (!saved.ok) return saved;
      return { ok: true, resource: await answer((await store.findGroup(db, caller.organizationId, id))!, base) };
    },

    async delete(caller: ScimCaller, id: string, source: AuditSource): Promise<ScimResult<object>> {
      const row = await store.findGroup(db, caller.organizationId, id);
      if (row === undefined) return notFound(`Group ${id}`);
      const members = (await store.listGroupMembers(db, [row.id])).map((member) => member.scim_user_id);
      await db.transaction().execute(async (trx) => {
        await store.deleteGroup(trx, row.id);
        await audit.record({ type: 'scim.group_changed', source, reason: 'DELETED', details: { organizationId: caller.organizationId, groupId: row.id, membersAdded: 0, membersRemoved: members.length } }, { db: trx });
      });
      await membership.applyRoles(caller.organizationId, members, source);
      return { ok: true };
    },
  };
}
