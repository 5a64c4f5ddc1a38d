import type { Kysely } from 'kysely';

/**
 * `sso_setup_links`: links an organization's OWNER sends to their IT admin to set up single sign-on
 * (see sso-setup.service.ts). Only the SHA-256 of the link's secret is stored (`token_hash`). Each
 * link serves one organization and one connection: an existing one, or the id reserved for the
 * connection the link will create (`connection_id`, no foreign key: it may not exist yet), so our
 * SP values can be shown before the IdP's metadata is entered.
 * `sso_setup_tests`: test sign-ins started from a link, and what the IdP asserted in them (kept
 * until they expire, minutes): shown on the link's page, never a session or an account.
 * Times are epoch milliseconds.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('sso_setup_links')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('organization_id', 'varchar(32)', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('connection_id', 'varchar(32)', (c) => c.notNull())
    .addColumn('token_hash', 'varchar(64)', (c) => c.notNull().unique())
    .addColumn('created_by', 'varchar(32)', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('revoked_at', 'bigint')
    .addColumn('last_used_at', 'bigint')
    .execute();
  await db.schema.createIndex('sso_setup_links_organization_idx').on('sso_setup_links').column('organization_id').execute();

  await db.schema
    .createTable('sso_setup_tests')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('link_id', 'varchar(32)', (c) => c.notNull().references('sso_setup_links.id').onDelete('cascade'))
    .addColumn('connection_id', 'varchar(32)', (c) => c.notNull())
    .addColumn('result', 'text')
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sso_setup_tests_expires_idx').on('sso_setup_tests').column('expires_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['sso_setup_tests', 'sso_setup_links']) await db.schema.dropTable(table).execute();
}
