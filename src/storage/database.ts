/**
 * Opens storage for the configured database and exposes the one Kysely instance every store uses
 * (migrations: migrations.ts).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Kysely, sql, type CompiledQuery, type DatabaseConnection, type Dialect, type PostgresPool, type PostgresPoolClient, type PostgresQueryResult } from 'kysely';
import type pg from 'pg';
import type { DatabaseConfig } from '../config.ts';
import { UnavailableError } from '../errors.ts';
import { onFirstUse } from '../lib/on-first-use.ts';
import type { Database } from './schema.ts';
import { createSqliteDialect, openSqlite, openSqliteReader } from './sqlite.ts';
import { MigratingPostgresDialect } from './migration-lock.ts';

export type Db = Kysely<Database>;

export interface Storage {
  readonly db: Db;
  readonly dialect: DatabaseConfig['kind'];
  /** Resolves when the database answers a trivial query; rejects otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
  /**
   * Sets (null: removes) the one observer told of every statement's duration, and of each that
   * failed (metrics). Called as each statement ends, on its path: it must be quick, never throw,
   * do no I/O. Without one a statement costs one check more.
   */
  observeQueries?(observer: QueryObserver | null): void;
}

/** One statement that ended: its kind (Kysely's node: `SelectQueryNode`, `RawNode`…), how long it took, and whether it failed. */
export type QueryObserver = (kind: string, durationMs: number, error: unknown) => void;

/**
 * `dialect` with every connection's `executeQuery` timed for the observer, when one is set (see
 * `observeQueries`). The connection is patched in place, as Kysely's own query log does, so the
 * driver keeps its objects; Kysely's `log` option would cost every query an extra async step
 * even with nobody listening.
 */
function observable(dialect: Dialect): { dialect: Dialect; observeQueries(observer: QueryObserver | null): void; observed<T>(kind: string, run: () => T): T } {
  let observer: QueryObserver | null = null;
  const report = (kind: string, startedAt: number, error: unknown) => {
    try {
      observer?.(kind, performance.now() - startedAt, error);
    } catch {
      // An observer's mistake never fails a query.
    }
  };
  const patched = new WeakSet<DatabaseConnection>();
  const patch = (connection: DatabaseConnection) => {
    if (patched.has(connection)) return connection;
    patched.add(connection);
    const execute: DatabaseConnection['executeQuery'] = connection.executeQuery.bind(connection);
    connection.executeQuery = <R>(query: CompiledQuery, options?: Parameters<DatabaseConnection['executeQuery']>[1]) => {
      if (observer === null) return execute<R>(query, options);
      const startedAt = performance.now();
      return execute<R>(query, options).then(
        (result) => {
          report(query.query.kind, startedAt, undefined);
          return result;
        },
        (error: unknown) => {
          report(query.query.kind, startedAt, error ?? new Error('query failed'));
          throw error;
        },
      );
    };
    return connection;
  };
  return {
    dialect: {
      createAdapter: () => dialect.createAdapter(),
      createQueryCompiler: () => dialect.createQueryCompiler(),
      createIntrospector: (db) => dialect.createIntrospector(db),
      createDriver() {
        const driver = dialect.createDriver();
        const acquire = driver.acquireConnection.bind(driver);
        driver.acquireConnection = async () => patch(await acquire());
        return driver;
      },
    },
    observeQueries(next) {
      observer = next;
    },
    /** `run` (a statement outside Kysely), timed for the observer when there is one. */
    observed(kind, run) {
      if (observer === null) return run();
      const startedAt = performance.now();
      try {
        const result = run();
        report(kind, startedAt, undefined);
        return result;
      } catch (error) {
        report(kind, startedAt, error ?? new Error('query failed'));
        throw error;
      }
    },
  };
}

/** A synchronous read for the root instance of a SQLite storage (see `hotReaderOf`). */
export type HotReader = (compiled: CompiledQuery) => Record<string, unknown>[];

const hotReaders = new WeakMap<Db, HotReader>();

/**
 * SQLite on a file: how `db` (the root instance, never a transaction) answers a SELECT on its
 * read-only connection (`openSqliteReader`), synchronously and without Kysely's connection mutex.
 * Undefined for PostgreSQL, an in-memory database, and every transaction: those go through Kysely.
 * For the hottest reads only (prepared.ts): a read there sees what is committed, as through Kysely.
 */
export function hotReaderOf(db: Db): HotReader | undefined {
  return hotReaders.get(db);
}

const changeCounters = new WeakMap<Db, () => number>();

