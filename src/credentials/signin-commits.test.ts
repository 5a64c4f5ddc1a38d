/**
 * How a password sign-in commits (issue 38, "sign-in at the hash bound"): each commit costs the
 * event loop about as much as a statement, and the event loop's time comes out of the hashes'.
 * With the counters in storage, a successful sign-in commits twice: the throttle's counters before
 * the hash, then the session, its audit event and the throttle's release together; a wrong password
 * commits its counters twice and its audit event once. What the throttle counted is given back.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../../test/helpers/databases.ts';
import { createUser, modulesWithoutJobs, useTestApp, type TestApp } from '../../test/helpers/app.ts';
import type { Limiter, RateLimiters } from '../http/rate-limit.ts';
import type { Config } from '../config.ts';
import type { Db } from '../storage/database.ts';
import { createSignInThrottle } from './signin-throttle.ts';

const PASSWORD = 'correct horse battery staple';
const WRITES = new Set(['InsertQueryNode', 'UpdateQueryNode', 'DeleteQueryNode']);

/**
 * The statements of `run`, split into transactions: a sign-in sends no raw SQL but `begin` and
 * `commit`, so raw statements open and close them in turn.
 */
async function transactionsOf(t: TestApp, run: () => Promise<unknown>): Promise<{ transactions: string[][]; writesOutside: string[] }> {
  const transactions: string[][] = [];
  const writesOutside: string[] = [];
  let open: string[] | null = null;
  const observe = (kind: string) => {
    if (kind !== 'RawNode') {
      if (open !== null) open.push(kind);
      else if (WRITES.has(kind)) writesOutside.push(kind);
    } else if (open === null) open = [];
    else {
      transactions.push(open);
      open = null;
    }
  };
  t.services.storage.observeQueries?.(observe);
  await run().finally(() => t.services.storage.observeQueries?.(null));
  assert.equal(open, null, 'every transaction ended');
  return { transactions, writesOutside };
}

/** Sign-ins in flight by the throttle's leases, all keys and slots together. */
async function inFlight(db: Db): Promise<number> {
  const row = await sql<{ total: number | string | null }>`select sum(points) as total from rate_limits where key like 'signin-pending-%'`.execute(db);
  return Number(row.rows[0]?.total ?? 0);
}

for (const backend of await backends()) {
  describe(`a password sign-in's commits (${backend.name})`, { skip: backend.skip, timeout: 60_000 }, () => {
    // The observer sees every statement of the storage: no background job may write meanwhile.
    const t = useTestApp(backend, { modules: modulesWithoutJobs() });

    it('a success: two transactions, the second with the session, its audit event and the throttle released; no write outside', async () => {
      await createUser(t.services, { email: 'commits@example.com', password: PASSWORD });
      const signIn = () => t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: 'commits@example.com', password: PASSWORD } });
      let status = 0;
      const { transactions, writesOutside } = await transactionsOf(t, async () => {
        status = (await signIn()).statusCode;
      });
      assert.equal(status, 200);
      assert.deepEqual(writesOutside, []);
      assert.equal(transactions.length, 2, JSON.stringify(transactions));
      const [counted, started] = transactions as [string[], string[]];
      // The flood counter and the two places in flight.
      assert.equal(counted.filter((kind) => kind === 'InsertQueryNode').length, 3, counted.join(' '));
      // The session, its audit event, and the two places given back (upserts).
      assert.ok(started.filter((kind) => kind === 'InsertQueryNode').length >= 4, started.join(' '));
      assert.equal(await inFlight(t.services.storage.db), 0, 'nothing left in flight');
      const events = await t.services.storage.db.selectFrom('audit_events').select('type').where('type', '=', 'signin.success').execute();
      assert.equal(events.length, 1);
    });

    it('a wrong password: the counters before the hash, then the failure with the places given back; its audit event on its own', async () => {
      let status = 0;
      const { transactions, writesOutside } = await transactionsOf(t, async () => {
        status = (await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: 'commits@example.com', password: 'wrong horse battery staple' } })).statusCode;
      });
      assert.equal(status, 401);
      assert.equal(transactions.length, 2, JSON.stringify(transactions));
      // Two failure counters, two places given back.
      assert.equal(transactions[1]!.filter((kind) => kind === 'InsertQueryNode').length, 4, transactions[1]!.join(' '));
      // `signin.failure`: a failed audit write is logged, and must not take the failure's count with it.
      assert.deepEqual(writesOutside, ['InsertQueryNode']);
      assert.equal(await inFlight(t.services.storage.db), 0);
      const failures = await sql<{ points: number }>`select points from rate_limits where key like 'signin-fail-account:%'`.execute(t.services.storage.db);
      assert.deepEqual(failures.rows.map((row) => Number(row.points)), [1]);
      // And the right one clears it, in the session's transaction.
      const again = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: 'commits@example.com', password: PASSWORD } });
      assert.equal(again.statusCode, 200);
      const after = await sql<{ points: number }>`select points from rate_limits where key like 'signin-fail-account:%'`.execute(t.services.storage.db);
      assert.deepEqual(after.rows, []);
      assert.equal(await inFlight(t.services.storage.db), 0);
    });
  });
}

describe('the throttle with its counters in Redis', () => {
  it('never opens a database transaction (a round trip to Redis must not hold one)', async () => {
    const counts = new Map<string, number>();
    const limiter = (name: string): Limiter => {
      const add = (key: string, points: number) => {
        const next = (counts.get(`${name}:${key}`) ?? 0) + points;
        counts.set(`${name}:${key}`, next);
        return next;
      };
      return {
        consume: async (key, points = 1) => (add(key, points), null),
        increment: async (key) => add(key, 1),
        refund: async (key, points = 1) => void add(key, -points),
        check: async () => null,
        count: async (key) => counts.get(`${name}:${key}`) ?? 0,
        block: async () => {},
        set: async (key, points) => void counts.set(`${name}:${key}`, points),
        reset: async (key) => void counts.delete(`${name}:${key}`),
      };
    };
    const limiters: RateLimiters = { backend: 'redis', create: limiter, start: async () => {}, close: async () => {} };
    const db = {
      transaction() {
        throw new Error('no transaction for Redis counters');
      },
    } as unknown as Db;
    const throttle = createSignInThrottle({
      limiters,
      rateLimits: { signinPerIp: { points: 100, durationSeconds: 60 }, signinFailuresPerIp: { points: 100, durationSeconds: 60 } } as unknown as Config['rateLimits'],
      throttle: { delayAfterFailures: 5, maxDelaySeconds: 900, lockAfterFailures: 100 } as Config['signinThrottle'],
      clock: () => 0,
      hashQueueTimeoutMs: 5_000,
      db,
    });
    const check = await throttle.checkAttempt('redis@example.com', '192.0.2.1');
    assert.ok(check.ok);
    await check.attempt.succeeded(db);
    const pending = [...counts].filter(([key]) => key.startsWith('signin-pending')).reduce((sum, [, points]) => sum + points, 0);
    assert.equal(pending, 0, 'its places given back');
  });
});
