/**
 * Found by the fault tests (issue 9): a sign-in that ends in 503 (no hashing slot, or storage
 * down) is counted as a failed attempt before the hash and never given back, because
 * `credentials.service.ts` settles an attempt only by `succeeded()` or `failed()`, and an
 * exception skips both. Under overload, people typing the right password use up their IP's
 * RATE_LIMIT_SIGNIN_FAILURES_PER_IP (and, with no success in between, the account's
 * SIGNIN_LOCK_AFTER_FAILURES) and are then refused with 429 for the whole window.
 *
 * Fixed: an attempt whose password was never judged is released (given back) like a refused one.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { createSqliteDatabase } from '../helpers/databases.ts';
import { createTestApp, createUser } from '../helpers/app.ts';

const EMAIL = 'overload@example.test';
const PASSWORD = 'violet-harbour-lantern-42';

it(
  'sign-ins refused with 503 for lack of hashing capacity do not count as failed attempts',
  { timeout: 30_000 },
  async (t) => {
    const database = await createSqliteDatabase();
    const { app, services, close } = await createTestApp(database, {
      env: { HASH_CONCURRENCY: '1', HASH_QUEUE_MAX: '0', RATE_LIMIT_SIGNIN_FAILURES_PER_IP: '10/15m' },
    });
    t.after(async () => {
      await close();
      await database.drop();
    });
    await createUser(services, { email: EMAIL, password: PASSWORD });
    const signIn = () => app.inject({ method: 'POST', url: '/api/auth', payload: { email: EMAIL, password: PASSWORD }, remoteAddress: '203.0.113.9' });

    const burst = await Promise.all(Array.from({ length: 30 }, signIn));
    const statuses = burst.map((response) => response.statusCode);
    assert.ok(statuses.includes(503), `the burst overflows the hasher: ${statuses.join(',')}`);
    assert.ok(!statuses.includes(401), 'no password was wrong');

    // The burst is over and every password was right: the next sign-in must go through.
    const after = await signIn();
    assert.equal(after.statusCode, 200, `${after.statusCode} ${after.body}`);
  },
);
