/** Queries on linked provider identities. Functions take `db` so callers can pass a transaction. */
import type { Db } from '../storage/database.ts';
import type { OAuthAccountRow } from '../storage/schema.ts';

export async function findByIdentity(db: Db, provider: string, providerUserId: string): Promise<OAuthAccountRow | undefined> {
  return db
    .selectFrom('oauth_accounts')
    .selectAll()
    .where('provider', '=', provider)
    .where('provider_user_id', '=', providerUserId)
    .executeTakeFirst();
}

export async function findByUserId(db: Db, userId: string): Promise<OAuthAccountRow[]> {
  return db.selectFrom('oauth_accounts').selectAll().where('user_id', '=', userId).orderBy('created_at').orderBy('provider').execute();
}

export async function insertAccount(db: Db, row: OAuthAccountRow): Promise<void> {
  await db.insertInto('oauth_accounts').values(row).execute();
}

export async function touchAccount(db: Db, id: string, email: string | null, now: number): Promise<void> {
  await db.updateTable('oauth_accounts').set({ email, last_used_at: now }).where('id', '=', id).execute();
}

/** True when a row was deleted. */
export async function deleteAccount(db: Db, userId: string, provider: string): Promise<boolean> {
  const result = await db.deleteFrom('oauth_accounts').where('user_id', '=', userId).where('provider', '=', provider).executeTakeFirst();
  return result.numDeletedRows > 0n;
}
