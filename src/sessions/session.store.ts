/** Queries on sessions. Functions take `db` so callers can pass a transaction. */
import { sql } from 'kysely';
import type { Db } from '../storage/database.ts';
import type { SessionRow } from '../storage/schema.ts';
import { preparedQuery } from '../storage/prepared.ts';
import { claimsColumns, claimsOfRow, type TokenClaimsRead } from './session-claims.ts';

const SESSION_COLUMNS = ['id', 'user_id', 'refresh_seed', 'refresh_generation', 'refresh_rotated_at', 'created_at', 'expires_at', 'last_seen_at', 'revoked_at', 'ip', 'user_agent', 'amr', 'auth_time'] as const;

/** A session about to be written: the rest of its row is fixed (generation 0, not rotated, not revoked, authenticated when created). */
export type NewSession = Pick<SessionRow, 'id' | 'user_id' | 'refresh_seed' | 'created_at' | 'expires_at' | 'ip' | 'user_agent'> & { amr: string };

type NewSessionArgs = [id: string, userId: string, seed: string, createdAt: number, expiresAt: number, ip: string | null, userAgent: string | null, amr: string];

/**
 * `insert into sessions select … from users where <the account is as the sign-in saw it>`: one
 * statement, so a password change, reset or disable that commits between the sign-in's check and
 * this write leaves no session behind. On PostgreSQL the users row is read `for share`: the insert
 * waits for a change in progress and then sees its result, and a change that starts after it waits
 * for the insert to commit, so its "end every session" finds this one. (SQLite has one writer: the
 * statement and a change's transaction cannot interleave.)
 */
function sessionFromUser(db: Db, lock: boolean, [id, userId, seed, createdAt, expiresAt, ip, userAgent, amr]: NewSessionArgs, passwordHash?: string) {
  return db
    .insertInto('sessions')
    .columns(SESSION_COLUMNS)
    .expression((eb) => {
      let query = eb
        .selectFrom('users')
        .select([
          eb.val(id).as('id'),
          'users.id as user_id',
          eb.val(seed).as('refresh_seed'),
          eb.lit(0).as('refresh_generation'),
          eb.lit(null).as('refresh_rotated_at'),
          eb.val(createdAt).as('created_at'),
          eb.val(expiresAt).as('expires_at'),
          eb.val(createdAt).as('last_seen_at'),
          eb.lit(null).as('revoked_at'),
          eb.val(ip).as('ip'),
          eb.val(userAgent).as('user_agent'),
          eb.val(amr).as('amr'),
          eb.val(createdAt).as('auth_time'),
        ])
        .where('users.id', '=', userId)
        .where('users.disabled_at', 'is', null);
      if (passwordHash !== undefined) query = query.where('users.password_hash', '=', passwordHash).where('users.password_locked_at', 'is', null);
      return lock ? query.forShare() : query;
    });
}

// Parameters spelled out: `preparedQuery` learns the arity from them.
const insertSessionOfEnabledUser = [false, true].map((lock) =>
  preparedQuery((db, id: string, userId: string, seed: string, createdAt: number, expiresAt: number, ip: string | null, userAgent: string | null, amr: string) =>
    sessionFromUser(db, lock, [id, userId, seed, createdAt, expiresAt, ip, userAgent, amr]),
  ),
);
const insertSessionOfPassword = [false, true].map((lock) =>
  preparedQuery((db, id: string, userId: string, seed: string, createdAt: number, expiresAt: number, ip: string | null, userAgent: string | null, amr: string, passwordHash: string) =>
    sessionFromUser(db, lock, [id, userId, seed, createdAt, expiresAt, ip, userAgent, amr], passwordHash),
  ),
);

/**
 * Writes the session only while its user is enabled and, with `passwordHash`, still has that
 * password (unlocked); false when the account changed since the sign-in checked it.
 */
export async function insertSessionIfCurrent(db: Db, isPostgres: boolean, row: NewSession, passwordHash: string | null): Promise<boolean> {
  const args: NewSessionArgs = [row.id, row.user_id, row.refresh_seed, row.created_at, row.expires_at, row.ip, row.user_agent, row.amr];
  const lock = Number(isPostgres);
  const result = passwordHash === null ? await insertSessionOfEnabledUser[lock]!(db, ...args) : await insertSessionOfPassword[lock]!(db, ...args, passwordHash);
  return (result.numAffectedRows ?? 0n) > 0n;
}

