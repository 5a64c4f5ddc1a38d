/**
 * Backups and restores of the configured database, for `gatehouse backup` and `gatehouse restore`.
 *
 * SQLite: `VACUUM INTO` makes a consistent copy from one read transaction, while the server goes on
 * reading and writing (WAL mode). A plain copy of the database file is not a backup: committed
 * transactions live in `<file>-wal` until a checkpoint moves them into the file, so a copy of the
 * file alone can miss them, and a copy taken during a checkpoint can be torn. A restore writes the
 * backup beside the database, fsyncs it and renames it into place, after removing the old file's
 * `-wal` and `-shm` (SQLite would otherwise replay the old log into the new file).
 *
 * PostgreSQL: `pg_dump --format=custom` and `pg_restore`, when on PATH. The connection goes to them
 * as a URL without its password (which goes in PGPASSWORD): never on a command line, never printed.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { accessSync, closeSync, constants, copyFileSync, existsSync, fsyncSync, linkSync, openSync, readSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, delimiter, dirname, join, resolve } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { DatabaseConfig } from './storage.config.ts';

/** A problem with the backup or restore itself (not with the command line): exit 1. */
export class BackupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackupError';
  }
}

/** The database for people to read: `SQLite <path>` or `PostgreSQL <user>@<host>:<port>/<db>`, never a password. */
export function describeDatabase(config: DatabaseConfig): string {
  if (config.kind === 'sqlite') return `SQLite ${config.path}`;
  try {
    const url = new URL(config.url);
    const user = url.username === '' ? '' : `${decodeURIComponent(url.username)}@`;
    return `PostgreSQL ${user}${url.hostname || 'localhost'}:${url.port || '5432'}${url.pathname}`;
  } catch {
    return 'PostgreSQL (unparseable DATABASE_URL)';
  }
}

// ---------------------------------------------------------------------------------------------
// SQLite

const SQLITE_HEADER = 'SQLite format 3\0';

/** The file names SQLite keeps beside a database: its write-ahead log, shared memory and rollback journal. */
const sidecars = (path: string) => [`${path}-wal`, `${path}-shm`, `${path}-journal`];

/** A new file's name in `path`'s directory, for writing it whole before it takes `path`'s place. */
const tempBeside = (path: string) => join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);

