import { SqliteAdapter, type Kysely } from 'kysely';

/**
 * Refresh-token rotation (the previous hash, for reuse detection and the concurrent-tab grace)
 * and the revocation list of the jwt strategy. `seq` orders revocations across instances without
 * trusting their clocks: each instance pulls the entries after the last `seq` it saw.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('sessions').addColumn('previous_refresh_token_hash', 'varchar(64)').execute();
  await db.schema.alterTable('sessions').addColumn('refresh_rotated_at', 'bigint').execute();

  const isSqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  await db.schema
    .createTable('revoked_sessions')
    .addColumn('seq', isSqlite ? 'integer' : 'bigint', (c) =>
      isSqlite ? c.primaryKey().autoIncrement() : c.primaryKey().generatedAlwaysAsIdentity(),
    )
    .addColumn('session_id', 'varchar(32)', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('revoked_sessions_expires_at_idx').on('revoked_sessions').column('expires_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('revoked_sessions').execute();
  await db.schema.alterTable('sessions').dropColumn('refresh_rotated_at').execute();
  await db.schema.alterTable('sessions').dropColumn('previous_refresh_token_hash').execute();
}
