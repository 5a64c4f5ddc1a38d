/**
 * Opens storage for the configured database, applies migrations, and exposes the one Kysely
 * instance every store uses.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { Kysely, PostgresDialect, sql, type PostgresPool, type PostgresPoolClient, type PostgresQueryResult } from 'kysely';
import { Migrator, type Migration, type MigrationResultSet } from 'kysely/migration';
import pg from 'pg';
import type { DatabaseConfig } from '../config.ts';
import { UnavailableError } from '../errors.ts';
import type { Database } from './schema.ts';
import { createSqliteDialect, openSqlite } from './sqlite.ts';
import * as initial from './migrations/0001-initial.ts';
import * as auditEvents from './migrations/0002-audit-events.ts';
import * as usersCreatedAt from './migrations/0003-users-created-at.ts';
import * as mailOutbox from './migrations/0004-mail-outbox.ts';
import * as actionTokens from './migrations/0005-action-tokens.ts';
import * as oauthAccounts from './migrations/0006-oauth-accounts.ts';
import * as rateLimits from './migrations/0007-rate-limits.ts';
import * as sessionHousekeeping from './migrations/0008-session-housekeeping.ts';

export type Db = Kysely<Database>;

export interface Storage {
  readonly db: Db;
  readonly dialect: DatabaseConfig['kind'];
  /** Resolves when the database answers a trivial query; rejects otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Every migration, in order. Names sort lexically; never rename or edit one that has shipped. */
const MIGRATIONS: Record<string, Migration> = {
  '0001-initial': initial,
  '0002-audit-events': auditEvents,
  '0003-users-created-at': usersCreatedAt,
  '0004-mail-outbox': mailOutbox,
  '0005-action-tokens': actionTokens,
  '0006-oauth-accounts': oauthAccounts,
  '0007-rate-limits': rateLimits,
  '0008-session-housekeeping': sessionHousekeeping,
};

const PG_INT8_OID = 20;

export function openStorage(config: DatabaseConfig, options: { poolSize?: number } = {}): Storage {
  if (config.kind === 'sqlite') {
    const db = new Kysely<Database>({ dialect: createSqliteDialect(openSqlite(config.path, { cacheMib: config.cacheMib })) });
    return wrap(db, 'sqlite');
  }
  const pool = new pg.Pool({
    connectionString: config.url,
    max: options.poolSize ?? 10,
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
  return wrap(new Kysely<Database>({ dialect: new PostgresDialect({ pool: bounded }) }), 'postgres');
}

/** Queries run inside it have no time bound: migrations, which may rightly take long. */
const unboundedQueries = new AsyncLocalStorage<true>();

/** pg's error for a query whose `query_timeout` passed without an answer. */
const READ_TIMEOUT_MESSAGE = 'Query read timeout';
/** pg-pool's errors for a connection not had in time (none free, or the server silent at connect). */
const CONNECT_TIMEOUT = /timeout exceeded when trying to connect|Connection terminated due to connection timeout/;

/**
 * The pool as Kysely sees it, bounded against a PostgreSQL that accepts connections but never
 * answers (a partition, a frozen host), which would otherwise hold every request that touches it:
 * - Every query gets `timeoutMs` (pg's `query_timeout`). Past it, it fails as UnavailableError (503,
 *   never 500), and its connection is dropped on release, never handed out again: pg leaves the
 *   unanswered query on it, so the next query would wait behind it, and an answer arriving later
 *   could end a transaction that is no longer ours.
 * - Once a query or a connection attempt has waited `timeoutMs` and the database has answered
 *   nothing at all meanwhile (no other query either: not one slow query, a silent server), it
 *   counts as hung: one checkout at a time goes ahead to find out, every other fails at once as
 *   UnavailableError, until the first answer. Without that, a request that makes several queries
 *   waited one timeout for each (a sign-in counts its rate limits in storage, and each counter
 *   falls back to memory only after its own timeout: 30 s and more).
 */
function boundQueries(pool: pg.Pool, timeoutMs: number): PostgresPool {
  let lastAnswerAt = performance.now();
  let isHung = false;
  let isProbing = false;
  const heard = () => {
    lastAnswerAt = performance.now();
    isHung = false;
  };
  /** Something started at `startedAt` ran out of time: the database is hung if it has said nothing since. */
  const timedOut = (startedAt: number) => {
    if (lastAnswerAt < startedAt) isHung = true;
  };
  // A new connection that completed its start-up is an answer too.
  pool.on('connect', heard);

  return {
    options: pool.options,
    end: () => pool.end(),
    async connect(): Promise<PostgresPoolClient> {
      if (unboundedQueries.getStore() === true) return pool.connect();
      if (isHung && isProbing) throw new UnavailableError('PostgreSQL is not answering');
      const isProbe = isHung;
      if (isProbe) isProbing = true;
      const endProbe = () => {
        if (isProbe) isProbing = false;
      };
      const connectStartedAt = performance.now();
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        endProbe();
        if (error instanceof Error && CONNECT_TIMEOUT.test(error.message)) timedOut(connectStartedAt);
        throw error;
      }
      let hasTimedOut = false;
      const unanswered = (cause?: unknown) => new UnavailableError(`PostgreSQL did not answer within ${timeoutMs} ms`, { cause });
      const query = async (text: string, values: readonly unknown[]) => {
        // After a timeout (a transaction's ROLLBACK, say) this connection would only wait again.
        if (hasTimedOut) throw unanswered();
        const startedAt = performance.now();
        try {
          // Per-query `query_timeout`: documented by pg, missing from its types.
          const config: pg.QueryConfig & { query_timeout: number } = { text, values: values as unknown[], query_timeout: timeoutMs };
          const result = await client.query(config);
          heard();
          return result as PostgresQueryResult<unknown>;
        } catch (error) {
          if (error instanceof pg.DatabaseError) heard();
          if (!(error instanceof Error) || error.message !== READ_TIMEOUT_MESSAGE) throw error;
          hasTimedOut = true;
          timedOut(startedAt);
          throw unanswered(error);
        }
      };
      return {
        query: query as PostgresPoolClient['query'],
        release(destroy?: boolean) {
          endProbe();
          client.release(destroy === true || hasTimedOut);
        },
      };
    },
  };
}

function wrap(db: Db, dialect: DatabaseConfig['kind']): Storage {
  return {
    db,
    dialect,
    async ping() {
      await sql`select 1`.execute(db);
    },
    async close() {
      await db.destroy();
    },
  };
}

/** Applies every pending migration; throws with the failing migration's name on error. */
export async function migrateToLatest(db: Db): Promise<MigrationResultSet> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => MIGRATIONS },
  });
  // Unbounded: a migration building an index on a large table may rightly take minutes.
  const result = await unboundedQueries.run(true, () => migrator.migrateToLatest());
  if (result.error !== undefined) {
    const failed = result.results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`Migration ${failed} failed`, { cause: result.error });
  }
  return result;
}
