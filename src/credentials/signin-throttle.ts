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
 * Every attempt is counted atomically *before* its hash, and given back if it turns out right or
 * is refused: concurrent requests cannot all pass a check that none of them has counted yet.
 */
import type { Config } from '../config.ts';
import { accountKey, clientKey, type Limiter, type RateLimiters } from '../http/rate-limit.ts';

export type ThrottleCheck = { ok: true; attempt: Attempt } | { ok: false; retryAfterSeconds: number };

/** An attempt that was let through: report how it went. */
export interface Attempt {
  /** The password was right: the account starts afresh and the IP gets its point back. */
  succeeded(): Promise<void>;
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

export function createSignInThrottle(deps: { limiters: RateLimiters; rateLimits: Config['rateLimits']; throttle: Config['signinThrottle'] }) {
  const { limiters, rateLimits, throttle } = deps;
  const attemptsPerIp = limiters.create('signin-ip', rateLimits.signinPerIp);
  const failuresPerIp = limiters.create('signin-fail-ip', rateLimits.signinFailuresPerIp);
  const accountWindow = { points: throttle.lockAfterFailures, durationSeconds: FAILURE_WINDOW_SECONDS };
  // Attempts not yet proven right: counted before the hash, so concurrent guesses cannot pass
  // the ceiling together; a right password clears it. At the ceiling the account is locked.
  const accountAttempts: Limiter = limiters.create('signin-attempts-account', accountWindow);
  // Consecutive failures that have happened: what the delay grows with.
  const accountFailures: Limiter = limiters.create('signin-fail-account', accountWindow);
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
    async checkAttempt(email: string, ip: string | null): Promise<ThrottleCheck> {
      const account = accountKey(email);
      const client = clientKey(ip);

      const floodWait = await attemptsPerIp.consume(client);
      if (floodWait !== null) return { ok: false, retryAfterSeconds: floodWait };

      // Counted as a failure until it proves otherwise.
      const ipWait = await failuresPerIp.consume(client);
      if (ipWait !== null) return { ok: false, retryAfterSeconds: ipWait };

      // This attempt's number, from the same atomic write that counts it.
      const attemptNumber = await accountAttempts.increment(account);
      const refuse = async (retryAfterSeconds: number): Promise<ThrottleCheck> => {
        await Promise.all([accountAttempts.refund(account), failuresPerIp.refund(client)]);
        return { ok: false, retryAfterSeconds };
      };
      // Past the ceiling (locked, or a concurrent race to it): this one does not happen.
      if (attemptNumber > throttle.lockAfterFailures) return refuse((await accountAttempts.check(account)) ?? 1);
      const failures = await accountFailures.count(account);
      if (failures >= throttle.delayAfterFailures) {
        const gateWait = await accountGate.consume(account, 1, delaySeconds(failures));
        if (gateWait !== null) return refuse(gateWait);
      }

      let isSettled = false;
      return {
        ok: true,
        attempt: {
          async succeeded() {
            isSettled = true;
            // Only what this account has counted: a sign-in without earlier failures costs two writes.
            await Promise.all([
              accountAttempts.reset(account),
              failuresPerIp.refund(client),
              ...(failures > 0 ? [accountFailures.reset(account)] : []),
              ...(failures >= throttle.delayAfterFailures ? [accountGate.reset(account)] : []),
            ]);
          },
          async release() {
            if (isSettled) return;
            isSettled = true;
            await Promise.all([accountAttempts.refund(account), failuresPerIp.refund(client)]);
          },
          async failed() {
            isSettled = true;
            const consecutiveFailures = await accountFailures.increment(account);
            if (attemptNumber >= throttle.lockAfterFailures || consecutiveFailures >= throttle.lockAfterFailures) {
              // No end: only a password reset (clearAccount) lifts it.
              await accountAttempts.set(account, throttle.lockAfterFailures, 0);
              return { isLocked: true, consecutiveFailures: Math.max(consecutiveFailures, attemptNumber) };
            }
            const wait = delaySeconds(consecutiveFailures);
            if (wait > 0) await accountGate.block(account, wait);
            return { isLocked: false, consecutiveFailures };
          },
        },
      };
    },

    /** After a password reset: the account's failures no longer count, and a lock is lifted. */
    async clearAccount(email: string): Promise<void> {
      const account = accountKey(email);
      await Promise.all([accountAttempts.reset(account), accountFailures.reset(account), accountGate.reset(account)]);
    },
  };
}
