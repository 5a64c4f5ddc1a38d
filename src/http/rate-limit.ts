/**
 * Shared counters for rate limits, with `rate-limiter-flexible`: in storage by default (they
 * survive restarts and, on PostgreSQL, hold across instances), in Redis when REDIS_URL is set.
 * Every limiter has an in-memory insurance limiter with the same limit: when its store fails
 * (Redis down, say), this instance goes on counting on its own and says so in the log, and when the
 * store answers again it is used again. Limits are never skipped.
 */
import type { Redis } from 'ioredis';
import { createRequire } from 'node:module';
import type { RateLimiterAbstract, RateLimiterMemory as MemoryType, RateLimiterRedis as RedisType, RateLimiterRes as ResType } from 'rate-limiter-flexible';
import type { FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import { ConfigError, type RateLimit } from '../config.ts';
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { sha256Base64url } from '../lib/random.ts';
import { AppError } from '../errors.ts';
import { normaliseEmail } from '../users/email.ts';
import { StorageRateLimiter } from './rate-limit.store.ts';

// The three classes used, each from its own file: the package's index requires every store it
// has (Mongo, MySQL, DynamoDB, Etcd, Prisma, Drizzle, Valkey, …), some 30 files loaded at every
// start for nothing. rate-limit.store.ts takes its two the same way.
const require = createRequire(import.meta.url);
const RateLimiterMemory = require('rate-limiter-flexible/lib/RateLimiterMemory.js') as typeof MemoryType;
const RateLimiterRedis = require('rate-limiter-flexible/lib/RateLimiterRedis.js') as typeof RedisType;
const RateLimiterRes = require('rate-limiter-flexible/lib/RateLimiterRes.js') as typeof ResType;
type RateLimiterRes = ResType;

const MAX_MEMORY_WINDOW_SECONDS = 86_400;

/**
 * The key for a client address: IPv4 as is (also when written as `::ffff:a.b.c.d`), IPv6 by its
 * /64, the block one subscriber gets, so rotating through it does not buy more attempts.
 */
export function clientKey(ip: string | null | undefined): string {
  if (ip === null || ip === undefined || ip === '') return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1]!;
  if (!ip.includes(':')) return ip;
  return `${expandIpv6(ip).slice(0, 4).join(':')}::/64`;
}

/** The eight groups of an IPv6 address, lower case, without zone. */
function expandIpv6(ip: string): string[] {
  const [head = '', tail] = ip.split('%')[0]!.toLowerCase().split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const missing = tail === undefined ? 0 : 8 - left.length - right.length;
  return [...left, ...Array.from({ length: Math.max(0, missing) }, () => '0'), ...right].map((group) => group.replace(/^0+(?=.)/, ''));
}

/** Seconds to wait before trying again; null when the request may go ahead. */
export type Wait = number | null;

export interface Limiter {
  /**
   * Counts `points` against `key` (in a window of `durationSeconds` when that starts a new one,
   * else the limiter's); the wait when that went over the limit. That is a refusal, and is reported as
   * one (see `observeRefusals`): to record something that happened, use `increment`.
   */
  consume(key: string, points?: number, durationSeconds?: number): Promise<Wait>;
  /** Counts one against `key` and returns the count just reached, atomically (over the limit or not). */
  increment(key: string): Promise<number>;
  /** Gives back points counted for something that did not happen after all. */
  refund(key: string, points?: number): Promise<void>;
  /**
   * Tells the refusal observer (metrics) that a request was refused on this limiter's count by a
   * decision its caller made (`enterWithin`); a refusing `consume` reports itself.
   */
  reportRefusal?(): void;
  /** Whether `key` has used up its limit already, without counting anything. */
  check(key: string): Promise<Wait>;
  /** Points counted against `key` in its current window (0 when none). */
  count(key: string): Promise<number>;
  /** Refuses `key` for `seconds` from now (`0`: until reset). */
  block(key: string, seconds: number): Promise<void>;
  /** Sets the count of `key`, with a window of `seconds` (`0`: no end). */
  set(key: string, points: number, seconds: number): Promise<void>;
  reset(key: string): Promise<void>;
}

