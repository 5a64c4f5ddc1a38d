/** Builds the real application on a test database, with the real config loader. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { type Config, type Env } from '../../src/config.ts';
import { openStorage } from '../../src/storage/database.ts';
import { migrateToLatest, loadConfig, MODULES } from '../../src/modules.ts';
import { createServices, type Services } from '../../src/services.ts';
import { buildApp } from '../../src/app.ts';
import type { Clock } from '../../src/lib/clock.ts';
import type { GatehouseModule } from '../../src/module.ts';
import { after, before } from 'node:test';
import { createSqliteDatabase, TEST_POOL_SIZE, type Backend, type TestDatabase } from './databases.ts';
import { freePort } from './process.ts';

export const TEST_SECRET = 'test-secret-that-is-long-enough-0123456789abcdef';

export interface TestApp {
  app: FastifyInstance;
  services: Services;
  config: Config;
  close(): Promise<void>;
}

/** Environment for a test: NODE_ENV=test, a fixed secret, a private DATA_DIR. */
/**
 * Limits far above what any test sends from its one loopback address, so that tests about other
 * things are not throttled; the rate-limit tests set the limits they exercise.
 */
export const GENEROUS_LIMITS: Env = {
  RATE_LIMIT_SIGNIN_PER_IP: '1000000/1m',
  RATE_LIMIT_SIGNIN_FAILURES_PER_IP: '1000000/1m',
  RATE_LIMIT_SIGNUP_PER_IP: '1000000/1m',
  RATE_LIMIT_MAIL_PER_ADDRESS: '1000000/1m',
  RATE_LIMIT_MAIL_PER_IP: '1000000/1m',
  RATE_LIMIT_TOKEN_PER_IP: '1000000/1m',
  RATE_LIMIT_REFRESH_PER_IP: '1000000/1m',
  RATE_LIMIT_OAUTH_PER_IP: '1000000/1m',
  RATE_LIMIT_PASSWORD_REFUSALS_PER_ACCOUNT: '1000000/1m',
  RATE_LIMIT_PASSWORD_REFUSALS_PER_IP: '1000000/1m',
  SIGNIN_DELAY_AFTER_FAILURES: '100',
};

export function testEnv(database: TestDatabase, overrides: Env = {}): Env {
  return {
    NODE_ENV: 'test',
    AUTH_SECRET: TEST_SECRET,
    DATABASE_URL: database.url,
    ...(database.config.kind === 'postgres' && { DATABASE_POOL_SIZE: String(TEST_POOL_SIZE) }),
    ...GENEROUS_LIMITS,
    ...overrides,
  };
}

export async function createTestApp(database: TestDatabase, options: { env?: Env; clock?: Clock; modules?: readonly GatehouseModule[] } = {}): Promise<TestApp> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-data-'));
  const config = loadConfig({ DATA_DIR: dataDir, ...testEnv(database, options.env) }, {}, options.modules);
  const storage = openStorage(config.database);
  await migrateToLatest(storage.db, options.modules);
  const services = await createServices({ config, storage, ...(options.clock && { clock: options.clock }), ...(options.modules && { modules: options.modules }) });
  const app = await buildApp(services);
  return {
    app,
    services,
    config,
    async close() {
      await app.close();
      await storage.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Creates a password user through the real service; fails the test on any refusal. */
export async function createUser(
  services: Services,
  input: { email: string; password: string; name?: string; roles?: string[] },
) {
  const result = await services.credentials.createPasswordUser({ name: 'Test User', emailVerified: true, ...input });
  if (!result.ok) throw new Error(`could not create test user: ${result.reason}`);
  return result.user;
}

/**
 * Every module, with the background jobs of only those named in `keep`: for a test that counts the
 * storage's statements, where a job's run (impersonation's expiry, ten seconds after start) would
 * land in a counted window on a loaded machine.
 */
export function modulesWithoutJobs(...keep: string[]): readonly GatehouseModule[] {
  return MODULES.map((module) => (keep.includes(module.name) ? module : { ...module, jobs: undefined }));
}

/** The kinds of the statements (`SelectQueryNode`, …) `app`'s storage sent while `run` ran. */
export async function statementsOf(app: Pick<TestApp, 'services'>, run: () => Promise<unknown>): Promise<string[]> {
  const kinds: string[] = [];
  app.services.storage.observeQueries?.((kind) => kinds.push(kind));
  try {
    await run();
  } finally {
    app.services.storage.observeQueries?.(null);
  }
  return kinds;
}

/**
 * Inside a `describe`: a database of its own on `backend` and the app built on it, made before the
 * tests and dropped after. The result stands for that app (and its `database`) once `before` ran.
 */
export function useTestApp(backend: Backend, options: { env?: Env; clock?: Clock; modules?: readonly GatehouseModule[] } = {}): TestApp & { readonly database: TestDatabase } {
  let database: TestDatabase | undefined;
  let built: TestApp | undefined;
  before(async () => {
    database = await backend.create();
    built = await createTestApp(database, options);
  });
  after(async () => {
    await built?.close();
    await database?.drop();
  });
  const ready = () => {
    if (built === undefined || database === undefined) throw new Error('useTestApp: the app is built in `before`; use it inside a test');
    return { built, database };
  };
  return {
    get app() {
      return ready().built.app;
    },
    get services() {
      return ready().built.services;
    },
    get config() {
      return ready().built.config;
    },
    get database() {
      return ready().database;
    },
    close: () => ready().built.close(),
  };
}

/** Creates a password user and signs them in with `POST /api/auth`; their id and access token. */
export async function createSignedInUser(t: TestApp, input: { email: string; password: string; roles?: string[] }): Promise<{ id: string; email: string; token: string }> {
  const user = await createUser(t.services, input);
  const response = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: input.email, password: input.password } });
  if (response.statusCode !== 200) throw new Error(`could not sign in the test user: ${response.statusCode} ${response.body}`);
  return { id: user.id, email: input.email, token: response.json().token as string };
}

/** A test app listening on a free loopback port, on a SQLite database of its own: what a browser test drives. */
export interface ServedTestApp extends TestApp {
  readonly baseURL: string;
  readonly database: TestDatabase;
}

/** Starts one (AUTH_URL is its own address); `close()` stops it and drops its database. */
export async function serveTestApp(env: Env = {}): Promise<ServedTestApp> {
  const database = await createSqliteDatabase();
  const port = await freePort();
  const baseURL = `http://127.0.0.1:${port}`;
  const served = await createTestApp(database, { env: { AUTH_URL: baseURL, ...env } });
  await served.app.listen({ port, host: '127.0.0.1' });
  return {
    ...served,
    baseURL,
    database,
    async close() {
      await served.close();
      await database.drop();
    },
  };
}
