/**
 * The migration lock on PostgreSQL (storage/migrations.ts takes it through Kysely's Migrator).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { PostgresAdapter, PostgresDialect, sql, type DialectAdapter, type Kysely } from 'kysely';

/**
 * Kysely's migration lock on PostgreSQL, asked for rather than waited on. Kysely's own adapter waits
 * in `pg_advisory_lock`, a statement that holds a snapshot while it waits; `CREATE INDEX
 * CONCURRENTLY` (a migration run outside a transaction: `applyMigrations`) waits for every older
 * snapshot to end, so an instance waiting for the lock and the one building the index under it
 * deadlocked (PostgreSQL detects it and fails one). Here a waiter asks with `pg_try_advisory_lock`,
 * a statement that ends at once, and sleeps between asks. The lock's key is Kysely's, so an older
 * Gatehouse, which waits Kysely's way, still excludes this one and is excluded by it; but an older
 * instance that starts while a newer one builds an index concurrently still waits Kysely's way and
 * deadlocks with the build (one of the two fails: docs/operations/production.md, Upgrades).
 */
const MIGRATION_LOCK_ID = 3853314791062309107n;
/** As long as Kysely's own lock waits before it gives up. */
const MIGRATION_LOCK_TIMEOUT_MS = 60 * 60_000;

class PollingLockPostgresAdapter extends PostgresAdapter {
  override async acquireMigrationLock(db: Kysely<unknown>): Promise<void> {
    const deadline = Date.now() + MIGRATION_LOCK_TIMEOUT_MS;
    for (let waitMs = 25; ; waitMs = Math.min(waitMs * 2, 1_000)) {
      const { rows } = await sql<{ locked: boolean }>`select pg_try_advisory_lock(${sql.lit(MIGRATION_LOCK_ID)}) as locked`.execute(db);
      if (rows[0]?.locked === true) return;
      if (Date.now() > deadline) throw new Error('another instance has held the migration lock for an hour');
      await sleep(waitMs);
    }
  }

  override async releaseMigrationLock(db: Kysely<unknown>): Promise<void> {
    await sql`select pg_advisory_unlock(${sql.lit(MIGRATION_LOCK_ID)})`.execute(db);
  }
}

/** PostgreSQL with that lock: what openStorage (database.ts) connects with. */
export class MigratingPostgresDialect extends PostgresDialect {
  override createAdapter(): DialectAdapter {
    return new PollingLockPostgresAdapter();
  }
}
