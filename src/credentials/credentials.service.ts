/**
 * E-mail/password credentials: sign-in, the creation of password users (CLI, bootstrap admin,
 * sign-up and the admin API), and replacing a password (changed by its user, or reset by a link:
 * see `password-reset/`). Outcomes are return values; the routes map them to HTTP.
 */
import type { User, UserService } from '../users/user.service.ts';
import type { Db } from '../storage/database.ts';
import { normaliseEmail } from '../users/email.ts';
import { greetingName } from '../users/name.ts';
import { mailLocale } from '../users/locale.ts';
import type { Locale } from '../i18n/locales.ts';
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import type { SessionService, StartedSession } from '../sessions/session.service.ts';
import type { ActionTokens } from '../tokens/action-tokens.ts';
import type { MailService } from '../mail/mail.service.ts';
import type { Clock } from '../lib/clock.ts';
import type { PasswordAccountSource, PasswordHasher } from './password-hasher.ts';
import type { PasswordPolicy, PasswordRejection } from './password-policy.ts';
import { createNewPasswordCheck, type NewPasswordCheck, type PasswordClient } from './new-password.ts';
import type { PasswordRefusalLimits } from './password-refusals.ts';
import type { Attempt, SignInThrottle } from './signin-throttle.ts';
import type { FirstFactor } from '../signin/first-factor.ts';
import type { SessionDelivery, SignInChallenge, SignInPipeline } from '../signin/signin-pipeline.ts';
import { PASSWORD_FACTOR, passwordFactor, type PasswordRehash } from './password-factor.ts';

export type SignInResult =
  | { ok: true; user: User; session: StartedSession }
  /** A step of the sign-in pipeline asks for more (see signin/signin-pipeline.ts). */
  | { ok: false; reason: 'CHALLENGE'; challenge: SignInChallenge }
  | { ok: false; reason: 'INVALID_CREDENTIALS' | 'ACCOUNT_DISABLED' | 'EMAIL_NOT_VERIFIED' }
  | { ok: false; reason: 'RATE_LIMITED'; retryAfterSeconds: number };

export type CreatePasswordUserResult =
  | { ok: true; user: User }
  | { ok: false; reason: 'EMAIL_TAKEN' | 'INVALID_ROLE' }
  | { ok: false; reason: 'WEAK_PASSWORD'; rejection: PasswordRejection }
  /** The client has had too many passwords refused, or has too many being judged (only with a `client`). */
  | { ok: false; reason: 'RATE_LIMITED'; retryAfterSeconds: number };

export type ChangePasswordResult =
  | { ok: true; sessionsEnded: number }
  | { ok: false; reason: 'INVALID_CREDENTIALS' }
  | { ok: false; reason: 'RATE_LIMITED'; retryAfterSeconds: number }
  | { ok: false; reason: 'WEAK_PASSWORD'; rejection: PasswordRejection };

/** A new password for an account, stored in the caller's transaction with what goes with it. */
export interface PasswordReplacement {
  user: Pick<User, 'id' | 'email' | 'name' | 'nameConfirmedAt' | 'locale'>;
  /** From `hashPassword`. */
  passwordHash: string;
  /** `password.reset` (by a mailed link, nobody signed in) or `password.changed` (by the signed-in user). */
  event: 'password.reset' | 'password.changed';
  source: AuditSource;
  /** The session to keep signed in (the one making the change); without it, every session ends. */
  keepSessionId?: string;
  /** After a reset: the providers that can still sign in, and the page that removes each (the notice lists them). */
  linkedProviders?: { names: readonly string[]; reviewUrl: string };
}

export interface SignInInput {
  email: string;
  password: string;
  ip: string | null;
  userAgent: string | null;
  /** The request's language, when it states one (`requestLocale`): an account with none stores it. */
  locale?: Locale | undefined;
  /** How the session reaches the client (`cookies`: POST /api/auth/signin); a second-factor challenge keeps it. Default `tokens`. */
  delivery?: SessionDelivery;
  /** Reads the request's cookies, for the sign-in's steps (a trusted browser's: `AuditSource.cookie`). */
  cookie?: (name: string) => string | undefined;
}

export type CredentialsService = ReturnType<typeof createCredentialsService>;

