/**
 * E-mail verification: a single-use token (purpose `email_verification`) carried by a link to
 * `/auth/verify-email`, proving that whoever follows it reads the address's mail. Issuing a token
 * ends the user's older ones; the token and the mail carrying it are written in the caller's
 * transaction, and consuming it and stamping the address verified happen in one transaction, so a
 * token can verify at most once and only its own user.
 *
 * The page behind the link never consumes the token on GET: mail scanners fetch links; only the
 * button on it (a POST) does.
 */
import type { Db } from '../storage/database.ts';
import type { ActionTokens } from '../tokens/action-tokens.ts';
import type { MailService } from '../mail/mail.service.ts';
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import type { User, UserService } from '../users/user.service.ts';
import { mailLocale } from '../users/locale.ts';
import type { Locale } from '../i18n/locales.ts';
import { ACCOUNT_NEUTRAL_MIN_RESPONSE_MS, createResponseFloor, type ResponseFloor } from '../lib/response-floor.ts';

/** The page a verification link opens; it shows a button that posts the token. */
export const VERIFY_EMAIL_PAGE = '/auth/verify-email';

/**
 * A request for a new link is answered no sooner than this after it arrived, whatever the address
 * (see `lib/response-floor.ts`): only an unverified account's request issues a token and enqueues
 * a mail, which took measurably longer than looking up an address with none.
 */
export const VERIFICATION_RESEND_MIN_RESPONSE_MS = ACCOUNT_NEUTRAL_MIN_RESPONSE_MS;

export type VerifyEmailResult = { ok: true; userId: string } | { ok: false; reason: 'INVALID_TOKEN' | 'TOKEN_EXPIRED' };

export type VerificationService = ReturnType<typeof createVerificationService>;

export function createVerificationService(deps: {
  db: Db;
  users: UserService;
  tokens: ActionTokens;
  mail: MailService;
  audit: AuditService;
  /** VERIFICATION_TOKEN_TTL. */
  ttlSeconds: number;
  /** Holds the answer to a resend request; tests pass one with their own timer. */
  resendFloor?: ResponseFloor;
}) {
  const { db, users, tokens, mail, audit, ttlSeconds } = deps;
  const answerNoSooner = deps.resendFloor ?? createResponseFloor(VERIFICATION_RESEND_MIN_RESPONSE_MS);
  const expiresInMinutes = Math.max(1, Math.floor(ttlSeconds / 60));

  /**
   * Issues a new token for the user (ending their older verification tokens) and enqueues the
   * mail carrying its link, both through `trx`, so they commit together. Call `mail.wake()` after
   * the commit. The token exists only in the mail: it is neither returned nor logged. The mail is in
   * the user's language, else the language of `request` (the one asking for it), else English.
   */
  async function sendVerificationMail(trx: Db, user: Pick<User, 'id' | 'email' | 'locale'>, request?: { locale?: Locale }): Promise<void> {
    const { token } = await tokens.issue(trx, { userId: user.id, purpose: 'email_verification', ttlSeconds });
    await mail.enqueue(trx, {
      to: user.email,
      template: 'verify-email',
      locale: mailLocale(user, request),
      // No name: whoever signed up chose it, and may not own the address; a stranger must not be
      // able to put words in a mail we send to someone else.
      data: { name: null, verifyUrl: mail.link(VERIFY_EMAIL_PAGE, { token }), expiresInMinutes },
    });
  }

  return {
    sendVerificationMail,

    /** Whether the token is live, without using it up (the page shows its button only then). */
    async checkToken(token: unknown): Promise<{ ok: true } | { ok: false; reason: 'INVALID_TOKEN' | 'TOKEN_EXPIRED' }> {
      const checked = await tokens.check(db, token, 'email_verification');
      return checked.ok ? { ok: true } : checked;
    },

    /**
     * Consumes the token and stamps its user's address verified and name confirmed, with the
     * `email.verified` audit event, in one transaction. A user who was verified already stays so
     * (the token is still used up).
     */
    async verifyEmail(token: unknown, source: AuditSource): Promise<VerifyEmailResult> {
      return db.transaction().execute(async (trx): Promise<VerifyEmailResult> => {
        const consumed = await tokens.consume(trx, token, 'email_verification');
        if (!consumed.ok) return consumed;
        const wasUnverified = await users.markEmailVerified(consumed.userId, { db: trx });
        // A verified address counts as a trusted name (issue 15's rule): the mail this link came in
        // asks whoever did not create the account to ignore it. It does not show the name, so an
        // owner who follows it anyway confirms a name they have not seen.
        await users.confirmName(consumed.userId, { db: trx });
        await audit.record({ type: 'email.verified', userId: consumed.userId, source, details: { wasUnverified } }, { db: trx });
        return { ok: true, userId: consumed.userId };
      });
    },

    /**
     * Sends a new verification mail when the address belongs to an enabled, unverified user, and
     * does nothing otherwise. Resolves the same way in every case, no sooner than the floor after
     * the call (an error too, after that wait), so the caller's answer says nothing by its timing.
     */
    async resendVerificationMail(email: string, request?: { locale?: Locale }): Promise<void> {
      await answerNoSooner(async () => {
        const user = await users.findUserByEmail(email);
        if (user === null || user.emailVerifiedAt !== null || user.disabledAt !== null) return;
        await db.transaction().execute((trx) => sendVerificationMail(trx, user, request));
        mail.wake();
      });
    },
  };
}
