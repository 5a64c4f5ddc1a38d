import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { createStrengthEstimator, ESTIMATED_LENGTH, estimationInput, TooManyEstimatesError } from './password-strength.ts';
import { UnavailableError } from '../errors.ts';

describe('the password strength worker', () => {
  it('estimates in a worker that starts on demand and ends when idle', async () => {
    const estimator = createStrengthEstimator({ idleMs: 200 });
    assert.equal(estimator.isRunning(), false, 'nothing runs before the first estimate');
    const [weak, strong, personal] = await Promise.all([
      estimator.estimate('password1', []),
      estimator.estimate('violet harbour lantern quietly 42', []),
      estimator.estimate('ada.lovelace1815', ['ada.lovelace', 'lovelace']),
    ]);
    assert.ok(weak.score <= 1 && weak.dictionaryNames.some((name) => name.startsWith('passwords')), JSON.stringify(weak));
    assert.equal(strong.score, 4, JSON.stringify(strong));
    assert.ok(personal.dictionaryNames.includes('userInputs'), JSON.stringify(personal));
    assert.equal(estimator.isRunning(), true);

    await sleep(600);
    assert.equal(estimator.isRunning(), false, 'the idle worker has ended');
    // And a new one starts for the next estimate.
    assert.equal((await estimator.estimate('password1', [])).score, weak.score);
  });

  it('keeps the event loop free while it estimates', async () => {
    const estimator = createStrengthEstimator({ idleMs: 200 });
    await estimator.estimate('warm up', []);
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 1);
    // A long keyboard walk is among zxcvbn's worst cases (about half a second on this machine's
    // main thread, at the 64 characters judged); the main thread keeps turning meanwhile.
    const walk = '1qaz2wsx3edc4rfv5tgb6yhn7ujm8ik,9ol.0p;/'.repeat(3).slice(0, 100);
    assert.equal((await estimator.estimate(walk, [])).score, 4);
    clearInterval(ticker);
    assert.ok(ticks > 0, 'timers ran while the estimates were computed');
  });

  it('answers "unavailable" (503) past its queue or its time bound, and recovers with a fresh worker', async () => {
    const walk = '1qaz2wsx3edc4rfv5tgb6yhn7ujm8ik,9ol.0p;/'.repeat(3).slice(0, 100);
    const queued = createStrengthEstimator({ idleMs: 200, maxPending: 2 });
    const first = queued.estimate(walk, []);
    const second = queued.estimate('second', []);
    await assert.rejects(queued.estimate('third', []), UnavailableError);
    assert.equal((await first).score, 4);
    assert.ok((await second).score >= 0);

    const hurried = createStrengthEstimator({ idleMs: 200, timeoutMs: 50 });
    await hurried.estimate('warm up', []).catch(() => {});
    await assert.rejects(hurried.estimate(walk, []), UnavailableError);
    assert.equal(hurried.isRunning(), false, 'the worker that did not answer was ended');
    const quick = createStrengthEstimator({ idleMs: 200 });
    assert.equal((await quick.estimate('password1', [])).score <= 1, true);
  });

  it('tells a slow start from a stuck worker: an estimate\'s bound runs from the worker\'s "ready", the start has its own', async () => {
    // A worker whose start takes longer than an estimate's bound, for certain (not by timing this machine).
    const START_DELAY_MS = 2_500; // the fixture's
    const slowStart = new URL('../../test/fixtures/slow-start-strength-worker.mjs', import.meta.url);
    const timeoutMs = START_DELAY_MS / 2;
    const patient = createStrengthEstimator({ idleMs: 200, timeoutMs, workerUrl: slowStart });
    const startedAt = performance.now();
    assert.ok((await patient.estimate('password1', [])).score <= 1, 'the estimate sent during the start is answered');
    assert.ok(performance.now() - startedAt >= START_DELAY_MS, 'it waited for the whole start, longer than its own bound');
    assert.equal(patient.isRunning(), true, 'and the worker was not taken for stuck');
    // A start past its own bound is refused (503) and the worker ended; the next estimate starts another.
    const impatient = createStrengthEstimator({ idleMs: 200, startTimeoutMs: timeoutMs, workerUrl: slowStart });
    await assert.rejects(impatient.estimate('password1', []), UnavailableError);
    assert.equal(impatient.isRunning(), false);
  });

  it('tells a long queue from a stuck worker: waiting for a turn never ends the worker', async () => {
    const walk = '1qaz2wsx3edc4rfv5tgb6yhn7ujm8ik,9ol.0p;/'.repeat(3).slice(0, 100);
    const probe = createStrengthEstimator({ idleMs: 200 });
    await probe.estimate('warm up', []);
    const startedAt = performance.now();
    await probe.estimate(walk, []);
    const oneWalkMs = performance.now() - startedAt;
    // Each walk gets three times what one took; five queued take five times that in all, so the
    // last ones wait past the bound for their turn. They are refused (503); the worker, which
    // answers every estimate it is given in time, is not ended for it.
    const estimator = createStrengthEstimator({ idleMs: 60_000, timeoutMs: Math.ceil(3 * oneWalkMs) });
    await estimator.estimate('warm up', []);
    const outcomes = await Promise.allSettled(Array.from({ length: 5 }, () => estimator.estimate(walk, [])));
    assert.equal(outcomes[0]!.status, 'fulfilled');
    assert.equal(outcomes[1]!.status, 'fulfilled');
    for (const outcome of outcomes) if (outcome.status === 'rejected') assert.ok(outcome.reason instanceof UnavailableError, String(outcome.reason));
    assert.equal(estimator.isRunning(), true, 'the worker was never taken for stuck');
  });
});