const selectSessionById = preparedQuery((db, id: string) => db.selectFrom('sessions').selectAll().where('id', '=', id));

export async function findSessionById(db: Db, id: string): Promise<SessionRow | undefined> {
  return (await selectSessionById(db, id)).rows[0];
}

/** The roles of `users.id` as one string, `,`-separated in order (role names never hold a comma). */
const ROLES_OF_USER = sql<string | null>`(select string_agg(role, ',' order by role) from user_roles where user_roles.user_id = users.id)`;

export interface SessionCheckRow {
  user_id: string;
  expires_at: number;
  last_seen_at: number;
  revoked_at: number | null;
  created_at: number;
  amr: string | null;
  auth_time: number | null;
  disabled_at: number | null;
  email: string;
  name: string;
  roles: string[];
  /** Every module's token claims for this session, as a token issued now would carry them. */
  moduleClaims: Readonly<Record<string, unknown>>;
}

export interface SessionReads {
  /**
   * The session, its user's state, profile and roles, and every module's claims, in one query:
   * all a per-request check of the database strategy and the session endpoint need.
   */
  findSessionForCheck(db: Db, id: string): Promise<SessionCheckRow | undefined>;
  /** The modules' claims for a token of the session being issued (none declared: no query). */
  findSessionClaims(db: Db, id: string): Promise<Readonly<Record<string, unknown>>>;
}

/** The session reads with `reads` (every module's `tokenClaims`, in module order) folded in. */
export function createSessionReads(reads: readonly TokenClaimsRead<object>[], isPostgres: boolean): SessionReads {
  const selectForCheck = preparedQuery((db, id: string) =>
    db
      .selectFrom('sessions')
      .innerJoin('users', 'users.id', 'sessions.user_id')
      .select((eb) => [
        'sessions.user_id',
        'sessions.expires_at',
        'sessions.last_seen_at',
        'sessions.revoked_at',
        'sessions.created_at',
        'sessions.amr',
        'sessions.auth_time',
        'users.disabled_at',
        'users.email',
        'users.name',
        ROLES_OF_USER.as('roles'),
        ...claimsColumns(reads, isPostgres, eb),
      ])
      .where('sessions.id', '=', id),
  );
  const selectClaims = preparedQuery((db, id: string) => db.selectFrom('sessions').select((eb) => claimsColumns(reads, isPostgres, eb)).where('sessions.id', '=', id));
  const NO_CLAIMS = Object.freeze({});

  return {
    async findSessionForCheck(db, id) {
      const row = (await selectForCheck(db, id)).rows[0];
      if (row === undefined) return undefined;
      const { roles, ...rest } = row as unknown as Omit<SessionCheckRow, 'roles' | 'moduleClaims'> & { roles: string | null } & Record<string, unknown>;
      return {
        user_id: rest.user_id,
        expires_at: rest.expires_at,
        last_seen_at: rest.last_seen_at,
        revoked_at: rest.revoked_at,
        created_at: rest.created_at,
        amr: rest.amr,
        auth_time: rest.auth_time,
        disabled_at: rest.disabled_at,
        email: rest.email,
        name: rest.name,
        roles: roles === null || roles === '' ? [] : roles.split(','),
        moduleClaims: reads.length === 0 ? NO_CLAIMS : claimsOfRow(reads, rest),
      };
    },
    async findSessionClaims(db, id) {
      if (reads.length === 0) return NO_CLAIMS;
      const row = (await selectClaims(db, id)).rows[0];
      return row === undefined ? NO_CLAIMS : claimsOfRow(reads, row as Record<string, unknown>);
    },
  };
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

/**
 * A step-up: the user proved themselves again in this session (with `amr`, the methods of the
 * whole session now); false when the session has ended.
 */
export async function recordReauthentication(db: Db, id: string, amr: string, now: number): Promise<boolean> {
  const result = await db.updateTable('sessions').set({ amr, auth_time: now }).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
