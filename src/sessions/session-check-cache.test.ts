/**
 * SESSION_CHECK_CACHE across two instances on one PostgreSQL: a session checked on B is served
 * from B's cache (no statement), and whatever ends or changes it on A reaches B as soon as
 * PostgreSQL delivers A's announcement: the first check on B after that sees the change (sign-out,
 * a role taken away, a disabled user, an organization made active). With its listening connection
 * cut, B keeps nothing and reads storage on every check until it listens again. Plus the settings'
 * refusals, and the cache's own rules (bounded, the epoch, the time limit).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, modulesWithoutJobs, type TestApp } from '../../test/helpers/app.ts';
import { loadConfig } from '../modules.ts';
import { ConfigError } from '../config.ts';
import { CACHE_TTL_MS, createSessionCheckCache, type SessionChange } from './session-check-cache.ts';
import type { SessionCheckRow } from './session.store.ts';

const PASSWORD = 'correct horse battery staple';
const SOURCE = { actorUserId: null, ip: null, userAgent: null };
const postgres = (await backends()).find((backend) => backend.name === 'postgres')!;

/** Resolves when `app`'s cache hears (from PostgreSQL, or its own instance) a change `matches` accepts. */
function nextChange(app: TestApp, matches: (change: SessionChange) => boolean): Promise<void> {
  const cache = app.services.sessionChanges!.cache;
  const apply = cache.apply.bind(cache);
  return new Promise((resolve) => {
    const wrapper = (change: SessionChange) => {
      apply(change);
      if (!matches(change)) return;
      // Unwrapped only while outermost: another waiter may have wrapped this one since.
      if (cache.apply === wrapper) cache.apply = apply;
      resolve();
    };
    cache.apply = wrapper;
  });
}

function nextListening(app: TestApp, isListening: boolean): Promise<void> {
  const cache = app.services.sessionChanges!.cache;
  const setListening = cache.setListening.bind(cache);
  return new Promise((resolve) => {
    const wrapper = (next: boolean) => {
      setListening(next);
      if (next !== isListening) return;
      if (cache.setListening === wrapper) cache.setListening = setListening;
      resolve();
    };
    cache.setListening = wrapper;
  });
}

async function statementsOf(app: TestApp, run: () => Promise<unknown>): Promise<number> {
  let count = 0;
  app.services.storage.observeQueries?.(() => count++);
  try {
    await run();
  } finally {
    app.services.storage.observeQueries?.(null);
  }
  return count;
}

const check = async (app: TestApp, token: string) => {
  const response = await app.app.inject({ method: 'GET', url: '/api/auth/session', headers: { authorization: `Bearer ${token}` } });
  return { status: response.statusCode, body: response.json() as { user?: { roles: string[] }; claims?: Record<string, unknown> } };
};

describe('SESSION_CHECK_CACHE across two instances (PostgreSQL)', { skip: postgres.skip, timeout: 120_000 }, () => {
  let database: TestDatabase;
  let a: TestApp;
  let b: TestApp;
  const env = { SESSION_STRATEGY: 'database', SESSION_CHECK_CACHE: '1000' };

  const signIn = async (label: string, roles: string[] = []) => {
    const email = `cache-${label}@example.com`;
    const user = await createUser(a.services, { email, password: PASSWORD, roles });
    const response = await a.app.inject({ method: 'POST', url: '/api/auth', payload: { email, password: PASSWORD } });
    assert.equal(response.statusCode, 200, response.body);
    return { id: user.id, token: (response.json() as { token: string }).token };
  };

  /** Checked on B twice: the second from B's cache, without a statement. */
  const keptOnB = async (token: string) => {
    assert.equal((await check(b, token)).status, 200);
    assert.equal(await statementsOf(b, async () => assert.equal((await check(b, token)).status, 200)), 0, 'served from the cache');
  };

  it('builds both instances listening', async () => {
    database = await postgres.create();
    // The tests count B's statements: only the sessions module's jobs (the listener among them).
    a = await createTestApp(database, { env, modules: modulesWithoutJobs('sessions') });
    b = await createTestApp(database, { env, modules: modulesWithoutJobs('sessions') });
    assert.ok(a.services.sessionChanges !== undefined && b.services.sessionChanges !== undefined);
  });

  it('a sign-out on A is refused by B at its first check after the announcement', async () => {
    const user = await signIn('signout');
    await keptOnB(user.token);
    const heard = nextChange(b, (change) => typeof change === 'object' && 'user' in change && change.user === user.id);
    const signOut = await a.app.inject({ method: 'POST', url: '/api/auth/signout', headers: { authorization: `Bearer ${user.token}` } });
    assert.ok(signOut.statusCode < 300, signOut.body);
    await heard;
    assert.equal((await check(b, user.token)).status, 401);
  });

  it('a role taken away and a disabled user on A: B sees both at once', async () => {
    const user = await signIn('roles', ['AUDITOR']);
    await keptOnB(user.token);
    assert.deepEqual((await check(b, user.token)).body.user?.roles, ['AUDITOR']);
    let heard = nextChange(b, (change) => typeof change === 'object' && 'user' in change && change.user === user.id);
    assert.ok((await a.services.admin.updateUser(user.id, { roles: [] }, SOURCE)).ok);
    await heard;
    assert.deepEqual((await check(b, user.token)).body.user?.roles, [], 'the role is gone on B');

    await keptOnB(user.token);
    heard = nextChange(b, (change) => typeof change === 'object' && 'user' in change && change.user === user.id);
    assert.ok((await a.services.admin.updateUser(user.id, { disabled: true }, SOURCE)).ok);
    await heard;
    assert.equal((await check(b, user.token)).status, 401, 'disabled: refused on B');
  });

  it('an organization made active on A is in the claims B shows', async () => {
    const user = await signIn('org');
    const created = await a.services.organizations.create({ name: 'Cache Org' }, user.id, SOURCE);
    assert.ok(created.ok);
    await keptOnB(user.token);
    assert.deepEqual((await check(b, user.token)).body.claims ?? {}, {});
    const heard = nextChange(b, (change) => typeof change === 'object' && 'session' in change);
    const activated = await a.app.inject({ method: 'POST', url: '/api/organizations/active', headers: { authorization: `Bearer ${user.token}` }, payload: { organizationId: created.organization.id } });
    assert.equal(activated.statusCode, 200, activated.body);
    await heard;
    assert.deepEqual((await check(b, user.token)).body.claims, { org: { id: created.organization.id, slug: created.organization.slug, roles: ['OWNER'] } });
  });

  it('with its listening connection cut, B reads storage on every check, then keeps again once it listens', async () => {
    const user = await signIn('cut');
    await keptOnB(user.token);
    const stopped = nextListening(b, false);
    const listening = nextListening(b, true);
    // Every LISTEN connection of this database: A's and B's.
    await sql`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and query like 'LISTEN%'`.execute(a.services.storage.db);
    await stopped;
    assert.equal(await statementsOf(b, () => check(b, user.token)), 1, 'not listening: read');
    assert.equal(await statementsOf(b, () => check(b, user.token)), 1, 'and read again: nothing kept');
    await listening;
    await keptOnB(user.token);
  });

  it('closes both', async () => {
    await a?.close();
    await b?.close();
    await database?.drop();
  });
});

