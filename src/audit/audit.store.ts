/** Queries on the audit log. Functions take `db` so callers can pass a transaction. */
import { SqliteAdapter, sql, type SqlBool } from 'kysely';
import type { Db } from '../storage/database.ts';
import { preparedInsert } from '../storage/prepared.ts';
import type { AuditEventRow } from '../storage/schema.ts';
import type { KeysetPosition } from '../lib/keyset-cursor.ts';
import type { UserCondition } from '../users/user.store.ts';

const insertEventRow = preparedInsert('audit_events', {
  id: true,
  type: true,
  user_id: true,
  actor_user_id: true,
  email: true,
  ip: true,
  user_agent: true,
  reason: true,
  details: true,
  created_at: true,
});

export async function insertEvent(db: Db, row: AuditEventRow): Promise<void> {
  await insertEventRow(db, row);
}

/**
 * What an audit query may narrow by (all combined): the account (`userId`), or an account and the
 * address its failed sign-ins tried (`about`), one type or a list of types (`types`, or all but
 * `excludeTypes`), and a time range (`from` inclusive, `to` exclusive, epoch ms).
 */
export interface EventFilter {
  userId?: string;
  about?: { userId: string | null; email: string };
  type?: string;
  types?: readonly string[];
  excludeTypes?: readonly string[];
  from?: number;
  to?: number;
}

/** Newest first, strictly after `before`; `limit` rows at most. */
export async function findEvents(db: Db, filter: EventFilter & { before?: KeysetPosition; limit: number }): Promise<AuditEventRow[]> {
  let query = db.selectFrom('audit_events').selectAll();
  if (filter.userId !== undefined) query = query.where('user_id', '=', filter.userId);
  const about = filter.about;
  if (about !== undefined) {
    query = query.where((eb) =>
      about.userId === null ? eb('email', '=', about.email) : eb.or([eb('user_id', '=', about.userId), eb('email', '=', about.email)]),
    );
  }
  if (filter.type !== undefined) query = query.where('type', '=', filter.type);
  if (filter.types !== undefined) query = filter.types.length === 0 ? query.where(sql<SqlBool>`1 = 0`) : query.where('type', 'in', filter.types);
  if (filter.excludeTypes !== undefined && filter.excludeTypes.length > 0) query = query.where('type', 'not in', filter.excludeTypes);
  if (filter.from !== undefined) query = query.where('created_at', '>=', filter.from);
  if (filter.to !== undefined) query = query.where('created_at', '<', filter.to);
  const before = filter.before;
  if (before !== undefined) {
    query = query.where((eb) =>
      eb.or([eb('created_at', '<', before.createdAt), eb.and([eb('created_at', '=', before.createdAt), eb('id', '<', before.id)])]),
    );
  }
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(filter.limit).execute();
}

/**
 * How many events of each type per day (UTC, days since the epoch) since `from`: one grouped query
 * over the `(type, created_at)` index, for the admin overview's charts.
 */
export async function countEventsPerDay(db: Db, types: readonly string[], from: number): Promise<Array<{ type: string; day: number; count: number }>> {
  if (types.length === 0) return [];
  const day = sql<number | string>`(created_at / ${sql.lit(86_400_000)})`;
  const rows = await db
    .selectFrom('audit_events')
    .select(['type', day.as('day'), (eb) => eb.fn.countAll<number | string>().as('count')])
    .where('type', 'in', types)
    .where('created_at', '>=', from)
    .groupBy(['type', day])
    .execute();
  return rows.map((row) => ({ type: row.type, day: Math.floor(Number(row.day)), count: Number(row.count) }));
}

/** A string field of an event's JSON details, in the dialect's own JSON function (SQLite: text; PostgreSQL: text cast to jsonb). */
function detailField(db: Db, key: string) {
  // A literal, not a parameter: PostgreSQL groups by the expression as written, and a parameter in
  // the select list is another expression than the same parameter in GROUP BY. Keys are ours.
  if (!/^[a-zA-Z][a-zA-Z0-9_]*$/.test(key)) throw new TypeError(`not a detail key: ${key}`);
  return db.getExecutor().adapter instanceof SqliteAdapter
    ? sql<string | null>`json_extract(details, ${sql.lit(`$.${key}`)})`
    : sql<string | null>`(details::jsonb ->> ${sql.lit(key)})`;
}

