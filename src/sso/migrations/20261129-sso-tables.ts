import type { Kysely } from 'kysely';

/**
 * `sso_connections`: an organization's single sign-on connections (SAML 2.0 or OpenID Connect).
 * `settings` is JSON (the IdP's entity id, SSO URL and certificates, or the issuer and client id;
 * the attribute mapping and the group → role rules); `secret_box` holds what must stay secret, sealed
 * under a key derived from AUTH_SECRET (the SP's private keys, the OIDC client secret).
 * `sso_requests`: sign-ins in progress (a SAML AuthnRequest's ID, an OIDC `state`), used once, expiring.
 * `sso_assertions`: the assertion IDs already accepted per connection, until they expire (replay store,
 * shared by every instance on the database: the primary key refuses a second insert).
 * `sso_identities`: who the IdP's subject (NameID, `sub`) is here, per connection.
 * Times are epoch milliseconds.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('sso_connections')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('organization_id', 'varchar(32)', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('name', 'varchar(200)', (c) => c.notNull())
    .addColumn('protocol', 'varchar(8)', (c) => c.notNull())
    .addColumn('enforce', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('idp_initiated', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('default_role', 'varchar(32)', (c) => c.notNull())
    .addColumn('settings', 'text', (c) => c.notNull())
    .addColumn('secret_box', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sso_connections_organization_idx').on('sso_connections').column('organization_id').execute();

  await db.schema
    .createTable('sso_requests')
    .addColumn('id', 'varchar(128)', (c) => c.primaryKey())
    .addColumn('connection_id', 'varchar(32)', (c) => c.notNull().references('sso_connections.id').onDelete('cascade'))
    .addColumn('data', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sso_requests_expires_idx').on('sso_requests').column('expires_at').execute();

  await db.schema
    .createTable('sso_assertions')
    .addColumn('connection_id', 'varchar(32)', (c) => c.notNull().references('sso_connections.id').onDelete('cascade'))
    .addColumn('assertion_id', 'varchar(256)', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('sso_assertions_pk', ['connection_id', 'assertion_id'])
    .execute();
  await db.schema.createIndex('sso_assertions_expires_idx').on('sso_assertions').column('expires_at').execute();

  await db.schema
    .createTable('sso_identities')
    .addColumn('connection_id', 'varchar(32)', (c) => c.notNull().references('sso_connections.id').onDelete('cascade'))
    .addColumn('subject', 'varchar(512)', (c) => c.notNull())
    .addColumn('user_id', 'varchar(32)', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_used_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('sso_identities_pk', ['connection_id', 'subject'])
    .execute();
  await db.schema.createIndex('sso_identities_user_idx').on('sso_identities').column('user_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['sso_identities', 'sso_assertions', 'sso_requests', 'sso_connections']) await db.schema.dropTable(table).execute();
}