export interface RateLimiters {
  readonly backend: 'storage' | 'redis';
  create(name: string, limit: RateLimit): Limiter;
  /**
   * Connects the shared store when it is Redis, and refuses a Redis that refuses the connection's
   * setup (see `refuseMisconfiguredRedis`). Until then (and in the CLI, which never starts it)
   * every limiter counts in memory. Nothing to do for storage.
   */
  start(): Promise<void>;
  close(): Promise<void>;
  /**
   * Sets (null: removes) the one observer told of every refusal, by limiter name: a `consume` that
   * refused, or an `enterWithin` that did. Called in the request; it must not throw or do I/O.
   */
  observeRefusals?(observer: RefusalObserver | null): void;
}

/** Told the name of the limiter that refused a request (`signin-ip`, `forgot-address`…), never its key. */
export type RefusalObserver = (limiter: string) => void;

/** A limiter key for an address: its normal form, hashed, so no counter names a person. */
export function accountKey(email: string): string {
  return sha256Base64url(normaliseEmail(email));
}

/** What Retry-After says for a key refused with no end (a locked password): come back tomorrow. */
const NO_END_WAIT_SECONDS = 86_400;

function toWait(res: RateLimiterRes): number {
  if (res.msBeforeNext < 0) return NO_END_WAIT_SECONDS;
  return Math.max(1, Math.ceil(res.msBeforeNext / 1000));
}

function wrap(limiter: RateLimiterAbstract, points: number, refused: () => void = () => {}): Limiter {
  return {
    async consume(key, amount = 1, durationSeconds) {
      try {
        await limiter.consume(key, amount, durationSeconds === undefined ? {} : { customDuration: durationSeconds });
        return null;
      } catch (rejection) {
        if (rejection instanceof RateLimiterRes) {
          refused();
          return toWait(rejection);
        }
        throw rejection;
      }
    },
    reportRefusal: refused,
    async check(key) {
      const res = await limiter.get(key);
      return res !== null && res.consumedPoints >= points ? toWait(res) : null;
    },
    async count(key) {
      return (await limiter.get(key))?.consumedPoints ?? 0;
    },
    async increment(key) {
      try {
        return (await limiter.consume(key, 1)).consumedPoints;
      } catch (rejection) {
        if (rejection instanceof RateLimiterRes) return rejection.consumedPoints;
        throw rejection;
      }
    },
    async refund(key, amount = 1) {
      await limiter.reward(key, amount);
    },
    async block(key, seconds) {
      await limiter.block(key, seconds);
    },
    async set(key, amount, seconds) {
      await limiter.set(key, amount, seconds);
    },
    async reset(key) {
      await limiter.delete(key);
    },
  };
}

