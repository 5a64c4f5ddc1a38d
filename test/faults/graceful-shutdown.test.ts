/**
 * Graceful shutdown (issue 9, fault 5): SIGTERM to a real server process with requests in flight.
 * Those requests finish with their normal answers (sign-ins queued for the password hasher, and
 * forgot-password requests, which are held to 250 ms); new connections after the signal are
 * refused or answered 503; the process exits 0 within main.ts's SHUTDOWN_TIMEOUT_MS (10 s). A
 * client that never finishes sending its request must not hold the exit past that bound either:
 * it is cut after main.ts's DRAIN_TIMEOUT_MS (6 s).
 */
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { performance } from 'node:perf_hooks';
import { GENEROUS_LIMITS } from '../helpers/app.ts';
import { serverScratch, startGatehouse, type RunningGatehouse } from '../helpers/process.ts';
import { callOnNewConnection, countOutcomes, describeOutcome, sleep, type Outcome } from '../helpers/traffic.ts';

/** main.ts's SHUTDOWN_TIMEOUT_MS. */
const SHUTDOWN_TIMEOUT_MS = 10_000;
const ADMIN_EMAIL = 'shutdown-admin@example.test';
const ADMIN_PASSWORD = 'amber-lighthouse-quarry-77';
/** At most this many sign-ins in flight; fewer on a machine where a hash is slow (see signInsFor). */
const MAX_SIGNINS_IN_FLIGHT = 16;
/**
 * The queued sign-ins should take about this long in all. With one hash at a time they finish one
 * after another, and each must finish within HASH_QUEUE_TIMEOUT_MS of arriving (or it is answered
 * 503, as it should be) and all within main.ts's DRAIN_TIMEOUT_MS (6 s) of the signal: a fixed 16
 * took past both on a slow CI machine.
 */
const QUEUE_BUDGET_MS = 2_500;
const RESETS_IN_FLIGHT = 6;

async function start(t: TestContext): Promise<RunningGatehouse> {
  const { cleanup, env: serverEnv } = serverScratch(t, 'fault-shutdown');
  return startGatehouse({
    env: {
      ...serverEnv,
      // At debug, a line as each request arrives ('incoming request'): what is in flight at the signal.
      LOG_LEVEL: 'debug',
      ADMIN_EMAIL,
      ADMIN_PASSWORD,
      // One hash at a time: the sign-ins below queue up, so some are still waiting at the signal.
      HASH_CONCURRENCY: '1',
      ...GENEROUS_LIMITS,
    },
    cleanup,
    deadlineMs: 45_000,
  });
}

const incoming = (server: RunningGatehouse) => server.child.logs().filter((entry) => entry.msg === 'incoming request').length;

async function waitForIncoming(server: RunningGatehouse, count: number, timeoutMs: number): Promise<void> {
  const started = performance.now();
  while (incoming(server) < count) {
    if (performance.now() - started > timeoutMs) throw new Error(`only ${incoming(server)} of ${count} requests arrived within ${timeoutMs} ms`);
    await sleep(10);
  }
}

