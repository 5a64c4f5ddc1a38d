import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { BoundedConcurrency, CapacityExceededError } from './bounded-concurrency.ts';

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
