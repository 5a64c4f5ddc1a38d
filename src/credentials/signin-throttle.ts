/**
 * Brute-force protection for password checks (sign-in, and a signed-in user's current password),
 * decided before any password is hashed:
 * - per client IP (IPv6 by its /64), a generous cap on all attempts (floods), and a limit on failed
 *   ones, so a shared office address whose people sign in correctly is never slowed down;
 * - per account (the normalised address, whether or not it has an account, so the answers do not
 *   reveal which do): after a few consecutive failures every further attempt must wait, 1 s,
 *   doubling up to a cap, enforced by refusing (429 with Retry-After), never by holding a
 *   connection open; at the NIST SP 800-63B-4 ceiling (100 consecutive failures) the password is
 *   locked until a password reset. A correct password clears the count.
 *
 * Every attempt is counted atomically *before* its hash, as in flight, so concurrent requests cannot
 * all pass a check that none of them has counted yet; only a password that turns out wrong becomes
 * a failure. In-flight counts are leases (see `createLease`): a process killed mid-attempt leaves
 * them behind for seconds, never for a limit's window, so a crash cannot lock people out.
 *
 * With the counters in storage (no REDIS_URL) and `db` given, the writes before the hash commit as
 * one transaction, a failure's writes as another, and a success's join the transaction its caller
 * passes (the session's):
 * a commit costs the event loop about as much as the statement it ends, and the event loop's time
 * per sign-in is taken from the hashes on the same core (perf/analysis.md).
 */
import type { Config } from '../config.ts';
import type { Clock } from '../lib/clock.ts';
import type { Db } from '../storage/database.ts';
import { writingIn } from '../storage/write-scope.ts';
import { IN_FLIGHT_LEASE_SECONDS, accountKey, clientKey, createLease, enterWithin, type Limiter, type RateLimiters } from '../http/rate-limit.ts';

export type ThrottleCheck = { ok: true; attempt: Attempt } | { ok: false; retryAfterSeconds: number };

/** An attempt that was let through: report how it went. */
export interface Attempt {
  /**
   * The password was right: the account starts afresh. With `within` (a transaction of the
   * throttle's `db`, which must not commit before this resolves), the counters in storage are
   * written in it. Only the first call counts: a later one does nothing.
   */
  succeeded(within?: Db): Promise<void>;
  /** The password was wrong (or the address unknown): `isLocked` when this failure reached the ceiling. */
  failed(): Promise<{ isLocked: boolean; consecutiveFailures: number }>;
  /**
   * Call when done, whatever happened: an attempt neither `succeeded` nor `failed` (its password
   * was never judged: no hashing capacity, storage down) is given back, as if it had not happened.
   */
  release(): Promise<void>;
}

/** Long enough to count "consecutive" failures however slowly they come. */
const FAILURE_WINDOW_SECONDS = 90 * 86_400;

export type SignInThrottle = ReturnType<typeof createSignInThrottle>;

