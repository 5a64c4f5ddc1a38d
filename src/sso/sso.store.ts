/** The SSO tables (migrations/20261129-sso-tables.ts). */
import type { Selectable } from 'kysely';
import type { Db } from '../storage/database.ts';

export interface SsoConnectionsTable {
  id: string;
  organization_id: string;
  name: string;
  protocol: string;
  enforce: number;
  idp_initiated: number;
  default_role: string;
  settings: string;
  secret_box: string | null;
  created_at: number;
  updated_at: number;
}

export interface SsoRequestsTable {
  id: string;
  connection_id: string;
  data: string;
  expires_at: number;
}

export interface SsoAssertionsTable {
  connection_id: string;
  assertion_id: string;
  expires_at: number;
}

export interface SsoIdentitiesTable {
  connection_id: string;
  subject: string;
  user_id: string;
  created_at: number;
  last_used_at: number;
}

declare module '../storage/schema.ts' {
  interface Database {
    sso_connections: SsoConnectionsTable;
    sso_requests: SsoRequestsTable;
    sso_assertions: SsoAssertionsTable;
    sso_identities: SsoIdentitiesTable;
  }
}

export type ConnectionRow = Selectable<SsoConnectionsTable>;

export async function insertConnection(db: Db, row: ConnectionRow): Promise<void> {
  await db.insertInto('sso_connections').values(row).execute();
}

export async function findConnection(db: Db, id: string): Promise<ConnectionRow | undefined> {
  return db.selectFrom('sso_connections').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function listConnections(db: Db, organizationId?: string): Promise<ConnectionRow[]> {
  let query = db.selectFrom('sso_connections').selectAll();
  if (organizationId !== undefined) query = query.where('organization_id', '=', organizationId);
  return query.orderBy('created_at').orderBy('id').execute();
}

export async function updateConnection(db: Db, id: string, changes: Partial<Omit<ConnectionRow, 'id' | 'organization_id' | 'created_at'>>): Promise<void> {
  await db.updateTable('sso_connections').set(changes).where('id', '=', id).execute();
}

export async function deleteConnection(db: Db, id: string): Promise<boolean> {
  const result = await db.deleteFrom('sso_connections').where('id', '=', id).executeTakeFirst();
  return (result.numDeletedRows ?? 0n) > 0n;
}

export async function countConnections(db: Db): Promise<number> {
  const row = await db.selectFrom('sso_connections').select((eb) => eb.fn.countAll<number | string>().as('count')).executeTakeFirstOrThrow();
  return Number(row.count);
}

export async function insertRequest(db: Db, row: Selectable<SsoRequestsTable>): Promise<void> {
  await db.deleteFrom('sso_requests').where('expires_at', '<=', row.expires_at - 3_600_000).execute();
  await db.insertInto('sso_requests').values(row).execute();
}

export async function findRequest(db: Db, connectionId: string, id: string, now: number): Promise<Selectable<SsoRequestsTable> | undefined> {
  return db.selectFrom('sso_requests').selectAll().where('id', '=', id).where('connection_id', '=', connectionId).where('expires_at', '>', now).executeTakeFirst();
}

/** Removes a request; true when this call removed it (a request is used once, even by two instances at once). */
export async function takeRequest(db: Db, connectionId: string, id: string, now: number): Promise<boolean> {
  const result = await db.deleteFrom('sso_requests').where('id', '=', id).where('connection_id', '=', connectionId).where('expires_at', '>', now).executeTakeFirst();
  return (result.numDeletedRows ?? 0n) > 0n;
}

/** Records an accepted assertion ID; false when it was recorded already (a replay), on any instance. */
export async function recordAssertion(db: Db, connectionId: string, assertionId: string, expiresAt: number, now: number): Promise<boolean> {
  await db.deleteFrom('sso_assertions').where('expires_at', '<=', now).execute();
  const result = await db
    .insertInto('sso_assertions')
    .values({ connection_id: connectionId, assertion_id: assertionId, expires_at: expiresAt })
    .onConflict((oc) => oc.columns(['connection_id', 'assertion_id']).doNothing())
    .executeTakeFirst();
  return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
}

export async function findIdentity(db: Db, connectionId: string, subject: string): Promise<Selectable<SsoIdentitiesTable> | undefined> {
  return db.selectFrom('sso_identities').selectAll().where('connection_id', '=', connectionId).where('subject', '=', subject).executeTakeFirst();
}

export async function insertIdentity(db: Db, row: Selectable<SsoIdentitiesTable>): Promise<void> {
  await db.insertInto('sso_identities').values(row).execute();
}

export async function touchIdentity(db: Db, connectionId: string, subject: string, now: number): Promise<void> {
  await db.updateTable('sso_identities').set({ last_used_at: now }).where('connection_id', '=', connectionId).where('subject', '=', subject).execute();
}

export async function listIdentitiesOf(db: Db, userId: string): Promise<Array<Selectable<SsoIdentitiesTable>>> {
  return db.selectFrom('sso_identities').selectAll().where('user_id', '=', userId).execute();
}
