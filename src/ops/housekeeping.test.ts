/**
 * Housekeeping deletes ended sessions, spent revocation entries, expired single-use tokens and
 * ended rate-limit windows, in bounded batches, and never anything still in use.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { createHousekeepingJob } from './housekeeping.ts';
import { silentLogger } from '../lib/logger.ts';

const PASSWORD = 'correct horse battery staple';
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

for (const backend of await backends()) {
  describe(`housekeeping on ${backend.name}`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let t: TestApp;
    const clock = fakeClock();

    before(async () => {
      database = await backend.create();
      t = await createTestApp(database, { clock, env: { SESSION_STRATEGY: 'jwt', SESSION_MAX_AGE: '2d', SESSION_IDLE_TIMEOUT: '1d', SESSION_TOUCH_INTERVAL: '5m' } });
    });
    after(async () => {
      await t?.close();
      await database?.drop();
    });

    const count = async (table: 'sessions' | 'revoked_sessions' | 'action_tokens' | 'rate_limits') =>
      Number((await t.services.storage.db.selectFrom(table).select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow()).n);

    it('deletes what has ended, in bounded batches, and keeps what is live', async () => {
      const { db } = t.services.storage;
      const user = await createUser(t.services, { email: 'keeper@example.com', password: PASSWORD });
      const signIn = async () => (await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: user.email, password: PASSWORD } })).json();
      const revoked = await Promise.all([signIn(), signIn(), signIn()]);
      for (const session of revoked) await t.app.inject({ method: 'POST', url: '/api/auth/signout', headers: { authorization: `Bearer ${session.token}` } });
      await t.services.actionTokens.issue(db, { userId: user.id, purpose: 'password_reset', ttlSeconds: 60 });
      await t.services.rateLimiters.create('test-ended', { points: 5, durationSeconds: 60 }).consume('k');

      // Two days on: the signed-out sessions ended long ago, their revocations and the token expired.
      clock.advance(2 * DAY + HOUR);
      const live = await signIn();
      const livePending = await t.services.actionTokens.issue(db, { userId: user.id, purpose: 'email_verification', ttlSeconds: 3_600 });
      assert.ok(livePending.token);
      assert.equal(await count('sessions'), 4);

      // A small budget: at most two rows of each kind per run.
      const small = createHousekeepingJob({ db, clock, logger: silentLogger, actionTokens: t.services.actionTokens, idleTimeoutMs: DAY, batchSize: 2, maxBatches: 1 });
      const first = await small.runOnce();
      assert.equal(first.sessions, 2, 'one batch of sessions');
      assert.equal(first.revocations, 2);
      const rest = await t.services.housekeeping.runOnce();
      assert.equal(rest.sessions, 1);
      assert.equal(rest.revocations, 1);
      assert.equal(first.actionTokens + rest.actionTokens, 1);
      assert.ok(first.rateLimits + rest.rateLimits >= 1);

      const sessions = await db.selectFrom('sessions').select('id').execute();
      assert.deepEqual(sessions.map((s) => s.id), [live.token && JSON.parse(Buffer.from(live.token.split('.')[1], 'base64url').toString()).sid]);
      assert.equal(await count('revoked_sessions'), 0);
      assert.equal(await count('action_tokens'), 1, 'the live token stays');
      const check = await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: { authorization: `Bearer ${live.token}` } });
      assert.equal(check.statusCode, 200, 'the live session still works');
      await small.stop();
    });
  });
}
