/**
 * Queries on the registered OAuth / OIDC clients. Functions take `db` so callers can pass a
 * transaction. Lists are stored as JSON text and booleans as 0 / 1, the same on both dialects.
 */
import { sql, type Selectable } from 'kysely';
import type { Db } from '../storage/database.ts';

export interface OidcClientsTable {
  /** The client_id. */
  id: string;
  name: string;
  /** SHA-256 of the client secret, hex; null for a public client. */
  secret_hash: string | null;
  /** JSON array of strings. */
  redirect_uris: string;
  /** JSON array of strings. */
  post_logout_redirect_uris: string;
  /** JSON array of strings. */
  grant_types: string;
  /** 0 or 1. */
  public: number;
  /** 0 or 1. */
  first_party: number;
  id_token_signed_response_alg: string;
  created_at: number;
  updated_at: number;
  /** Null until the secret is first rotated. */
  secret_rotated_at: number | null;
  /** Where logout tokens go (OpenID Back-Channel Logout 1.0); null: none. */
  backchannel_logout_uri: string | null;
  /** How it came: `admin`, `cli`, `registration` (RFC 7591 with the token) or `open_registration`. */
  origin: string;
  /** The last code or token issued to it (epoch ms, written at most once per RECORD_USE interval); null: never. */
  last_used_at: number | null;
  /** JSON array of the resource indicators it may exchange a person's token for (RFC 8693); `[]`: none. */
  exchange_resources: string;
  dpop_bound_access_tokens: number;
  /** The client's public keys (private_key_jwt, signed request objects); null: it has a secret, or is public. */
  jwks_uri: string | null;
}

declare module '../storage/schema.ts' {
  interface Database {
    oidc_clients: OidcClientsTable;
  }
}

export type ClientRow = Selectable<OidcClientsTable>;

export async function insertClient(db: Db, row: ClientRow): Promise<void> {
  await db.insertInto('oidc_clients').values(row).execute();
}

export async function findClient(db: Db, id: string): Promise<ClientRow | undefined> {
  return db.selectFrom('oidc_clients').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Every client, newest first. */
export async function listClients(db: Db): Promise<ClientRow[]> {
  return db.selectFrom('oidc_clients').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
}

/** Replaces the secret of a confidential client; false when there is no such confidential client. */
export async function replaceSecret(db: Db, id: string, secretHash: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('oidc_clients')
    .set({ secret_hash: secretHash, secret_rotated_at: now, updated_at: now })
    .where('id', '=', id)
    .where('public', '=', 0)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** The columns `updateClient` changes. */
export type ClientChangeColumns = Partial<Pick<ClientRow, 'name' | 'redirect_uris' | 'post_logout_redirect_uris' | 'backchannel_logout_uri' | 'exchange_resources'>>;

/** Changes the name, redirect URIs and exchange policy (JSON text); false when there is no such client. */
export async function updateClient(
  db: Db,
  id: string,
  changes: ClientChangeColumns,
  now: number,
): Promise<boolean> {
  const result = await db
    .updateTable('oidc_clients')
    .set({ ...changes, updated_at: now })
    .where('id', '=', id)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** True when it was there. */
export async function deleteClient(db: Db, id: string): Promise<boolean> {
  const result = await db.deleteFrom('oidc_clients').where('id', '=', id).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** How many clients came by `origin`. */
export async function countClientsByOrigin(db: Db, origin: string): Promise<number> {
  const row = await db.selectFrom('oidc_clients').select((eb) => eb.fn.countAll<string | number>().as('count')).where('origin', '=', origin).executeTakeFirst();
  return Number(row?.count ?? 0);
}

/**
 * Serialises registrations under a cap until the end of the transaction, on PostgreSQL (a
 * transaction-scoped advisory lock: the count and the insert after it are then one step); SQLite
 * runs one writer at a time already.
 */
export async function lockRegistrations(db: Db): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtext(${'gatehouse.oidc-clients.registration-cap'}))`.execute(db);
}

/** Records a use at `now` unless one at `since` or later is recorded already; true when it wrote. */
export async function recordClientUse(db: Db, id: string, now: number, since: number): Promise<boolean> {
  const result = await db
    .updateTable('oidc_clients')
    .set({ last_used_at: now })
    .where('id', '=', id)
    .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', since)]))
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Clients of `origin` never used and created before `createdBefore`, oldest first, at most `limit`. */
export async function listUnusedClients(db: Db, origin: string, createdBefore: number, limit: number): Promise<ClientRow[]> {
  return db
    .selectFrom('oidc_clients')
    .selectAll()
    .where('origin', '=', origin)
    .where('created_at', '<', createdBefore)
    .where('last_used_at', 'is', null)
    .orderBy('created_at')
    .limit(limit)
    .execute();
}
