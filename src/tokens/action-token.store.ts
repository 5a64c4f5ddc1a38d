/** Queries on single-use action tokens. Functions take `db` so callers can pass a transaction. */
import type { Db } from '../storage/database.ts';
import type { ActionTokenRow } from '../storage/schema.ts';

export async function insertActionToken(db: Db, row: ActionTokenRow): Promise<void> {
  await db.insertInto('action_tokens').values(row).execute();
}

/** Ends every live token of this user and purpose (a newer one replaces them). */
export async function retireActionTokens(db: Db, userId: string, purpose: string, now: number): Promise<void> {
  await db.updateTable('action_tokens').set({ consumed_at: now }).where('user_id', '=', userId).where('purpose', '=', purpose).where('consumed_at', 'is', null).execute();
}

export async function findActionTokenByHash(db: Db, tokenHash: string): Promise<ActionTokenRow | undefined> {
  return db.selectFrom('action_tokens').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

/** Marks the token consumed if it still is live; false when another request consumed it first. */
export async function consumeActionToken(db: Db, id: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('action_tokens')
    .set({ consumed_at: now })
    .where('id', '=', id)
    .where('consumed_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** The user's tokens, oldest first (for an export: never their hashes). */
export async function listActionTokensOf(db: Db, userId: string): Promise<Array<Pick<ActionTokenRow, 'purpose' | 'created_at' | 'expires_at' | 'consumed_at'>>> {
  return db.selectFrom('action_tokens').select(['purpose', 'created_at', 'expires_at', 'consumed_at']).where('user_id', '=', userId).orderBy('created_at').execute();
}

/** Deletes up to `limit` tokens that expired before `cutoff`; returns how many. */
export async function deleteExpiredActionTokens(db: Db, cutoff: number, limit: number): Promise<number> {
  const ids = (await db.selectFrom('action_tokens').select('id').where('expires_at', '<', cutoff).limit(limit).execute()).map((r) => r.id);
  if (ids.length === 0) return 0;
  await db.deleteFrom('action_tokens').where('id', 'in', ids).execute();
  return ids.length;
}
