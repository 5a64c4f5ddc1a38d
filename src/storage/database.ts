/**
 * Opens storage for the configured database, applies migrations, and exposes the one Kysely
 * instance every store uses.
 */
import { Kysely, PostgresDialect, sql } from 'kysely';
import { Migrator, type Migration, type MigrationResultSet } from 'kysely/migration';
import pg from 'pg';
import type { DatabaseConfig } from '../config.ts';
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
    const db = new Kysely<Database>({ dialect: createSqliteDialect(openSqlite(config.path)) });
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
  return wrap(new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), 'postgres');
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
  const result = await migrator.migrateToLatest();
  if (result.error !== undefined) {
    const failed = result.results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new Error(`Migration ${failed} failed`, { cause: result.error });
  }
  return result;
}
