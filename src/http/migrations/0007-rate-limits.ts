import type { Kysely } from 'kysely';

/**
 * Rate-limit counters kept in storage (the default without REDIS_URL), so limits hold across
 * restarts and, on PostgreSQL, across instances: one row per limiter key with the points consumed
 * in its window and when the window ends. Keys never hold an address in clear (accounts are keyed
 * by a hash of the normalised address). And the lock of a password after too many consecutive
 * failed sign-ins (NIST SP 800-63B-4's 100), which only a password reset lifts.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('rate_limits')
    .addColumn('key', 'varchar(255)', (c) => c.primaryKey())
    .addColumn('points', 'integer', (c) => c.notNull())
    .addColumn('expire', 'bigint')
    .execute();
  await db.schema.createIndex('rate_limits_expire_idx').on('rate_limits').column('expire').execute();
  await db.schema.alterTable('users').addColumn('password_locked_at', 'bigint').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('users').dropColumn('password_locked_at').execute();
  await db.schema.dropTable('rate_limits').execute();
}
