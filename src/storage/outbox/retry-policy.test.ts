/** The retry policy alone: backoff with jitter within its bounds, and when an item is given up. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backoffMs, nextAttemptAt, type RetryPolicy } from './retry-policy.ts';

describe('retry policy', () => {
  const delays = { firstDelayMs: 5_000, maxDelayMs: 900_000, jitter: 0.2 };

  it('doubles from the first delay up to the cap, and takes off at most the jitter share at random', () => {
    assert.deepEqual([1, 2, 3, 4, 8, 9, 20, 10_000].map((n) => backoffMs(delays, n, () => 0)), [5_000, 10_000, 20_000, 40_000, 640_000, 900_000, 900_000, 900_000]);
    for (const attempts of [1, 3, 12]) {
      const nominal = backoffMs(delays, attempts, () => 0);
      for (let i = 0; i < 200; i++) {
        const wait = backoffMs(delays, attempts);
        assert.ok(wait <= nominal && wait >= Math.floor(nominal * 0.8), `${wait} within 80-100 % of ${nominal}`);
      }
    }
    assert.equal(backoffMs(delays, 1, () => 0.999_999), 4_000);
  });

  it('gives up after maxAttempts, or at the end of maxAgeMs after one last try there', () => {
    const item = (attempts: number, firstAttemptAt: number | null = null) => ({ attempts, firstAttemptAt });
    const byTries: RetryPolicy<ReturnType<typeof item>> = { ...delays, maxAttempts: 3 };
    assert.equal(nextAttemptAt(byTries, item(2), { startedAt: 0, doneAt: 100 }, () => 0), 10_100);
    assert.equal(nextAttemptAt(byTries, item(3), { startedAt: 0, doneAt: 100 }, () => 0), null);
    const byAge: RetryPolicy<ReturnType<typeof item>> = { ...delays, maxAgeMs: 60_000, firstAttemptAt: (i) => i.firstAttemptAt };
    assert.equal(nextAttemptAt(byAge, item(1), { startedAt: 1_000, doneAt: 1_500 }, () => 0), 6_500, 'the first try starts the window');
    assert.equal(nextAttemptAt(byAge, item(5, 1_000), { startedAt: 50_000, doneAt: 50_000 }, () => 0), 61_000, 'the last try at the window’s end');
    assert.equal(nextAttemptAt(byAge, item(6, 1_000), { startedAt: 61_000, doneAt: 61_000 }, () => 0), null);
  });
});
