/**
 * Finding: "a crash locks users out". SIGKILL during a burst of correct sign-ins from one address,
 * then a restart on the same data: the attempts the dead process had counted as in flight were
 * never given back, and the right password got 429 for the whole failure window (15 minutes).
 * In-flight counts are leases now: they outlive a crash by at most two leases (40 s), so the right
 * password works again within a minute, and no refusal meanwhile asks for a longer wait.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { GENEROUS_LIMITS } from '../helpers/app.ts';
import { serverScratch, startGatehouse, type ChildEnv } from '../helpers/process.ts';
import { call, describeOutcome, sleep, type Outcome } from '../helpers/traffic.ts';
import { IN_FLIGHT_LEASE_SECONDS } from '../../src/http/rate-limit.ts';

const EMAIL = 'crash-burst@example.test';
const PASSWORD = 'granite-meadow-compass-19';
const FAILURES_PER_IP = 10;
const BURST = 40;

describe('a crash locks users out (SIGKILL during a burst of correct sign-ins)', { timeout: 120_000 }, () => {
  it('after the restart, the right password from the same address works again within a minute', { timeout: 110_000 }, async (t) => {
    const { cleanup, dataDir, env: serverEnv } = serverScratch(t, 'fault-crash-lockout');
    const env: ChildEnv = {
      ...serverEnv,
      DATABASE_URL: `sqlite:${join(dataDir, 'gatehouse.db')}`,
      ADMIN_EMAIL: EMAIL,
      ADMIN_PASSWORD: PASSWORD,
      ...GENEROUS_LIMITS,
      RATE_LIMIT_SIGNIN_FAILURES_PER_IP: `${FAILURES_PER_IP}/15m`,
      // One hash at a time, so a burst is mostly in flight when the kill lands.
      HASH_CONCURRENCY: '1',
      HASH_QUEUE_MAX: String(BURST),
    };
    const signIn = (kind: string) => call(server.base, '/api/auth', kind, { body: { email: EMAIL, password: PASSWORD } });

    let server = await startGatehouse({ env, cleanup, deadlineMs: 100_000 });
    assert.equal((await signIn('warm-up')).status, 200);

    const answered: Outcome[] = [];
    const burst = Array.from({ length: BURST }, () => signIn('burst').then((outcome) => answered.push(outcome)));
    // Kill once the first of them is answered: the rest are queued for their hash or hashing.
    const firstAnswerBy = performance.now() + 10_000;
    while (answered.length === 0 && performance.now() < firstAnswerBy) await sleep(5);
    server.child.kill();
    await server.child.exited;
    await Promise.all(burst);
    const inFlightAtKill = answered.filter((o) => o.status === 0).length;
    assert.ok(inFlightAtKill >= 1, `some sign-ins were in flight at the kill: ${answered.map(describeOutcome).join(', ')}`);
    assert.ok(
      answered.every((o) => o.status === 0 || o.status === 200 || o.status === 429),
      `before the kill, only tokens or refusals for the burst: ${answered.map(describeOutcome).join(', ')}`,
    );

    server = await startGatehouse({ env, cleanup, deadlineMs: 100_000 });
    const restartedAt = performance.now();
    const recovery: Outcome[] = [];
    for (;;) {
      const outcome = await signIn('after-restart');
      recovery.push(outcome);
      if (outcome.status === 200) break;
      assert.equal(outcome.status, 429, describeOutcome(outcome));
      const retryAfter = Number(outcome.retryAfter);
      assert.ok(retryAfter <= 2 * IN_FLIGHT_LEASE_SECONDS, `a refusal asks to wait ${retryAfter} s: longer than the attempts of the dead process may count`);
      assert.ok(performance.now() - restartedAt < 60_000, `the right password still refused a minute after the restart: ${recovery.map(describeOutcome).join(', ')}`);
      await sleep(Math.min(retryAfter, 2) * 1000);
    }
    t.diagnostic(JSON.stringify({ inFlightAtKill, refusalsAfterRestart: recovery.length - 1, recoveredAfterMs: Math.round(performance.now() - restartedAt) }));
    await server.child.stop(10_000);
  });
});
