/** Queries on users and their roles. No logic: the service decides, the store reads and writes. */
import { SqliteAdapter, sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely';
import type { Db } from '../storage/database.ts';
import { preparedQuery } from '../storage/prepared.ts';
import type { Database, NewUserRow, UserRow } from '../storage/schema.ts';
import type { KeysetPosition } from '../lib/keyset-cursor.ts';
import type { UserSearch, UserSearchMatch } from './user-search.ts';
import { containsPattern, escapeLike } from '../lib/search-text.ts';

/** Inserts the user and their roles; pass a transaction, so that both are written or neither. */
export async function insertUserWithRoles(db: Db, user: NewUserRow, roles: readonly string[]): Promise<void> {
  await db.insertInto('users').values(user).execute();
  if (roles.length > 0) {
    await db
      .insertInto('user_roles')
      .values(roles.map((role) => ({ user_id: user.id, role, created_at: user.created_at })))
      .execute();
  }
}

const selectUserByEmail = preparedQuery((db, email: string) => db.selectFrom('users').selectAll().where('email', '=', email));
const selectUserById = preparedQuery((db, id: string) => db.selectFrom('users').selectAll().where('id', '=', id));
const selectRolesOfUser = preparedQuery((db, userId: string) => db.selectFrom('user_roles').select('role').where('user_id', '=', userId).orderBy('role'));

export async function findUserByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  return (await selectUserByEmail(db, email)).rows[0];
}

export async function findUserById(db: Db, id: string): Promise<UserRow | undefined> {
  return (await selectUserById(db, id)).rows[0];
}

export async function findRolesByUserId(db: Db, userId: string): Promise<string[]> {
  return (await selectRolesOfUser(db, userId)).rows.map((row) => row.role);
}

export async function updatePasswordHash(db: Db, userId: string, passwordHash: string, updatedAt: number): Promise<void> {
  await db.updateTable('users').set({ password_hash: passwordHash, password_locked_at: null, updated_at: updatedAt }).where('id', '=', userId).execute();
}