function fsyncFile(path: string): void {
  const fd = openSync(path, 'r+');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Makes a rename or link in `directory` durable (a no-op where directories cannot be opened). */
function fsyncDirectory(directory: string): void {
  let fd: number;
  try {
    fd = openSync(directory, 'r');
  } catch {
    return;
  }
  try {
    fsyncSync(fd);
  } catch {
    // Some file systems refuse fsync on a directory; the rename itself has happened.
  } finally {
    closeSync(fd);
  }
}

/**
 * Puts the finished file `temp` at `target`: atomically, and never over an existing file unless
 * `force` (a hard link fails on an existing name; where links are not possible, an existence check).
 */
function moveIntoPlace(temp: string, target: string, force: boolean): void {
  if (force) {
    renameSync(temp, target);
  } else {
    try {
      linkSync(temp, target);
      rmSync(temp);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') throw new BackupError(`${target} exists: choose another name, or add --force to replace it`);
      if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EXDEV' && code !== 'ENOSYS') throw error;
      if (existsSync(target)) throw new BackupError(`${target} exists: choose another name, or add --force to replace it`);
      renameSync(temp, target);
    }
  }
  fsyncDirectory(dirname(target));
}

/** Refuses a target that exists (without `force`) or whose directory does not, before any work is done. */
function checkTarget(target: string, force: boolean): void {
  if (!force && existsSync(target)) throw new BackupError(`${target} exists: choose another name, or add --force to replace it`);
  if (!existsSync(dirname(target))) throw new BackupError(`the directory ${dirname(target)} does not exist`);
}

/**
 * A consistent copy of the SQLite database at `source`, taken with `VACUUM INTO` (safe while the
 * server reads and writes), written beside `target`, fsynced, then moved into place.
 */
export function backupSqlite(source: string, target: string, options: { force: boolean }): { path: string; bytes: number } {
  if (source === ':memory:') throw new BackupError('the database is in memory (DATABASE_URL=sqlite::memory:): there is nothing to back up');
  if (!existsSync(source)) throw new BackupError(`no database at ${source}`);
  const path = resolve(target);
  if (path === resolve(source) || sidecars(resolve(source)).includes(path)) throw new BackupError('the backup cannot be the database itself');
  checkTarget(path, options.force);
  const temp = tempBeside(path);
  // Waits for a writer's lock as long as the server's connections do; never creates the database.
  const database = new DatabaseSync(source, { timeout: 5_000 });
  try {
    database.prepare('VACUUM INTO ?').run(temp);
  } catch (error) {
    rmSync(temp, { force: true });
    throw new BackupError(`VACUUM INTO failed: ${(error as Error).message}`);
  } finally {
    database.close();
  }
  try {
    fsyncFile(temp);
    moveIntoPlace(temp, path, options.force);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
  return { path, bytes: statSync(path).size };
}

/**
 * Whether another connection has the SQLite database at `path` open (a running server, even an idle
 * one): a connection in exclusive locking mode cannot read a WAL database that another holds open.
 * Its close also checkpoints a log left by a crash into the file.
 */
export function isSqliteInUse(path: string): boolean {
  if (!existsSync(path)) return false;
  const database = new DatabaseSync(path, { timeout: 0 });
  try {
    database.exec('PRAGMA locking_mode = EXCLUSIVE');
    database.prepare('select count(*) from sqlite_master').get();
    database.exec('BEGIN EXCLUSIVE');
    database.exec('ROLLBACK');
    return false;
  } catch (error) {
    if (/locked|busy/i.test((error as Error).message)) return true;
    throw new BackupError(`cannot open the database at ${path}: ${(error as Error).message}`);
  } finally {
    database.close();
  }
}

/** Refuses a file that is not a whole, sound SQLite database holding Gatehouse's migrations table. */
export function checkSqliteBackup(file: string): { bytes: number } {
  if (!existsSync(file)) throw new BackupError(`no file at ${file}`);
  const header = Buffer.alloc(SQLITE_HEADER.length);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, header, 0, header.length, 0);
  } finally {
    closeSync(fd);
  }
  if (header.toString('latin1') !== SQLITE_HEADER) throw new BackupError(`${file} is not a SQLite database (with PostgreSQL, restore a pg_dump file)`);
  const wal = `${file}-wal`;
  if (existsSync(wal) && statSync(wal).size > 0) {
    throw new BackupError(`${wal} exists beside the backup: the file alone may lack what that log holds (a copy of a live database?). Make backups with \`gatehouse backup\``);
  }
  const database = new DatabaseSync(file, { readOnly: true });
  try {
    const check = database.prepare('PRAGMA quick_check').all() as Array<Record<string, unknown>>;
    const verdict = check.map((row) => String(Object.values(row)[0])).join('; ');
    if (verdict !== 'ok') throw new BackupError(`${file} is damaged: ${verdict.slice(0, 300)}`);
    const migrations = database.prepare("select count(*) as n from sqlite_master where type = 'table' and name = 'kysely_migration'").get() as { n: number };
    if (Number(migrations.n) === 0) throw new BackupError(`${file} is not a Gatehouse database (it has no migrations table)`);
  } catch (error) {
    if (error instanceof BackupError) throw error;
    throw new BackupError(`cannot read ${file}: ${(error as Error).message}`);
  } finally {
    database.close();
  }
  return { bytes: statSync(file).size };
}

/**
 * Puts the backup `file` in the place of the SQLite database at `target` (whose server must be
 * stopped): copied beside it and fsynced, the old database's `-wal`, `-shm` and `-journal` removed,
 * then renamed into place. The database it replaces is kept as `<target>.replaced-<time>`.
 */
