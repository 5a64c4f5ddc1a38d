/**
 * The throttle's counting under concurrency, against counters whose writes can be held: an
 * attempt must always be visible to the others, either in flight or as the failure it led to.
 * (Review of finding 15.6: recording a failure in parallel with giving the place back let a
 * guess through in the gap, past RATE_LIMIT_SIGNIN_FAILURES_PER_IP.)
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Limiter, RateLimiters } from '../http/rate-limit.ts';
import type { Config, RateLimit } from '../config.ts';
import { createSignInThrottle } from './signin-throttle.ts';

/** In-memory counters; writes to the failure counters wait while `hold` is set. */
function memoryLimiters(clock: () => number) {
  let hold: Promise<void> | null = null;
  const counts = new Map<string, number>();
  const limiters: RateLimiters = {
    backend: 'storage',
    create(name: string, limit: RateLimit): Limiter {
      const key = (k: string) => `${name}:${k}`;
      const slowWrite = async () => {
        if (name.startsWith('signin-fail') && hold !== null) await hold;
      };
      const add = (k: string, points: number) => {
        const next = (counts.get(key(k)) ?? 0) + points;
        counts.set(key(k), next);
        return next;
      };
      return {
        async consume(k, points = 1) {
          await slowWrite();
          return add(k, points) > limit.points ? 1 : null;
        },
        async increment(k) {
          await slowWrite();
          return add(k, 1);
        },
        async refund(k, points = 1) {
          add(k, -points);
        },
        async check(k) {
          return (counts.get(key(k)) ?? 0) >= limit.points ? 60 : null;
        },
        async count(k) {
          return counts.get(key(k)) ?? 0;
        },
        async block() {},
        async set(k, points) {
          counts.set(key(k), points);
        },
        async reset(k) {
          counts.delete(key(k));
        },
      };
    },
    async start() {},
    async close() {},
  };
  return {
    limiters,
    holdFailureWrites() {
      let release!: () => void;
      hold = new Promise<void>((resolve) => (release = resolve));
      return () => {
        hold = null;
        release();
      };
    },
    clock,
  };
}

const LIMITS = {
  signinPerIp: { points: 1_000, durationSeconds: 60 },
  signinFailuresPerIp: { points: 2, durationSeconds: 900 },
} as unknown as Config['rateLimits'];
const THROTTLE = { delayAfterFailures: 100, maxDelaySeconds: 900, lockAfterFailures: 100 } as Config['signinThrottle'];

describe('sign-in throttle under concurrency', () => {
  it('an attempt whose failure is being written still counts: no guess slips through the gap', async () => {
    const memory = memoryLimiters(() => 1_000_000);
    const throttle = createSignInThrottle({ limiters: memory.limiters, rateLimits: LIMITS, throttle: THROTTLE, clock: memory.clock, hashQueueTimeoutMs: 5_000 });
    const ip = '198.51.100.7';
    const first = await throttle.checkAttempt('a@example.com', ip);
    const second = await throttle.checkAttempt('b@example.com', ip);
    assert.ok(first.ok && second.ok);

    const release = memory.holdFailureWrites();
    const failing = first.attempt.failed(); // its failure is being written
    await new Promise((resolve) => setImmediate(resolve));
    const third = await throttle.checkAttempt('c@example.com', ip);
    assert.equal(third.ok, false, 'the limit (2) is reached by one failure being written and one attempt in flight');
    release();
    await failing;

    await second.attempt.failed();
    const fourth = await throttle.checkAttempt('d@example.com', ip);
    assert.deepEqual(fourth, { ok: false, retryAfterSeconds: 60 }, 'two failures: the window');
  });

  it('a lease outlasts the longest wait for a hash', async () => {
    const memory = memoryLimiters(() => 0);
    const seen: number[] = [];
    const limiters: RateLimiters = {
      ...memory.limiters,
      create(name, limit) {
        if (name.startsWith('signin-pending')) seen.push(limit.durationSeconds);
        return memory.limiters.create(name, limit);
      },
    };
    createSignInThrottle({ limiters, rateLimits: LIMITS, throttle: THROTTLE, clock: memory.clock, hashQueueTimeoutMs: 60_000 });
    // Two slots of at least the 60 s queue wait plus a margin.
    assert.ok(seen.length === 2 && seen.every((window) => window >= 2 * 75), `lease windows ${seen.join(', ')}`);
  });
});
