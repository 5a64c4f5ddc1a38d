/**
 * Judging a new password for an account (sign-up, reset, change, admin and CLI create): the
 * policy, and, for a client over HTTP, what keeps one client from spending everyone's estimates
 * (password-strength.ts): it takes turns with the other clients, by address, with a few estimates
 * in progress at most, and its refused passwords count against per-account and per-IP limits
 * (password-refusals.ts). The process's own callers (the CLI, the bootstrap admin) name no client.
 */
import { clientKey } from '../http/rate-limit.ts';
import { checkPassword, type PasswordPolicy, type PasswordRejection } from './password-policy.ts';
import { TooManyEstimatesError } from './password-strength.ts';
import type { PasswordRefusalLimits } from './password-refusals.ts';

export type NewPasswordCheck =
  | { ok: true }
  | { ok: false; reason: 'WEAK_PASSWORD'; rejection: PasswordRejection }
  | { ok: false; reason: 'RATE_LIMITED'; retryAfterSeconds: number };

/** Who asks, over HTTP. */
export interface PasswordClient {
  /** The client's address (the request's, after proxy trust). */
  ip: string | null;
  /**
   * The client has shown it acts for the account (its session and current password, a reset link
   * from its mailbox): its refusals count against the account too. Not at sign-up or admin
   * create, where the address is only typed: anyone could spend someone else's allowance.
   */
  isAccountHolder?: boolean;
}

export type NewPasswordChecker = (
  password: string,
  identity: { email: string; name?: string },
  client?: PasswordClient,
) => Promise<NewPasswordCheck>;

export function createNewPasswordCheck(deps: { policy: PasswordPolicy; refusals: PasswordRefusalLimits | null }): NewPasswordChecker {
  const { policy, refusals } = deps;

  async function judge(password: string, identity: { email: string; name?: string }, caller: string | undefined): Promise<NewPasswordCheck> {
    try {
      const rejection = await checkPassword(password, policy, identity, caller === undefined ? {} : { caller });
      return rejection === null ? { ok: true } : { ok: false, reason: 'WEAK_PASSWORD', rejection };
    } catch (error) {
      // This client has estimates enough in progress: it waits for its own, not the others.
      if (error instanceof TooManyEstimatesError) return { ok: false, reason: 'RATE_LIMITED', retryAfterSeconds: error.retryAfterSeconds };
      throw error;
    }
  }

  return async (password, identity, client) => {
    if (client === undefined) return judge(password, identity, undefined);
    if (refusals === null) return judge(password, identity, clientKey(client.ip));
    // Before the estimate: a client over its refusals does not get another turn.
    const allowed = await refusals.checkAttempt(client.isAccountHolder === true ? identity.email : null, client.ip);
    if (!allowed.ok) return { ok: false, reason: 'RATE_LIMITED', retryAfterSeconds: allowed.retryAfterSeconds };
    try {
      const verdict = await judge(password, identity, clientKey(client.ip));
      if (!verdict.ok && verdict.reason === 'WEAK_PASSWORD') allowed.attempt.refused();
      return verdict;
    } finally {
      // A try that was not refused (accepted, or never judged: 503, too many in progress) is given
      // back; if that fails, it stays counted, which errs on the side of the limit.
      await allowed.attempt.release().catch(() => {});
    }
  };
}
