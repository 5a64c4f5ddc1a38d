import type { Kysely } from 'kysely';

/**
 * The audit log: one row per security-relevant event (sign-ins, sign-outs, session ends, admin
 * changes). Rows hold who, by whom, from where, a stable reason code and small JSON details; never
 * a password, token or secret. `email` is kept only on sign-in failures (the normalised address
 * tried), so operators can see attacks on addresses that have no account. No foreign keys: the
 * trail outlives the users it mentions. Times are epoch milliseconds.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('audit_events')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('type', 'varchar(64)', (c) => c.notNull())
    .addColumn('user_id', 'varchar(32)')
    .addColumn('actor_user_id', 'varchar(32)')
    .addColumn('email', 'varchar(320)')
    .addColumn('ip', 'varchar(64)')
    .addColumn('user_agent', 'varchar(512)')
    .addColumn('reason', 'varchar(64)')
    .addColumn('details', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  // Listing is newest first, by user or by type; the purge deletes the oldest by time.
  await db.schema.createIndex('audit_events_user_id_created_at_idx').on('audit_events').columns(['user_id', 'created_at']).execute();
  await db.schema.createIndex('audit_events_type_created_at_idx').on('audit_events').columns(['type', 'created_at']).execute();
  await db.schema.createIndex('audit_events_created_at_idx').on('audit_events').column('created_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('audit_events').execute();
}
