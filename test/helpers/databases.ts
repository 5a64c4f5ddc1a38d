/**
 * The storage backends every storage-touching test runs on: SQLite always; PostgreSQL when `CI`
 * is set (then it must be reachable), when TEST_DATABASE_URL is given, or when the default local
 * server answers. Each test suite gets a database of its own, dropped afterwards.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { DatabaseConfig } from '../../src/config.ts';

const DEFAULT_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test';
/** Connections per PostgreSQL pool a test opens (DATABASE_POOL_SIZE; the service's default is 10). */
export const TEST_POOL_SIZE = 4;

export interface TestDatabase {
  readonly config: DatabaseConfig;
  /** The value for DATABASE_URL. */
  readonly url: string;
  drop(): Promise<void>;
}

export interface Backend {
  readonly name: 'sqlite' | 'postgres';
  /** Set when this backend cannot run here; the reason is printed as the skip message. */
  readonly skip: string | false;
  create(): Promise<TestDatabase>;
}

let cached: Promise<Backend[]> | undefined;

export function backends(): Promise<Backend[]> {
  cached ??= detectBackends();
  return cached;
}

async function detectBackends(): Promise<Backend[]> {
  const url = process.env.TEST_DATABASE_URL ?? DEFAULT_POSTGRES_URL;
  const required = process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false';
  const reachable = await probe(url);
  if (reachable !== true && (required || process.env.TEST_DATABASE_URL !== undefined)) {
    throw new Error(`PostgreSQL at ${redact(url)} is required (CI or TEST_DATABASE_URL is set) but unreachable: ${reachable}`);
  }
  return [
    { name: 'sqlite', skip: false, create: createSqliteDatabase },
    {
      name: 'postgres',
      skip: reachable === true ? false : `PostgreSQL not reachable at ${redact(url)} (${reachable}); set CI or TEST_DATABASE_URL to require it`,
      create: () => createPostgresDatabase(url),
    },
  ];
}

async function probe(url: string): Promise<true | string> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch (error) {
    return (error as Error).message || String(error);
  } finally {
    await client.end().catch(() => {});
  }
}

export function createSqliteDatabase(): Promise<TestDatabase> {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-test-'));
  const path = join(dir, 'gatehouse.db');
  return Promise.resolve({
    config: { kind: 'sqlite', path },
    url: `sqlite:${path}`,
    async drop() {
      rmSync(dir, { recursive: true, force: true });
    },
  });
}

async function createPostgresDatabase(adminUrl: string): Promise<TestDatabase> {
  const name = `gatehouse_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    // Four test files run at once, some with two instances and a child server each, against one
    // PostgreSQL (max_connections 100): ten connections per pool ran it out ('too many clients').
    config: { kind: 'postgres', url: url.toString(), poolSize: TEST_POOL_SIZE },
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await client.end();
      }
    },
  };
}

function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparseable URL)';
  }
}
