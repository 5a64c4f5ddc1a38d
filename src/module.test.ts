/**
 * The module contract: a capability added as one more module in the list brings its service,
 * routes, background job and sign-in step, with no other file touched; the wiring refuses a
 * module that asks for a service before it is provided; building starts nothing.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { createSqliteDatabase } from '../test/helpers/databases.ts';
import { createUser, testEnv } from '../test/helpers/app.ts';
import { openStorage } from './storage/database.ts';
import { migrateToLatest, loadConfig } from './modules.ts';
import { createServices } from './services.ts';
import { buildApp } from './app.ts';
import { MODULES } from './modules.ts';
import { collectAuditEventTypes, collectErrorCatalogue, collectMigrations, defineModule, type GatehouseModule, type ServiceRegistry } from './module.ts';
import { AppError, defineErrorCodes, type ErrorCode } from './errors.ts';
import { ConfigError, type Config } from './config.ts';
import type { AuditEventType } from './audit/audit.service.ts';
import { decodeJwt } from 'jose';
import { sql } from 'kysely';
import { access } from './authorization/access.ts';
import { defineTokenClaims } from './sessions/session-claims.ts';

declare module './storage/schema.ts' {
  interface Database {
    /** The example module's own table (its migration below). */
    example_notes: { id: string; user_id: string | null };
  }
}

const PASSWORD = 'correct horse battery staple';

async function withStorage<T>(fn: (deps: Awaited<ReturnType<typeof prepare>>) => Promise<T>): Promise<T> {
  const deps = await prepare();
  try {
    return await fn(deps);
  } finally {
    await deps.storage.close();
    await deps.database.drop();
    rmSync(deps.dataDir, { recursive: true, force: true });
  }
}

async function prepare() {
  const database = await createSqliteDatabase();
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-module-'));
  const config = loadConfig({ DATA_DIR: dataDir, ...testEnv(database) });
  const storage = openStorage(config.database);
  await migrateToLatest(storage.db);
  return { database, dataDir, config, storage };
}

/** A capability of its own: a service, a JSON route, a job, and a sign-in step that refuses one address. */
function exampleModule(events: string[]): GatehouseModule {
  return defineModule({
    name: 'example',
    provide: ({ services }) => {
      const { users } = services;
      return { example: { countUsers: () => users.countUsers() } } as Partial<ServiceRegistry>;
    },
    jobs: () => [{ start: () => void events.push('job started'), stop: () => void events.push('job stopped') }],
    routes: [
      {
        scope: 'api',
        register: (app, { services }) =>
          app.register(async (scope) => {
            const example = (services as unknown as { example: { countUsers(): Promise<number> } }).example;
            scope.get('/api/example', { config: { access: access.user() } }, async () => ({ users: await example.countUsers() }));
          }),
      },
    ],
    signInSteps: () => [
      {
        name: 'example-step',
        decide: async ({ user }) => {
          events.push(`step saw ${user.email}`);
          return user.email.startsWith('blocked') ? { action: 'refuse', reason: 'EXAMPLE_REFUSAL' } : { action: 'continue' };
        },
      },
    ],
  });
}

