/**
 * Kysely's SqliteDialect over Node's built-in `node:sqlite`, so the embedded default needs no
 * native build step. Kysely expects better-sqlite3's statement shape; this adapts to it.
 */
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { SqliteDialect, type SqliteDatabase, type SqliteStatement } from 'kysely';

const STATEMENT_CACHE_SIZE = 256;
const BUSY_TIMEOUT_MS = 5_000;

type SqlValue = null | number | bigint | string | Uint8Array;

export function openSqlite(path: string): DatabaseSync {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const database = new DatabaseSync(path, { enableForeignKeyConstraints: true, timeout: BUSY_TIMEOUT_MS });
  // WAL lets readers proceed while a writer commits; NORMAL sync is durable across process
  // crashes (the WAL is fsynced at checkpoints), which is what a SIGKILL test checks.
  database.exec('PRAGMA journal_mode = WAL');
  database.exec('PRAGMA synchronous = NORMAL');
  database.exec('PRAGMA foreign_keys = ON');
  database.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
  // lower() as PostgreSQL has it: SQLite's own folds ASCII only, so a case-insensitive search for
  // "émile" would miss "Émile" here and find it there.
  database.function('lower', { deterministic: true }, (value) => (typeof value === 'string' ? value.toLowerCase() : value));
  return database;
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
  const reader = statement.columns().length > 0;
  return {
    reader,
    all: (parameters) => statement.all(...(parameters as SqlValue[])),
    run: (parameters) => statement.run(...(parameters as SqlValue[])),
    iterate: (parameters) => statement.iterate(...(parameters as SqlValue[])) as IterableIterator<unknown>,
  };
}
