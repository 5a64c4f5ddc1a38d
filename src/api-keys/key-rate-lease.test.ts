/**
 * A key's rate limit counted in leases (key-rate-lease.ts), over the real storage-backed counters
 * on every backend: a busy key writes its counter once per lease, not per request; a key used now
 * and then is counted exactly; the limit still holds (the last points one by one); a lapsed lease
 * starts over at one point; concurrent requests share one lease being counted.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../../test/helpers/databases.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { useStorageRateLimiters } from '../../test/helpers/rate-limiters.ts';
import type { Limiter } from '../http/rate-limit.ts';
import { LEASE_MS, leasedLimiter } from './key-rate-lease.ts';

for (const backend of await backends()) {
  describe(`API-key rate limits in leases (${backend.name})`, { skip: backend.skip }, () => {
    const clock = fakeClock();
    const t = useStorageRateLimiters(backend, clock);
    let monotonic = 0;
    const now = () => monotonic;

    /** The shared limiter, with its consume calls counted. */
    const counted = (name: string, points: number) => {
      const shared = t.limiters.create(name, { points, durationSeconds: 60 });
      const calls = { consume: 0 };
      const spy: Pick<Limiter, 'consume' | 'count'> = {
        consume: (key, size) => (calls.consume++, shared.consume(key, size)),
        count: (key) => shared.count(key),
      };
      return { shared, calls, limiter: leasedLimiter(spy, points, now) };
    };

    it('a busy key counts its limit in growing leases, and is refused exactly at the limit', async () => {
      const { shared, calls, limiter } = counted('lease-busy', 600);
      let accepted = 0;
      let firstRefusal: number | null = null;
      for (let i = 0; i < 700; i++) {
        const wait = await limiter.consume('key-a');
        if (wait === null) accepted++;
        else firstRefusal ??= wait;
      }
      assert.equal(accepted, 600, 'exactly the limit went through');
      assert.ok(firstRefusal !== null && firstRefusal >= 1 && firstRefusal <= 60, 'refused with the shared counter\'s wait');
      // Leases of 1, 2, 4 … 30 (5 % of 600), the last points one by one, one refusal counted: far fewer counts than requests.
      assert.ok(calls.consume < 60, `${calls.consume} counts for 700 requests`);
      assert.ok((await shared.count('key-a')) >= 600);
      // Refused here until the shared window ends, then counted again.
      monotonic += firstRefusal * 1000;
      clock.advance(60_000);
      assert.equal(await limiter.consume('key-a'), null, 'a new window');
    });

    it('a key used now and then is counted one point per request', async () => {
      const { shared, limiter } = counted('lease-slow', 600);
      for (let i = 0; i < 5; i++) {
        assert.equal(await limiter.consume('key-b'), null);
        monotonic += LEASE_MS + 1;
      }
      assert.equal(await shared.count('key-b'), 5, 'no point counted and lost');
    });

    it('concurrent requests wait for the lease being counted instead of counting their own', async () => {
      const { shared, calls, limiter } = counted('lease-concurrent', 600);
      // Grow the lease first: 1, 2, 4, 8.
      for (let i = 0; i < 15; i++) assert.equal(await limiter.consume('key-c'), null);
      const before = calls.consume;
      const waits = await Promise.all(Array.from({ length: 16 }, () => limiter.consume('key-c')));
      assert.ok(waits.every((wait) => wait === null));
      assert.ok(calls.consume - before <= 2, `${calls.consume - before} counts for 16 concurrent requests`);
      assert.ok((await shared.count('key-c')) >= 31);
    });
  });
}
