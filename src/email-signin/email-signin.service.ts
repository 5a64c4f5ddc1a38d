/**
 * Sign-in by e-mail: a mail with a one-time link and a short code, either of which signs in once,
 * through the sign-in pipeline (the account checks, the second factor, the session, the audit).
 *
 * Starting never says whether the address has an account: every start writes one request row
 * (with a request id, a link token and a code, whatever the address), retires the older requests
 * of the address, records one audit event, and is answered no sooner than a fixed time after it
 * arrived (`lib/response-floor.ts`): only an account (or, while ALLOW_SIGNUP, an unknown address,
 * which is sent a sign-up link) also gets a mail in the same transaction, and the floor hides that.
 *
 * Only hashes are stored: the link token's SHA-256, and an HMAC of the code keyed from AUTH_SECRET
 * and bound to the request id (a code works for its own request only). A code is compared in
 * constant time, after one of the request's MAX_WRONG_CODES tries is reserved (parallel guesses
 * count at once); the last wrong one voids the request. A use spends the request with a
 * conditional update, so of two racing uses exactly one signs in. Outcomes are values; the routes
 * turn them into answers.
 */
import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import type { MailService } from '../mail/mail.service.ts';
import type { User, UserService } from '../users/user.service.ts';
import type { SessionService } from '../sessions/session.service.ts';
import type { SessionDelivery, SignInOutcome, SignInPipeline } from '../signin/signin-pipeline.ts';
import type { Limiter } from '../http/rate-limit.ts';
import { accountKey } from '../http/rate-limit.ts';
import { randomId, randomSecret, sha256Base64url } from '../lib/random.ts';
import { deriveSecretKey } from '../lib/derive-key.ts';
import { normaliseEmail } from '../users/email.ts';
import { greetingName } from '../users/name.ts';
import { mailLocale } from '../users/locale.ts';
import { ACCOUNT_NEUTRAL_MIN_RESPONSE_MS, createResponseFloor, type ResponseFloor } from '../lib/response-floor.ts';
import type { EmailSignInConfig } from './email-signin.config.ts';
import { EMAIL_FACTOR, emailFactor, type EmailMethod } from './email-factor.ts';
import * as store from './email-signin.store.ts';

/** The page a mailed link opens: a button that posts the token (a GET never spends it). */
export const EMAIL_LINK_PAGE = '/auth/email-signin/link';
/** Wrong codes a request allows; the last one voids it. */
export const MAX_WRONG_CODES = 5;
/** The longest token or request id looked up: ours are 43 and 22 characters. */
const MAX_SECRET_LENGTH = 128;

export type StartResult = { requestId: string };

/** Why a use of a link or a code was refused (before the pipeline). */
export type UseRefusal =
  | { ok: false; reason: 'INVALID_TOKEN' | 'TOKEN_EXPIRED' | 'INVALID_CODE' | 'EMAIL_SIGNIN_VOIDED' | 'EMAIL_SIGNIN_OTHER_BROWSER' }
  | { ok: false; reason: 'RATE_LIMITED'; retryAfterSeconds: number };

/** The pipeline's outcome (a session, a refusal, a challenge), with where the browser goes next; or why the link or code was refused. */
export type UseResult = (SignInOutcome & { callbackUrl: string | null }) | UseRefusal;

export type LinkState = { ok: true; purpose: 'signin' | 'signup' } | { ok: false; reason: 'INVALID_TOKEN' | 'TOKEN_EXPIRED' | 'EMAIL_SIGNIN_OTHER_BROWSER' };

export interface UseInput {
  /** The browser-binding secret of the cookie the start set; null when the request carries none. */
  browserSecret: string | null;
  source: AuditSource;
  delivery: SessionDelivery;
}

export type EmailSignInService = ReturnType<typeof createEmailSignInService>;