export function createCredentialsService(deps: {
  users: UserService;
  sessions: SessionService;
  hasher: PasswordHasher;
  policy: PasswordPolicy;
  audit: AuditService;
  /** Where a verified password ends: the account checks, the registered steps, the session. */
  pipeline: SignInPipeline;
  /** For password changes: their transaction, notice mail and its time. */
  db: Db;
  mail: MailService;
  /** A new password makes every outstanding reset link useless. */
  actionTokens: ActionTokens;
  clock: Clock;
  /** Per-IP and per-account limits on password sign-in. */
  throttle: SignInThrottle;
  /** Per-account and per-IP limits on refused new passwords (requests from a client only). */
  passwordRefusals?: PasswordRefusalLimits;
  /** Old systems asked for an address that has no account here (lazy migration; none by default). */
  accountSources?: readonly PasswordAccountSource[];
}) {
  const { users, sessions, hasher, policy, audit, db, mail, actionTokens, clock, throttle, pipeline } = deps;

  const newPasswordCheck = createNewPasswordCheck({ policy, refusals: deps.passwordRefusals ?? null });

  /**
   * Whether `password` may be this user's new password (the policy, with their e-mail and name as
   * words to avoid). With the `client` asking (over HTTP), its refusals are limited and it takes
   * turns at the estimator with the other clients: it may get RATE_LIMITED instead.
   */
  function checkNewPassword(password: string, user: Pick<User, 'email' | 'name'>, client?: PasswordClient): Promise<NewPasswordCheck> {
    return newPasswordCheck(password, { email: user.email, name: user.name }, client);
  }

  /**
   * Inside the caller's transaction `trx` (which must be the only `db` used meanwhile): stores the
   * new hash, queues the `password-changed` notice to the account's own address, ends the user's
   * sessions (every one, or all but `keepSessionId`), and records `event`. Together or not at all.
   * The caller calls `mail.wake()` after its commit.
   */
  /** After the failure that reached the ceiling: the account's password stays locked until a reset. */
  async function lockPassword(userId: string, consecutiveFailures: number, source: AuditSource): Promise<void> {
    if (await users.lockPassword(userId)) {
      await audit.record({ type: 'user.password_locked', userId, source, reason: 'TOO_MANY_FAILURES', details: { consecutiveFailures } });
    }
  }

  /**
   * An address without an account here: the first old system that vouches for the password has
   * the account created with an argon2id hash of it (a concurrent sign-in that created it first
   * is fine: its row is read back). Null when none does.
   */
  async function adoptFromSource(input: SignInInput, source: AuditSource) {
    for (const accountSource of deps.accountSources ?? []) {
      const vouched = await accountSource.verify(normaliseEmail(input.email), input.password);
      if (vouched === null) continue;
      await users.createUser(
        { email: input.email, name: '', passwordHash: await hasher.hash(input.password), emailVerified: vouched.emailVerified },
        { onCreated: (trx, user) => audit.record({ type: 'user.created', userId: user.id, source, details: { via: accountSource.name } }, { db: trx }) },
      );
      return users.findCredentialsByEmail(input.email);
    }
    return null;
  }

  async function replacePassword(trx: Db, change: PasswordReplacement): Promise<{ sessionsEnded: number }> {
    const { user, source } = change;
    await users.setPasswordHash(user.id, change.passwordHash, { db: trx });
    await actionTokens.retire(trx, user.id, 'password_reset');
    await mail.enqueue(trx, {
      to: user.email,
      template: 'password-changed',
      locale: mailLocale(user, source),
      data: {
        name: greetingName(user),
        changedAt: clock(),
        // Where someone who did not change their password takes the account back (password-reset's page).
        forgotPasswordUrl: mail.accountRecoveryUrl(),
        ...(change.linkedProviders !== undefined && { linkedProviders: change.linkedProviders }),
      },
    });
    const sessionsEnded = await sessions.endAllSessions(user.id, {
      db: trx,
      source,
      reason: change.event === 'password.reset' ? 'PASSWORD_RESET' : 'PASSWORD_CHANGED',
      ...(change.keepSessionId !== undefined && { exceptSessionId: change.keepSessionId }),
    });
    await audit.record({ type: change.event, userId: user.id, source, details: { sessionsEnded } }, { db: trx });
    return { sessionsEnded };
  }

  return {
    /**
     * Every outcome is recorded in the audit log (`signin.success`, or `signin.failure` with the
     * reason and the address tried), never the password. An unknown address and a wrong password
     * cost the same: one lookup, one hash verification, one audit write.
     */
    async signIn(input: SignInInput): Promise<SignInResult> {
      const source = { actorUserId: null, ip: input.ip, userAgent: input.userAgent, ...(input.locale !== undefined && { locale: input.locale }), ...(input.cookie !== undefined && { cookie: input.cookie }) };
      async function refuse(reason: 'INVALID_CREDENTIALS', userId: string | null): Promise<SignInResult> {
        await audit.record({ type: 'signin.failure', userId, email: normaliseEmail(input.email), source, reason, details: { method: PASSWORD_FACTOR } });
        return { ok: false, reason };
      }

      // Before any hashing, and the same for an address with or without an account. Refusals
      // here are not audited one by one: a flood must not become a flood of writes.
      const allowed = await throttle.checkAttempt(input.email, input.ip);
      if (!allowed.ok) return { ok: false, reason: 'RATE_LIMITED', retryAfterSeconds: allowed.retryAfterSeconds };
      const { attempt } = allowed;
      try {
        async function refuseWrongPassword(userId: string | null): Promise<SignInResult> {
          const outcome = await attempt.failed();
          if (outcome.isLocked && userId !== null) await lockPassword(userId, outcome.consecutiveFailures, source);
          return refuse('INVALID_CREDENTIALS', userId);
        }

        // `return await` in this block: the `finally` below gives the attempt's places back, and
        // must not run before a wrong password's failure is written (see Attempt.release).
        let credentials = await users.findCredentialsByEmail(input.email);
        if (credentials === null && (deps.accountSources ?? []).length > 0) credentials = await adoptFromSource(input, source);
        if (credentials === null || credentials.passwordHash === null) {
          // Same work as a wrong password, so the answer's timing does not reveal the account.
          await hasher.verifyDummy(input.password, normaliseEmail(input.email));
          return await refuseWrongPassword(credentials?.id ?? null);
        }
        if (credentials.passwordLockedAt !== null) {
          // Locked, though its counter was lost (a Redis flush, say). Answered exactly as an
          // address without an account is after the same loss: the same cost, a wrong password
          // whatever was typed, and a failure counted, so the counter locks again as it would for
          // that address. A 429 here would tell which addresses have accounts.
          await hasher.verifyDummy(input.password, normaliseEmail(input.email));
          return await refuseWrongPassword(credentials.id);
        }
        if (!(await hasher.verify(credentials.passwordHash, input.password))) {
          return await refuseWrongPassword(credentials.id);
        }

        const verifiedHash = credentials.passwordHash;
        const accountId = credentials.id;
        // A foreign hash (an import's) or outdated parameters: replaced with the sign-in, in its
        // transaction (password-factor.ts), only over the hash just verified: a password changed
        // meanwhile must not be put back.
        let rehash: PasswordRehash | undefined;
        if (credentials.disabledAt === null && hasher.needsRehash(verifiedHash)) {
          const hash = await hasher.hash(input.password);
          rehash = { hash, replace: (db) => users.replacePasswordHash(accountId, verifiedHash, hash, db === undefined ? {} : { db }) };
        }
        const user = await users.findUserById(credentials.id);
        if (user === null) return { ok: false, reason: 'INVALID_CREDENTIALS' }; // deleted meanwhile
        const complete = (hash: string, withRehash?: PasswordRehash) =>
          pipeline.complete({ user, factor: settledWithSession(passwordFactor(normaliseEmail(input.email), hash, withRehash), attempt), source, ...(input.delivery !== undefined && { delivery: input.delivery }) });
        let outcome = await complete(verifiedHash, rehash);
        // A challenge was bound to the new hash: it is written now, for the answer to find it (no session, no transaction to join).
        if (rehash !== undefined && 'challenge' in outcome) await rehash.replace();
        if (!outcome.ok && 'refusal' in outcome && outcome.refusal === 'CREDENTIALS_CHANGED') {
          // The account changed while the password was checked. Disabled: answered as a disabled
          // account is. Rehashed by a concurrent sign-in with the same password (after ARGON2_*
          // changed): that password still opens it, so once more with the new hash. Otherwise the
          // password was changed, reset or locked: it no longer counts.
          const now = await users.findCredentialsById(user.id);
          if (now?.disabledAt !== null && now?.disabledAt !== undefined) return { ok: false, reason: 'ACCOUNT_DISABLED' };
          if (now !== null && now.passwordHash !== null && now.passwordHash !== verifiedHash && now.passwordLockedAt === null && (await hasher.verify(now.passwordHash, input.password))) {
            outcome = await complete(now.passwordHash);
          }
        }
        // A challenge (a second factor) is not yet a success: the account's failures, which its
        // wrong codes add to, must not be cleared by retyping the password between guesses.
        if ('challenge' in outcome) return { ok: false, reason: 'CHALLENGE', challenge: outcome.challenge };
        // Written already with the session, when one was started; a refusal (disabled…) writes it now.
        await attempt.succeeded();
        if (outcome.ok) return outcome;
        return { ok: false, reason: toSignInFailure(outcome.refusal) };
      } finally {
        // An attempt whose password was never judged (a 503: no hashing slot, storage down) is
        // given back: people typing the right password must not be locked out by an overload.
        await attempt.release().catch(() => {});
      }
    },

    /**
     * Checks the password against the policy, hashes it, then creates the user (`onCreated` runs
     * in the creating transaction: see `UserService.createUser`). An address that is taken costs
     * the same as a free one up to the insert: the policy check and the hash happen either way.
     */
    async createPasswordUser(
      input: {
        email: string;
        name: string;
        password: string;
        roles?: readonly string[];
        emailVerified?: boolean;
        /** The language of their mails, when known (a sign-up: the browser's). */
        locale?: Locale | null;
      },
      /** `client`: the client asking, over HTTP (see `checkNewPassword`); none for the CLI and start-up. */
      options: { onCreated?: (db: Db, user: User) => Promise<void>; client?: PasswordClient } = {},
    ): Promise<CreatePasswordUserResult> {
      const checked = await checkNewPassword(input.password, input, options.client);
      if (!checked.ok) return checked;
      return users.createUser(
        {
          email: input.email,
          name: input.name,
          passwordHash: await hasher.hash(input.password),
          roles: input.roles ?? [],
          emailVerified: input.emailVerified ?? false,
          locale: input.locale ?? null,
        },
        options,
      );
    },

    checkNewPassword,

    /** argon2id, off the event loop. Hash before opening a transaction: it takes tens of milliseconds. */
    hashPassword: (password: string): Promise<string> => hasher.hash(password),

    replacePassword,

    /**
     * A signed-in user replaces their password. The current one must verify first (an account
     * without one, which signs in with a provider, sets its first through a reset link); then the
     * new one must pass the policy. Then, in one transaction, the hash is replaced, every other
     * session ended, the notice queued and `password.changed` recorded. The session making the
     * change (`sessionId`) stays signed in.
     */
    async changePassword(input: {
      userId: string;
      sessionId: string;
      currentPassword: string;
      newPassword: string;
      source: AuditSource;
    }): Promise<ChangePasswordResult> {
      const [user, current] = await Promise.all([users.findUserById(input.userId), users.findCredentialsById(input.userId)]);
      if (user === null || current === null || current.passwordHash === null) {
        await hasher.verifyDummy(input.currentPassword, input.userId);
        return { ok: false, reason: 'INVALID_CREDENTIALS' };
      }
      // The current password is guessed under the same limits as at sign-in (a stolen session
      // must not become an unlimited password oracle), and a locked password cannot be used here.
      const allowed = await throttle.checkAttempt(user.email, input.source.ip);
      if (!allowed.ok) return { ok: false, reason: 'RATE_LIMITED', retryAfterSeconds: allowed.retryAfterSeconds };
      if (current.passwordLockedAt !== null) {
        await allowed.attempt.failed();
        return { ok: false, reason: 'RATE_LIMITED', retryAfterSeconds: 86_400 };
      }
      try {
        if (!(await hasher.verify(current.passwordHash, input.currentPassword))) {
          const outcome = await allowed.attempt.failed();
          if (outcome.isLocked) await lockPassword(user.id, outcome.consecutiveFailures, input.source);
          return { ok: false, reason: 'INVALID_CREDENTIALS' };
        }
        await allowed.attempt.succeeded();
      } finally {
        await allowed.attempt.release().catch(() => {});
      }
      const checked = await checkNewPassword(input.newPassword, user, { ip: input.source.ip, isAccountHolder: true });
      if (!checked.ok) return checked;
      const passwordHash = await hasher.hash(input.newPassword);
      const { sessionsEnded } = await db
        .transaction()
        .execute((trx) => replacePassword(trx, { user, passwordHash, event: 'password.changed', source: input.source, keepSessionId: input.sessionId }));
      mail.wake();
      await throttle.clearAccount(user.email);
      return { ok: true, sessionsEnded };
    },

    /** After a password reset: the account's failed sign-ins no longer count (a lock is lifted). */
    async clearSignInFailures(email: string): Promise<void> {
      await throttle.clearAccount(email);
    },
  };
}

/**
 * `factor`, with the throttle's record of the success written in the session's transaction: one
 * commit for the session, its audit event and the counters, where each counter was a commit of its
 * own (when the counters live in storage; see signin-throttle.ts). No session, no success yet.
 */
function settledWithSession(factor: FirstFactor, attempt: Attempt): FirstFactor {
  return {
    ...factor,
    onSessionStarted: async (trx) => {
      await factor.onSessionStarted?.(trx);
      await attempt.succeeded(trx);
    },
  };
}

/**
 * The answer to a refusal of the sign-in pipeline. A password changed, reset or locked while it
 * was being checked (CREDENTIALS_CHANGED) was a wrong password by the time it counted.
 */
function toSignInFailure(refusal: string): 'INVALID_CREDENTIALS' | 'ACCOUNT_DISABLED' | 'EMAIL_NOT_VERIFIED' {
  return refusal === 'ACCOUNT_DISABLED' || refusal === 'EMAIL_NOT_VERIFIED' ? refusal : 'INVALID_CREDENTIALS';
}
