import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { BoundedConcurrency, CapacityExceededError, KeyCapacityExceededError } from './bounded-concurrency.ts';

describe('BoundedConcurrency', () => {
  it('never runs more than maxConcurrent tasks at once', async () => {
    const limiter = new BoundedConcurrency({ maxConcurrent: 2, maxQueued: 10, queueTimeoutMs: 1_000 });
    let running = 0;
    let peak = 0;
    await Promise.all(
      Array.from({ length: 8 }, () =>
        limiter.run(async () => {
          peak = Math.max(peak, ++running);
          await sleep(5);
          running--;
        }),
      ),
    );
    assert.equal(peak, 2);
    assert.equal(limiter.running, 0);
    assert.equal(limiter.queued, 0);
  });

  it('refuses at once when the queue is full', async () => {
    const limiter = new BoundedConcurrency({ maxConcurrent: 1, maxQueued: 1, queueTimeoutMs: 1_000 });
    const results = await Promise.allSettled(Array.from({ length: 3 }, () => limiter.run(() => sleep(20))));
    assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'fulfilled', 'rejected']);
    assert.ok((results[2] as PromiseRejectedResult).reason instanceof CapacityExceededError);
  });

  it('refuses a waiter whose wait exceeds the timeout, and frees its place', async () => {
    const limiter = new BoundedConcurrency({ maxConcurrent: 1, maxQueued: 5, queueTimeoutMs: 10 });
    const slow = limiter.run(() => sleep(60));
    await assert.rejects(limiter.run(async () => 'late'), CapacityExceededError);
    assert.equal(limiter.queued, 0);
    await slow;
    assert.equal(await limiter.run(async () => 'ok'), 'ok');
  });

  it('releases the slot when a task fails', async () => {
    const limiter = new BoundedConcurrency({ maxConcurrent: 1, maxQueued: 0, queueTimeoutMs: 10 });
    await assert.rejects(limiter.run(async () => { throw new Error('boom'); }), /boom/);
    assert.equal(await limiter.run(async () => 1), 1);
  });
});

/** "One user stalls password-strength checks for everyone": turns are shared fairly between callers. */
describe('one user cannot stall password-strength checks: BoundedConcurrency shares turns fairly by key', () => {
  /** A task that runs until `finish()`; `started` resolves when it gets its slot. */
  function gate() {
    let finish!: () => void;
    let markStarted!: () => void;
    const done = new Promise<void>((resolve) => (finish = resolve));
    const started = new Promise<void>((resolve) => (markStarted = resolve));
    return { started, finish, task: () => (markStarted(), done) };
  }

  it('serves waiting tasks round-robin by key: a backlog of one key delays another by one task, not the backlog', async () => {
    const limiter = new BoundedConcurrency({ maxConcurrent: 1, maxQueued: 20, queueTimeoutMs: 5_000 });
    const order: string[] = [];
    const gates = new Map<string, ReturnType<typeof gate>>();
    const submit = (key: string, label: string) => {
      const g = gate();
      gates.set(label, g);
      return limiter.run(async () => { order.push(label); await g.task(); }, key);
    };
    const runs = [submit('A', 'a1'), submit('A', 'a2'), submit('A', 'a3'), submit('A', 'a4'), submit('B', 'b1'), submit('C', 'c1'), submit('B', 'b2')];
    // Each task ends once it has started; the order of starts is the order of turns.
    for (const label of ['a1', 'b1', 'c1', 'a2', 'b2', 'a3', 'a4']) {
      const g = gates.get(label)!;
      await Promise.race([g.started, sleep(2_000).then(() => assert.fail(`${label} never got its turn; order so far ${order.join(',')}`))]);
      g.finish();
    }
    await Promise.all(runs);
    assert.deepEqual(order, ['a1', 'b1', 'c1', 'a2', 'b2', 'a3', 'a4']);
    assert.equal(limiter.queued, 0);
    assert.equal(limiter.running, 0);
  });

  it('refuses a key past maxPendingPerKey at once, while other keys still get in', async () => {
    const limiter = new BoundedConcurrency({ maxConcurrent: 1, maxQueued: 10, queueTimeoutMs: 5_000, maxPendingPerKey: 2 });
    const first = gate();
    const runs = [limiter.run(first.task, 'A'), limiter.run(async () => 'a2', 'A')];
    await assert.rejects(limiter.run(async () => 'a3', 'A'), KeyCapacityExceededError);
    const other = limiter.run(async () => 'b1', 'B');
    first.finish();
    assert.equal(await other, 'b1');
    await Promise.all(runs);
    // Its tasks done, the key may run again.
    assert.equal(await limiter.run(async () => 'a4', 'A'), 'a4');
  });

  it('without keys, waits first come, first served, as before', async () => {
    const limiter = new BoundedConcurrency({ maxConcurrent: 1, maxQueued: 10, queueTimeoutMs: 5_000 });
    const order: number[] = [];
    await Promise.all(Array.from({ length: 6 }, (_, i) => limiter.run(async () => { order.push(i); await sleep(1); })));
    assert.deepEqual(order, [0, 1, 2, 3, 4, 5]);
  });
});
