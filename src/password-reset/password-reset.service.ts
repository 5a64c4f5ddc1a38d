/**
 * Password reset by e-mail link. Asking for a link issues a single-use `password_reset` action
 * token and queues the mail that carries it in one transaction (they exist together or not at
 * all); using the link checks the token, then consumes it in the same transaction as the new
 * password, the end of every session and the notice mail, so a token can never be spent without
 * the change it authorises, nor the other way round.
 *
 * Asking for a link never says whether the address has an account: the answer is the same, and
 * so is its timing (see `requestReset`). Outcomes are return values; the routes map them to HTTP.
 */
import type { Db } from '../storage/database.ts';
import type { User, UserService } from '../users/user.service.ts';
import { greetingName } from '../users/name.ts';
import { mailLocale } from '../users/locale.ts';
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import type { MailService } from '../mail/mail.service.ts';
import type { ActionTokens } from '../tokens/action-tokens.ts';
import type { CredentialsService } from '../credentials/credentials.service.ts';
import type { PasswordRejection } from '../credentials/password-policy.ts';
import { ACCOUNT_NEUTRAL_MIN_RESPONSE_MS, createResponseFloor } from '../lib/response-floor.ts';

/** The page that asks for a reset link: where the owner of an account takes it back (the module's `accountRecoveryPage`). */
export const FORGOT_PASSWORD_PAGE = '/auth/forgot-password';

/** The page a reset link opens; the mail's link is this under AUTH_URL, with `?token=`. */
export const RESET_PASSWORD_PAGE = '/auth/reset-password';

/**
 * Every request for a link is answered no sooner than this after it arrived, whatever happened:
 * an account, no account, a disabled one, or a failure (see `lib/response-floor.ts`).
 */
export const FORGOT_PASSWORD_MIN_RESPONSE_MS = ACCOUNT_NEUTRAL_MIN_RESPONSE_MS;

const PURPOSE = 'password_reset';

export type ResetTokenCheck =
  | { ok: true; user: User }
  | { ok: false; reason: 'INVALID_TOKEN' | 'TOKEN_EXPIRED' };

export type ResetPasswordResult =
  /** `linkReviewToken`: the review link's token when providers are linked (see LinkedProviderReview), else null. */
  | { ok: true; userId: string; sessionsEnded: number; linkReviewToken: string | null }
  | { ok: false; reason: 'INVALID_TOKEN' | 'TOKEN_EXPIRED' }
  | { ok: false; reason: 'WEAK_PASSWORD'; rejection: PasswordRejection }
  /** Too many new passwords refused for this account or from this client (the token stays usable). */
  | { ok: false; reason: 'RATE_LIMITED'; retryAfterSeconds: number };

export type PasswordResetService = ReturnType<typeof createPasswordResetService>;

/**
 * The providers linked to an account, which a reset does not take away: the reset lists them in its
 * notice and on its confirmation page, each removable in one step under a review token (the oauth
 * module's `issueLinkReview`). Without it (no providers module), nothing is listed.
 */
export interface LinkedProviderReview {
  issueLinkReview(trx: Db, userId: string): Promise<{ token: string; providerNames: string[] } | null>;
  /** The page the review token opens (`?token=`). */
  readonly reviewPage: `/${string}`;
}

