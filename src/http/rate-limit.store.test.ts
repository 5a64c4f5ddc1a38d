import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../../test/helpers/databases.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { useStorageRateLimiters } from '../../test/helpers/rate-limiters.ts';
import { purgeEndedCounters } from './rate-limit.store.ts';

for (const backend of await backends()) {
  describe(`rate-limit counters in storage (${backend.name})`, { skip: backend.skip }, () => {
    const clock = fakeClock();
    const t = useStorageRateLimiters(backend, clock);

    it('counts concurrent requests exactly, refuses past the limit, and starts a new window when one ends', async () => {
      const limiter = t.limiters.create('test-concurrent', { points: 15, durationSeconds: 60 });
      const waits = await Promise.all(Array.from({ length: 20 }, () => limiter.consume('k')));
      assert.equal(waits.filter((wait) => wait === null).length, 15, 'exactly the limit went through');
      assert.ok(waits.filter((wait) => wait !== null).every((wait) => wait! >= 1 && wait! <= 60));
      assert.equal(await limiter.count('k'), 20);
      assert.ok((await limiter.check('k')) !== null);
      clock.advance(60_000);
      assert.equal(await limiter.count('k'), 0, 'the window ended');
      assert.equal(await limiter.consume('k'), null);
      assert.equal(await limiter.count('k'), 1);
    });

    it('blocks, sets a count with no end, and resets', async () => {
      const limiter = t.limiters.create('test-block', { points: 3, durationSeconds: 60 });
      await limiter.block('b', 5);
      assert.equal(await limiter.check('b'), 5);
      await limiter.set('forever', 3, 0);
      clock.advance(365 * 86_400_000);
      assert.equal(await limiter.check('forever'), 86_400, 'no end: come back tomorrow');
      await limiter.reset('forever');
      assert.equal(await limiter.check('forever'), null);
    });

    it('purges ended windows in bounded batches, never live ones or ones with no end', async () => {
      const limiter = t.limiters.create('test-purge', { points: 100, durationSeconds: 10 });
      for (let i = 0; i < 7; i += 1) await limiter.consume(`old-${i}`);
      await limiter.set('locked', 100, 0);
      clock.advance(11_000);
      await limiter.consume('live');
      assert.equal(await purgeEndedCounters(t.storage.db, clock(), 5), 5, 'at most one batch');
      let rest = 0;
      for (let count = -1; count !== 0; rest += Math.max(count, 0)) count = await purgeEndedCounters(t.storage.db, clock(), 5);
      assert.ok(rest >= 2, 'the rest, with other tests’ ended windows');
      const keys = (await t.storage.db.selectFrom('rate_limits').select('key').where('key', 'like', 'test-purge%').execute()).map((row) => row.key).sort();
      assert.deepEqual(keys, ['test-purge:live', 'test-purge:locked']);
    });
  });
}