/**
 * Events of one type per UTC day since `from`, split by string fields of their details (a
 * sign-in's `method` and `provider`); a field an event lacks comes back null. One grouped query over
 * the `(type, created_at)` index; the JSON is read only from the rows in range.
 */
export async function countEventsPerDayBy(db: Db, type: string, detailKeys: readonly string[], from: number): Promise<Array<{ keys: Array<string | null>; day: number; count: number }>> {
  const day = sql<number | string>`(created_at / ${sql.lit(86_400_000)})`;
  const fields = detailKeys.map((key) => detailField(db, key));
  const rows = await db
    .selectFrom('audit_events')
    .select([...fields.map((field, index) => field.as(`k${index}`)), day.as('day'), (eb) => eb.fn.countAll<number | string>().as('count')])
    .where('type', '=', type)
    .where('created_at', '>=', from)
    .groupBy([...fields, day])
    .execute();
  return rows.map((row) => {
    const record = row as Record<string, unknown>;
    return { keys: detailKeys.map((_, index) => (record[`k${index}`] == null ? null : String(record[`k${index}`]))), day: Math.floor(Number(row.day)), count: Number(row.count) };
  });
}

/**
 * How many distinct accounts have an event of `type` on each UTC day since `from`, and over the whole
 * range: the overview's active users (`signin.success`). Two grouped queries over the
 * `(type, created_at)` index.
 */
export async function countDistinctUsersPerDay(db: Db, type: string, from: number): Promise<{ perDay: Array<{ day: number; count: number }>; total: number }> {
  const day = sql<number | string>`(created_at / ${sql.lit(86_400_000)})`;
  const distinctUsers = sql<number | string>`count(distinct user_id)`;
  const [rows, total] = await Promise.all([
    db.selectFrom('audit_events').select([day.as('day'), distinctUsers.as('count')]).where('type', '=', type).where('created_at', '>=', from).groupBy(day).execute(),
    db.selectFrom('audit_events').select(distinctUsers.as('count')).where('type', '=', type).where('created_at', '>=', from).executeTakeFirst(),
  ]);
  return { perDay: rows.map((row) => ({ day: Math.floor(Number(row.day)), count: Number(row.count) })), total: Number(total?.count ?? 0) };
}

/**
 * The condition "the user has (`isPresent`) / has no event of `type` since `from`" on a users query
 * (the administrators' filter by last sign-in): one lookup per user row on the
 * `(user_id, created_at)` index.
 */
export function hasEventSince(type: string, from: number, isPresent: boolean): UserCondition {
  return (eb) => {
    const found = eb.exists(
      eb.selectFrom('audit_events').select('audit_events.id').whereRef('audit_events.user_id', '=', 'users.id').where('audit_events.created_at', '>=', from).where('audit_events.type', '=', type),
    );
    return isPresent ? found : eb.not(found);
  };
}

/** Deletes at most `batchSize` of the oldest events created before `cutoff`; returns how many. */
export async function deleteOldestBefore(db: Db, cutoff: number, batchSize: number): Promise<number> {
  const result = await db
    .deleteFrom('audit_events')
    .where('id', 'in', db.selectFrom('audit_events').select('id').where('created_at', '<', cutoff).orderBy('created_at').limit(batchSize))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Erases what identifies a deleted person in the events kept about them: the address, network
 * address and browser of every event about them or made by them, and the address of every failed
 * sign-in that tried theirs. Ids, types, times and reasons stay: the history keeps its shape.
 */
export async function erasePersonalData(db: Db, userId: string, email: string): Promise<void> {
  await db
    .updateTable('audit_events')
    .set({ email: null, ip: null, user_agent: null })
    .where((eb) => eb.or([eb('user_id', '=', userId), eb('actor_user_id', '=', userId)]))
    .execute();
  await db.updateTable('audit_events').set({ email: null }).where('email', '=', email).execute();
}
