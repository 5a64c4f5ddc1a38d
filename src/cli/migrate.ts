/**
 * `gatehouse migrate` (apply what is pending) and `gatehouse migrate status`. Migrations are
 * forward-only: each module's `down` drops the tables and columns its `up` made, with their data,
 * and the modules' migrations interleave by name, so "the last one" of a deployed database is no
 * safe unit to undo. Going back is restoring the backup taken before the upgrade.
 */
import { existsSync } from 'node:fs';
import { isoTime } from '../lib/clock.ts';
import type { Db } from '../storage/database.ts';
import type { MigrationFailedError } from '../storage/migrations.ts';
import { CliError, formatTable, parseCommandLine, writeJson, type CliIo } from './args.ts';
import { withStorage } from './on-demand.ts';
import { MIGRATE_USAGE } from './usage.ts';

/** The module list and what reads it (every module's code), once the command line is read. */
async function migrations(): Promise<{ migrateToLatest: typeof import('../modules.ts').migrateToLatest; all: () => ReturnType<typeof import('../module.ts').collectMigrations> }> {
  const [{ MODULES, migrateToLatest }, { collectMigrations }] = await Promise.all([import('../modules.ts'), import('../module.ts')]);
  return { migrateToLatest, all: () => collectMigrations(MODULES) };
}

const DOWN_WORDS = new Set(['down', 'rollback', 'undo', 'revert', 'redo', 'reset']);

export async function migrate(args: string[], io: CliIo): Promise<void> {
  const [first] = args;
  if (first === 'status') return status(args.slice(1), io);
  if (first !== undefined && DOWN_WORDS.has(first)) {
    throw new CliError(
      `migrate ${first}: migrations are forward-only; there is no "migrate ${first}" (undoing one drops tables or columns with their data). ` +
        'To go back to the version before an upgrade, stop Gatehouse, install that version and restore the backup taken before the upgrade: ' +
        'gatehouse restore FILE --yes (see docs/guides/cli.md, "Backup and restore").',
      2,
    );
  }
  if (args.includes('--status')) throw new CliError('migrate: unknown option --status; the status is `gatehouse migrate status`', 2);
  parseCommandLine(args, {}, { command: 'migrate', usage: MIGRATE_USAGE });
  const { migrateToLatest } = await migrations();
  await withStorage(io, { migrate: false }, async (storage) => {
    const { results = [] } = await migrateToLatest(storage.db).catch((error: unknown) => {
      // What ran before the failing one stays applied: say so before the error.
      const applied = (error as Partial<MigrationFailedError>).applied ?? [];
      io.stdout.write(applied.map((name) => `applied ${name}\n`).join(''));
      throw error;
    });
    io.stdout.write(results.length === 0 ? 'Database is up to date.\n' : results.map((r) => `applied ${r.migrationName}\n`).join(''));
  });
}

export interface MigrationState {
  name: string;
  /** `unknown`: applied, but this version of Gatehouse has no such migration (a newer one ran here). */
  status: 'applied' | 'pending' | 'unknown';
  appliedAt: string | null;
}

/** Every migration this version knows, in the order they apply, with when each was applied; then any applied one it does not know. */
export async function migrationStates(db: Db): Promise<MigrationState[]> {
  const [ours, { Migrator }, { sql }] = await Promise.all([migrations(), import('kysely/migration'), import('kysely')]);
  const all = ours.all();
  const migrator = new Migrator({ db, provider: { getMigrations: async () => ({ ...all }) }, allowUnorderedMigrations: true });
  const known = (await migrator.getMigrations()).map(
    (info): MigrationState => ({ name: info.name, status: info.executedAt === undefined ? 'pending' : 'applied', appliedAt: info.executedAt === undefined ? null : isoTime(info.executedAt.getTime()) }),
  );
  let applied: Array<{ name: string; timestamp: string }> = [];
  if (known.some((state) => state.status === 'applied')) {
    applied = (await sql<{ name: string; timestamp: string }>`select name, timestamp from kysely_migration order by name`.execute(db)).rows;
  }
  const unknown = applied
    .filter((row) => !Object.hasOwn(all, row.name))
    .map((row): MigrationState => ({ name: row.name, status: 'unknown', appliedAt: Number.isNaN(Date.parse(row.timestamp)) ? null : new Date(row.timestamp).toISOString() }));
  return [...known, ...unknown];
}

async function status(args: string[], io: CliIo): Promise<void> {
  const { values } = parseCommandLine(args, { json: { type: 'boolean' } }, { command: 'migrate status', usage: MIGRATE_USAGE });
  const config = (await import('./context.ts')).readConfig(io.stderr);
  let states: MigrationState[];
  if (config.database.kind === 'sqlite' && config.database.path !== ':memory:' && !existsSync(config.database.path)) {
    // No database yet: everything is pending, and looking must not create the file.
    states = Object.keys((await migrations()).all())
      .sort()
      .map((name) => ({ name, status: 'pending', appliedAt: null }));
  } else {
    states = await withStorage(io, { migrate: false }, (storage) => migrationStates(storage.db));
  }
  const count = (wanted: MigrationState['status']) => states.filter((state) => state.status === wanted).length;
  if (values.json) {
    writeJson(io, { applied: count('applied'), pending: count('pending'), unknown: count('unknown'), migrations: states });
    return;
  }
  io.stdout.write(formatTable(['MIGRATION', 'STATUS'], states.map((state) => [state.name, state.status === 'applied' ? `applied ${state.appliedAt ?? ''}`.trim() : state.status === 'pending' ? 'pending' : `applied ${state.appliedAt ?? ''} (unknown to this version)`.trim()])));
  const pending = count('pending');
  io.stdout.write(`${count('applied')} applied, ${pending} pending${pending > 0 ? ' (run gatehouse migrate, or start the server)' : ''}${count('unknown') > 0 ? `, ${count('unknown')} unknown to this version (a newer Gatehouse ran on this database)` : ''}\n`);
}
