import type { Kysely } from 'kysely';

/**
 * OpenID Back-Channel Logout 1.0, sent by Gatehouse:
 * - `oidc_logout_links`: which Gatehouse session signed a person in to which app that asked for
 *   back-channel logout, and the `sid` the app knows that sign-in by (one row per session and
 *   app, kept until the session could no longer be alive);
 * - `oidc_logout_deliveries`: the logout tokens owed to apps (an outbox: storage/outbox/), one per
 *   sign-in that ended; the token itself is made and signed at each attempt.
 * Times are epoch milliseconds.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('oidc_logout_links')
    .addColumn('session_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('client_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('account_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('sid', 'varchar(128)', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('oidc_logout_links_pk', ['session_id', 'client_id'])
    .execute();
  await db.schema.createIndex('oidc_logout_links_account_idx').on('oidc_logout_links').column('account_id').execute();
  await db.schema.createIndex('oidc_logout_links_expires_idx').on('oidc_logout_links').column('expires_at').execute();
  await db.schema
    .createTable('oidc_logout_deliveries')
    .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('client_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('account_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('sid', 'varchar(128)', (c) => c.notNull())
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('locked_until', 'bigint')
    .addColumn('locked_by', 'varchar(64)')
    .addColumn('last_error', 'varchar(200)')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('delivered_at', 'bigint')
    .execute();
  await db.schema.createIndex('oidc_logout_deliveries_due_idx').on('oidc_logout_deliveries').columns(['status', 'next_attempt_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('oidc_logout_deliveries').execute();
  await db.schema.dropTable('oidc_logout_links').execute();
}