/**
 * SQLite on a file: a number read synchronously that changes whenever anything was committed to
 * the database by any connection other than the hot reader (this process's writer, another
 * process, the CLI) since it was last read (`PRAGMA data_version` on the read-only connection).
 * A value kept from a read is still what storage holds while this number stays the same.
 * Undefined where `hotReaderOf` is.
 */
export function changeCounterOf(db: Db): (() => number) | undefined {
  return changeCounters.get(db);
}

/**
 * A reader of `counter` (a `changeCounterOf`) that answers whether it moved since its last call
 * (true the first time, and always once the counter reads NaN): what was kept since that call
 * may be used while it answers false.
 */
export function watchChanges(counter: () => number): () => boolean {
  let seen: number | undefined;
  return () => {
    const version = counter();
    if (version === seen) return false;
    seen = version;
    return true;
  };
}

const PG_INT8_OID = 20;

/**
 * The PostgreSQL driver, loaded by an instance that uses PostgreSQL (on SQLite it would be some
 * 10 MB of resident memory for nothing). It is CommonJS, so it loads synchronously. The session
 * change listener's own connection loads it from here too.
 */
export const loadPg = onFirstUse<typeof pg>(import.meta.url, 'pg');

export function openStorage(config: DatabaseConfig, options: { poolSize?: number } = {}): Storage {
  if (config.kind === 'sqlite') {
    const sqlite = observable(createSqliteDialect(openSqlite(config.path, { cacheMib: config.cacheMib })));
    const db = new Kysely<Database>({ dialect: sqlite.dialect });
    // A second connection to an in-memory database would be another, empty database.
    if (config.path === ':memory:') return wrap(db, 'sqlite', sqlite.observeQueries);
    const reader = openSqliteReader(config.path, { cacheMib: config.cacheMib });
    hotReaders.set(db, (compiled) => sqlite.observed(compiled.query.kind, () => reader.all(compiled.sql, compiled.parameters)));
    changeCounters.set(db, () => reader.dataVersion());
    return wrap(db, 'sqlite', sqlite.observeQueries, () => reader.close());
  }
  const pg = loadPg();
  const pool = new pg.Pool({
    connectionString: config.url,
    // Two at least: a migration run holds the lock on one connection and reads what is applied on another (`applyMigrations`).
    max: Math.max(2, options.poolSize ?? config.poolSize ?? 10),
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    // Epoch-millisecond BIGINTs fit a double exactly; read them as numbers like SQLite does.
    types: {
      getTypeParser: ((oid: number, format?: string) =>
        oid === PG_INT8_OID ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
    },
  });
  // An idle client losing its connection must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  // Nor may a checked-out one: the pool listens for errors only on idle clients, and pg emits
  // 'error' on a client whose connection drops even while a query or transaction is using it
  // (the query fails on its own). Unheard, that 'error' killed the process on every PostgreSQL
  // restart or network cut under load. The pool drops such a client when it is released.
  pool.on('connect', (client) => {
    client.on('error', () => {});
  });
  const bounded = config.queryTimeoutMs === undefined ? pool : boundQueries(pool, config.queryTimeoutMs);
  const postgres = observable(new MigratingPostgresDialect({ pool: bounded }));
  return wrap(new Kysely<Database>({ dialect: postgres.dialect }), 'postgres', postgres.observeQueries);
}

/** Queries run inside it have no time bound: migrations, which may rightly take long. */
const unboundedQueries = new AsyncLocalStorage<true>();

/** Runs `fn` with no time bound on its queries (storage/migrations.ts: an index build may rightly take minutes). */
export function withoutQueryTimeout<T>(fn: () => Promise<T>): Promise<T> {
  return unboundedQueries.run(true, fn);
}

/** pg's error for a query whose `query_timeout` passed without an answer. */
const READ_TIMEOUT_MESSAGE = 'Query read timeout';
/** pg-pool's errors for a connection not had in time (none free, or the server silent at connect). */
const CONNECT_TIMEOUT = /timeout exceeded when trying to connect|Connection terminated due to connection timeout/;

/** How soon, while the database counts as hung, the background probe tries it again. */
const HUNG_PROBE_INTERVAL_MS = 250;

/**
 * The pool as Kysely sees it, bounded against a PostgreSQL that accepts connections but never
 * answers (a partition, a frozen host), which would otherwise hold every request that touches it:
 * - Every query gets `timeoutMs` (pg's `query_timeout`). Past it, it fails as UnavailableError (503,
 *   never 500), and its connection is dropped on release, never handed out again: pg leaves the
 *   unanswered query on it, so the next query would wait behind it, and an answer arriving later
 *   could end a transaction that is no longer ours.
 * - Once a query or a connection attempt has waited `timeoutMs` and the database has answered
 *   nothing at all meanwhile (no other query either: not one slow query, a silent server), it
 *   counts as hung: every checkout and every further query fails at once as UnavailableError, and
 *   a probe of its own (`select 1`, same bounds) tries the database in the background until it
 *   answers. Requests never probe: a request whose query found the hang (a sign-in's rate-limit
 *   counter, which then falls back to memory and goes on) must not wait a second timeout on its
 *   next query. So no request waits on a silent database for more than one timeout.
 */
function boundQueries(pool: pg.Pool, timeoutMs: number): PostgresPool {
  const { DatabaseError } = loadPg();
  let lastAnswerAt = performance.now();
  let isHung = false;
  let isProbing = false;
  let isEnded = false;
  const heard = () => {
    lastAnswerAt = performance.now();
    isHung = false;
  };
  /** Something started at `startedAt` ran out of time: the database is hung if it has said nothing since. */
  const timedOut = (startedAt: number) => {
    if (isHung || lastAnswerAt >= startedAt) return;
    isHung = true;
    // One probe loop at most: one still waiting from a hang that ended meanwhile goes on with this one.
    if (isProbing) return;
    isProbing = true;
    void probeUntilAnswered();
  };
  const probeUntilAnswered = async () => {
    try {
      while (isHung && !isEnded) {
        const startedAt = performance.now();
        await probe();
        if (isHung && !isEnded) await sleep(Math.max(0, HUNG_PROBE_INTERVAL_MS - (performance.now() - startedAt)), undefined, { ref: false });
      }
    } finally {
      // In the same step as the last look at isHung: a hang found after it starts a new loop.
      isProbing = false;
    }
  };
  /** One `select 1`, bounded like any query; an answer (an error from the server too) ends the hang. Never rejects. */
  const probe = async () => {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch {
      return;
    }
    let isAnswered = false;
    try {
      const config: pg.QueryConfig & { query_timeout: number } = { text: 'select 1', query_timeout: timeoutMs };
      await client.query(config);
      isAnswered = true;
      heard();
    } catch (error) {
      if (error instanceof DatabaseError) heard();
    } finally {
      // A connection whose probe went unanswered still has it pending: never reused.
      client.release(!isAnswered);
    }
  };
  const notAnswering = () => new UnavailableError('PostgreSQL is not answering');
  // A new connection that completed its start-up is an answer too.
  pool.on('connect', heard);

  return {
    options: pool.options,
    end: () => {
      isEnded = true;
      return pool.end();
    },
    async connect(): Promise<PostgresPoolClient> {
      if (unboundedQueries.getStore() === true) return pool.connect();
      if (isHung) throw notAnswering();
      const connectStartedAt = performance.now();
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        if (error instanceof Error && CONNECT_TIMEOUT.test(error.message)) timedOut(connectStartedAt);
        throw error;
      }
      /** Not to be handed out again: a query is still unanswered on it, or a transaction may be open. */
      let mustDrop = false;
      const unanswered = (cause?: unknown) => new UnavailableError(`PostgreSQL did not answer within ${timeoutMs} ms`, { cause });
      const query = async (text: string, values: readonly unknown[]) => {
        // After a timeout (a transaction's ROLLBACK, say) this connection would only wait again.
        if (mustDrop) throw unanswered();
        // Hung since this checkout began: the next query would only wait out its timeout too.
        if (isHung) {
          mustDrop = true;
          throw notAnswering();
        }
        const startedAt = performance.now();
        try {
          // Per-query `query_timeout`: documented by pg, missing from its types.
          const config: pg.QueryConfig & { query_timeout: number } = { text, values: values as unknown[], query_timeout: timeoutMs };
          const result = await client.query(config);
          heard();
          return result as PostgresQueryResult<unknown>;
        } catch (error) {
          if (error instanceof DatabaseError) heard();
          if (!(error instanceof Error) || error.message !== READ_TIMEOUT_MESSAGE) throw error;
          mustDrop = true;
          timedOut(startedAt);
          throw unanswered(error);
        }
      };
      return {
        query: query as PostgresPoolClient['query'],
        release(destroy?: boolean) {
          client.release(destroy === true || mustDrop);
        },
      };
    },
  };
}

function wrap(db: Db, dialect: DatabaseConfig['kind'], observeQueries: Storage['observeQueries'], closeMore?: () => void): Storage {
  return {
    db,
    dialect,
    observeQueries,
    async ping() {
      await sql`select 1`.execute(db);
    },
    async close() {
      hotReaders.delete(db);
      changeCounters.delete(db);
      closeMore?.();
      await db.destroy();
    },
  };
}
