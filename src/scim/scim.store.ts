/** The SCIM module's tables (migrations/20261129-scim-tables.ts). Only its own services use them. */
import type { Expression, Selectable, SqlBool } from 'kysely';
import type { Db } from '../storage/database.ts';

export interface ScimTokensTable {
  id: string;
  organization_id: string;
  name: string | null;
  token_hash: string;
  created_by: string | null;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

export interface ScimUsersTable {
  id: string;
  organization_id: string;
  user_id: string;
  user_name: string;
  user_name_key: string;
  external_id: string | null;
  display_name: string | null;
  given_name: string | null;
  family_name: string | null;
  email: string;
  active: number;
  owned: number;
  suspended: number;
  /** JSON: the other attributes kept (title, phoneNumbers, the enterprise extension…). */
  attributes: string;
  created_at: number;
  updated_at: number;
}

export interface ScimGroupsTable {
  id: string;
  organization_id: string;
  display_name: string;
  display_name_key: string;
  external_id: string | null;
  created_at: number;
  updated_at: number;
}

export interface ScimGroupMembersTable {
  group_id: string;
  scim_user_id: string;
}

export interface ScimRoleMappingsTable {
  organization_id: string;
  group_name_key: string;
  group_name: string;
  role: string;
}

declare module '../storage/schema.ts' {
  interface Database {
    scim_tokens: ScimTokensTable;
    scim_users: ScimUsersTable;
    scim_groups: ScimGroupsTable;
    scim_group_members: ScimGroupMembersTable;
    scim_role_mappings: ScimRoleMappingsTable;
  }
}

export type TokenRow = Selectable<ScimTokensTable>;
export type ScimUserRow = Selectable<ScimUsersTable>;
export type GroupRow = Selectable<ScimGroupsTable>;
export type RoleMappingRow = Selectable<ScimRoleMappingsTable>;
/** A filter built by scim-filter.ts over the allow-listed columns of one table. */
export type Where = Expression<SqlBool>;

// Tokens.

export async function insertToken(db: Db, row: TokenRow): Promise<void> {
  await db.insertInto('scim_tokens').values(row).execute();
}

export async function findTokenByHash(db: Db, tokenHash: string): Promise<TokenRow | undefined> {
  return db.selectFrom('scim_tokens').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

export async function listTokens(db: Db, organizationId: string): Promise<TokenRow[]> {
  return db.selectFrom('scim_tokens').selectAll().where('organization_id', '=', organizationId).orderBy('created_at', 'desc').orderBy('id').execute();
}

export async function findActiveToken(db: Db, organizationId: string, id: string): Promise<TokenRow | undefined> {
  return db.selectFrom('scim_tokens').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
}

export async function countActiveTokens(db: Db, organizationId: string): Promise<number> {
  const row = await db.selectFrom('scim_tokens').select((eb) => eb.fn.countAll<string | number>().as('count')).where('organization_id', '=', organizationId).where('revoked_at', 'is', null).executeTakeFirstOrThrow();
  return Number(row.count);
}

export async function revokeToken(db: Db, id: string, now: number): Promise<boolean> {
  const result = await db.updateTable('scim_tokens').set({ revoked_at: now }).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
  return (result.numUpdatedRows ?? 0n) > 0n;
}

export async function touchToken(db: Db, id: string, now: number): Promise<void> {
  await db.updateTable('scim_tokens').set({ last_used_at: now }).where('id', '=', id).execute();
}

// Users.

export async function insertUser(db: Db, row: ScimUserRow): Promise<void> {
  await db.insertInto('scim_users').values(row).execute();
}

export async function updateUser(db: Db, id: string, fields: Partial<Omit<ScimUserRow, 'id' | 'organization_id' | 'user_id' | 'created_at'>>): Promise<void> {
  await db.updateTable('scim_users').set(fields).where('id', '=', id).execute();
}

export async function findUser(db: Db, organizationId: string, id: string): Promise<ScimUserRow | undefined> {
  return db.selectFrom('scim_users').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
}

export async function findUserByName(db: Db, organizationId: string, userNameKey: string): Promise<ScimUserRow | undefined> {
  return db.selectFrom('scim_users').selectAll().where('organization_id', '=', organizationId).where('user_name_key', '=', userNameKey).executeTakeFirst();
}

export async function findUserByAccount(db: Db, organizationId: string, userId: string): Promise<ScimUserRow | undefined> {
  return db.selectFrom('scim_users').selectAll().where('organization_id', '=', organizationId).where('user_id', '=', userId).executeTakeFirst();
}

export async function findUsersByIds(db: Db, organizationId: string, ids: readonly string[]): Promise<ScimUserRow[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('scim_users').selectAll().where('organization_id', '=', organizationId).where('id', 'in', ids).execute();
}

export async function listUsers(db: Db, organizationId: string, where: Where | null, offset: number, limit: number): Promise<{ rows: ScimUserRow[]; total: number }> {
  let query = db.selectFrom('scim_users').where('organization_id', '=', organizationId);
  if (where !== null) query = query.where(where);
  const count = await query.select((eb) => eb.fn.countAll<string | number>().as('count')).executeTakeFirstOrThrow();
  const rows = limit === 0 ? [] : await query.selectAll().orderBy('created_at').orderBy('id').offset(offset).limit(limit).execute();
  return { rows, total: Number(count.count) };
}

export async function deleteUser(db: Db, id: string): Promise<void> {
  await db.deleteFrom('scim_users').where('id', '=', id).execute();
}

/** The SCIM Users of one account, in every organization (what account deletion exports). */
export async function listUsersOfAccount(db: Db, userId: string): Promise<ScimUserRow[]> {
  return db.selectFrom('scim_users').selectAll().where('user_id', '=', userId).execute();
}

// Groups.

export async function insertGroup(db: Db, row: GroupRow): Promise<void> {
  await db.insertInto('scim_groups').values(row).execute();
}

export async function updateGroup(db: Db, id: string, fields: Partial<Pick<GroupRow, 'display_name' | 'display_name_key' | 'external_id' | 'updated_at'>>): Promise<void> {
  await db.updateTable('scim_groups').set(fields).where('id', '=', id).execute();
}

export async function findGroup(db: Db, organizationId: string, id: string): Promise<GroupRow | undefined> {
  return db.selectFrom('scim_groups').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
}

export async function findGroupByName(db: Db, organizationId: string, key: string): Promise<GroupRow | undefined> {
  return db.selectFrom('scim_groups').selectAll().where('organization_id', '=', organizationId).where('display_name_key', '=', key).executeTakeFirst();
}

export async function listGroups(db: Db, organizationId: string, where: Where | null, offset: number, limit: number): Promise<{ rows: GroupRow[]; total: number }> {
  let query = db.selectFrom('scim_groups').where('organization_id', '=', organizationId);
  if (where !== null) query = query.where(where);
  const count = await query.select((eb) => eb.fn.countAll<string | number>().as('count')).executeTakeFirstOrThrow();
  const rows = limit === 0 ? [] : await query.selectAll().orderBy('created_at').orderBy('id').offset(offset).limit(limit).execute();
  return { rows, total: Number(count.count) };
}

export async function deleteGroup(db: Db, id: string): Promise<void> {
  await db.deleteFrom('scim_groups').where('id', '=', id).execute();
}

/** Members of the groups, with the display name of each. */
export async function listGroupMembers(db: Db, groupIds: readonly string[]): Promise<Array<{ group_id: string; scim_user_id: string; user_name: string; display_name: string | null }>> {
  if (groupIds.length === 0) return [];
  return db
    .selectFrom('scim_group_members')
    .innerJoin('scim_users', 'scim_users.id', 'scim_group_members.scim_user_id')
    .select(['scim_group_members.group_id', 'scim_group_members.scim_user_id', 'scim_users.user_name', 'scim_users.display_name'])
    .where('scim_group_members.group_id', 'in', groupIds)
    .orderBy('scim_users.created_at')
    .execute();
}

/**
 * Adds these members; one that is a member already stays one. The primary key decides (insert or
 * ignore), never a read before the insert: two requests adding the same member at once both succeed.
 */
export async function addGroupMembers(db: Db, groupId: string, scimUserIds: readonly string[]): Promise<void> {
  const fresh = [...new Set(scimUserIds)];
  if (fresh.length === 0) return;
  await db
    .insertInto('scim_group_members')
    .values(fresh.map((id) => ({ group_id: groupId, scim_user_id: id })))
    .onConflict((conflict) => conflict.columns(['group_id', 'scim_user_id']).doNothing())
    .execute();
}

export async function removeGroupMembers(db: Db, groupId: string, scimUserIds: readonly string[]): Promise<void> {
  if (scimUserIds.length === 0) return;
  await db.deleteFrom('scim_group_members').where('group_id', '=', groupId).where('scim_user_id', 'in', [...scimUserIds]).execute();
}

/** The display names (lower-cased keys) of the groups a SCIM User is in. */
export async function groupKeysOfUser(db: Db, scimUserId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('scim_group_members')
    .innerJoin('scim_groups', 'scim_groups.id', 'scim_group_members.group_id')
    .select('scim_groups.display_name_key')
    .where('scim_group_members.scim_user_id', '=', scimUserId)
    .execute();
  return rows.map((row) => row.display_name_key);
}

export async function groupsOfUsers(db: Db, scimUserIds: readonly string[]): Promise<Array<{ scim_user_id: string; group_id: string; display_name: string }>> {
  if (scimUserIds.length === 0) return [];
  return db
    .selectFrom('scim_group_members')
    .innerJoin('scim_groups', 'scim_groups.id', 'scim_group_members.group_id')
    .select(['scim_group_members.scim_user_id', 'scim_groups.id as group_id', 'scim_groups.display_name'])
    .where('scim_group_members.scim_user_id', 'in', [...scimUserIds])
    .execute();
}

// Role mappings.

export async function listRoleMappings(db: Db, organizationId: string): Promise<RoleMappingRow[]> {
  return db.selectFrom('scim_role_mappings').selectAll().where('organization_id', '=', organizationId).orderBy('group_name_key').execute();
}

export async function replaceRoleMappings(db: Db, organizationId: string, rows: readonly RoleMappingRow[]): Promise<void> {
  await db.deleteFrom('scim_role_mappings').where('organization_id', '=', organizationId).execute();
  if (rows.length > 0) await db.insertInto('scim_role_mappings').values([...rows]).execute();
}