export function createEmailSignInService(deps: {
  db: Db;
  clock: Clock;
  users: UserService;
  /** Ends the sessions of an unverified account whose mailbox a sign-in proves (see `reclaim`). */
  sessions: Pick<SessionService, 'endAllSessions'>;
  audit: AuditService;
  mail: MailService;
  pipeline: SignInPipeline;
  config: EmailSignInConfig;
  /** ALLOW_SIGNUP: an unknown address is sent a sign-up link, else nothing. */
  allowSignup: () => boolean;
  authSecret: string;
  /** Wrong codes per address (RATE_LIMIT_EMAIL_SIGNIN_CODES_PER_ADDRESS). */
  wrongCodes: Limiter;
  /** Holds the start's answer; tests pass one with their own timer. */
  startFloor?: ResponseFloor;
}) {
  const { db, clock, users, sessions, audit, mail, pipeline, config, wrongCodes } = deps;
  const answerNoSooner = deps.startFloor ?? createResponseFloor(ACCOUNT_NEUTRAL_MIN_RESPONSE_MS);
  const codeKey = deriveSecretKey(deps.authSecret, 'email-signin-code');
  const expiresInMinutes = Math.max(1, Math.floor(config.ttlSeconds / 60));

  const codeHash = (requestId: string, code: string) => createHmac('sha256', codeKey).update(`${requestId}:${code}`).digest('base64url');
  const sameHash = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
  const isSameBrowser = (row: store.EmailSignInRequest, secret: string | null) => secret !== null && row.browser_hash !== null && sameHash(sha256Base64url(secret), row.browser_hash);
  const newCode = () => String(randomInt(0, 10 ** config.codeLength)).padStart(config.codeLength, '0');

  /** What a start sends, by what the address is: an account, nothing, or a sign-up link. */
  function purposeOf(user: User | null): { purpose: store.RequestPurpose; reason: string | null } {
    if (user === null) return deps.allowSignup() ? { purpose: 'signup', reason: 'UNKNOWN_EMAIL' } : { purpose: 'none', reason: 'UNKNOWN_EMAIL' };
    if (user.disabledAt !== null) return { purpose: 'none', reason: 'ACCOUNT_DISABLED' };
    return { purpose: 'signin', reason: null };
  }

  /** The live request a secret names, or why not (never spent here). */
  function judge(row: store.EmailSignInRequest | undefined): { ok: true; row: store.EmailSignInRequest } | { ok: false; reason: 'INVALID_TOKEN' | 'TOKEN_EXPIRED' } {
    if (row === undefined || row.used_at !== null || row.voided_at !== null) return { ok: false, reason: 'INVALID_TOKEN' };
    if (row.expires_at <= clock()) return { ok: false, reason: 'TOKEN_EXPIRED' };
    return { ok: true, row };
  }

  /** As `judge`, and a request its wrong codes voided says so (EMAIL_SIGNIN_VOIDED). */
  function judgeForCode(row: store.EmailSignInRequest | undefined): ReturnType<typeof judge> | { ok: false; reason: 'EMAIL_SIGNIN_VOIDED' } {
    const judged = judge(row);
    if (!judged.ok && row !== undefined && row.used_at === null && row.failed_attempts >= MAX_WRONG_CODES) return { ok: false, reason: 'EMAIL_SIGNIN_VOIDED' };
    return judged;
  }

  async function findLink(token: string) {
    return token.length > MAX_SECRET_LENGTH ? undefined : store.findByLinkHash(db, sha256Base64url(token));
  }

  /** The account a spent request signs in: its own, or for a sign-up the one made now (or made meanwhile with that address). */
  async function accountOf(row: store.EmailSignInRequest, source: AuditSource): Promise<User | null> {
    if (row.purpose === 'signin') {
      const user = row.user_id === null ? null : await users.findUserById(row.user_id);
      // The mail reached the address the account had then: it proves nothing for another.
      return user !== null && sameHash(accountKey(user.email), row.email_hash) ? user : null;
    }
    if (row.purpose !== 'signup' || row.email === null || !deps.allowSignup()) return null;
    const email = row.email;
    const created = await users.createUser(
      // The mailbox answered: the address is verified from the start. No password: it signs in by mail (or sets one by reset).
      { email, name: email.split('@')[0]!, passwordHash: null, emailVerified: true, locale: source.locale ?? null },
      { onCreated: (trx, user) => audit.record({ type: 'user.created', userId: user.id, source, details: { via: 'email-signin' } }, { db: trx }) },
    );
    if (created.ok) return created.user;
    return created.reason === 'EMAIL_TAKEN' ? users.findUserByEmail(email) : null;
  }

  /**
   * The first proof of an unverified account's mailbox: whoever made the account may not own the
   * address (account pre-hijacking: a stranger signs up with it first, then waits). What they could
   * have set up without the mailbox stops working: the password is locked (a reset link, which
   * needs the mailbox, sets a new one) and every session ends. The pipeline then stamps the
   * address verified.
   */
  async function reclaim(user: User, source: AuditSource): Promise<void> {
    const credentials = await users.findCredentialsById(user.id);
    if (credentials?.passwordHash != null && credentials.passwordLockedAt === null && (await users.lockPassword(user.id))) {
      await audit.record({ type: 'user.password_locked', userId: user.id, source, reason: 'UNVERIFIED_ADDRESS_PROVED' });
    }
    await sessions.endAllSessions(user.id, { source, reason: 'UNVERIFIED_ADDRESS_PROVED' });
  }

  /** Spends the request (one winner) and signs its account in through the pipeline. */
  async function use(row: store.EmailSignInRequest, method: EmailMethod, input: UseInput): Promise<UseResult> {
    if (!(await store.markUsed(db, row.id, clock()))) return { ok: false, reason: 'INVALID_TOKEN' };
    const user = await accountOf(row, input.source);
    if (user === null) return { ok: false, reason: 'INVALID_TOKEN' };
    if (user.emailVerifiedAt === null) await reclaim(user, input.source);
    const outcome = await pipeline.complete({ user, factor: emailFactor(user.email, method), source: input.source, delivery: input.delivery });
    return { ...outcome, callbackUrl: row.callback_url };
  }

  /** A wrong code: counted for the address, audited; the last of the request's tries (`tries`) voids it. */
  async function refuseCode(row: store.EmailSignInRequest, tries: number, source: AuditSource): Promise<UseResult> {
    await wrongCodes.consume(row.email_hash);
    await audit.record({ type: 'signin.failure', userId: row.user_id, source, reason: 'INVALID_CODE', details: { method: EMAIL_FACTOR, emailMethod: 'code' } });
    if (tries < MAX_WRONG_CODES) return { ok: false, reason: 'INVALID_CODE' };
    if (await store.markVoided(db, row.id, clock())) {
      await audit.record({ type: 'email_signin.voided', userId: row.user_id, source, reason: 'TOO_MANY_WRONG_CODES', details: { requestId: row.id } });
    }
    return { ok: false, reason: 'EMAIL_SIGNIN_VOIDED' };
  }

  return {
    isEnabled: config.enabled,
    ttlSeconds: config.ttlSeconds,

    /**
     * Starts a sign-in by mail for `email`: the same work and the same answer for every address
     * (see above), no sooner than the floor. `browserSecret`: the secret of the cookie the route
     * sets, which binds the request to this browser. `callbackUrl`: already judged (toCallbackUrl).
     */
    async start(input: { email: string; callbackUrl: string | null; browserSecret: string; source: AuditSource }): Promise<StartResult> {
      return answerNoSooner(async () => {
        const email = normaliseEmail(input.email);
        const user = await users.findUserByEmail(email);
        const { purpose, reason } = purposeOf(user);
        const requestId = randomId();
        const token = randomSecret();
        const code = newCode();
        const now = clock();
        const isSent = await db.transaction().execute(async (trx) => {
          await store.insertRequest(trx, {
            id: requestId,
            purpose,
            user_id: purpose === 'signin' ? user!.id : null,
            email: purpose === 'signup' ? email : null,
            email_hash: accountKey(email),
            link_hash: sha256Base64url(token),
            code_hash: codeHash(requestId, code),
            browser_hash: sha256Base64url(input.browserSecret),
            callback_url: input.callbackUrl,
            failed_attempts: 0,
            created_at: now,
            expires_at: now + config.ttlSeconds * 1000,
            used_at: null,
            voided_at: null,
          });
          if (purpose !== 'none') {
            await mail.enqueue(trx, {
              // The stored address for an account; the typed one (normalised) for a sign-up.
              to: user?.email ?? email,
              template: 'email-signin',
              locale: mailLocale(user, input.source),
              data: { name: user === null ? null : greetingName(user), purpose, linkUrl: mail.link(EMAIL_LINK_PAGE, { token }), code, expiresInMinutes },
            });
          }
          // Never the address typed: an unknown one is nobody's to record.
          await audit.record({ type: 'email_signin.requested', userId: user?.id ?? null, source: input.source, reason, details: { requestId, purpose } }, { db: trx });
          return purpose !== 'none';
        });
        if (isSent) mail.wake();
        return { requestId };
      });
    },

    /** Whether a link works here, without spending it (the page a link opens shows its button only then). */
    async checkLink(token: string, browserSecret: string | null): Promise<LinkState> {
      const judged = judge(await findLink(token));
      if (!judged.ok) return judged;
      if (config.sameBrowser && !isSameBrowser(judged.row, browserSecret)) return { ok: false, reason: 'EMAIL_SIGNIN_OTHER_BROWSER' };
      return { ok: true, purpose: judged.row.purpose === 'signup' ? 'signup' : 'signin' };
    },

    /** Signs in with a mailed link's token; under EMAIL_SIGNIN_SAME_BROWSER only in the browser that asked. */
    async useLink(token: string, input: UseInput): Promise<UseResult> {
      const judged = judge(await findLink(token));
      if (!judged.ok) return judged;
      if (config.sameBrowser && !isSameBrowser(judged.row, input.browserSecret)) return { ok: false, reason: 'EMAIL_SIGNIN_OTHER_BROWSER' };
      return use(judged.row, 'link', input);
    },

    /**
     * Signs in with a mailed code, for the request `requestId` only. `email`: the address the API
     * caller started with (a mismatch is a wrong code); null on the page, whose cookie names the
     * request. A request started in a browser (its cookie) takes its code in that browser only.
     */
    async useCode(answer: { requestId: string; code: string; email: string | null; requireBrowser: boolean }, input: UseInput): Promise<UseResult> {
      const found = answer.requestId.length > MAX_SECRET_LENGTH ? undefined : await store.findById(db, answer.requestId);
      const judged = judgeForCode(found);
      if (!judged.ok) return judged;
      const { row } = judged;
      if (answer.requireBrowser && !isSameBrowser(row, input.browserSecret)) return { ok: false, reason: 'EMAIL_SIGNIN_OTHER_BROWSER' };
      // Too many wrong codes for this address lately, whichever request they were for.
      const wait = await wrongCodes.check(row.email_hash);
      if (wait !== null) return { ok: false, reason: 'RATE_LIMITED', retryAfterSeconds: wait };
      const tries = await store.reserveAttempt(db, row.id, MAX_WRONG_CODES, clock());
      // Used, voided or expired since it was read (a racing use won, say): why, as it is now.
      if (tries === null) {
        const now = judgeForCode(await store.findById(db, row.id));
        return now.ok ? { ok: false, reason: 'EMAIL_SIGNIN_VOIDED' } : now;
      }
      const typed = answer.code.replace(/[\s-]/g, '');
      const isRight =
        sameHash(codeHash(row.id, typed), row.code_hash) &&
        (answer.email === null || sameHash(accountKey(answer.email), row.email_hash)) &&
        // Nothing was sent for it: its code is nobody's, and never signs in.
        row.purpose !== 'none';
      if (!isRight) return refuseCode(row, tries, input.source);
      return use(row, 'code', input);
    },

    /** Deletes requests expired more than an hour ago (the housekeeping of the module's job). */
    async deleteExpired(): Promise<void> {
      await store.deleteExpiredBefore(db, clock() - 3_600_000);
    },
  };
}
