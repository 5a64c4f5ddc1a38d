/**
 * Two instances on one PostgreSQL and one Redis behave as one service: sessions, sign-outs (both
 * strategies), rate limits, signing keys and their rotation are shared. Each instance is a full
 * Gatehouse (its own services, caches and timers), as two processes behind a load balancer are.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, TEST_SECRET, type TestApp } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { freePort } from '../../test/helpers/process.ts';
import { redisSkip, startRedis, stopRedis } from '../../test/helpers/redis.ts';
import { KEY_ACTIVATION_DELAY_MS, rotateSigningKey } from '../sessions/signing-keys.ts';
import type { Env } from '../config.ts';

const PASSWORD = 'correct horse battery staple';
const [, postgres] = await backends();
const skip = postgres!.skip || redisSkip;

describe('two instances on one PostgreSQL and one Redis', { skip }, () => {
  let database: TestDatabase;
  let redis: ChildProcess;
  const apps: TestApp[] = [];
  let shared: Env;

  before(async () => {
    const port = await freePort();
    redis = await startRedis(port);
    database = await postgres!.create();
    shared = { REDIS_URL: `redis://127.0.0.1:${port}`, REVOCATION_SYNC_INTERVAL_MS: '100' };
  });
  after(async () => {
    for (const app of apps) await app.close();
    await database?.drop();
    if (redis !== undefined) await stopRedis(redis);
  });

  async function pair(env: Env, clock?: () => number): Promise<[TestApp, TestApp]> {
    const options = { env: { ...shared, ...env }, ...(clock && { clock }) };
    const created: [TestApp, TestApp] = [await createTestApp(database, options), await createTestApp(database, options)];
    apps.push(...created);
    return created;
  }

  let userCount = 0;
  async function newUser(on: TestApp) {
    userCount += 1;
    const email = `scale${userCount}@example.com`;
    await createUser(on.services, { email, password: PASSWORD });
    return email;
  }
  const signIn = (on: TestApp, email: string, ip = '127.8.0.1') => on.app.inject({ method: 'POST', url: '/api/auth', payload: { email, password: PASSWORD }, remoteAddress: ip });
  const session = (on: TestApp, token: string) => on.app.inject({ method: 'GET', url: '/api/auth/session', headers: { authorization: `Bearer ${token}` } });
  const signOut = (on: TestApp, token: string) => on.app.inject({ method: 'POST', url: '/api/auth/signout', headers: { authorization: `Bearer ${token}` } });

  it('database strategy: a session made on one is good on the other, and a sign-out on either ends it on both at once', async () => {
    const [a, b] = await pair({ SESSION_STRATEGY: 'database' });
    const email = await newUser(a);
    const { token, refreshToken } = (await signIn(a, email)).json();
    assert.equal((await session(b, token)).statusCode, 200);
    const refreshed = await b.app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken } });
    assert.equal(refreshed.statusCode, 200, 'refreshed on the other instance');
    const reused = await a.app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken } });
    assert.equal(reused.statusCode, 200, 'within the grace period, the same successor');
    await signOut(b, refreshed.json().token);
    assert.equal((await session(a, token)).statusCode, 401, 'ended everywhere at once');
  });

  it('jwt strategy: sign-out on one instance is refused on the other after its next pull', async () => {
    const [a, b] = await pair({ SESSION_STRATEGY: 'jwt' });
    const email = await newUser(a);
    const { token } = (await signIn(a, email)).json();
    assert.equal((await session(b, token)).statusCode, 200);
    await signOut(a, token);
    assert.equal((await session(a, token)).statusCode, 401);
    let refused = false;
    for (let i = 0; i < 20 && !refused; i += 1) {
      await sleep(100);
      refused = (await session(b, token)).statusCode === 401;
    }
    assert.ok(refused, 'the other instance learned of the sign-out');
  });

  it('rate limits: both instances count against one limit in Redis', async () => {
    const [a, b] = await pair({ RATE_LIMIT_SIGNIN_PER_IP: '4/1m' });
    const email = await newUser(a);
    const statuses = [];
    for (const on of [a, b, a, b, a, b]) statuses.push((await signIn(on, email, '127.8.1.1')).statusCode);
    assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429]);
  });

  it('signing keys: one key for both, and a rotation reaches both before the new key signs', async () => {
    const clock = fakeClock();
    const [a, b] = await pair({ SESSION_STRATEGY: 'jwt' }, clock);
    const email = await newUser(a);
    const before = (await signIn(a, email)).json().token as string;
    const oldKid = decodeProtectedHeader(before).kid;
    assert.equal(decodeProtectedHeader((await signIn(b, email)).json().token).kid, oldKid, 'one key for both');

    const { kid: newKid } = await rotateSigningKey({ db: a.services.storage.db, authSecret: TEST_SECRET, clock });
    // Each instance reloads every minute on its own; here, by hand, on the fake clock.
    clock.advance(60_000);
    await Promise.all([a.services.keys.reload(), b.services.keys.reload()]);
    assert.equal(decodeProtectedHeader((await signIn(a, email)).json().token).kid, oldKid, 'the old key signs during the activation delay');
    const jwks = (await b.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json().keys.map((k: { kid: string }) => k.kid);
    assert.ok(jwks.includes(newKid), 'the new key is published on the other instance already');

    clock.advance(KEY_ACTIVATION_DELAY_MS);
    await Promise.all([a.services.keys.reload(), b.services.keys.reload()]);
    const after = (await signIn(a, email)).json().token as string;
    assert.equal(decodeProtectedHeader(after).kid, newKid, 'the new key signs now');
    assert.equal((await session(b, after)).statusCode, 200, 'its tokens are good on the other instance');
    assert.equal(decodeJwt(before).exp! * 1000 > clock(), true);
    assert.equal((await session(b, before)).statusCode, 200, 'and tokens of the old key stay good until they expire');
  });
});
