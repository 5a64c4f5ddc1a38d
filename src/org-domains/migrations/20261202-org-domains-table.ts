import type { Kysely } from 'kysely';

/**
 * `organization_domains`: the domains organizations claim. `domain` is the lower-case ASCII
 * (punycode) form; one organization claims a domain once (`organization_id`, `domain`). Several
 * may claim the same domain, but `verified_domain` (the domain once verified, else null) is unique:
 * a domain is verified by one organization at most, whatever two verifications race. `token` is the
 * value the organization publishes (public by design: it proves control of the domain, not who
 * asks). Times are epoch ms; `last_failure` the code of the last failed check.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('organization_domains')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('organization_id', 'varchar(32)', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('domain', 'varchar(253)', (c) => c.notNull())
    .addColumn('token', 'varchar(64)', (c) => c.notNull())
    .addColumn('created_by', 'varchar(32)', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('verified_domain', 'varchar(253)')
    .addColumn('verified_at', 'bigint')
    .addColumn('verified_method', 'varchar(8)')
    .addColumn('last_checked_at', 'bigint')
    .addColumn('last_failure', 'varchar(64)')
    .execute();
  await db.schema.createIndex('organization_domains_org_domain_idx').on('organization_domains').columns(['organization_id', 'domain']).unique().execute();
  await db.schema.createIndex('organization_domains_verified_idx').on('organization_domains').column('verified_domain').unique().execute();
  await db.schema.createIndex('organization_domains_domain_idx').on('organization_domains').column('domain').execute();
  await db.schema.createIndex('organization_domains_created_by_idx').on('organization_domains').column('created_by').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('organization_domains').execute();
}