export function createSignInThrottle(deps: {
  limiters: RateLimiters;
  rateLimits: Config['rateLimits'];
  throttle: Config['signinThrottle'];
  clock: Clock;
  /** HASH_QUEUE_TIMEOUT_MS: an attempt may wait that long for its hash, and must count in flight all the while. */
  hashQueueTimeoutMs: number;
  /** The storage the limiters count in (when they do): their writes of one attempt then commit together. */
  db?: Db;
}) {
  const { limiters, rateLimits, throttle, clock } = deps;
  // Redis counters never join a transaction: a round trip to Redis must not hold the database's.
  const joinable = limiters.backend === 'storage' ? (deps.db ?? null) : null;
  /** `work`'s counter writes in `trx` when the counters live in storage; else as they come. */
  const within = <T>(trx: Db | undefined, work: () => Promise<T>): Promise<T> => (joinable === null || trx === undefined ? work() : writingIn(joinable, trx, work));
  // Longer than the longest attempt: its wait for a hash, the hash, and its reads and writes.
  const leaseSeconds = Math.max(IN_FLIGHT_LEASE_SECONDS, Math.ceil(deps.hashQueueTimeoutMs / 1000) + 15);
  const attemptsPerIp = limiters.create('signin-ip', rateLimits.signinPerIp);
  // Failures that happened; with those in flight, at most the limit.
  const failuresPerIp = limiters.create('signin-fail-ip', rateLimits.signinFailuresPerIp);
  const inFlightPerIp = createLease(limiters, 'signin-pending-ip', clock, leaseSeconds);
  const accountWindow = { points: throttle.lockAfterFailures, durationSeconds: FAILURE_WINDOW_SECONDS };
  // Consecutive failures: what the delay grows with; at the ceiling it is set with no end (locked).
  const accountFailures: Limiter = limiters.create('signin-fail-account', accountWindow);
  // Attempts not yet proven right or wrong: with the failures, they may not pass the ceiling, so
  // concurrent guesses cannot go past it together.
  const inFlightPerAccount = createLease(limiters, 'signin-pending-account', clock, leaseSeconds);
  // Once delays apply, one attempt per wait: a failure blocks the gate for the delay, and the
  // attempt after it takes the gate, so concurrent attempts cannot slip through together.
  const accountGate: Limiter = limiters.create('signin-delay-account', { points: 1, durationSeconds: 1 });

  /** The wait after `failures` consecutive failures (0 below the threshold). */
  function delaySeconds(failures: number): number {
    if (failures < throttle.delayAfterFailures) return 0;
    return Math.min(throttle.maxDelaySeconds, 2 ** Math.min(failures - throttle.delayAfterFailures, 30));
  }

  return {
    /** Before checking a password for `email` from `ip`: counts the attempt, or refuses it. */
    checkAttempt(email: string, ip: string | null): Promise<ThrottleCheck> {
      if (joinable === null) return decide(email, ip);
      return joinable.transaction().execute((trx) => writingIn(joinable, trx, () => decide(email, ip)));
    },

    /** After a password reset: the account's failures no longer count, and a lock is lifted. */
    async clearAccount(email: string): Promise<void> {
      const account = accountKey(email);
      await Promise.all([accountFailures.reset(account), accountGate.reset(account)]);
    },
  };

  async function decide(email: string, ip: string | null): Promise<ThrottleCheck> {
    const account = accountKey(email);
    const client = clientKey(ip);

    const floodWait = await attemptsPerIp.consume(client);
    if (floodWait !== null) return { ok: false, retryAfterSeconds: floodWait };

    const byIp = await enterWithin(inFlightPerIp, failuresPerIp, client, rateLimits.signinFailuresPerIp.points);
    if (!byIp.ok) return byIp;
    // Locked (the failures set at the ceiling with no end), or past it with those in flight.
    const byAccount = await enterWithin(inFlightPerAccount, accountFailures, account, throttle.lockAfterFailures).catch(async (error: unknown) => {
      await byIp.give().catch(() => {});
      throw error;
    });
    if (!byAccount.ok) {
      await byIp.give();
      return byAccount;
    }
    const failures = byAccount.happened;
    const settle = () => Promise.all([byIp.give(), byAccount.give()]);
    const refuse = async (retryAfterSeconds: number): Promise<ThrottleCheck> => {
      await settle();
      return { ok: false, retryAfterSeconds };
    };
    if (failures >= throttle.delayAfterFailures) {
      const gateWait = await accountGate.consume(account, 1, delaySeconds(failures));
      if (gateWait !== null) return refuse(gateWait);
    }

    /** The failure counted, and the places given back; at the ceiling the password locks. */
    async function countFailure(): Promise<{ isLocked: boolean; consecutiveFailures: number }> {
      const [consecutiveFailures] = await Promise.all([accountFailures.increment(account), failuresPerIp.increment(client)]);
      if (consecutiveFailures >= throttle.lockAfterFailures) {
        // No end: only a password reset (clearAccount) lifts it.
        await accountFailures.set(account, throttle.lockAfterFailures, 0);
        return { isLocked: true, consecutiveFailures };
      }
      const wait = delaySeconds(consecutiveFailures);
      if (wait > 0) await accountGate.block(account, wait);
      return { isLocked: false, consecutiveFailures };
    }

    let isSucceeded = false;
    return {
      ok: true,
      attempt: {
        async succeeded(trx) {
          if (isSucceeded) return;
          isSucceeded = true;
          // Only what this account has counted: a sign-in without earlier failures costs two writes.
          // The places first, as everywhere (see `failed`).
          await within(trx, async () => {
            await settle();
            await Promise.all([
              ...(failures > 0 ? [accountFailures.reset(account)] : []),
              ...(failures >= throttle.delayAfterFailures ? [accountGate.reset(account)] : []),
            ]);
          });
        },
        async release() {
          await settle();
        },
        async failed() {
          if (joinable === null) {
            // The failure is written before the place in flight is given back (see enterWithin).
            try {
              return await countFailure();
            } finally {
              await settle();
            }
          }
          // In storage the failure and the places given back commit together, so their order does
          // not show; the places go first because every transaction of the throttle writes its
          // counters in one order (the attempts, the places, the failures, the gate): on PostgreSQL
          // concurrent attempts then wait for each other's rows instead of deadlocking.
          return joinable.transaction().execute((trx) =>
            writingIn(joinable, trx, async () => {
              await settle();
              return countFailure();
            }),
          );
        },
      },
    };
  }
}