/** What a module declares beside its services: config, a migration, an error code, an audit event type, a token claim. */
const EXAMPLE_ERRORS = defineErrorCodes('declaring', { EXAMPLE_REFUSED: { status: 409, message: 'The example refuses.' } });
const declaringModule = defineModule({
  name: 'declaring',
  config: (read) => ({ example: { limit: read.integer('EXAMPLE_LIMIT', 5, { min: 1, max: 10 }) } }) as Partial<Config>,
  migrations: {
    '20261124-declaring-notes': {
      up: async (db) => void (await db.schema.createTable('example_notes').addColumn('id', 'text', (column) => column.primaryKey()).addColumn('user_id', 'text').execute()),
      down: async (db) => void (await db.schema.dropTable('example_notes').execute()),
    },
  },
  errors: EXAMPLE_ERRORS,
  auditEvents: ['example.noted' as AuditEventType],
  // Read with the session, from the module's own table: the note of the session's user.
  tokenClaims: () =>
    defineTokenClaims({
      select: (session) => session.selectFrom('example_notes').select('example_notes.id').whereRef('example_notes.user_id', '=', 'sessions.user_id'),
      claims: (row) => (row === null ? {} : { example_claim: row.id }),
    }),
  pageSections: () => [
    { page: 'dashboard', group: 'security', render: async ({ userId, page }) => `<section id="example-dashboard">for ${userId}, csrf ${page.csrfToken.length > 0}</section>` },
    // No group: the dashboard's first, profile.
    { page: 'dashboard', render: async () => '<section id="example-profile">profile</section>' },
    // Nothing to show for this user: no trace on the page.
    { page: 'dashboard', render: async () => null },
    { page: 'admin-user', render: async ({ userId, page }) => `<section id="example-admin">about ${userId}, seen by ${page.viewer?.userId}</section>` },
    { page: 'signin', render: async ({ callbackUrl }) => `<section id="example-signin">then ${callbackUrl}</section>`, scripts: ['/assets/example.js'] },
  ],
  routes: [
    {
      scope: 'api',
      register: (app, { config }) =>
        app.register(async (scope) => {
          scope.get('/api/example/refuse', { config: { access: access.user() } }, async () => {
            throw new AppError('EXAMPLE_REFUSED' as ErrorCode, { message: `limit ${(config as unknown as { example: { limit: number } }).example.limit}` });
          });
        }),
    },
  ],
});