describe('graceful shutdown on SIGTERM', { timeout: 60_000 }, () => {
  it('finishes the requests in flight, refuses new ones, and exits 0 within the bound', async (t) => {
    const server = await start(t);
    // A sign-in's time on this machine now (the slowest of three, one after another) sizes the queue.
    let slowestMs = 0;
    for (let i = 0; i < 3; i++) {
      const warm = await callOnNewConnection(server.base, '/api/auth', 'signin', { body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } });
      assert.equal(warm.status, 200, describeOutcome(warm));
      slowestMs = Math.max(slowestMs, warm.doneAt - warm.sentAt);
    }
    const signIns = Math.max(3, Math.min(MAX_SIGNINS_IN_FLIGHT, Math.floor(QUEUE_BUDGET_MS / slowestMs)));

    const before = incoming(server);
    const inFlight: Array<Promise<Outcome>> = [];
    for (let i = 0; i < signIns; i++) {
      inFlight.push(callOnNewConnection(server.base, '/api/auth', 'signin', { body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } }));
    }
    for (let i = 0; i < RESETS_IN_FLIGHT; i++) {
      inFlight.push(callOnNewConnection(server.base, '/api/auth/forgot-password', 'forgot-password', { body: { email: i % 2 === 0 ? ADMIN_EMAIL : `nobody${i}@example.test` } }));
    }
    // Every one of them has reached the server before the signal.
    await waitForIncoming(server, before + inFlight.length, 10_000);

    const signalAt = performance.now();
    server.child.process.kill('SIGTERM');
    await server.child.waitForLog((entry) => entry.msg === 'shutting down', 5_000, '"shutting down"');

    // New connections from now on: refused, or 503 if one is still accepted while closing.
    const probes: Outcome[] = [];
    while (!server.child.hasExited() && performance.now() - signalAt < SHUTDOWN_TIMEOUT_MS + 5_000) {
      probes.push(await callOnNewConnection(server.base, '/api/health', 'health-after-signal', { timeoutMs: 5_000 }));
      await sleep(20);
    }
    const exit = await server.child.waitForExit(SHUTDOWN_TIMEOUT_MS + 5_000);
    const exitMs = performance.now() - signalAt;
    const answers = await Promise.all(inFlight);

    t.diagnostic(
      JSON.stringify({
        signInMs: Math.round(slowestMs),
        inFlight: countOutcomes(answers),
        lastInFlightAnsweredMs: Math.round(Math.max(...answers.map((a) => a.doneAt)) - signalAt),
        probesAfterSignal: countOutcomes(probes),
        exit,
        exitMs: Math.round(exitMs),
      }),
    );

    for (const answer of answers) {
      const expected = answer.kind === 'signin' ? 200 : 202;
      assert.equal(answer.status, expected, `in flight at SIGTERM: ${describeOutcome(answer)}`);
    }
    assert.ok(answers.filter((a) => a.kind === 'signin').every((a) => typeof a.body?.token === 'string'), 'every in-flight sign-in got its token');
    assert.ok(
      answers.some((a) => a.doneAt - signalAt > 100),
      'some requests were still being worked on well after the signal (otherwise nothing was in flight)',
    );
    for (const probe of probes) {
      const refused = probe.status === 0 && ['ECONNREFUSED', 'ECONNRESET'].includes(probe.code ?? '');
      assert.ok(refused || (probe.status === 503 && probe.code === 'SERVICE_UNAVAILABLE'), `a new connection after the signal: ${describeOutcome(probe)}`);
    }
    assert.ok(probes.length > 0, 'new connections were tried while it shut down');
    assert.deepEqual(exit, { code: 0, signal: null });
    assert.ok(exitMs < SHUTDOWN_TIMEOUT_MS, `exited ${Math.round(exitMs)} ms after SIGTERM`);
    assert.deepEqual(
      server.child.logs().filter((entry) => (entry.level ?? 0) >= 50),
      [],
      'nothing logged at error level',
    );
  });

  it('a client that never finishes its request does not hold the exit past the bound', async (t) => {
    const server = await start(t);
    // Half a request: headers sent, body promised but never sent; and a connection that says nothing.
    const stalled = connect({ host: '127.0.0.1', port: server.port });
    const silent = connect({ host: '127.0.0.1', port: server.port });
    t.after(() => {
      stalled.destroy();
      silent.destroy();
    });
    stalled.on('error', () => {});
    silent.on('error', () => {});
    await new Promise<void>((resolve) => stalled.once('connect', () => resolve()));
    stalled.write(`POST /api/auth HTTP/1.1\r\nHost: 127.0.0.1:${server.port}\r\ncontent-type: application/json\r\ncontent-length: 200\r\n\r\n{"email":`);
    await sleep(200);

    const signalAt = performance.now();
    server.child.process.kill('SIGTERM');
    const exit = await server.child.waitForExit(SHUTDOWN_TIMEOUT_MS + 5_000);
    const exitMs = performance.now() - signalAt;
    t.diagnostic(JSON.stringify({ exit, exitMs: Math.round(exitMs) }));
    assert.ok(exitMs < SHUTDOWN_TIMEOUT_MS + 1_000, `exited ${Math.round(exitMs)} ms after SIGTERM`);
    assert.deepEqual(exit, { code: 0, signal: null }, 'a stalled client is cut off, not a failed shutdown');
    assert.ok(
      server.child.logs().some((entry) => entry.msg === 'shutdown: closing connections still open after the drain period'),
      'the cut is logged',
    );
  });
});
