/**
 * PostgreSQL hangs under load and comes back (issue 9): not refused but silent, as in a network
 * partition or a frozen host. A real server process talks to a scratch database through a TCP
 * proxy of the test's own that is stalled (connections stay open and new ones are accepted, but no
 * byte goes either way), then resumed. Rate limits are in storage (the default), so every sign-in
 * also waits on its counters.
 *
 * While it hangs, every request that needs storage is answered 503 SERVICE_UNAVAILABLE with
 * Retry-After within a bound (DATABASE_QUERY_TIMEOUT_MS, 5 s by default, plus slack), never 500,
 * never a grant; /api/health says 503. When the proxy resumes, the same process serves again.
 * Figures are printed for docs/operations/reliability.md.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { backends } from '../helpers/databases.ts';
import { GENEROUS_LIMITS } from '../helpers/app.ts';
import { serverScratch, startGatehouse } from '../helpers/process.ts';
import { startProxiedPostgres } from '../helpers/proxied-postgres.ts';
import { assertFailedSafely, call, countByPhase, describeOutcome, faultPhase, runLoops, sleep, waitUntil, type Outcome } from '../helpers/traffic.ts';

const [, postgres] = await backends();

/** A path under /api that no route serves: the guard authenticates it, then 404 means "let in". */
const GUARD_PROBE = '/api/fault-probe';
const WORKERS = 4;
const PASSWORD = 'still-lantern-gravel-otter';
/** The default DATABASE_QUERY_TIMEOUT_MS. */
const QUERY_TIMEOUT_MS = 5_000;
/** Longest a request may wait for its 503 while the database hangs: the timeout, and scheduling slack on two noisy cores. */
const ANSWER_BOUND_MS = QUERY_TIMEOUT_MS + 2_500;
const STALL_MS = 15_000;
const RECOVERY_SLACK_MS = 500;