export function restoreSqlite(file: string, target: string, now = new Date()): { replacedKeptAs: string | null } {
  const temp = tempBeside(target);
  let replacedKeptAs: string | null = null;
  try {
    copyFileSync(file, temp);
    fsyncFile(temp);
    if (existsSync(target)) {
      replacedKeptAs = `${target}.replaced-${now.toISOString().replace(/[:.]/g, '-')}`;
      renameSync(target, replacedKeptAs);
    }
    // Never leave an old log beside the new file: SQLite would replay it into the wrong database.
    for (const sidecar of sidecars(target)) rmSync(sidecar, { force: true });
    renameSync(temp, target);
    fsyncDirectory(dirname(target));
  } finally {
    rmSync(temp, { force: true });
  }
  return { replacedKeptAs };
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL

/** Connection parameters libpq (pg_dump, pg_restore) understands in a URL; others are node-postgres's own. */
const LIBPQ_PARAMETERS = new Set(['host', 'hostaddr', 'port', 'dbname', 'user', 'sslmode', 'sslcert', 'sslkey', 'sslrootcert', 'sslcrl', 'application_name', 'options', 'connect_timeout', 'target_session_attrs', 'client_encoding', 'gssencmode', 'channel_binding']);

/**
 * How to hand DATABASE_URL to pg_dump / pg_restore: `--dbname=<the URL without its password>` and
 * the password in PGPASSWORD (a command line is visible to every user of the machine).
 */
export function postgresConnection(databaseUrl: string): { dbnameArg: string; env: Record<string, string>; password: string | null } {
  const url = new URL(databaseUrl);
  let password = url.password === '' ? null : decodeURIComponent(url.password);
  url.password = '';
  const params = new URLSearchParams();
  for (const [key, value] of url.searchParams) {
    if (key === 'password') password = value;
    else if (key === 'sslmode') params.set('sslmode', value === 'no-verify' ? 'require' : value);
    else if (key === 'ssl' && (value === 'true' || value === '1') && !url.searchParams.has('sslmode')) params.set('sslmode', 'require');
    else if (LIBPQ_PARAMETERS.has(key)) params.set(key, value);
  }
  url.search = params.toString();
  return { dbnameArg: `--dbname=${url.toString()}`, env: password === null ? {} : { PGPASSWORD: password }, password };
}

/** The full path of `tool` on PATH, or null. */
export function findOnPath(tool: string, path = process.env.PATH ?? ''): string | null {
  for (const directory of path.split(delimiter)) {
    if (directory === '') continue;
    const candidate = join(directory, tool);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

/** Runs a PostgreSQL client tool; resolves with its exit code and standard error (the password scrubbed out). */
export function runPostgresTool(executable: string, args: readonly string[], connection: { env: Record<string, string>; password: string | null }): Promise<{ code: number; stderr: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(executable, [...args], { env: { ...process.env, ...connection.env }, stdio: ['ignore', 'ignore', 'pipe'] });
    const chunks: Buffer[] = [];
    child.stderr.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      let stderr = Buffer.concat(chunks).toString('utf8').trim();
      if (connection.password !== null && connection.password.length >= 4) stderr = stderr.split(connection.password).join('***');
      resolvePromise({ code: code ?? (signal === null ? 1 : 128), stderr });
    });
  });
}

/** `pg_dump --format=custom` of the database at `databaseUrl` into `target` (written beside it, then moved into place). */
export async function backupPostgres(databaseUrl: string, target: string, options: { force: boolean; pgDump: string }): Promise<{ path: string; bytes: number }> {
  const path = resolve(target);
  checkTarget(path, options.force);
  const connection = postgresConnection(databaseUrl);
  const temp = tempBeside(path);
  try {
    const { code, stderr } = await runPostgresTool(options.pgDump, ['--format=custom', '--no-password', `--file=${temp}`, connection.dbnameArg], connection);
    if (code !== 0) throw new BackupError(`pg_dump failed (exit ${code})${stderr === '' ? '' : `:\n${stderr}`}`);
    fsyncFile(temp);
    moveIntoPlace(temp, path, options.force);
  } finally {
    rmSync(temp, { force: true });
  }
  return { path, bytes: statSync(path).size };
}

/** `pg_restore --clean --if-exists` of `file` into the database at `databaseUrl`, in one transaction. */
export async function restorePostgres(databaseUrl: string, file: string, options: { pgRestore: string }): Promise<void> {
  if (!existsSync(file)) throw new BackupError(`no file at ${file}`);
  const connection = postgresConnection(databaseUrl);
  const { code, stderr } = await runPostgresTool(
    options.pgRestore,
    ['--clean', '--if-exists', '--no-owner', '--single-transaction', '--exit-on-error', '--no-password', connection.dbnameArg, resolve(file)],
    connection,
  );
  if (code !== 0) throw new BackupError(`pg_restore failed (exit ${code}); the database is unchanged${stderr === '' ? '' : `:\n${stderr}`}`);
}

/** How many other client sessions are connected to the database at `databaseUrl` (a running server holds some). */
export async function otherPostgresSessions(databaseUrl: string): Promise<number> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 5_000 });
  client.on('error', () => {});
  try {
    await client.connect();
    const result = await client.query<{ n: string }>(
      "select count(*) as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and backend_type = 'client backend'",
    );
    return Number(result.rows[0]?.n ?? 0);
  } finally {
    await client.end().catch(() => {});
  }
}