/** ioredis is loaded only when REDIS_URL is set (it holds about 6 MB a process that never uses it would carry); it connects at `start`. */
export async function createRateLimiters(deps: { db: Db; clock: Clock; logger: Logger; redisUrl: string | null }): Promise<RateLimiters> {
  const { db, clock, logger } = deps;
  // In memory a window is a timer, and timers end at 2^31 ms (24.8 days): longer windows would end
  // at once. A day is plenty for counting while a store is away.
  const insurance = (name: string, limit: RateLimit) =>
    new RateLimiterMemory({ keyPrefix: name, points: limit.points, duration: Math.min(limit.durationSeconds, MAX_MEMORY_WINDOW_SECONDS) });
  let refusalObserver: RefusalObserver | null = null;
  const observeRefusals = (observer: RefusalObserver | null) => {
    refusalObserver = observer;
  };
  /** Tells the observer, if any, of a refusal by `name`; an observer's mistake never costs the request. */
  const refusedBy = (name: string) => () => {
    try {
      refusalObserver?.(name);
    } catch {
      // Metrics only.
    }
  };

  if (deps.redisUrl === null) {
    // Ended windows are deleted by housekeeping (`ops/housekeeping.ts`); Redis expires its own.
    return {
      backend: 'storage',
      create(name, limit) {
        const store = new StorageRateLimiter({
          keyPrefix: name,
          points: limit.points,
          duration: limit.durationSeconds,
          db,
          clock,
          insuranceLimiter: insurance(name, limit),
        });
        return wrap(store, limit.points, refusedBy(name));
      },
      async start() {},
      async close() {},
      observeRefusals,
    };
  }

  const { Redis: RedisClient } = await import('ioredis');
  const redis: Redis = new RedisClient(deps.redisUrl, {
    // Fail fast while Redis is away, so requests are counted by the insurance limiter at once
    // rather than queued until it returns.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    // A Redis that accepts connections but does not answer costs each request at most this per
    // counter before the in-memory twin takes over.
    commandTimeout: 300,
    retryStrategy: (attempt) => Math.min(attempt * 250, 2_000),
    // Connected by `start`, when the app serves: building the services (the CLI does) opens nothing.
    lazyConnect: true,
  });
  let isDown = false;
  redis.on('error', (error: Error) => {
    if (isDown) return;
    isDown = true;
    logger.error({ err: { name: error.name, message: error.message } }, 'rate limits: Redis is unreachable; each instance counts in memory until it is back');
  });
  redis.on('ready', () => {
    if (!isDown) return;
    isDown = false;
    logger.warn({}, 'rate limits: Redis is reachable again; shared counters resume');
  });

  return {
    backend: 'redis',
    create(name, limit) {
      const limiter = new RateLimiterRedis({
        storeClient: redis,
        keyPrefix: `gatehouse:${name}`,
        points: limit.points,
        duration: limit.durationSeconds,
        rejectIfRedisNotReady: true,
        insuranceLimiter: insurance(name, limit),
      });
      return wrap(limiter, limit.points, refusedBy(name));
    },
    observeRefusals,
    async start() {
      const verdict = refuseMisconfiguredRedis(redis);
      // Unreachable is not a refusal: ioredis keeps retrying, and the limits count in memory meanwhile.
      redis.connect().catch(() => {});
      await verdict;
    },
    async close() {
      redis.disconnect();
    },
  };
}

/**
 * How long something counted as in flight (a password being checked or judged) counts at least: it
 * counts for one to two leases. Longer than any such request takes: a hash waits at most
 * HASH_QUEUE_TIMEOUT_MS (default 5 s) for its turn, an estimate 10 s. After a crash, what the dead
 * process had in flight is forgotten within two leases (40 s), never kept for a limit's window.
 */
export const IN_FLIGHT_LEASE_SECONDS = 20;

/** Retry-After for something refused only because others for the same key are in flight. */
export const IN_FLIGHT_WAIT_SECONDS = 1;

/** Counts in flight per key that expire by themselves (see `createLease`). */
export interface Lease {
  /** Counts one in flight for `key`; `count` is how many are now (this one included). */
  take(key: string): Promise<{ count: number; give(): Promise<void> }>;
}

/**
 * In-flight counts that die with their lease: one counter per key and lease-long time slot, in a
 * shared store window of two slots. A taker counts in the current slot, reads the previous one,
 * and gives back into the slot it took from. A count that is never given back (the process died)
 * ends with its store window, one or two leases later; so does one given back after the window
 * ended, which then cannot push a later count below what is in flight. `leaseSeconds` must be
 * longer than anything counted takes (the default suits a sign-in with the default hash queue).
 */