describe('PostgreSQL hanging under load, then back', { skip: postgres!.skip, timeout: 90_000 }, () => {
  it('answers 503 within the query timeout, grants nothing, and recovers without a restart', { timeout: 80_000 }, async (t) => {
    const { cleanup, env: serverEnv } = serverScratch(t, 'fault-pg-hang');
    // Cleanups run last-registered first: the proxy closes before the database is dropped.
    const { proxy, url } = await startProxiedPostgres(postgres!, cleanup);

    const { base, child } = await startGatehouse({
      env: { ...serverEnv, DATABASE_URL: url, ...GENEROUS_LIMITS },
      cleanup,
      deadlineMs: 80_000,
    });

    const emails = Array.from({ length: WORKERS }, (_, i) => `hang-${i}@example.test`);
    for (const email of emails) {
      const signup = await call(base, '/api/auth/signup', 'signup', { body: { email, password: PASSWORD, name: 'Hang' } });
      assert.equal(signup.status, 202, describeOutcome(signup));
    }

    const outcomes: Outcome[] = [];
    const signedOut: string[] = [];
    let stop = false;
    const timed = { timeoutMs: 20_000 };
    // Each loop: sign in, use the session (session read, route guard), sign out, and try the
    // signed-out token again, which must never get in.
    const worker = async (i: number) => {
      const signin = await call(base, '/api/auth', 'signin', { ...timed, body: { email: emails[i], password: PASSWORD } });
      outcomes.push(signin);
      if (signin.status !== 200) {
        await sleep(50);
        return;
      }
      const token = signin.body!.token as string;
      outcomes.push(await call(base, '/api/auth/session', 'session', { ...timed, token }));
      outcomes.push(await call(base, GUARD_PROBE, 'guard', { ...timed, token }));
      const signout = await call(base, '/api/auth/signout', 'signout', { ...timed, method: 'POST', token });
      outcomes.push(signout);
      if (signout.status === 200) signedOut.push(token);
      const old = signedOut[Math.floor(Math.random() * signedOut.length)];
      if (old !== undefined) outcomes.push(await call(base, GUARD_PROBE, 'signed-out-guard', { ...timed, token: old }));
    };
    const health = async () => {
      outcomes.push(await call(base, '/api/health', 'health', timed));
      await sleep(200);
    };
    const loops = Promise.all([runLoops(WORKERS, () => stop, worker), runLoops(1, () => stop, health)]);

    try {
      await waitUntil(async () => signedOut.length >= WORKERS, 20_000, 100, 'warm-up');
      await sleep(1_000);

      const stallAt = performance.now();
      proxy.stall();
      await sleep(STALL_MS);
      const resumeAt = performance.now();
      await proxy.restore();

      const after = (kind: string) => outcomes.filter((o) => o.kind === kind && o.status === 200 && o.sentAt >= resumeAt);
      const healthRecoveryMs = await waitUntil(async () => after('health').length > 0, 15_000, 50, 'health 200 after the resume');
      await waitUntil(async () => after('signin').length > 0, 15_000, 50, 'a sign-in after the resume');
      const signinRecoveryMs = Math.min(...after('signin').map((o) => o.doneAt)) - resumeAt;
      // Requests sent before the first answer after the resume may still be refused at once.
      const recoveredAt = resumeAt + Math.max(signinRecoveryMs, healthRecoveryMs) + RECOVERY_SLACK_MS;
      await sleep(2_000);
      stop = true;
      await loops;

      const phaseOf = (o: Outcome) => faultPhase(o, { faultAt: stallAt, endAt: resumeAt, recoveredAt });
      const hung = outcomes.filter((o) => phaseOf(o) === 'during');
      const waits = hung.map((o) => o.doneAt - o.sentAt).sort((a, b) => a - b);
      const figures = {
        requests: outcomes.length,
        stallMs: STALL_MS,
        hungAnswerMs: { p50: Math.round(waits[Math.floor(waits.length / 2)] ?? 0), max: Math.round(waits.at(-1) ?? 0) },
        // The first requests wait out the timeout; once the database counts as hung, only one at a time does.
        hungAnswersOver1s: waits.filter((ms) => ms > 1_000).length,
        fastAfterStallMs: Math.round(Math.min(...hung.filter((o) => o.doneAt - o.sentAt < 1_000 && o.kind !== 'health').map((o) => o.sentAt - stallAt))),
        healthRecoveryMs: Math.round(healthRecoveryMs),
        signinRecoveryMs: Math.round(signinRecoveryMs),
        byPhase: countByPhase(outcomes, phaseOf),
      };
      t.diagnostic(JSON.stringify(figures));

      assertFailedSafely(outcomes, phaseOf);
      for (const o of outcomes.filter((x) => x.kind === 'signed-out-guard')) {
        assert.ok([401, 503].includes(o.status), `a signed-out token got ${describeOutcome(o)} in phase ${phaseOf(o)}`);
      }
      // While it hangs, everything needs storage (the database strategy reads the session row on
      // every request): all 503, within the bound.
      assert.ok(hung.filter((o) => o.kind === 'health').length >= 3, 'health was asked while the database hung');
      assert.ok(hung.filter((o) => o.kind === 'signin').length >= WORKERS, 'sign-ins were tried while the database hung');
      for (const o of hung) assert.equal(o.status, 503, `database hung, ${Math.round(o.sentAt - stallAt)} ms after the stall: ${describeOutcome(o)}`);
      // Every request sent while it hung (and early enough to be answered before the resume).
      for (const o of outcomes.filter((x) => x.sentAt >= stallAt && x.sentAt <= resumeAt - ANSWER_BOUND_MS)) {
        assert.ok(o.doneAt - o.sentAt <= ANSWER_BOUND_MS, `answered in ${Math.round(o.doneAt - o.sentAt)} ms: ${describeOutcome(o)}`);
      }
      const normal: Record<string, number> = { signin: 200, session: 200, guard: 404, signout: 200, 'signed-out-guard': 401, health: 200 };
      for (const o of outcomes.filter((x) => ['before', 'after'].includes(phaseOf(x)))) {
        assert.equal(o.status, normal[o.kind], `normal service in phase ${phaseOf(o)}: ${describeOutcome(o)}`);
      }
      assert.equal(child.hasExited(), false, 'the same process serves after the resume');
      assert.deepEqual(child.logs().filter((entry) => entry.msg === 'request failed'), [], 'no request failed with a 500');
    } finally {
      stop = true;
      await loops.catch(() => {});
    }
  });
});
