/** The `organization_domains` table (migrations/20261202-org-domains-table.ts). */
import type { Selectable } from 'kysely';
import type { Db } from '../storage/database.ts';

export interface OrganizationDomainsTable {
  id: string;
  organization_id: string;
  domain: string;
  token: string;
  created_by: string | null;
  created_at: number;
  verified_domain: string | null;
  verified_at: number | null;
  verified_method: string | null;
  last_checked_at: number | null;
  last_failure: string | null;
}

declare module '../storage/schema.ts' {
  interface Database {
    organization_domains: OrganizationDomainsTable;
  }
}

export type DomainRow = Selectable<OrganizationDomainsTable>;

export async function insertDomain(db: Db, row: DomainRow): Promise<void> {
  await db.insertInto('organization_domains').values(row).execute();
}

export async function findDomain(db: Db, organizationId: string, id: string): Promise<DomainRow | undefined> {
  return db.selectFrom('organization_domains').selectAll().where('id', '=', id).where('organization_id', '=', organizationId).executeTakeFirst();
}

export async function findByName(db: Db, organizationId: string, domain: string): Promise<DomainRow | undefined> {
  return db.selectFrom('organization_domains').selectAll().where('organization_id', '=', organizationId).where('domain', '=', domain).executeTakeFirst();
}

/** The verified claim of `domain`, whichever organization holds it (one indexed read). */
export async function findVerified(db: Db, domain: string): Promise<DomainRow | undefined> {
  return db.selectFrom('organization_domains').selectAll().where('verified_domain', '=', domain).executeTakeFirst();
}

export async function listDomains(db: Db, organizationId: string | null, limit = 500): Promise<DomainRow[]> {
  let query = db.selectFrom('organization_domains').selectAll();
  if (organizationId !== null) query = query.where('organization_id', '=', organizationId);
  return query.orderBy('domain').orderBy('organization_id').limit(limit).execute();
}

export async function countDomains(db: Db, organizationId: string): Promise<number> {
  const row = await db.selectFrom('organization_domains').select((eb) => eb.fn.countAll<number | string>().as('count')).where('organization_id', '=', organizationId).executeTakeFirst();
  return Number(row?.count ?? 0);
}

/** Marks the claim verified; false when it is gone or verified already. Throws on the unique index when another organization won a race. */
export async function markVerified(db: Db, id: string, domain: string, at: number, method: string): Promise<boolean> {
  const result = await db
    .updateTable('organization_domains')
    .set({ verified_domain: domain, verified_at: at, verified_method: method, last_checked_at: at, last_failure: null })
    .where('id', '=', id)
    .where('verified_at', 'is', null)
    .executeTakeFirst();
  return (result.numUpdatedRows ?? 0n) > 0n;
}

export async function recordFailure(db: Db, id: string, at: number, reason: string): Promise<void> {
  await db.updateTable('organization_domains').set({ last_checked_at: at, last_failure: reason }).where('id', '=', id).execute();
}

export async function deleteDomain(db: Db, id: string): Promise<boolean> {
  const result = await db.deleteFrom('organization_domains').where('id', '=', id).executeTakeFirst();
  return (result.numDeletedRows ?? 0n) > 0n;
}
