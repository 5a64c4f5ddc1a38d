/**
 * Finding: "one user stalls password-strength checks for everyone". Judging a new password takes a
 * turn of the one zxcvbn worker the process shares; a client sending long, slow, refused passwords
 * to change-password again and again kept it busy, and everyone's sign-up, reset and admin create
 * waited up to 10 s or got 503. Now each estimate judges at most 64 characters
 * (password-strength.test.ts), clients take turns by address with a few estimates each at most,
 * and refused new passwords count against per-IP limits, and per-account ones where the client
 * acts for the account (change-password, reset links): past them, 429 RATE_LIMITED.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import type { Env } from '../config.ts';
import { strengthEstimator } from './password-strength.ts';

const PASSWORD = 'correct horse battery staple';
const GOOD_NEW_PASSWORD = 'violet harbour lantern forty-two';
/**
 * Slow to judge and refused (a digit run, TOO_GUESSABLE): about a third of a second per 64
 * characters on a 2-core machine, and 256 long, so an uncapped judge would take far longer.
 */
const SLOW_REFUSED = '0123456789'.repeat(26).slice(0, 256);

/** Cheap hashes: the test is about the estimator's turns, not argon2's. */
const FAST_HASHES: Env = { ARGON2_MEMORY_KIB: '1024', ARGON2_ITERATIONS: '1', HASH_CONCURRENCY: '8' };

type Response = Awaited<ReturnType<TestApp['app']['inject']>>;

function assertLimited(response: Response, label: string): void {
  assert.equal(response.statusCode, 429, `${label}: ${response.body}`);
  assert.equal(response.json().error, 'RATE_LIMITED', label);
  assert.match(String(response.headers['retry-after']), /^[1-9]\d*$/, `${label}: Retry-After`);
}

function assertRefused(response: Response, label: string): void {
  assert.equal(response.statusCode, 422, `${label}: ${response.body}`);
  assert.equal(response.json().error, 'VALIDATION_ERROR', label);
}

const allBackends = await backends();

