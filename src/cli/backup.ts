/**
 * `gatehouse backup FILE` and `gatehouse restore FILE`. They read only the database settings
 * (DATABASE_URL, DATA_DIR, from the environment or `.env`), so they work while the rest of the
 * configuration is broken; the work itself is in storage/backup.ts.
 */
import { existsSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { ConfigError, loadDotEnv } from '../config.ts';
import { EnvReader } from '../config/env-reader.ts';
import { parseDatabaseUrl, type DatabaseConfig } from '../storage/storage.config.ts';
import { BackupError, backupPostgres, backupSqlite, checkSqliteBackup, describeDatabase, findOnPath, isSqliteInUse, otherPostgresSessions, restorePostgres, restoreSqlite } from '../storage/backup.ts';
import { CliError, parseCommandLine, type CliIo } from './args.ts';
import { BACKUP_USAGE } from './usage.ts';

/** The database the server would use: DATABASE_URL, else `sqlite:$DATA_DIR/gatehouse.db` (as config.ts reads it). */
export function databaseConfig(env: NodeJS.ProcessEnv): DatabaseConfig {
  const problems: string[] = [];
  const read = new EnvReader(env, problems);
  const dataDir = resolve(read.string('DATA_DIR') ?? './data');
  const database = parseDatabaseUrl(read.string('DATABASE_URL') ?? `sqlite:${join(dataDir, 'gatehouse.db')}`, problems);
  if (database === undefined || problems.length > 0) throw new ConfigError(problems);
  return database;
}

const bytes = (n: number) => (n < 1024 ? `${n} bytes` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(1)} MiB`);

function missingTool(tool: string, what: string): CliError {
  return new CliError(
    `${tool} is not on PATH, so gatehouse cannot ${what} this PostgreSQL database itself. Install the PostgreSQL client tools ` +
      `(e.g. apt-get install postgresql-client, of the server's major version or newer) and run this again, or run ${tool} yourself:\n` +
      (tool === 'pg_dump'
        ? '  PGPASSWORD=… pg_dump --format=custom --file=FILE --dbname="postgres://user@host:5432/database"'
        : '  PGPASSWORD=… pg_restore --clean --if-exists --no-owner --single-transaction --dbname="postgres://user@host:5432/database" FILE\n  then: gatehouse migrate'),
  );
}

function wrap(error: unknown): never {
  if (error instanceof BackupError) throw new CliError(error.message);
  throw error;
}

export async function backup(args: string[], io: CliIo): Promise<void> {
  const { values, positionals } = parseCommandLine(args, { force: { type: 'boolean' } }, { command: 'backup', usage: BACKUP_USAGE, positionals: 1, what: 'backup file' });
  loadDotEnv();
  const database = databaseConfig(process.env);
  const target = resolve(positionals[0]!);
  try {
    if (database.kind === 'sqlite') {
      const made = backupSqlite(database.path, target, { force: values.force === true });
      io.stdout.write(`Backed up ${describeDatabase(database)} to ${made.path} (${bytes(made.bytes)})\n`);
      return;
    }
    const pgDump = findOnPath('pg_dump');
    if (pgDump === null) throw missingTool('pg_dump', 'back up');
    const made = await backupPostgres(database.url, target, { force: values.force === true, pgDump });
    io.stdout.write(`Backed up ${describeDatabase(database)} to ${made.path} (${bytes(made.bytes)}, pg_dump custom format)\n`);
  } catch (error) {
    wrap(error);
  }
}

export async function restore(args: string[], io: CliIo): Promise<void> {
  const { values, positionals } = parseCommandLine(args, { yes: { type: 'boolean' }, force: { type: 'boolean' } }, { command: 'restore', usage: BACKUP_USAGE, positionals: 1, what: 'backup file' });
  loadDotEnv();
  const database = databaseConfig(process.env);
  const file = isAbsolute(positionals[0]!) ? positionals[0]! : resolve(positionals[0]!);
  try {
    if (database.kind === 'sqlite') {
      if (database.path === ':memory:') throw new CliError('the database is in memory (DATABASE_URL=sqlite::memory:): there is nothing to restore into', 2);
      const checked = checkSqliteBackup(file);
      if (resolve(file) === resolve(database.path)) throw new CliError('the backup is the database itself', 2);
      if (existsSync(database.path) && values.yes !== true) throw new CliError(`restoring replaces the database at ${database.path}: add --yes to confirm (it is kept beside, renamed)`, 2);
      if (isSqliteInUse(database.path)) throw new CliError(`the database at ${database.path} is in use (is the server running?): stop every Gatehouse process that uses it, then restore`);
      const { replacedKeptAs } = restoreSqlite(file, database.path);
      io.stdout.write(`Restored ${describeDatabase(database)} from ${file} (${bytes(checked.bytes)})\n`);
      if (replacedKeptAs !== null) io.stdout.write(`The database it replaced is kept as ${replacedKeptAs}\n`);
    } else {
      const pgRestore = findOnPath('pg_restore');
      if (pgRestore === null) throw missingTool('pg_restore', 'restore');
      if (values.yes !== true) throw new CliError(`restoring replaces what ${describeDatabase(database)} holds: add --yes to confirm`, 2);
      const others = await otherPostgresSessions(database.url).catch((error: unknown) => {
        throw new CliError(`cannot reach ${describeDatabase(database)}: ${(error as Error).message}`);
      });
      if (others > 0 && values.force !== true) {
        throw new CliError(`${others} other session${others === 1 ? ' is' : 's are'} connected to ${describeDatabase(database)} (is the server running?): stop every Gatehouse process that uses it, or add --force`);
      }
      await restorePostgres(database.url, file, { pgRestore });
      io.stdout.write(`Restored ${describeDatabase(database)} from ${file}\n`);
    }
  } catch (error) {
    wrap(error);
  }
  // A backup from an older version: bring its schema up to this one.
  const [{ openStorage }, { migrateToLatest }] = await Promise.all([import('../storage/database.ts'), import('../modules.ts')]);
  const storage = openStorage(database);
  try {
    const { results = [] } = await migrateToLatest(storage.db);
    io.stdout.write(results.length === 0 ? 'Database is up to date.\n' : results.map((r) => `applied ${r.migrationName}\n`).join(''));
  } finally {
    await storage.close();
  }
}