export function createLease(limiters: RateLimiters, name: string, clock: Clock, leaseSeconds = IN_FLIGHT_LEASE_SECONDS): Lease {
  const slotMs = leaseSeconds * 1000;
  // Counting never refuses: the limit is decided by the caller, from the count.
  const counter = limiters.create(name, { points: Number.MAX_SAFE_INTEGER, durationSeconds: 2 * leaseSeconds });
  return {
    async take(key) {
      const slot = Math.floor(clock() / slotMs);
      const mine = `${key}:${slot}`;
      const [current, previous] = await Promise.all([counter.increment(mine), counter.count(`${key}:${slot - 1}`)]);
      let isGiven = false;
      return {
        count: current + Math.max(0, previous),
        async give() {
          if (isGiven) return;
          isGiven = true;
          await counter.refund(mine);
        },
      };
    },
  };
}

export type Entry = { ok: true; happened: number; give(): Promise<void> } | { ok: false; retryAfterSeconds: number };

/**
 * A place under a limit on what happened (`happened`: failures, refusals) plus what is in flight
 * (`lease`). The place is taken *before* what happened is read, and the caller must record what
 * happened (if it did) *before* giving the place back: so at every moment an attempt is visible
 * to the others either in flight or as what it led to, and concurrent attempts cannot pass the
 * limit together. Refused (with the wait) when the two would pass `limit`.
 */
export async function enterWithin(lease: Lease, happened: Limiter, key: string, limit: number): Promise<Entry> {
  const place = await lease.take(key);
  let count: number;
  try {
    count = await happened.count(key);
  } catch (error) {
    await place.give().catch(() => {});
    throw error;
  }
  if (count + place.count <= limit) return { ok: true, happened: count, give: place.give };
  happened.reportRefusal?.();
  await place.give();
  const wait = count >= limit ? await happened.check(key) : null;
  return { ok: false, retryAfterSeconds: wait ?? IN_FLIGHT_WAIT_SECONDS };
}

/** How long start-up waits for Redis's first answer; an unreachable Redis does not stop the start. */
const FIRST_CONNECTION_WAIT_MS = 3_000;

/**
 * Resolves when Redis is ready, unreachable (the limits count in memory until it is back), or slow
 * to answer; rejects with a ConfigError when Redis itself refuses the connection's setup: a
 * database index that does not exist (ioredis logs the refusal and goes on in database 0, where
 * the counters of another application may live), or wrong credentials. Server replies name no secret.
 */
async function refuseMisconfiguredRedis(redis: Redis): Promise<void> {
  const refusal = await new Promise<Error | null>((resolve) => {
    const timer = setTimeout(() => finish(null), FIRST_CONNECTION_WAIT_MS);
    const onReady = () => finish(null);
    const onError = (error: Error) => finish(isServerReply(error) ? error : null);
    function finish(result: Error | null) {
      clearTimeout(timer);
      redis.off('ready', onReady);
      redis.off('error', onError);
      resolve(result);
    }
    redis.on('ready', onReady);
    redis.on('error', onError);
  });
  if (refusal === null) return;
  redis.on('error', () => {}); // whatever the closing connection still reports: start-up is refused below
  redis.disconnect();
  throw new ConfigError([`REDIS_URL: Redis refused the connection's setup (${refusal.message.split('\n')[0]!.slice(0, 200)})`]);
}

/** An error Redis answered with (ERR…, WRONGPASS…), as opposed to one of the network. */
function isServerReply(error: Error): boolean {
  return error.name === 'ReplyError' || error.name === 'SimpleError' || /^(ERR|WRONGPASS|NOAUTH|NOPERM)\b/.test(error.message);
}

/**
 * A route's preHandler that counts the request against `limiter` under `key(request)` and answers
 * 429 RATE_LIMITED with `Retry-After` once the limit is used up. Runs after validation, so keys may
 * come from the body (a normalised address).
 */
export function rateLimitHook(entries: Array<{ limiter: Limiter; key: (request: FastifyRequest) => string | null }>): preHandlerAsyncHookHandler {
  return async (request) => {
    for (const { limiter, key } of entries) {
      const subject = key(request);
      if (subject === null) continue;
      const wait = await limiter.consume(subject);
      if (wait !== null) throw new AppError('RATE_LIMITED', { retryAfterSeconds: wait });
    }
  };
}
