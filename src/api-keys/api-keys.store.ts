/** The `api_keys` table (migrations/20261201-api-keys-table.ts). */
import type { Selectable } from 'kysely';
import type { Db } from '../storage/database.ts';
import { preparedQuery } from '../storage/prepared.ts';

export interface ApiKeysTable {
  id: string;
  kind: string;
  user_id: string | null;
  organization_id: string | null;
  created_by: string | null;
  name: string;
  secret_hash: string;
  scopes: string;
  roles: string;
  rate_limit: string | null;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
  revoked_by: string | null;
  last_used_at: number | null;
  last_used_ip: string | null;
}

declare module '../storage/schema.ts' {
  interface Database {
    api_keys: ApiKeysTable;
  }
}

export type ApiKeyRow = Selectable<ApiKeysTable>;

export async function insertKey(db: Db, row: ApiKeyRow): Promise<void> {
  await db.insertInto('api_keys').values(row).execute();
}

/** Compiled once: every request with a key reads it (on SQLite, on the read-only connection at once). */
const selectKey = preparedQuery((db, id: string) => db.selectFrom('api_keys').selectAll().where('id', '=', id));

/** One indexed read (the primary key). */
export async function findKey(db: Db, id: string): Promise<ApiKeyRow | undefined> {
  return (await selectKey(db, id)).rows[0];
}

export async function listKeys(db: Db, owner: { userId: string } | { organizationId: string } | 'all', limit = 200): Promise<ApiKeyRow[]> {
  let query = db.selectFrom('api_keys').selectAll();
  if (owner !== 'all') query = 'userId' in owner ? query.where('user_id', '=', owner.userId) : query.where('organization_id', '=', owner.organizationId);
  return query.orderBy('created_at', 'desc').orderBy('id').limit(limit).execute();
}

export async function countActive(db: Db, owner: { userId: string } | { organizationId: string }, now: number): Promise<number> {
  let query = db.selectFrom('api_keys').select((eb) => eb.fn.countAll<number | string>().as('count')).where('revoked_at', 'is', null).where('expires_at', '>', now);
  query = 'userId' in owner ? query.where('user_id', '=', owner.userId) : query.where('organization_id', '=', owner.organizationId);
  return Number((await query.executeTakeFirst())?.count ?? 0);
}

/** False when it was revoked already (or is not there). */
export async function markRevoked(db: Db, id: string, at: number, by: string | null): Promise<boolean> {
  const result = await db.updateTable('api_keys').set({ revoked_at: at, revoked_by: by }).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
  return (result.numUpdatedRows ?? 0n) > 0n;
}

export async function recordUse(db: Db, id: string, at: number, ip: string | null): Promise<void> {
  await db.updateTable('api_keys').set(ip === null ? { last_used_at: at } : { last_used_at: at, last_used_ip: ip }).where('id', '=', id).execute();
}

export { purgeEndedBefore } from './api-keys.purge.ts';
