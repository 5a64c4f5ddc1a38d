/**
 * Applies the modules' migrations (storage/database.ts opens the storage they run on; the lock they
 * take is migration-lock.ts's).
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import { Migrator, type Migration, type MigrationResultSet } from 'kysely/migration';
import { withoutQueryTimeout, type Db } from './database.ts';

/** The names of `migrations` not applied yet (empty: the schema is current). */
export async function pendingMigrations(db: Db, migrations: Readonly<Record<string, Migration>>): Promise<string[]> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => ({ ...migrations }) }, allowUnorderedMigrations: true });
  return (await migrator.getMigrations()).filter((info) => info.executedAt === undefined).map((info) => info.name);
}

/**
 * A migration that must run outside a transaction says so (`export const transaction = false` in
 * its file): on PostgreSQL, one that builds an index on a table that may be large with
 * `createIndexConcurrently`, which `CREATE INDEX CONCURRENTLY` cannot do inside a transaction block.
 */
function runsInTransaction(migration: Migration): boolean {
  return (migration as Migration & { readonly transaction?: unknown }).transaction !== false;
}

/** A migration failed; those before it that this run applied stay applied (`applied`, in order). */
export class MigrationFailedError extends Error {
  readonly migration: string;
  readonly applied: readonly string[];
  constructor(migration: string, applied: readonly string[], cause: unknown) {
    super(`Migration ${migration} failed`, { cause });
    this.migration = migration;
    this.applied = applied;
  }
}

/**
 * Applies every pending migration of `migrations` (the modules' own, gathered by `modules.ts`'s
 * `migrateToLatest`), in the lexical order of their names; throws with the failing one's name.
 *
 * The pending ones run in one transaction, as one change, up to the first that runs outside a
 * transaction (`runsInTransaction`); that one runs alone, on PostgreSQL without a transaction (its
 * index built while the table takes writes), then the rest go on the same way. Each run holds
 * Kysely's migration lock and decides what it runs only under it, from what is applied then, so
 * two instances starting at once never run a migration twice. A migration run outside a transaction
 * that is cut off half-way is run again whole by the next start: it must be safe to repeat
 * (`createIndexConcurrently` is). SQLite has no transactional DDL in Kysely: there every pending
 * one runs in one go, as before.
 */
export async function applyMigrations(db: Db, migrations: Readonly<Record<string, Migration>>): Promise<MigrationResultSet> {
  const isPostgres = db.getExecutor().adapter.supportsTransactionalDdl;
  const names = Object.keys(migrations).sort();
  const alone = new Set(names.filter((name) => !runsInTransaction(migrations[name]!)));
  let mode: 'together' | 'alone' = 'together';
  const migrator = new Migrator({
    db,
    // Read under the lock, at each run: what is applied then, and what this run may take.
    provider: {
      getMigrations: async () => {
        if (!isPostgres || alone.size === 0) return { ...migrations };
        const applied = new Set((await sql<{ name: string }>`select name from kysely_migration`.execute(db)).rows.map((row) => row.name));
        const pending = names.filter((name) => !applied.has(name));
        const stop = pending.findIndex((name) => alone.has(name));
        const runs = mode === 'alone' ? (stop === 0 ? pending.slice(0, 1) : []) : stop === -1 ? pending : pending.slice(0, stop);
        return Object.fromEntries([...names.filter((name) => applied.has(name)), ...runs].map((name) => [name, migrations[name]!]));
      },
    },
    // Each module has its own: one added later may sort before another module's applied one
    // (both named by date). Pending ones still run in name order; applied ones never run again.
    allowUnorderedMigrations: true,
  });
  const results: NonNullable<MigrationResultSet['results']>[number][] = [];
  for (;;) {
    // Unbounded: a migration building an index on a large table may rightly take minutes.
    const result = await withoutQueryTimeout(() => migrator.migrateToLatest({ disableTransactions: mode === 'alone' }));
    results.push(...(result.results ?? []));
    if (result.error !== undefined) {
      const failed = result.results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
      throw new MigrationFailedError(failed, results.filter((r) => r.status === 'Success').map((r) => r.migrationName), result.error);
    }
    if (!isPostgres || alone.size === 0) break;
    const pending = await pendingMigrations(db, migrations);
    if (pending.length === 0) break;
    mode = alone.has(pending[0]!) ? 'alone' : 'together';
  }
  return { results };
}

/**
 * Builds the index `name` on `table` without blocking writes to the table: on PostgreSQL `CREATE
 * INDEX CONCURRENTLY` (so the migration that calls it must run outside a transaction: `export
 * const transaction = false`), first dropping what a build cut off half-way leaves (the index,
 * marked invalid, which `if not exists` would otherwise keep); so it can be run again at any
 * point. `definition` is what follows `on <table>`: `(email text_pattern_ops)`, `using gin (…)`.
 * Both names are found as the statements find them (the search path); an index of that name on
 * another table stops the migration. SQLite: a plain `create index if not exists` (its tables are
 * the sizes it serves, and it builds them in its one write lock anyway).
 */
export async function createIndexConcurrently(db: Kysely<unknown>, name: string, table: string, definition: RawBuilder<unknown>): Promise<void> {
  const create = (concurrently: boolean) => sql`create index ${sql.raw(concurrently ? 'concurrently ' : '')}if not exists ${sql.id(name)} on ${sql.id(table)} ${definition}`;
  if (!db.getExecutor().adapter.supportsTransactionalDdl) {
    await create(false).execute(db);
    return;
  }
  const { rows } = await sql<{ valid: boolean; isOnTable: boolean }>`
    select i.indisvalid as valid, i.indrelid = to_regclass(quote_ident(${table})) as "isOnTable"
      from pg_index i where i.indexrelid = to_regclass(quote_ident(${name}))`.execute(db);
  const found = rows[0];
  if (found !== undefined && !found.isOnTable) throw new Error(`an index named ${name} exists on another table than ${table}`);
  if (found?.valid === false) await sql`drop index concurrently if exists ${sql.id(name)}`.execute(db);
  await create(true).execute(db);
}
