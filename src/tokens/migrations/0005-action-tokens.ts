import type { Kysely } from 'kysely';

/**
 * Single-use tokens sent by e-mail (password reset, e-mail verification). Only a SHA-256 of each
 * token is stored; a row is consumed at most once (`consumed_at`), and issuing a new token for a
 * user and purpose ends the older ones. Rows go with their user.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('action_tokens')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('user_id', 'varchar(32)', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('purpose', 'varchar(32)', (c) => c.notNull())
    .addColumn('token_hash', 'varchar(64)', (c) => c.notNull().unique())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('consumed_at', 'bigint')
    .execute();
  await db.schema.createIndex('action_tokens_user_purpose_idx').on('action_tokens').columns(['user_id', 'purpose']).execute();
  await db.schema.createIndex('action_tokens_expires_at_idx').on('action_tokens').column('expires_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('action_tokens').execute();
}
