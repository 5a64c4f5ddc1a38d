/** Queries on `oidc_app_uses`: when a person last let an app in (see the migration). */
import type { Db } from '../storage/database.ts';

export interface OidcAppUsesTable {
  user_id: string;
  client_id: string;
  last_used_at: number;
}

declare module '../storage/schema.ts' {
  interface Database {
    oidc_app_uses: OidcAppUsesTable;
  }
}

/** Records a use at `now` (a later one already recorded stays). */
export async function recordAppUse(db: Db, userId: string, clientId: string, now: number): Promise<void> {
  await db
    .insertInto('oidc_app_uses')
    .values({ user_id: userId, client_id: clientId, last_used_at: now })
    .onConflict((conflict) => conflict.columns(['user_id', 'client_id']).doUpdateSet({ last_used_at: now }).where('oidc_app_uses.last_used_at', '<', now))
    .execute();
}

/** The person's last use of each app, by client id (epoch ms). */
export async function listAppUses(db: Db, userId: string): Promise<Map<string, number>> {
  const rows = await db.selectFrom('oidc_app_uses').select(['client_id', 'last_used_at']).where('user_id', '=', userId).execute();
  return new Map(rows.map((row) => [row.client_id, Number(row.last_used_at)]));
}

export async function forgetAppUse(db: Db, userId: string, clientId: string): Promise<void> {
  await db.deleteFrom('oidc_app_uses').where('user_id', '=', userId).where('client_id', '=', clientId).execute();
}
