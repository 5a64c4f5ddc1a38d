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
import { accountKey, clientKey, createLease, enterWithin, type RateLimiters } from '../http/rate-limit.ts';

const ESTIMATE_LEASE_SECONDS = 30;

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
    // An estimate waits at most 10 s for its turn and is judged within 10 s: 30 s outlasts both.
    inFlight: createLease(limiters, `password-pending-${by}`, clock, ESTIMATE_LEASE_SECONDS),
    limit: limit.points,
  });
  const perAccount = counter('account', rateLimits.passwordRefusalsPerAccount);
  const perIp = counter('ip', rateLimits.passwordRefusalsPerIp);
  const enter = (of: typeof perIp, key: string) => enterWithin(of.inFlight, of.refusals, key, of.limit);

  return {
    /**
     * Before judging a new password asked from `ip`, for the account `email` when the client has
     * shown it acts for it (null otherwise: only the IP counts): counts the try, or refuses it.
     */
    async checkAttempt(email: string | null, ip: string | null): Promise<RefusalCheck> {
      const account = email === null ? null : accountKey(email);
      const client = clientKey(ip);
      const byIp = await enter(perIp, client);
      if (!byIp.ok) return byIp;
      const byAccount =
        account === null
          ? null
          : await enter(perAccount, account).catch(async (error: unknown) => {
              await byIp.give().catch(() => {});
              throw error;
            });
      if (byAccount !== null && !byAccount.ok) {
        await byIp.give();
        return byAccount;
      }
      let isRefused = false;
      let isReleased = false;
      return {
        ok: true,
        attempt: {
          refused() {
            isRefused = true;
          },
          async release() {
            if (isReleased) return;
            isReleased = true;
            try {
              // The refusal is written before the places in flight are given back (see enterWithin).
              if (isRefused) await Promise.all([perIp.refusals.increment(client), account === null ? null : perAccount.refusals.increment(account)]);
            } finally {
              await Promise.all([byIp.give(), byAccount?.give()]);
            }
          },
        },
      };
    },
  };
}
