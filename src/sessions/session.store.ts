/** Queries on sessions. Functions take `db` so callers can pass a transaction. */
import { sql } from 'kysely';
import type { Db } from '../storage/database.ts';
import type { SessionRow } from '../storage/schema.ts';
import { preparedInsert, preparedQuery } from '../storage/prepared.ts';

const insertSessionRow = preparedInsert('sessions', {
  id: true,
  user_id: true,
  refresh_seed: true,
  refresh_generation: true,
  refresh_rotated_at: true,
  created_at: true,
  expires_at: true,
  last_seen_at: true,
  revoked_at: true,
  ip: true,
  user_agent: true,
});

export async function insertSession(db: Db, row: SessionRow): Promise<void> {
  await insertSessionRow(db, row);
}

const selectSessionById = preparedQuery((db, id: string) => db.selectFrom('sessions').selectAll().where('id', '=', id));

export async function findSessionById(db: Db, id: string): Promise<SessionRow | undefined> {
  return (await selectSessionById(db, id)).rows[0];
}

/** The roles of `users.id` as one string, `,`-separated in order (role names never hold a comma). */
const ROLES_OF_USER = sql<string | null>`(select string_agg(role, ',' order by role) from user_roles where user_roles.user_id = users.id)`;

const selectSessionForCheck = preparedQuery((db, id: string) =>
  db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .select([
      'sessions.user_id',
      'sessions.expires_at',
      'sessions.last_seen_at',
      'sessions.revoked_at',
      'users.disabled_at',
      'users.email',
      'users.name',
      ROLES_OF_USER.as('roles'),
    ])
    .where('sessions.id', '=', id),
);

export interface SessionCheckRow {
  user_id: string;
  expires_at: number;
  last_seen_at: number;
  revoked_at: number | null;
  disabled_at: number | null;
  email: string;
  name: string;
  roles: string[];
}

/**
 * The session, its user's state, profile and roles, in one query: all a per-request check of the
 * database strategy and the session endpoint need.
 */
export async function findSessionForCheck(db: Db, id: string): Promise<SessionCheckRow | undefined> {
  const row = (await selectSessionForCheck(db, id)).rows[0];
  return row && { ...row, roles: row.roles === null || row.roles === '' ? [] : row.roles.split(',') };
}

const updateLastSeen = preparedQuery((db, id: string, now: number, staleBefore: number) =>
  db.updateTable('sessions').set({ last_seen_at: now }).where('id', '=', id).where('last_seen_at', '<', staleBefore),
);

/** Sliding expiry: writes only when the stored time is older than `staleBefore`. */
export async function touchSession(db: Db, id: string, now: number, staleBefore: number): Promise<void> {
  await updateLastSeen(db, id, now, staleBefore);
}

/** Moves the session to the next refresh generation if it is still at `generation`; false when another request won. */
export async function advanceRefreshGeneration(db: Db, id: string, generation: number, now: number): Promise<boolean> {
  const result = await db
    .updateTable('sessions')
    .set({ refresh_generation: generation + 1, refresh_rotated_at: now, last_seen_at: now })
    .where('id', '=', id)
    .where('refresh_generation', '=', generation)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Marks active sessions revoked; returns the ids it changed. */
export async function revokeSessions(
  db: Db,
  filter: { userId: string; sessionId?: string; exceptSessionId?: string },
  now: number,
): Promise<string[]> {
  let query = db.selectFrom('sessions').select('id').where('user_id', '=', filter.userId).where('revoked_at', 'is', null).where('expires_at', '>', now);
  if (filter.sessionId !== undefined) query = query.where('id', '=', filter.sessionId);
  if (filter.exceptSessionId !== undefined) query = query.where('id', '!=', filter.exceptSessionId);
  const ids = (await query.execute()).map((row) => row.id);
  if (ids.length === 0) return [];
  await db.updateTable('sessions').set({ revoked_at: now }).where('id', 'in', ids).where('revoked_at', 'is', null).execute();
  return ids;
}

export async function findActiveSessionsByUser(db: Db, userId: string, now: number, idleSince: number): Promise<SessionRow[]> {
  return db
    .selectFrom('sessions')
    .selectAll()
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', now)
    .where('last_seen_at', '>', idleSince)
    .orderBy('last_seen_at', 'desc')
    .execute();
}

/**
 * Deletes up to `limit` sessions that ended before `endedBefore` (expired, revoked) or were last
 * used before `idleBefore`; returns how many. One criterion per query, so each uses its index.
 */
export async function deleteEndedSessions(db: Db, endedBefore: number, idleBefore: number, limit: number): Promise<number> {
  let deleted = 0;
  for (const [column, before] of [['expires_at', endedBefore], ['revoked_at', endedBefore], ['last_seen_at', idleBefore]] as const) {
    if (deleted >= limit) break;
    const ids = (await db.selectFrom('sessions').select('id').where(column, '<', before).limit(limit - deleted).execute()).map((row) => row.id);
    if (ids.length > 0) await db.deleteFrom('sessions').where('id', 'in', ids).execute();
    deleted += ids.length;
  }
  return deleted;
}

/** Deletes up to `limit` revocation entries whose tokens have all expired; returns how many. */
export async function deleteExpiredRevocations(db: Db, now: number, limit: number): Promise<number> {
  const seqs = (await db.selectFrom('revoked_sessions').select('seq').where('expires_at', '<', now).limit(limit).execute()).map((row) => row.seq);
  if (seqs.length > 0) await db.deleteFrom('revoked_sessions').where('seq', 'in', seqs).execute();
  return seqs.length;
}
