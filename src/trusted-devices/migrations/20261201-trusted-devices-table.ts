import type { Kysely } from 'kysely';

/**
 * `trusted_devices`: browsers a user chose not to be asked the second factor on again. Only the
 * SHA-256 of the cookie's secret is kept (`token_hash`); the User-Agent is kept to name the browser as the sessions page does
 * ("Firefox on Linux"), the IP the one it was trusted from. Gone
 * with the account (cascade), when forgotten, and with every change that revokes them (a new
 * password, a factor added or removed, "sign out everywhere"). Times are epoch milliseconds.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('trusted_devices')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('user_id', 'varchar(32)', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('token_hash', 'varchar(64)', (c) => c.notNull().unique())
    .addColumn('user_agent', 'varchar(512)')
    .addColumn('created_ip', 'varchar(64)')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('last_used_at', 'bigint')
    .execute();
  await db.schema.createIndex('trusted_devices_user_id_idx').on('trusted_devices').column('user_id').execute();
  await db.schema.createIndex('trusted_devices_expires_at_idx').on('trusted_devices').column('expires_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('trusted_devices').execute();
}