describe('one user cannot stall password-strength checks for everyone', () => {
  let counter = 0;
  const freshEmail = () => `fairness${++counter}@example.com`;

  async function signedIn(t: TestApp, ip: string) {
    const email = freshEmail();
    await createUser(t.services, { email, password: PASSWORD });
    const token = (await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email, password: PASSWORD }, remoteAddress: ip })).json().token as string;
    const change = (newPassword: string, from = ip) =>
      t.app.inject({ method: 'POST', url: '/api/auth/change-password', headers: { authorization: `Bearer ${token}` }, payload: { currentPassword: PASSWORD, newPassword }, remoteAddress: from });
    return { email, change };
  }

  const signUp = (t: TestApp, ip: string, email: string, password: string) =>
    t.app.inject({ method: 'POST', url: '/api/auth/signup', payload: { email, password, name: 'Fair Newcomer' }, remoteAddress: ip });

  describe('on sqlite', () => {
    let database: TestDatabase;
    let t: TestApp;

    before(async () => {
      database = await allBackends.find((backend) => backend.name === 'sqlite')!.create();
      t = await createTestApp(database, { env: FAST_HASHES });
    });
    after(async () => {
      await t?.close();
      await database?.drop();
    });

    it("answers another client's sign-up promptly while one client floods change-password with slow refused passwords", async (test) => {
      const attacker = await signedIn(t, '198.51.100.1');
      // What one estimate of the capped slow password costs here and now (warm worker).
      await strengthEstimator.estimate(SLOW_REFUSED.slice(0, 64), [], 'calibration');
      const calibratedAt = performance.now();
      await strengthEstimator.estimate(SLOW_REFUSED.slice(0, 64), [], 'calibration');
      const oneEstimateMs = performance.now() - calibratedAt;

      // A backlog far longer than the bound below: 24 slow refused passwords at once.
      const answeredAt: number[] = [];
      const flood = Array.from({ length: 24 }, () =>
        attacker.change(SLOW_REFUSED).then((response) => {
          answeredAt.push(performance.now());
          return response;
        }),
      );
      // Once the first has been judged, the others are queued (or turned away) behind it.
      await new Promise<void>((resolve) => {
        for (const pending of flood) void pending.then((response) => response.statusCode === 422 && resolve());
        void Promise.all(flood).then(() => resolve());
      });

      const askedAt = performance.now();
      const newcomer = await signUp(t, '203.0.113.9', freshEmail(), GOOD_NEW_PASSWORD);
      const newcomerAnsweredAt = performance.now();
      const floodAnswers = await Promise.all(flood);

      assert.equal(newcomer.statusCode, 202, `the other client's sign-up: ${newcomer.body}`);
      // Fair turns: it waited for at most the one estimate being computed, then had its own (and a
      // cheap hash). Five estimates and half a second more is a generous bound; the backlog was 24.
      const waitedMs = newcomerAnsweredAt - askedAt;
      test.diagnostic(`one estimate ${Math.round(oneEstimateMs)} ms; the other client's sign-up ${Math.round(waitedMs)} ms; flood answers after it: ${answeredAt.filter((at) => at > newcomerAnsweredAt).length}`);
      assert.ok(waitedMs < 5 * oneEstimateMs + 500, `sign-up took ${Math.round(waitedMs)} ms; one estimate takes ${Math.round(oneEstimateMs)} ms`);
      // And by order, whatever the machine's speed: some of the flood was still waiting behind it.
      assert.ok(answeredAt.some((at) => at > newcomerAnsweredAt), "the flood's backlog was not served before the other client");

      // The flooding client got refusals (422) and, past its share, 429s; on a slow machine the
      // end of its own backlog may outwait the 10 s bound (503): its own wait, never the other client's.
      for (const [i, response] of floodAnswers.entries()) {
        if (response.statusCode === 422) assertRefused(response, `flood ${i}`);
        else if (response.statusCode === 503) assert.equal(response.json().error, 'SERVICE_UNAVAILABLE', `flood ${i}`);
        else assertLimited(response, `flood ${i}`);
      }
      assert.ok(floodAnswers.some((response) => response.statusCode === 429), 'past its share of estimates, the client is told to slow down');
    });
  });

  for (const backend of allBackends) {
    describe(`on ${backend.name}`, { skip: backend.skip }, () => {
      let database: TestDatabase;
      const apps: TestApp[] = [];
      const clock = fakeClock();
      let ipCounter = 0;
      const nextIp = () => `192.0.2.${++ipCounter}`;

      before(async () => {
        database = await backend.create();
      });
      after(async () => {
        for (const app of apps) await app.close();
        await database?.drop();
      });

      async function appWith(env: Env): Promise<TestApp> {
        const app = await createTestApp(database, { clock, env: { ...FAST_HASHES, ...env } });
        apps.push(app);
        return app;
      }

      it('answers refused new passwords past the per-account limit with 429 RATE_LIMITED and Retry-After, before judging', async () => {
        const t = await appWith({ RATE_LIMIT_PASSWORD_REFUSALS_PER_ACCOUNT: '3/15m' });
        const ip = nextIp();
        const account = await signedIn(t, ip);
        // Sign-ups that merely type the account's address do not use up its allowance.
        for (let i = 0; i < 4; i += 1) assertRefused(await signUp(t, nextIp(), account.email, SLOW_REFUSED), `someone else's sign-up ${i + 1}`);
        for (let i = 0; i < 3; i += 1) assertRefused(await account.change(SLOW_REFUSED), `refusal ${i + 1}`);
        assertLimited(await account.change(SLOW_REFUSED), 'the fourth refused password');
        assertLimited(await account.change(GOOD_NEW_PASSWORD), 'even a good one: the limit comes before the estimate');
        assertLimited(await account.change(SLOW_REFUSED, nextIp()), 'the same account from another address');
        const other = await signedIn(t, ip);
        assertRefused(await other.change(SLOW_REFUSED), 'another account from the same address is not affected');
        clock.advance(15 * 60_000 + 1_000);
        assert.equal((await account.change(GOOD_NEW_PASSWORD)).statusCode, 200, 'a new window');
      });

      it('counts refusals per client address across accounts (sign-up and change-password), but not accepted passwords', async () => {
        const t = await appWith({ RATE_LIMIT_PASSWORD_REFUSALS_PER_IP: '4/15m' });
        const ip = nextIp();
        // Accepted passwords do not count.
        for (let i = 0; i < 6; i += 1) assert.equal((await signUp(t, ip, freshEmail(), GOOD_NEW_PASSWORD)).statusCode, 202, `accepted sign-up ${i + 1}`);
        for (let i = 0; i < 3; i += 1) assertRefused(await signUp(t, ip, freshEmail(), SLOW_REFUSED), `refused sign-up ${i + 1}`);
        const account = await signedIn(t, ip);
        assertRefused(await account.change(SLOW_REFUSED), 'the fourth refusal from this address');
        assertLimited(await signUp(t, ip, freshEmail(), SLOW_REFUSED), 'a fifth, at sign-up');
        assertLimited(await account.change(SLOW_REFUSED), 'and at change-password');
        assert.equal((await signUp(t, nextIp(), freshEmail(), SLOW_REFUSED)).statusCode, 422, 'another address is judged');
      });

      it('limits refused passwords on a reset link too, and the link stays usable', async () => {
        const t = await appWith({ RATE_LIMIT_PASSWORD_REFUSALS_PER_ACCOUNT: '2/15m' });
        const email = freshEmail();
        const user = await createUser(t.services, { email, password: PASSWORD });
        const { token } = await t.services.actionTokens.issue(t.services.storage.db, { userId: user.id, purpose: 'password_reset', ttlSeconds: 3_600 });
        const reset = (password: string) => t.app.inject({ method: 'POST', url: '/api/auth/reset-password', payload: { token, password }, remoteAddress: nextIp() });
        for (let i = 0; i < 2; i += 1) assertRefused(await reset(SLOW_REFUSED), `refusal ${i + 1}`);
        assertLimited(await reset(SLOW_REFUSED), 'the third, from yet another address');
        clock.advance(15 * 60_000 + 1_000);
        assert.equal((await reset(GOOD_NEW_PASSWORD)).statusCode, 200, 'the same link, in a new window');
      });
    });
  }
});