/** Replaces the hash only while it is still `expected`; false when another change came first. */
export async function replacePasswordHash(db: Db, userId: string, expected: string, passwordHash: string, updatedAt: number): Promise<boolean> {
  const result = await db
    .updateTable('users')
    .set({ password_hash: passwordHash, updated_at: updatedAt })
    .where('id', '=', userId)
    .where('password_hash', '=', expected)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function lockPassword(db: Db, userId: string, now: number): Promise<boolean> {
  const result = await db.updateTable('users').set({ password_locked_at: now }).where('id', '=', userId).where('password_locked_at', 'is', null).executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Stamps the address verified unless it already is (the first stamp stays); true when it changed. */
export async function markEmailVerified(db: Db, id: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('users')
    .set({ email_verified_at: now, updated_at: now })
    .where('id', '=', id)
    .where('email_verified_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Stamps the name confirmed unless it already is (the first stamp stays). */
export async function confirmName(db: Db, id: string, now: number): Promise<void> {
  await db.updateTable('users').set({ name_confirmed_at: now, updated_at: now }).where('id', '=', id).where('name_confirmed_at', 'is', null).execute();
}

/**
 * Sets the language of the user's mails. `onlyIfUnset`: only while it has none (the first sign-in
 * after it became known); otherwise only when it differs. Leaves `updated_at` alone: a language
 * is a preference recorded on the way, not a change to the account (and `updated_at` is the
 * row's lock stamp, see `touchUser`). True when a row changed.
 */
export async function updateLocale(db: Db, id: string, locale: string, options: { onlyIfUnset: boolean }): Promise<boolean> {
  let query = db.updateTable('users').set({ locale }).where('id', '=', id);
  query = options.onlyIfUnset ? query.where('locale', 'is', null) : query.where((eb) => eb.or([eb('locale', 'is', null), eb('locale', '<>', locale)]));
  const result = await query.executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** True when the user exists (and is now locked until the end of the caller's transaction). */
export async function touchUser(db: Db, id: string, now: number): Promise<boolean> {
  const result = await db.updateTable('users').set({ updated_at: now }).where('id', '=', id).executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Whether any account exists: one row read, at any size (a count of ten million rows takes seconds). */
export async function hasAnyUser(db: Db): Promise<boolean> {
  return (await db.selectFrom('users').select('id').limit(1).executeTakeFirst()) !== undefined;
}

export async function countUsers(db: Db, filter: Pick<UserListFilter, 'disabled' | 'conditions'> = {}): Promise<number> {
  let query = db.selectFrom('users').select((eb) => eb.fn.countAll<number | string>().as('count'));
  if (filter.disabled !== undefined) query = query.where('disabled_at', filter.disabled ? 'is not' : 'is', null);
  for (const condition of filter.conditions ?? []) query = query.where(condition);
  const row = await query.executeTakeFirstOrThrow();
  return Number(row.count);
}

/** The roles of many users in one query. */
export async function findRolesByUserIds(db: Db, userIds: readonly string[]): Promise<Map<string, string[]>> {
  const roles = new Map<string, string[]>(userIds.map((id) => [id, []]));
  if (userIds.length === 0) return roles;
  const rows = await db.selectFrom('user_roles').select(['user_id', 'role']).where('user_id', 'in', userIds).orderBy('role').execute();
  for (const row of rows) roles.get(row.user_id)?.push(row.role);
  return roles;
}


/** Local parts shorter than this hold no trigram: their index could not narrow anything. */
const MIN_LOCAL_PART = 3;

/**
 * The stored address contains `text`. On PostgreSQL, text holding an `@` is looked up by the part
 * before it, a suffix of the local part (the local part's trigram index, migration
 * 20261202-users-search-local-part), and the whole text is checked on the rows found with
 * `strpos`, which no trigram index serves: asked of the address's index, the domain's trigrams (in
 * nearly every row) made the index read most of itself at 10,000,000 users (perf/analysis.md).
 * An address holds one `@`, so it contains the text exactly when its local part ends with the part
 * before the text's first `@` and the whole text is in it.
 */
function emailContains(db: Db, text: string): Expression<SqlBool> {
  const at = text.indexOf('@');
  if (db.getExecutor().adapter instanceof SqliteAdapter || at < MIN_LOCAL_PART) {
    return sql<SqlBool>`${sql.ref('email')} like ${containsPattern(text)} escape '\\'`;
  }
  const localSuffix = `%${escapeLike(text.slice(0, at))}`;
  return sql<SqlBool>`(split_part(${sql.ref('email')}, '@', 1) like ${localSuffix} escape '\\' and strpos(${sql.ref('email')}, ${text}) > 0)`;
}

/**
 * The stored address matches: starts with the text (on PostgreSQL a B-tree walk of
 * `users_email_prefix_idx`, migration 20261203-users-email-prefix), contains it, or is it.
 */
function emailMatches(db: Db, search: StoredUserSearch): Expression<SqlBool> {
  switch (search.match) {
    case 'prefix':
      return sql<SqlBool>`${sql.ref('email')} like ${`${escapeLike(search.email)}%`} escape '\\'`;
    case 'contains':
      return emailContains(db, search.email);
    case 'exact':
      return sql<SqlBool>`${sql.ref('email')} = ${search.email}`;
  }
}

/**
 * The lower-cased name matches: one of its words starts with the text (the name's start, or after
 * a space), contains it, or the whole name is it. On PostgreSQL each is served by the name's
 * trigram index (migration 20261130-users-search-trigram); names are short, so their lists are too.
 */
function nameMatches(search: StoredUserSearch): Expression<SqlBool> {
  const name = sql`lower(${sql.ref('name')})`;
  switch (search.match) {
    case 'prefix': {
      const start = `${escapeLike(search.name)}%`;
      return sql<SqlBool>`(${name} like ${start} escape '\\' or ${name} like ${`% ${start}`} escape '\\')`;
    }
    case 'contains':
      return sql<SqlBool>`${name} like ${containsPattern(search.name)} escape '\\'`;
    case 'exact':
      return sql<SqlBool>`${name} like ${escapeLike(search.name)} escape '\\'`;
  }
}

/** A search as the store runs it: how it matches, the text lower-cased for names and normalised for addresses. */
export interface StoredUserSearch {
  match: UserSearchMatch;
  scope: UserSearch['scope'];
  name: string;
  email: string;
}

/** What the admin user list narrows by, combined: a role held, the disabled state, an unverified address. */
/**
 * A condition on a user row that another module states about its own tables (has a second factor,
 * is a member of an organization, signed in lately), built by that module's service: the users
 * query stays one query over the `(created_at, id)` index, the condition a correlated lookup per row.
 */
export type UserCondition = (eb: ExpressionBuilder<Database, 'users'>) => Expression<SqlBool>;

export interface UserListFilter {
  role?: string;
  disabled?: boolean;
  unverified?: boolean;
  /** Conditions of other modules, all met. */
  conditions?: readonly UserCondition[];
}

/**
 * Users newest first (or oldest first), strictly after `before`. With a search, those whose name
 * (lower-cased by the database) or stored (normalised) e-mail matches it (`nameMatches`,
 * `emailMatches`). Every filter is a condition of the one query, which the
 * `(created_at, id)` index orders: a page reads `limit` rows, never the rows before it.
 */
export async function findUsers(db: Db, filter: UserListQuery): Promise<UserRow[]> {
  return selectUsers(db, filter).execute();
}

export type UserListQuery = UserListFilter & { search?: StoredUserSearch; before?: KeysetPosition; oldestFirst?: boolean; limit: number };

/** The query of `findUsers`, unexecuted (a test reads its plan). */
export function selectUsers(db: Db, filter: UserListQuery) {
  let query = db.selectFrom('users').selectAll();
  const { search, before } = filter;
  if (search !== undefined) {
    query = query.where((eb) => (search.scope === 'address' ? emailMatches(db, search) : eb.or([nameMatches(search), emailMatches(db, search)])));
  }
  const role = filter.role;
  if (role !== undefined) {
    query = query.where((eb) => eb.exists(eb.selectFrom('user_roles').select('user_roles.user_id').whereRef('user_roles.user_id', '=', 'users.id').where('user_roles.role', '=', role)));
  }
  if (filter.disabled !== undefined) query = query.where('disabled_at', filter.disabled ? 'is not' : 'is', null);
  if (filter.unverified === true) query = query.where('email_verified_at', 'is', null);
  for (const condition of filter.conditions ?? []) query = query.where(condition);
  const after = filter.oldestFirst === true;
  if (before !== undefined) {
    const beyond = after ? '>' : '<';
    query = query.where((eb) =>
      eb.or([eb('created_at', beyond, before.createdAt), eb.and([eb('created_at', '=', before.createdAt), eb('id', beyond, before.id)])]),
    );
  }
  const direction = after ? 'asc' : 'desc';
  return query.orderBy('created_at', direction).orderBy('id', direction).limit(filter.limit);
}

/** Users by id, in one query (the audit log names people by address). */
export async function findUsersByIds(db: Db, ids: readonly string[]): Promise<UserRow[]> {
  if (ids.length === 0) return [];
  return db.selectFrom('users').selectAll().where('id', 'in', ids).execute();
}

export async function updateUserFields(
  db: Db,
  id: string,
  fields: { name?: string; name_confirmed_at?: number; disabled_at?: number | null },
  updatedAt: number,
): Promise<void> {
  await db.updateTable('users').set({ ...fields, updated_at: updatedAt }).where('id', '=', id).execute();
}

/**
 * Takes, until the end of the caller's transaction, the one lock that every change of who is an
 * enabled holder of `role` takes first; call it as the transaction's first statement, so that what
 * the transaction reads afterwards is what the previous holder of the lock committed. PostgreSQL:
 * a transaction-scoped advisory lock named after the role (one key: no lock-order deadlocks
 * between many changes). SQLite: a write that changes nothing, which takes the database's single
 * write lock at once, so that a deferred transaction of another process (the CLI) cannot read
 * before it and write after it.
 */
export async function lockRoleHolders(db: Db, role: string): Promise<void> {
  if (db.getExecutor().adapter instanceof SqliteAdapter) {
    await sql`update user_roles set role = role where 0 = 1`.execute(db);
    return;
  }
  await sql`select pg_advisory_xact_lock(hashtext(${`gatehouse.role-holders.${role}`}))`.execute(db);
}

/** Whether the user exists, is not disabled and holds `role`. */
export async function isEnabledHolder(db: Db, userId: string, role: string): Promise<boolean> {
  const row = await db
    .selectFrom('users')
    .innerJoin('user_roles', 'user_roles.user_id', 'users.id')
    .select('users.id')
    .where('users.id', '=', userId)
    .where('user_roles.role', '=', role)
    .where('users.disabled_at', 'is', null)
    .executeTakeFirst();
  return row !== undefined;
}

/** How many enabled users hold `role`. */
export async function countEnabledHolders(db: Db, role: string): Promise<number> {
  const row = await db
    .selectFrom('users')
    .innerJoin('user_roles', 'user_roles.user_id', 'users.id')
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .where('user_roles.role', '=', role)
    .where('users.disabled_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

/** Deletes the user; what references them with ON DELETE CASCADE goes with them. Whether a row was deleted. */
export async function deleteUser(db: Db, id: string): Promise<boolean> {
  const result = await db.deleteFrom('users').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Makes the user's roles exactly `roles`: removes the others, adds the missing ones. */
export async function replaceRoles(db: Db, userId: string, roles: readonly string[], now: number): Promise<void> {
  let removal = db.deleteFrom('user_roles').where('user_id', '=', userId);
  if (roles.length > 0) removal = removal.where('role', 'not in', roles);
  await removal.execute();
  if (roles.length === 0) return;
  const existing = new Set((await db.selectFrom('user_roles').select('role').where('user_id', '=', userId).execute()).map((row) => row.role));
  const added = roles.filter((role) => !existing.has(role));
  if (added.length > 0) {
    await db.insertInto('user_roles').values(added.map((role) => ({ user_id: userId, role, created_at: now }))).execute();
  }
}

/** The length of what follows the parameters in our argon2 hashes: `$` + 16-byte salt + `$` + 32-byte hash, in unpadded base64. */
const HASH_SUFFIX_LENGTH = 1 + 22 + 1 + 43;

/** How many accounts one statement of `countPasswordHashParameters` reads. */
export const HASH_PARAMETERS_SLICE = 20_000;

/**
 * How many password hashes were made with each argon2 parameter set (the PHC prefix
 * `$argon2id$v=19$m=…,t=…,p=…`), for a background job. It reads the table in slices of `slice`
 * accounts in primary-key order, one short statement each: one statement over every account passed
 * the statement timeout at 10,000,000 of them, every time. `between` runs after each slice (a pause
 * for the event loop); when `shouldStop` says so the count ends early and gives null, not a part.
 */
export async function countPasswordHashParameters(
  db: Db,
  options: { slice?: number; between?: () => Promise<void>; shouldStop?: () => boolean } = {},
): Promise<Array<{ encoded: string; count: number }> | null> {
  const slice = options.slice ?? HASH_PARAMETERS_SLICE;
  // Only argon2 hashes longer than our suffix have a set: a foreign one (imported, until its owner's
  // next sign-in) may be shorter than the suffix (PostgreSQL refuses a negative length; an imported
  // argon2 hash with a short salt is one too) or carry its salt in the prefix (the hasher ignores a
  // set it cannot parse); the others, and accounts without a password, fall in the group of null.
  const encoded = sql<string | null>`case when password_hash like '$argon2%' and length(password_hash) > ${sql.lit(HASH_SUFFIX_LENGTH)} then substr(password_hash, 1, length(password_hash) - ${sql.lit(HASH_SUFFIX_LENGTH)}) end`;
  const counts = new Map<string, number>();
  let after: string | undefined;
  for (;;) {
    if (options.shouldStop?.() === true) return null;
    // A slice is `slice` accounts, whatever their sign-in: filtered on the hash instead, a store of
    // accounts with few passwords (single sign-on, passkeys) would be read whole to fill one.
    let accounts = db.selectFrom('users').select(['id', 'password_hash']).orderBy('id').limit(slice);
    if (after !== undefined) accounts = accounts.where('id', '>', after);
    // The slice's last id, as the database orders ids (its collation, not JavaScript's order).
    const rows = await db
      .with('slice', () => accounts)
      .selectFrom('slice')
      .select([encoded.as('encoded'), sql<string | number>`count(*)`.as('count'), sql<string>`(select max(id) from slice)`.as('last')])
      .groupBy(encoded)
      .execute();
    let read = 0;
    for (const row of rows) {
      const count = Number(row.count);
      read += count;
      if (row.encoded !== null) counts.set(row.encoded, (counts.get(row.encoded) ?? 0) + count);
      after = row.last;
    }
    if (read < slice) break;
    await options.between?.();
  }
  return [...counts].map(([parameters, count]) => ({ encoded: parameters, count }));
}