describe('SESSION_CHECK_CACHE settings', () => {
  it('needs the database strategy and PostgreSQL', () => {
    const problemsOf = (env: Record<string, string>) => {
      try {
        loadConfig({ NODE_ENV: 'test', ...env });
        return [];
      } catch (error) {
        return error instanceof ConfigError ? [...error.problems] : [String(error)];
      }
    };
    assert.ok(problemsOf({ SESSION_CHECK_CACHE: '10', DATABASE_URL: 'sqlite::memory:' }).some((p) => p.startsWith('SESSION_CHECK_CACHE needs PostgreSQL')));
    assert.ok(problemsOf({ SESSION_CHECK_CACHE: '10', SESSION_STRATEGY: 'jwt', DATABASE_URL: 'postgres://127.0.0.1/x' }).some((p) => p.startsWith('SESSION_CHECK_CACHE is for SESSION_STRATEGY=database')));
    assert.deepEqual(problemsOf({ SESSION_CHECK_CACHE: '10', DATABASE_URL: 'postgres://127.0.0.1/x' }), []);
    assert.ok(problemsOf({ SESSION_CHECK_CACHE: '-1', DATABASE_URL: 'postgres://127.0.0.1/x' }).length > 0);
  });
});

describe('the session check cache', () => {
  const row = (userId: string, lastSeenAt = 0): SessionCheckRow => ({
    user_id: userId, expires_at: 10 ** 13, last_seen_at: lastSeenAt, revoked_at: null, created_at: 0, amr: 'pwd', auth_time: 0, disabled_at: null, email: 'x@example.com', name: 'X', roles: [], moduleClaims: {},
  });

  it('keeps nothing until listening, and a read racing a change is not kept', () => {
    const cache = createSessionCheckCache(10);
    cache.set('s1', row('u1'), cache.epoch(), 0);
    assert.equal(cache.get('s1', 0), undefined, 'not listening yet');
    cache.setListening(true);
    const startedIn = cache.epoch();
    cache.apply({ session: 'other' });
    cache.set('s1', row('u1'), startedIn, 0);
    assert.equal(cache.get('s1', 0), undefined, 'a change was announced while it was read');
    cache.set('s1', row('u1'), cache.epoch(), 0);
    assert.ok(cache.get('s1', 0) !== undefined);
  });

  it('drops by session, by user, all; forgets after its time limit; holds at most its size', () => {
    const cache = createSessionCheckCache(2);
    cache.setListening(true);
    cache.set('s1', row('u1'), cache.epoch(), 0);
    cache.set('s2', row('u1'), cache.epoch(), 0);
    cache.apply({ user: 'u1' });
    assert.equal(cache.get('s1', 0), undefined);
    assert.equal(cache.get('s2', 0), undefined);
    cache.set('s1', row('u1'), cache.epoch(), 0);
    cache.set('s2', row('u2'), cache.epoch(), 0);
    cache.set('s3', row('u3'), cache.epoch(), 0);
    assert.equal(cache.get('s1', 0), undefined, 'the oldest made room');
    assert.ok(cache.get('s3', CACHE_TTL_MS - 1) !== undefined);
    assert.equal(cache.get('s3', CACHE_TTL_MS), undefined, 'forgotten after its time limit');
    cache.touch('s2', 42);
    assert.equal(cache.get('s2', 0)?.last_seen_at, 42);
    cache.apply('all');
    assert.equal(cache.get('s2', 0), undefined);
  });
});
