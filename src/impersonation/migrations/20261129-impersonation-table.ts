import type { Kysely } from 'kysely';

/**
 * `impersonations`: an administrator acting as a user, one row per impersonation session. The
 * session (`session_id`, a Gatehouse session of the user) ends at `ends_at`; `ended_at` is set once
 * its end has been recorded (the audit event and the mail to the user), by "Stop" or by the job that
 * finds it expired. The reason is the administrator's, for the audit event and the user's mail.
 * Gone with either account, and a day after its end (the audit log keeps the history). Times are
 * epoch milliseconds.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('impersonations')
    .addColumn('session_id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('user_id', 'varchar(32)', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('admin_id', 'varchar(32)', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('reason', 'varchar(500)', (c) => c.notNull())
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .addColumn('ends_at', 'bigint', (c) => c.notNull())
    .addColumn('ended_at', 'bigint')
    .execute();
  await db.schema.createIndex('impersonations_ends_at_idx').on('impersonations').columns(['ended_at', 'ends_at']).execute();
  await db.schema.createIndex('impersonations_user_id_idx').on('impersonations').column('user_id').execute();
  await db.schema.createIndex('impersonations_admin_id_idx').on('impersonations').column('admin_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('impersonations').execute();
}