/**
 * "One user stalls password-strength checks for everyone": an estimate's cost is bounded by the
 * length it judges, and one caller's estimates cannot crowd out another's.
 */
describe('one user cannot stall password-strength checks: the cost of each estimate is bounded', () => {
  const walk = '1qaz2wsx3edc4rfv5tgb6yhn7ujm8ik,9ol.0p;/';

  it('judges at most the first ESTIMATED_LENGTH characters of a very long password', async () => {
    assert.equal(ESTIMATED_LENGTH, 64);
    // What the worker is given.
    assert.equal(estimationInput('short one'), 'short one');
    const long = walk.repeat(103).slice(0, 4096);
    assert.equal(estimationInput(long), long.slice(0, ESTIMATED_LENGTH));
    // Counted in code points: an astral character is one, however many UTF-16 units.
    assert.equal([...estimationInput('😀'.repeat(4096))].length, ESTIMATED_LENGTH);
    assert.equal(estimationInput(`${'a'.repeat(63)}😀tail`), `${'a'.repeat(63)}😀`);

    // And what the worker reports it judged, for passwords far past the cap.
    const estimator = createStrengthEstimator({ idleMs: 200 });
    for (const password of [long, '😀🙈'.repeat(2048), `${walk.slice(0, 10)}${'9'.repeat(4000)}`]) {
      const estimate = await estimator.estimate(password, []);
      assert.equal(estimate.judgedLength, ESTIMATED_LENGTH, `${password.slice(0, 12)}…: judged ${estimate.judgedLength}`);
    }
    assert.equal((await estimator.estimate('correct horse battery staple', [])).judgedLength, 28, 'a shorter one is judged whole');
  });

  it('refuses a caller past its share of estimates in progress (TooManyEstimatesError), while another caller is still served', async () => {
    const estimator = createStrengthEstimator({ idleMs: 200, maxPendingPerCaller: 2 });
    const slow = walk.repeat(2).slice(0, ESTIMATED_LENGTH);
    const mine = [estimator.estimate(slow, [], 'client-a'), estimator.estimate(slow, [], 'client-a')];
    await assert.rejects(estimator.estimate(slow, [], 'client-a'), TooManyEstimatesError);
    const theirs = await estimator.estimate('violet harbour lantern quietly 42', [], 'client-b');
    assert.equal(theirs.score, 4);
    await Promise.all(mine);
    // Without a caller (the CLI, start-up), no share applies.
    const local = await Promise.all(Array.from({ length: 4 }, () => estimator.estimate('password1', [])));
    assert.equal(local.length, 4);
  });
});