export function createPasswordResetService(deps: {
  db: Db;
  linkedProviders?: LinkedProviderReview;
  users: UserService;
  credentials: CredentialsService;
  tokens: ActionTokens;
  mail: MailService;
  audit: AuditService;
  /** RESET_TOKEN_TTL. */
  ttlSeconds: number;
  /** Tests may shorten it; see FORGOT_PASSWORD_MIN_RESPONSE_MS. */
  minResponseMs?: number;
}) {
  const { db, users, credentials, tokens, mail, audit, ttlSeconds } = deps;
  const answerNoSooner = createResponseFloor(deps.minResponseMs ?? FORGOT_PASSWORD_MIN_RESPONSE_MS);
  // Never promise a link longer life than it has.
  const expiresInMinutes = Math.max(1, Math.floor(ttlSeconds / 60));

  /** The live token's account; a disabled account's links are as good as none. */
  async function checkToken(token: string): Promise<ResetTokenCheck> {
    const checked = await tokens.check(db, token, PURPOSE);
    if (!checked.ok) return checked;
    const user = await users.findUserById(checked.userId);
    if (user === null || user.disabledAt !== null) return { ok: false, reason: 'INVALID_TOKEN' };
    return { ok: true, user };
  }

  return {
    /**
     * Sends a reset link to the account with this address, if there is one and it is not
     * disabled; an account without a password (it signs in with a provider) gets one too, and
     * sets its first password with it (`isInvitation`: an account an administrator just added, whose
     * mail is worded as an invitation to set a password). Resolves the same way in every case, no sooner than
     * `minResponseMs` after the call: an error (storage down) is thrown only after that wait, too.
     *
     * Both paths also write in one transaction: an audit event (`password.reset_requested`, with
     * the account or none), so a write failing shows on both, and operators can see the requests.
     * Nothing here waits on SMTP: the mail goes to the outbox.
     */
    async requestReset(input: { email: string; source: AuditSource; isInvitation?: boolean }): Promise<void> {
      await answerNoSooner(async () => {
        const user = await users.findUserByEmail(input.email);
        const isQueued = await db.transaction().execute(async (trx) => {
          const event = { type: 'password.reset_requested' as const, source: input.source };
          if (user === null) {
            await audit.record({ ...event, userId: null, reason: 'UNKNOWN_EMAIL' }, { db: trx });
            return false;
          }
          if (user.disabledAt !== null) {
            await audit.record({ ...event, userId: user.id, reason: 'ACCOUNT_DISABLED' }, { db: trx });
            return false;
          }
          // Issuing retires the account's older reset links: only the newest one works.
          const { token } = await tokens.issue(trx, { userId: user.id, purpose: PURPOSE, ttlSeconds });
          await mail.enqueue(trx, {
            // The stored address, never the one typed: the link goes only to the account's own mailbox.
            to: user.email,
            // An account an administrator just added gets the same link worded as an invitation.
            template: input.isInvitation === true ? 'password-invitation' : 'password-reset',
            // The account's language; one that has none yet gets the language of the request.
            locale: mailLocale(user, input.source),
            // From AUTH_URL only: a Host or X-Forwarded-Host header never shapes the link. The name
            // only when confirmed: whoever signed up with this address may not own it.
            data: { name: greetingName(user), resetUrl: mail.link(RESET_PASSWORD_PAGE, { token }), expiresInMinutes },
          });
          await audit.record({ ...event, userId: user.id }, { db: trx });
          return true;
        });
        if (isQueued) mail.wake();
      });
    },

    /** Whether the link still works, without using it up (the reset page checks before showing its form). */
    checkToken,

    /**
     * Sets a new password with a reset token. The token is judged first, so a bad one is always
     * INVALID_TOKEN / TOKEN_EXPIRED whatever the password; then the password policy, which leaves
     * the token unspent on a refusal, so the person can try another password with the same link.
     * Then, in one transaction: the token is consumed (atomically: of two requests racing with one
     * token, exactly one gets here), the password replaced, every session of the account ended,
     * the notice mail queued, and `password.reset` recorded. Nobody is signed in by it.
     */
    async resetPassword(input: { token: string; password: string; source: AuditSource }): Promise<ResetPasswordResult> {
      const checked = await checkToken(input.token);
      if (!checked.ok) return checked;
      const { user } = checked;
      // The link came from the account's mailbox: its refusals count against the account too.
      const judged = await credentials.checkNewPassword(input.password, user, { ip: input.source.ip, isAccountHolder: true });
      if (!judged.ok) return judged;
      // Hashed before the transaction: argon2 takes tens of milliseconds, and on SQLite an open
      // transaction holds the only connection.
      const passwordHash = await credentials.hashPassword(input.password);

      const result = await db.transaction().execute(async (trx): Promise<ResetPasswordResult> => {
        const consumed = await tokens.consume(trx, input.token, PURPOSE);
        // Spent by a concurrent request since the check, or expired meanwhile: nothing changes.
        if (!consumed.ok) return consumed;
        if (consumed.userId !== user.id) return { ok: false, reason: 'INVALID_TOKEN' };
        // A provider a thief linked outlives the reset: the notice names each, with a page to remove it.
        const review = (await deps.linkedProviders?.issueLinkReview(trx, user.id)) ?? null;
        const { sessionsEnded } = await credentials.replacePassword(trx, {
          user,
          passwordHash,
          event: 'password.reset',
          source: input.source,
          ...(review !== null && { linkedProviders: { names: review.providerNames, reviewUrl: mail.link(deps.linkedProviders!.reviewPage, { token: review.token }) } }),
        });
        // The link reached the account's mailbox and came back: the address is proven, as by a verification link.
        await users.markEmailVerified(user.id, { db: trx });
        // A lock from failed sign-ins is lifted with the new password (users.setPasswordHash).
        return { ok: true, userId: user.id, sessionsEnded, linkReviewToken: review?.token ?? null };
      });
      if (result.ok) {
        mail.wake();
        // The failure counters live outside this transaction (storage or Redis): cleared after it.
        await credentials.clearSignInFailures(user.email);
      }
      return result;
    },
  };
}
