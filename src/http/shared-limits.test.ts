/**
 * Limits that hold across instances: two Gatehouse instances on one PostgreSQL share their counters
 * in storage; with REDIS_URL they share them in Redis, and when Redis stops mid-test each instance
 * goes on enforcing the limit in memory, then shares again once Redis is back. The Redis here is a
 * server of the test's own on a free loopback port, so stopping it disturbs nothing else.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { freePort } from '../../test/helpers/process.ts';
import { redisSkip, startRedis, stopRedis } from '../../test/helpers/redis.ts';
import type { Env } from '../config.ts';

const PASSWORD = 'correct horse battery staple';

const [, postgres] = await backends();

function signIn(t: TestApp, email: string, ip: string) {
  return t.app.inject({ method: 'POST', url: '/api/auth', payload: { email, password: PASSWORD }, remoteAddress: ip });
}

/** Two instances of Gatehouse on one database, as two processes behind a load balancer would be. */
async function twoInstances(database: TestDatabase, env: Env): Promise<[TestApp, TestApp]> {
  return [await createTestApp(database, { env }), await createTestApp(database, { env })];
}

describe('two instances on one PostgreSQL share one limit', { skip: postgres!.skip }, () => {
  let database: TestDatabase;
  let instances: TestApp[] = [];
  before(async () => {
    database = await postgres!.create();
    instances = await twoInstances(database, { RATE_LIMIT_SIGNIN_PER_IP: '4/1m' });
  });
  after(async () => {
    for (const t of instances) await t.close();
    await database?.drop();
  });

  it('counts attempts on either instance against the same limit', async () => {
    const [a, b] = instances as [TestApp, TestApp];
    const user = await createUser(a.services, { email: 'shared@example.com', password: PASSWORD });
    const ip = '127.9.0.1';
    const statuses = [];
    for (const t of [a, b, a, b, a, b]) statuses.push((await signIn(t, user.email, ip)).statusCode);
    assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429]);
  });
});

describe('limits in Redis', { skip: redisSkip }, () => {
  let database: TestDatabase;
  let instances: TestApp[] = [];
  let redis: ChildProcess;
  let port: number;

  before(async () => {
    const [first] = await backends();
    port = await freePort();
    redis = await startRedis(port);
    // Counters are in Redis, so even SQLite instances (one file each) share them.
    database = await first!.create();
    instances = await twoInstances(database, { REDIS_URL: `redis://127.0.0.1:${port}`, RATE_LIMIT_SIGNIN_PER_IP: '4/1m', SIGNIN_LOCK_AFTER_FAILURES: '10' });
  });
  after(async () => {
    for (const t of instances) await t.close();
    await database?.drop();
    if (redis !== undefined) await stopRedis(redis);
  });

  it('shares one limit between instances, keeps enforcing it in memory while Redis is down, and shares again after', async () => {
    const [a, b] = instances as [TestApp, TestApp];
    assert.equal(a.services.rateLimiters.backend, 'redis');
    const user = await createUser(a.services, { email: 'redis@example.com', password: PASSWORD });

    const shared = [];
    for (const t of [a, b, a, b, a]) shared.push((await signIn(t, user.email, '127.9.1.1')).statusCode);
    assert.deepEqual(shared, [200, 200, 200, 200, 429], 'one limit for both instances');

    await stopRedis(redis);
    // Each instance counts on its own now: never unlimited, never a 500.
    for (const t of [a, b]) {
      const statuses = [];
      for (let i = 0; i < 6; i += 1) statuses.push((await signIn(t, user.email, '127.9.1.2')).statusCode);
      assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429], 'the limit holds in memory while Redis is down');
    }
    // The per-account count too, whose 90-day window is longer than a timer can hold.
    const victim = await createUser(a.services, { email: 'victim@example.com', password: PASSWORD });
    for (let i = 0; i < 10; i += 1) {
      const response = await a.app.inject({ method: 'POST', url: '/api/auth', payload: { email: victim.email, password: 'wrong' }, remoteAddress: `127.9.4.${i + 1}` });
      assert.equal(response.statusCode, 401, `failure ${i + 1}`);
      await sleep(5);
    }
    assert.equal((await a.app.inject({ method: 'POST', url: '/api/auth', payload: { email: victim.email, password: PASSWORD }, remoteAddress: '127.9.4.99' })).statusCode, 429, 'locked in memory');

    redis = await startRedis(port);
    // ioredis reconnects on its own (retries at most every 2 s).
    const reconnected = new Set<TestApp>();
    const check = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1 });
    check.on('error', () => {});
    for (let attempt = 0; attempt < 60 && reconnected.size < 2; attempt += 1) {
      await sleep(250);
      for (const [index, t] of [a, b].entries()) {
        if (reconnected.has(t)) continue;
        const ip = `127.9.${2 + index}.${attempt + 1}`;
        await signIn(t, user.email, ip);
        if ((await check.keys(`gatehouse:signin-ip:${ip}`)).length === 1) reconnected.add(t);
      }
    }
    check.disconnect();
    assert.equal(reconnected.size, 2, 'both instances count in Redis again once it is back');
    const statuses = [];
    for (const t of [a, b, a, b, b]) statuses.push((await signIn(t, user.email, '127.9.9.1')).statusCode);
    assert.deepEqual(statuses, [200, 200, 200, 200, 429], 'shared again');
  });
});
