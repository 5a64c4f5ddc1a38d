/** Queries on the audit log. Functions take `db` so callers can pass a transaction. */
import type { Db } from '../storage/database.ts';
import { preparedInsert } from '../storage/prepared.ts';
import type { AuditEventRow } from '../storage/schema.ts';
import type { KeysetPosition } from '../lib/keyset-cursor.ts';

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

/** Newest first, strictly after `before`; `limit` rows at most. */
export async function findEvents(
  db: Db,
  filter: { userId?: string; type?: string; before?: KeysetPosition; limit: number },
): Promise<AuditEventRow[]> {
  let query = db.selectFrom('audit_events').selectAll();
  if (filter.userId !== undefined) query = query.where('user_id', '=', filter.userId);
  if (filter.type !== undefined) query = query.where('type', '=', filter.type);
  const before = filter.before;
  if (before !== undefined) {
    query = query.where((eb) =>
      eb.or([eb('created_at', '<', before.createdAt), eb.and([eb('created_at', '=', before.createdAt), eb('id', '<', before.id)])]),
    );
  }
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(filter.limit).execute();
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
