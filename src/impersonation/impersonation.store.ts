/** The `impersonations` table (migrations/20261129-impersonation-table.ts). */
import type { Selectable } from 'kysely';
import type { Db } from '../storage/database.ts';
import { defineTokenClaims } from '../sessions/session-claims.ts';

export interface ImpersonationsTable {
  session_id: string;
  user_id: string;
  admin_id: string;
  reason: string;
  started_at: number;
  ends_at: number;
  ended_at: number | null;
}

declare module '../storage/schema.ts' {
  interface Database {
    impersonations: ImpersonationsTable;
  }
}

export type ImpersonationRow = Selectable<ImpersonationsTable>;

export async function insertImpersonation(db: Db, row: ImpersonationRow): Promise<void> {
  await db.insertInto('impersonations').values(row).execute();
}

export async function findImpersonation(db: Db, sessionId: string): Promise<ImpersonationRow | undefined> {
  return db.selectFrom('impersonations').selectAll().where('session_id', '=', sessionId).executeTakeFirst();
}

/** The `act` claim, read with the session (sessions/session-claims.ts): the administrator acting, until the impersonation's end is recorded. */
export const actingAdministratorClaim = defineTokenClaims({
  select: (session) => session.selectFrom('impersonations').select('impersonations.admin_id').whereRef('impersonations.session_id', '=', 'sessions.id').where('impersonations.ended_at', 'is', null),
  claims: (row): { act?: { sub: string } } => (row === null ? {} : { act: { sub: row.admin_id } }),
});

/** False when its end was recorded already (by "Stop" or the job, whichever came first). */
export async function markEnded(db: Db, sessionId: string, endedAt: number): Promise<boolean> {
  const result = await db.updateTable('impersonations').set({ ended_at: endedAt }).where('session_id', '=', sessionId).where('ended_at', 'is', null).executeTakeFirst();
  return (result.numUpdatedRows ?? 0n) > 0n;
}

export async function listExpired(db: Db, now: number, limit: number): Promise<ImpersonationRow[]> {
  return db.selectFrom('impersonations').selectAll().where('ended_at', 'is', null).where('ends_at', '<=', now).orderBy('ends_at').limit(limit).execute();
}

/** Deletes the rows of impersonations that ended before `before` (the audit log keeps their history). */
export async function deleteEndedBefore(db: Db, before: number): Promise<void> {
  await db.deleteFrom('impersonations').where('ended_at', '<', before).execute();
}
