/**
 * rate-limiter-flexible's store contract over our own storage, so one implementation serves SQLite
 * and PostgreSQL (the library's SQLite store needs the `sqlite3` or `better-sqlite3` drivers; we run
 * on `node:sqlite`). Each change is one atomic upsert: concurrent requests, and instances sharing a
 * PostgreSQL, all count against the same row.
 */
import { createRequire } from 'node:module';
import { sql } from 'kysely';
import type { RateLimiterAbstract, RateLimiterRes as RateLimiterResType, RateLimiterStoreAbstract as StoreAbstractType } from 'rate-limiter-flexible';
import type { Db } from '../storage/database.ts';
import { preparedQuery } from '../storage/prepared.ts';
import { readerFor, writerFor } from '../storage/write-scope.ts';
import type { Clock } from '../lib/clock.ts';

// The library exports the abstract store only as a file of its own (CommonJS).
const require = createRequire(import.meta.url);
const RateLimiterStoreAbstract = require('rate-limiter-flexible/lib/RateLimiterStoreAbstract.js') as typeof StoreAbstractType;
const RateLimiterRes = require('rate-limiter-flexible/lib/RateLimiterRes.js') as typeof RateLimiterResType;

interface CounterRow {
  points: number;
  expire: number | null;
}

export interface StorageLimiterOptions {
  keyPrefix: string;
  points: number;
  /** Seconds. */
  duration: number;
  db: Db;
  clock: Clock;
  /** Counts in memory while storage fails. */
  insuranceLimiter: RateLimiterAbstract;
}

// Every sign-in runs several of these: compiled once (see storage/prepared.ts).
const addToCounter = preparedQuery((db, key: string, points: number, expire: number | null, now: number) => {
  const isEnded = sql<boolean>`rate_limits.expire is not null and rate_limits.expire <= ${now}`;
  return db
    .insertInto('rate_limits')
    .values({ key, points, expire })
    .onConflict((conflict) =>
      conflict.column('key').doUpdateSet({
        points: sql<number>`case when ${isEnded} then ${points} else rate_limits.points + ${points} end`,
        expire: sql<number | null>`case when ${isEnded} then ${expire} else rate_limits.expire end`,
      }),
    )
    .returning(['points', 'expire']);
});

const restartCounter = preparedQuery((db, key: string, points: number, expire: number | null) =>
  db
    .insertInto('rate_limits')
    .values({ key, points, expire })
    .onConflict((conflict) => conflict.column('key').doUpdateSet({ points, expire }))
    .returning(['points', 'expire']),
);

const selectLiveCounter = preparedQuery((db, key: string, now: number) =>
  db
    .selectFrom('rate_limits')
    .select(['points', 'expire'])
    .where('key', '=', key)
    .where((eb) => eb.or([eb('expire', 'is', null), eb('expire', '>', now)])),
);

const deleteCounter = preparedQuery((db, key: string) => db.deleteFrom('rate_limits').where('key', '=', key));

export class StorageRateLimiter extends RateLimiterStoreAbstract {
  readonly #db: Db;
  readonly #clock: Clock;

  constructor(options: StorageLimiterOptions) {
    super({
      keyPrefix: options.keyPrefix,
      points: options.points,
      duration: options.duration,
      storeClient: options.db,
      insuranceLimiter: options.insuranceLimiter,
    });
    this.#db = options.db;
    this.#clock = options.clock;
  }

  _getRateLimiterRes(_rlKey: string, changedPoints: number, row: CounterRow): RateLimiterResType {
    const consumed = Number(row.points);
    const points = (this as unknown as { points: number }).points;
    return new RateLimiterRes(
      Math.max(points - consumed, 0),
      row.expire === null ? -1 : Math.max(Number(row.expire) - this.#clock(), 0),
      consumed,
      consumed === changedPoints,
    );
  }

  /** Adds `points` to the key's window, or starts a new window when it has ended (or `forceExpire`). */
  async _upsert(key: string, points: number, msDuration: number, forceExpire = false): Promise<CounterRow> {
    const now = this.#clock();
    const expire = msDuration > 0 ? now + msDuration : null;
    // In an enclosing transaction when the caller joined one (storage/write-scope.ts).
    const db = writerFor(this.#db);
    const { rows } = forceExpire ? await restartCounter(db, key, points, expire) : await addToCounter(db, key, points, expire, now);
    if (rows[0] === undefined) throw new Error('rate limit upsert returned no row');
    return rows[0];
  }

  async _get(key: string): Promise<CounterRow | null> {
    return (await selectLiveCounter(readerFor(this.#db), key, this.#clock())).rows[0] ?? null;
  }

  async _delete(key: string): Promise<boolean> {
    // A right password clears the account's counter: once per successful sign-in.
    const { numAffectedRows } = await deleteCounter(writerFor(this.#db), key);
    return (numAffectedRows ?? 0n) > 0n;
  }
}

/** Deletes counters whose window ended before `before`, at most `limit` of them; the number deleted. */
export async function purgeEndedCounters(db: Db, before: number, limit: number): Promise<number> {
  const result = await db
    .deleteFrom('rate_limits')
    .where('key', 'in', (eb) => eb.selectFrom('rate_limits').select('key').where('expire', '<', before).limit(limit))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
