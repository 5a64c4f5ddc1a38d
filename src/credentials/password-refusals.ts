/**
 * A limit on new passwords that the policy refuses, per client IP and per account
 * (RATE_LIMIT_PASSWORD_REFUSALS_PER_IP, RATE_LIMIT_PASSWORD_REFUSALS_PER_ACCOUNT). Judging a new
 * password takes a turn of the one estimator worker the whole process shares (up to about half a
 * second: password-strength.ts), so a client that sends refused password after refused password
 * spends everyone's turns. A person needs a few tries to find an acceptable password; past the
 * limit the next try is refused (429 with Retry-After) before the estimator is asked. Accepted
 * passwords do not count: what they lead to (a hash, an account, a reset) has limits of its own.
 * The account counts only where the client has shown it acts for it (change-password, a reset
 * link); at sign-up and admin create the address is merely typed, and counting it would let anyone
 * use up the allowance of someone else's account.
 *
 * Each try is counted as in flight before its estimate (a lease: see `createLease`), and only a
 * refused one is counted against the limit: refusals plus tries in flight may not pass it, so
 * concurrent tries cannot all pass a check that none of them has counted yet, and a crash
 * mid-estimate leaves nothing behind for longer than the lease (as in signin-throttle.ts).
 */
import type { Config, RateLimit } from '../config.ts';
import type { Clock } from '../lib/clock.ts';
import { IN_FLIGHT_WAIT_SECONDS, accountKey, clientKey, createLease, type RateLimiters } from '../http/rate-limit.ts';

export type RefusalCheck = { ok: true; attempt: RefusalAttempt } | { ok: false; retryAfterSeconds: number };

/** A try that was let through: say if its password was refused, then release it. */
export interface RefusalAttempt {
  /** The policy refused the password: `release` counts it against the limits. */
  refused(): void;
  /** Call when done, whatever happened: gives back its place in flight; only a refused try counts. */
  release(): Promise<void>;
}

export type PasswordRefusalLimits = ReturnType<typeof createPasswordRefusalLimits>;

export function createPasswordRefusalLimits(deps: { limiters: RateLimiters; rateLimits: Config['rateLimits']; clock: Clock }) {
  const { limiters, rateLimits, clock } = deps;
  const counter = (by: 'account' | 'ip', limit: RateLimit) => ({
    refusals: limiters.create(`password-refusals-${by}`, limit),
    inFlight: createLease(limiters, `password-pending-${by}`, clock),
    limit: limit.points,
  });
  const perAccount = counter('account', rateLimits.passwordRefusalsPerAccount);
  const perIp = counter('ip', rateLimits.passwordRefusalsPerIp);

  /** Takes a place in flight for `key`, or says how long to wait: refusals plus those in flight stay within the limit. */
  async function take(counter: typeof perIp, key: string): Promise<{ ok: true; give(): Promise<void> } | { ok: false; retryAfterSeconds: number }> {
    const [refusals, inFlight] = await Promise.all([counter.refusals.count(key), counter.inFlight.take(key)]);
    if (refusals + inFlight.count <= counter.limit) return { ok: true, give: inFlight.give };
    await inFlight.give();
    const wait = refusals >= counter.limit ? await counter.refusals.check(key) : null;
    return { ok: false, retryAfterSeconds: wait ?? IN_FLIGHT_WAIT_SECONDS };
  }

  return {
    /**
     * Before judging a new password asked from `ip`, for the account `email` when the client has
     * shown it acts for it (null otherwise: only the IP counts): counts the try, or refuses it.
     */
    async checkAttempt(email: string | null, ip: string | null): Promise<RefusalCheck> {
      const account = email === null ? null : accountKey(email);
      const client = clientKey(ip);
      const byIp = await take(perIp, client);
      if (!byIp.ok) return byIp;
      const byAccount = account === null ? null : await take(perAccount, account);
      if (byAccount !== null && !byAccount.ok) {
        await byIp.give();
        return byAccount;
      }
      let isRefused = false;
      return {
        ok: true,
        attempt: {
          refused() {
            isRefused = true;
          },
          async release() {
            await Promise.all([byIp.give(), byAccount?.give()]);
            if (!isRefused) return;
            isRefused = false;
            await Promise.all([perIp.refusals.consume(client), account === null ? null : perAccount.refusals.consume(account)]);
          },
        },
      };
    },
  };
}
