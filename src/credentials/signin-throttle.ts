/**
 * Brute-force protection for password sign-in, checked before any password is hashed:
 * - per client IP, a generous cap on all attempts (floods), and a limit on failed ones, so a shared
 *   office address whose people sign in correctly is never slowed down;
 * - per account (the normalised address, whether or not it has an account, so the answers do not
 *   reveal which do): after a few consecutive failures every further attempt must wait, 1 s,
 *   doubling up to a cap, enforced by refusing (429 with Retry-After), never by holding a
 *   connection open; at the NIST SP 800-63B-4 ceiling (100 consecutive failures) the password is
 *   locked until a password reset. A successful sign-in clears the count.
 */
import type { Config } from '../config.ts';
import { accountKey, type Limiter, type RateLimiters, type Wait } from '../http/rate-limit.ts';

export type ThrottleCheck = { ok: true } | { ok: false; retryAfterSeconds: number };

/** Long enough to count "consecutive" failures however slowly they come. */
const FAILURE_WINDOW_SECONDS = 90 * 86_400;

export interface FailureOutcome {
  consecutiveFailures: number;
  /** True when this failure reached the lock threshold. */
  isNowLocked: boolean;
}

export type SignInThrottle = ReturnType<typeof createSignInThrottle>;

export function createSignInThrottle(deps: { limiters: RateLimiters; rateLimits: Config['rateLimits']; throttle: Config['signinThrottle'] }) {
  const { limiters, rateLimits, throttle } = deps;
  const attemptsPerIp = limiters.create('signin-ip', rateLimits.signinPerIp);
  const failuresPerIp = limiters.create('signin-fail-ip', rateLimits.signinFailuresPerIp);
  const accountFailures: Limiter = limiters.create('signin-fail-account', { points: throttle.lockAfterFailures, durationSeconds: FAILURE_WINDOW_SECONDS });
  // Holds a block while the account must wait; its own count is never used.
  const accountDelay: Limiter = limiters.create('signin-delay-account', { points: 1, durationSeconds: 1 });

  function delaySeconds(consecutiveFailures: number): number {
    const over = consecutiveFailures - throttle.delayAfterFailures;
    return Math.min(throttle.maxDelaySeconds, 2 ** Math.min(over, 30));
  }

  function refuse(wait: Wait): ThrottleCheck | null {
    return wait === null ? null : { ok: false, retryAfterSeconds: wait };
  }

  return {
    /** Before an attempt: counts it against the IP, and says whether it may go ahead at all. */
    async checkAttempt(email: string, ip: string): Promise<ThrottleCheck> {
      const key = accountKey(email);
      return (
        refuse(await attemptsPerIp.consume(ip)) ??
        refuse(await failuresPerIp.check(ip)) ??
        refuse(await accountFailures.check(key)) ??
        refuse(await accountDelay.check(key)) ?? { ok: true }
      );
    },

    /** After a wrong password (or an unknown address: the same). */
    async recordFailure(email: string, ip: string): Promise<FailureOutcome> {
      const key = accountKey(email);
      await failuresPerIp.consume(ip);
      await accountFailures.consume(key);
      const consecutiveFailures = await accountFailures.count(key);
      if (consecutiveFailures >= throttle.lockAfterFailures) {
        // No end: only a password reset (clearAccount) lifts it.
        await accountFailures.set(key, throttle.lockAfterFailures, 0);
        return { consecutiveFailures, isNowLocked: consecutiveFailures === throttle.lockAfterFailures };
      }
      if (consecutiveFailures >= throttle.delayAfterFailures) await accountDelay.block(key, delaySeconds(consecutiveFailures));
      return { consecutiveFailures, isNowLocked: false };
    },

    /** After the right password, and after a password reset: the account starts afresh. */
    async clearAccount(email: string): Promise<void> {
      const key = accountKey(email);
      await Promise.all([accountFailures.reset(key), accountDelay.reset(key)]);
    },
  };
}
