/** The setup links' tables (migrations/20261130-sso-setup-links.ts): queries only (bigint columns come back as numbers: storage/database.ts). */
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

export async function insertLink(db: Db, row: SetupLinkRow): Promise<void> {
  await db.insertInto('sso_setup_links').values(row).execute();
}

export async function findLinkByHash(db: Db, tokenHash: string): Promise<SetupLinkRow | undefined> {
  return db.selectFrom('sso_setup_links').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

export async function findLink(db: Db, organizationId: string, id: string): Promise<SetupLinkRow | undefined> {
  return db.selectFrom('sso_setup_links').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst();
}

export async function listLinks(db: Db, organizationId: string): Promise<SetupLinkRow[]> {
  return db.selectFrom('sso_setup_links').selectAll().where('organization_id', '=', organizationId).orderBy('created_at', 'desc').orderBy('id').execute();
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
  return db.selectFrom('sso_setup_tests').selectAll().where('id', '=', id).where('expires_at', '>', now).executeTakeFirst();
}

/** Records what the IdP answered, once: a test already answered keeps its first answer. */
export async function recordTestResult(db: Db, id: string, connectionId: string, result: string, now: number): Promise<boolean> {
  const updated = await db.updateTable('sso_setup_tests').set({ result }).where('id', '=', id).where('connection_id', '=', connectionId).where('result', 'is', null).where('expires_at', '>', now).executeTakeFirst();
  return (updated.numUpdatedRows ?? 0n) > 0n;
}
