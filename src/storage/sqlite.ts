/**
 * Kysely's SqliteDialect over Node's built-in `node:sqlite`, so the embedded default needs no
 * native build step. Kysely expects better-sqlite3's statement shape; this adapts to it.
 */
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { SqliteDialect, type SqliteDatabase, type SqliteStatement } from 'kysely';

const STATEMENT_CACHE_SIZE = 256;
const SCHEMA_CHANGE = /^\s*(?:create|alter|drop)\b/i;
const BUSY_TIMEOUT_MS = 5_000;

type SqlValue = null | number | bigint | string | Uint8Array;

export function openSqlite(path: string, options: { cacheMib?: number } = {}): DatabaseSync {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const database = new DatabaseSync(path, { enableForeignKeyConstraints: true, timeout: BUSY_TIMEOUT_MS });
  // WAL lets readers proceed while a writer commits; NORMAL sync is durable across process
  // crashes (the WAL is fsynced at checkpoints), which is what a SIGKILL test checks.
  database.exec('PRAGMA journal_mode = WAL');
  database.exec('PRAGMA synchronous = NORMAL');
  database.exec('PRAGMA foreign_keys = ON');
  database.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
  // Negative: a size in KiB rather than a number of pages.
  if (options.cacheMib !== undefined) database.exec(`PRAGMA cache_size = -${Math.trunc(options.cacheMib) * 1024}`);
  addFunctions(database);
  return database;
}

function addFunctions(database: DatabaseSync): void {
  // lower() as PostgreSQL has it: SQLite's own folds ASCII only, so a case-insensitive search for
  // "émile" would miss "Émile" here and find it there.
  database.function('lower', { deterministic: true }, (value) => (typeof value === 'string' ? value.toLowerCase() : value));
}

/** Reads on a connection of their own, answered synchronously (see `openSqliteReader`). */
export interface SqliteReader {
  /** The rows of one SELECT, as plain objects. */
  all(sql: string, parameters: readonly unknown[]): Record<string, unknown>[];
  /**
   * SQLite's `PRAGMA data_version` on this connection: it changes whenever another connection (the
   * writer, another process's, the CLI's) has committed since it was last read, and only then.
   * Once closed, NaN (never equal to itself: whatever was kept by it is never used again), since a
   * connection opened afresh would start its count again and could repeat an old value.
   */
  dataVersion(): number;
  close(): void;
}

/**
 * A read-only connection to the database file, for hot reads outside any transaction (the
 * session check). In WAL mode a reader never waits for the writer: each statement reads the
 * last committed state. Through Kysely the same read would queue behind the one connection's mutex
 * (and a transaction of another request holding it) and take several promise turns: a fifth of the
 * database strategy's session check. Opened on first use, once the writer has made the file.
 */
export function openSqliteReader(path: string, options: { cacheMib?: number } = {}): SqliteReader {
  let adapter: NodeSqliteAdapter | undefined;
  const open = () => {
    const database = new DatabaseSync(path, { readOnly: true, enableForeignKeyConstraints: true, timeout: BUSY_TIMEOUT_MS });
    if (options.cacheMib !== undefined) database.exec(`PRAGMA cache_size = -${Math.trunc(options.cacheMib) * 1024}`);
    addFunctions(database);
    return new NodeSqliteAdapter(database);
  };
  let isClosed = false;
  return {
    all: (sql, parameters) => (adapter ??= open()).prepare(sql).all(parameters) as Record<string, unknown>[],
    dataVersion: () => (isClosed ? Number.NaN : Number(((adapter ??= open()).prepare('PRAGMA data_version').all([])[0] as { data_version: number }).data_version)),
    close() {
      isClosed = true;
      adapter?.close();
      adapter = undefined;
    },
  };
}

export function createSqliteDialect(database: DatabaseSync): SqliteDialect {
  return new SqliteDialect({ database: new NodeSqliteAdapter(database) });
}

class NodeSqliteAdapter implements SqliteDatabase {
  readonly #database: DatabaseSync;
  /** Prepared statements by SQL text: Kysely compiles the same few queries over and over. */
  readonly #statements = new Map<string, SqliteStatement>();

  constructor(database: DatabaseSync) {
    this.#database = database;
  }

  prepare(sql: string): SqliteStatement {
    // A schema change (migrations) may change what `select *` returns: statements prepared before
    // it would name their columns from the old table.
    if (SCHEMA_CHANGE.test(sql)) this.#statements.clear();
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = adaptStatement(this.#database.prepare(sql));
      if (this.#statements.size >= STATEMENT_CACHE_SIZE) {
        this.#statements.delete(this.#statements.keys().next().value!);
      }
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  close(): void {
    this.#statements.clear();
    if (this.#database.isOpen) this.#database.close();
  }
}

function adaptStatement(statement: StatementSync): SqliteStatement {
  let columns = statement.columns().map((column) => column.name);
  const reader = columns.length > 0;
  let toRow = rowFactory(columns);
  statement.setReturnArrays(true);
  // Another process may change the schema under a prepared statement (SQLite re-prepares it): if
  // the row no longer fits the names read at prepare time, read them again.
  const rowOf = (values: readonly SqlValue[]) => {
    if (values.length !== columns.length) {
      columns = statement.columns().map((column) => column.name);
      toRow = rowFactory(columns);
    }
    return toRow(values);
  };
  return {
    reader,
    all: (parameters) => (statement.all(...(parameters as SqlValue[])) as unknown as SqlValue[][]).map(rowOf),
    run: (parameters) => statement.run(...(parameters as SqlValue[])),
    iterate: (parameters) => mapIterator(statement.iterate(...(parameters as SqlValue[])) as unknown as Iterable<SqlValue[]>, rowOf),
  };
}

type RowFactory = (values: readonly SqlValue[]) => Record<string, SqlValue>;

/**
 * Rows as plain objects. node:sqlite's own row objects have a null prototype and are made in V8's
 * dictionary mode, so every property read on them is a slow lookup. Each statement gets a factory
 * that returns an object literal of its columns (keys written as JSON string literals), so its rows
 * share one hidden class. The columns are those of our own SQL, never of input. Where code from
 * strings is disallowed (`--disallow-code-generation-from-strings`), rows are built key by key.
 */
function rowFactory(columns: readonly string[]): RowFactory {
  // In an object literal a quoted "__proto__" key sets the prototype instead of a property.
  if (columns.includes('__proto__')) throw new Error('sqlite: a column may not be named __proto__');
  if (columns.length === 0) return () => ({});
  const fields = columns.map((name, index) => `${JSON.stringify(name)}: values[${index}]`).join(', ');
  try {
    return new Function('values', `return { ${fields} };`) as RowFactory;
  } catch {
    return (values) => {
      const row: Record<string, SqlValue> = {};
      for (let c = 0; c < columns.length; c++) row[columns[c]!] = values[c]!;
      return row;
    };
  }
}

function* mapIterator<T, U>(items: Iterable<T>, map: (item: T) => U): IterableIterator<U> {
  for (const item of items) yield map(item);
}
