/** The setup links' tables (migrations/20261130-sso-setup-links.ts): queries only. */
import type { Selectable } from 'kysely';
import type { Db } from '../storage/database.ts';

export interface SsoSetupLinksTable {
  id: string;
  organization_id: string;
  connection_id: string;
  token_hash: string;
  created_by: string | null;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
  last_used_at: number | null;
}

export interface SsoSetupTestsTable {
  id: string;
  link_id: string;
  connection_id: string;
  result: string | null;
  expires_at: number;
}

declare module '../storage/schema.ts' {
  interface Database {
    sso_setup_links: SsoSetupLinksTable;
    sso_setup_tests: SsoSetupTestsTable;
  }
}

export type SetupLinkRow = Selectable<SsoSetupLinksTable>;
export type SetupTestRow = Selectable<SsoSetupTestsTable>;

/** PostgreSQL hands bigint columns back as strings. */
function toRow<T extends SetupLinkRow | undefined>(row: T): T {
  if (row === undefined) return row;
  return {
    ...row,
    created_at: Number(row.created_at),
    expires_at: Number(row.expires_at),
    revoked_at: row.revoked_at === null ? null : Number(row.revoked_at),
    last_used_at: row.last_used_at === null ? null : Number(row.last_used_at),
  };
}

export async function insertLink(db: Db, row: SetupLinkRow): Promise<void> {
  await db.insertInto('sso_setup_links').values(row).execute();
}

export async function findLinkByHash(db: Db, tokenHash: string): Promise<SetupLinkRow | undefined> {
  return toRow(await db.selectFrom('sso_setup_links').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst());
}

export async function findLink(db: Db, organizationId: string, id: string): Promise<SetupLinkRow | undefined> {
  return toRow(await db.selectFrom('sso_setup_links').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst());
}

export async function listLinks(db: Db, organizationId: string): Promise<SetupLinkRow[]> {
  const rows = await db.selectFrom('sso_setup_links').selectAll().where('organization_id', '=', organizationId).orderBy('created_at', 'desc').orderBy('id').execute();
  return rows.map((row) => toRow(row));
}

/** True when this call revoked it (an active link of the organization). */
export async function revokeLink(db: Db, organizationId: string, id: string, now: number): Promise<boolean> {
  const result = await db.updateTable('sso_setup_links').set({ revoked_at: now }).where('organization_id', '=', organizationId).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst();
  return (result.numUpdatedRows ?? 0n) > 0n;
}

export async function touchLink(db: Db, id: string, now: number): Promise<void> {
  await db.updateTable('sso_setup_links').set({ last_used_at: now }).where('id', '=', id).execute();
}

export async function insertTest(db: Db, row: SetupTestRow): Promise<void> {
  await db.deleteFrom('sso_setup_tests').where('expires_at', '<=', row.expires_at - 3_600_000).execute();
  await db.insertInto('sso_setup_tests').values(row).execute();
}

export async function findTest(db: Db, id: string, now: number): Promise<SetupTestRow | undefined> {
  const row = await db.selectFrom('sso_setup_tests').selectAll().where('id', '=', id).where('expires_at', '>', now).executeTakeFirst();
  return row === undefined ? undefined : { ...row, expires_at: Number(row.expires_at) };
}

/** Records what the IdP answered, once: a test already answered keeps its first answer. */
export async function recordTestResult(db: Db, id: string, connectionId: string, result: string, now: number): Promise<boolean> {
  const updated = await db.updateTable('sso_setup_tests').set({ result }).where('id', '=', id).where('connection_id', '=', connectionId).where('result', 'is', null).where('expires_at', '>', now).executeTakeFirst();
  return (updated.numUpdatedRows ?? 0n) > 0n;
}