describe('module contract', () => {
  it('a module brings its config section, migration, error code, audit event type, page sections and token claim', async () => {
    await withStorage(async ({ config, storage, database, dataDir }) => {
      const modules = [...MODULES, declaringModule];
      // Its config is read with the rest: one error lists its problem beside the core's.
      assert.throws(
        () => loadConfig({ DATA_DIR: dataDir, ...testEnv(database, { EXAMPLE_LIMIT: '99', PORT: 'eighty' }) }, {}, modules),
        (error: unknown) => error instanceof ConfigError && error.problems.some((p) => p.startsWith('EXAMPLE_LIMIT')) && error.problems.some((p) => p.startsWith('PORT')),
      );
      const withExample = loadConfig({ DATA_DIR: dataDir, ...testEnv(database, { EXAMPLE_LIMIT: '7' }) }, {}, modules);
      assert.deepEqual((withExample as unknown as { example: unknown }).example, { limit: 7 });
      assert.ok(Object.isFrozen((withExample as unknown as { example: object }).example), 'frozen with the rest');

      // Its migration runs with everyone's, once.
      const applied = await migrateToLatest(storage.db, modules);
      assert.deepEqual(applied.results?.map((r) => r.migrationName), ['20261124-declaring-notes']);
      await sql`insert into example_notes (id) values ('one')`.execute(storage.db);
      assert.deepEqual((await migrateToLatest(storage.db, modules)).results, []);

      const services = await createServices({ config: withExample, storage, modules });
      const app = await buildApp(services);
      try {
        const admin = await createUser(services, { email: 'declaring-admin@example.com', password: PASSWORD, roles: ['ADMIN'] });
        await sql`insert into example_notes (id, user_id) values (${`for ${admin.id}`}, ${admin.id})`.execute(storage.db);
        const signedIn = await app.inject({ method: 'POST', url: '/api/auth', payload: { email: 'declaring-admin@example.com', password: PASSWORD } });
        assert.equal(signedIn.statusCode, 200, signedIn.body);
        const { token, refreshToken } = signedIn.json();
        const authorization = `Bearer ${token}`;

        // Its error code answers with its status and message.
        const refused = await app.inject({ method: 'GET', url: '/api/example/refuse', headers: { authorization } });
        assert.equal(refused.statusCode, 409);
        assert.deepEqual(refused.json(), { error: 'EXAMPLE_REFUSED', message: 'limit 7' });

        // Its audit event type is known to the log and its filters.
        await services.audit.record({ type: 'example.noted' as AuditEventType, userId: admin.id });
        const events = await app.inject({ method: 'GET', url: '/api/admin/events?type=example.noted', headers: { authorization } });
        assert.equal(events.statusCode, 200, events.body);
        assert.deepEqual(events.json().events.map((e: { type: string }) => e.type), ['example.noted']);
        const unknown = await app.inject({ method: 'GET', url: '/api/admin/events?type=example.unheard', headers: { authorization } });
        assert.equal(unknown.statusCode, 422);

        // Its sections are on the dashboard and on the admin's page of a user.
        const browserSignIn = await app.inject({ method: 'POST', url: '/api/auth/signin', payload: { email: 'declaring-admin@example.com', password: PASSWORD } });
        const cookie = browserSignIn.cookies.map((c) => `${c.name}=${c.value}`).join('; ');
        const dashboard = await app.inject({ method: 'GET', url: '/dashboard', headers: { cookie } });
        assert.equal(dashboard.statusCode, 200);
        // Each in its group (the navigation's), after the page's own parts of it.
        assert.match(dashboard.body, new RegExp(`<section id="example-dashboard">for ${admin.id}, csrf true</section>\\s*</div>\\s*<div class="dashboard-group" id="dashboard-sessions">`));
        assert.match(dashboard.body, /<section id="example-profile">profile<\/section>\s*<\/div>\s*<div class="dashboard-group" id="dashboard-security">/);
        const other = await createUser(services, { email: 'declaring-other@example.com', password: PASSWORD });
        const adminPage = await app.inject({ method: 'GET', url: `/admin/users/${other.id}`, headers: { cookie } });
        assert.equal(adminPage.statusCode, 200);
        assert.ok(adminPage.body.includes(`<section id="example-admin">about ${other.id}, seen by ${admin.id}</section>`), adminPage.body);
        assert.ok(!adminPage.body.includes('example-dashboard'), 'each section on its own page');
        // (The dashboard has one: the passkeys module's section loads its script.)
        assert.match(adminPage.headers['content-security-policy'] as string, /script-src 'none'/, 'no script where no section needs one');

        // A section with a script: the page loads it under a nonce of its own, and may call our API.
        const signInPage = await app.inject({ method: 'GET', url: '/auth/signin?callbackUrl=/somewhere' });
        assert.ok(signInPage.body.includes('<section id="example-signin">then /somewhere</section>'));
        const nonce = /<script src="\/assets\/example\.js" nonce="([^"]+)" defer><\/script>/.exec(signInPage.body)?.[1];
        assert.ok(nonce !== undefined && nonce.length >= 22, signInPage.body);
        const csp = signInPage.headers['content-security-policy'] as string;
        assert.ok(csp.includes(`script-src 'nonce-${nonce}'`) && csp.includes("connect-src 'self'"), csp);
        const again = await app.inject({ method: 'GET', url: '/auth/signin' });
        assert.ok(!again.body.includes(`nonce="${nonce}"`), 'a new nonce for every response');

        // Its claim is in every access token: at sign-in and after a refresh.
        assert.equal(decodeJwt(token).example_claim, `for ${admin.id}`);
        const refreshed = await app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken } });
        assert.equal(refreshed.statusCode, 200, refreshed.body);
        assert.equal(decodeJwt(refreshed.json().token).example_claim, `for ${admin.id}`);
        // The session endpoint shows it (this is the database strategy: read now), and a token reissued for the session carries it.
        const session = await app.inject({ method: 'GET', url: '/api/auth/session', headers: { authorization } });
        assert.deepEqual(session.json().claims, { example_claim: `for ${admin.id}` });
        const reissued = await services.sessions.reissueAccessToken({ userId: admin.id, sessionId: String(decodeJwt(token).sid) });
        assert.ok(reissued !== null);
        assert.equal(decodeJwt(reissued.accessToken).example_claim, `for ${admin.id}`);
        assert.equal(decodeJwt(reissued.accessToken).sid, decodeJwt(token).sid, 'the same session');
      } finally {
        await app.close();
      }
    });
  });

  it('refuses a module claim that would overwrite one every token carries', async () => {
    await withStorage(async ({ config, storage }) => {
      const overreaching = defineModule({
        name: 'overreaching',
        tokenClaims: () => defineTokenClaims({ select: (session) => session.selectFrom('users').select('users.id').whereRef('users.id', '=', 'sessions.user_id'), claims: () => ({ roles: ['ADMIN'] }) }),
      });
      const services = await createServices({ config, storage, modules: [...MODULES, overreaching] });
      const app = await buildApp(services);
      try {
        await createUser(services, { email: 'plain@example.com', password: PASSWORD });
        const signIn = await app.inject({ method: 'POST', url: '/api/auth', payload: { email: 'plain@example.com', password: PASSWORD } });
        assert.equal(signIn.statusCode, 500, 'a wiring mistake, never a token with the module\'s roles');
        assert.equal(signIn.json().error, 'INTERNAL_ERROR');
      } finally {
        await app.close();
      }
    });
  });

  it('refuses two modules that declare the same migration, error code or audit event type', () => {
    const twin = (declares: Partial<GatehouseModule>) => [declaringModule, defineModule({ name: 'twin', ...declares })];
    assert.throws(() => collectMigrations(twin({ migrations: declaringModule.migrations })), /migration "20261124-declaring-notes" is declared by both "declaring" and "twin"/);
    assert.throws(() => collectErrorCatalogue(twin({ errors: { EXAMPLE_REFUSED: { status: 400, message: 'x' } } })), /error code "EXAMPLE_REFUSED" is declared by both "declaring" and "twin"/);
    assert.throws(() => collectErrorCatalogue(twin({ errors: { NOT_FOUND: { status: 404, message: 'x' } } })), /error code "NOT_FOUND" is declared by both "http" and "twin"/);
    assert.throws(() => collectAuditEventTypes(twin({ auditEvents: ['example.noted' as AuditEventType] })), /audit event type "example.noted" is declared by both "declaring" and "twin"/);
    assert.throws(() => defineErrorCodes('another', { EXAMPLE_REFUSED: { status: 400, message: 'x' } }), /declared by both "declaring" and "another"/);
  });

  it('a module added to the list brings its service, route, job and sign-in step', async () => {
    await withStorage(async ({ config, storage }) => {
      const events: string[] = [];
      const services = await createServices({ config, storage, modules: [...MODULES, exampleModule(events)] });
      assert.equal(events.length, 0, 'building starts nothing');
      const app = await buildApp(services);
      try {
        assert.equal(events.join(), 'job started', 'the app starts the job');
        await createUser(services, { email: 'someone@example.com', password: PASSWORD });
        await createUser(services, { email: 'blocked@example.com', password: PASSWORD });
        const route = await app.inject({ method: 'GET', url: '/api/example', headers: { authorization: 'Bearer x' } });
        // /api/example is under the route guard's /api: an invalid token is refused before the route.
        assert.equal(route.statusCode, 401);
        const signedIn = await app.inject({ method: 'POST', url: '/api/auth', payload: { email: 'someone@example.com', password: PASSWORD } });
        assert.equal(signedIn.statusCode, 200, signedIn.body);
        const answer = await app.inject({ method: 'GET', url: '/api/example', headers: { authorization: `Bearer ${signedIn.json().token}` } });
        assert.deepEqual(answer.json(), { users: 2 });
        const blocked = await app.inject({ method: 'POST', url: '/api/auth', payload: { email: 'blocked@example.com', password: PASSWORD } });
        assert.equal(blocked.statusCode, 401, 'a step refusal answers as a failed sign-in');
        assert.deepEqual(events.filter((e) => e.startsWith('step')), ['step saw someone@example.com', 'step saw blocked@example.com']);
      } finally {
        await app.close();
      }
      assert.deepEqual(events.at(-1), 'job stopped', 'closing the app stops the job');
    });
  });

  it('a module subscribes to domain events, in the transaction of the change they describe', async () => {
    await withStorage(async ({ config, storage }) => {
      const seen: string[] = [];
      const subscriber = defineModule({
        name: 'event-log',
        subscriptions: () => [
          {
            types: ['signin.success', 'user.roles_changed'],
            async handle(event, db) {
              seen.push(event.type);
              // What a persisting subscriber (a webhook outbox) does: write in the event's transaction.
              await db.insertInto('rate_limits').values({ key: `event:${event.id}`, points: 1, expire: null }).execute();
            },
          },
        ],
      });
      const services = await createServices({ config, storage, modules: [...MODULES, subscriber] });
      const app = await buildApp(services);
      const written = async () => (await storage.db.selectFrom('rate_limits').select('key').where('key', 'like', 'event:%').execute()).length;
      try {
        const user = await createUser(services, { email: 'events@example.com', password: PASSWORD });
        const signedIn = await app.inject({ method: 'POST', url: '/api/auth', payload: { email: 'events@example.com', password: PASSWORD } });
        assert.equal(signedIn.statusCode, 200);
        assert.deepEqual(seen, ['signin.success']);
        assert.equal(await written(), 1, 'an event recorded outside a transaction gets one with its subscribers');

        // A change that fails after its event: the subscriber saw it, and nothing it wrote remains.
        await assert.rejects(
          services.users.updateUser(user.id, { roles: ['EDITOR'] }, {
            onUpdated: async (db) => {
              await services.audit.record({ type: 'user.roles_changed', userId: user.id, details: { after: ['EDITOR'] } }, { db });
              throw new Error('the change fails after its event');
            },
          }),
          /the change fails/,
        );
        assert.deepEqual(seen, ['signin.success', 'user.roles_changed']);
        assert.equal(await written(), 1, 'rolled back with the change');
        assert.deepEqual((await services.users.findUserById(user.id))!.roles, []);

        const admin = await createUser(services, { email: 'events-admin@example.com', password: PASSWORD, roles: ['ADMIN'] });
        const changed = await services.admin.updateUser(user.id, { roles: ['EDITOR'] }, { actorUserId: admin.id, ip: null, userAgent: null });
        assert.ok(changed.ok);
        assert.equal(await written(), 2, 'committed with the change');
      } finally {
        await app.close();
      }
    });
  });

  it('building the services (as the CLI does) opens no Redis connection and starts no job; the app does', async () => {
    await withStorage(async ({ config, storage, database }) => {
      // A TCP listener standing in for Redis: it only counts who connects.
      let connections = 0;
      const listener = createServer((socket) => {
        connections++;
        socket.on('error', () => {});
      });
      await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
      try {
        const { port } = listener.address() as AddressInfo;
        const withRedis = loadConfig({ DATA_DIR: config.dataDir, ...testEnv(database, { REDIS_URL: `redis://127.0.0.1:${port}/0` }) });
        const services = await createServices({ config: withRedis, storage });
        await new Promise((resolve) => setTimeout(resolve, 200));
        assert.equal(connections, 0, 'built: nothing connected');
        await services.startJobs(); // waits at most a few seconds for a Redis that never answers
        assert.ok(connections >= 1, 'started: the rate limits connect');
        await services.stop();
      } finally {
        listener.close();
      }
    });
  });

  it('refuses, at start, a module that asks for a service no module above it provides', async () => {
    await withStorage(async ({ config, storage }) => {
      const early = defineModule({ name: 'too-early', provide: ({ services }) => ({ probe: services.credentials }) as Partial<ServiceRegistry> });
      await assert.rejects(createServices({ config, storage, modules: [early, ...MODULES] }), /asked for the service "credentials" before any module provided it/);
    });
  });

  it('refuses two modules that provide the same service', async () => {
    await withStorage(async ({ config, storage }) => {
      const twin = defineModule({ name: 'twin', provide: () => ({ users: {} }) as Partial<ServiceRegistry> });
      await assert.rejects(createServices({ config, storage, modules: [...MODULES, twin] }), /the service "users" of the module "twin" is provided twice/);
    });
  });

  it('lists every module once, by a unique name', () => {
    const names = MODULES.map((module) => module.name);
    assert.deepEqual([...new Set(names)], names);
  });
});
