/**
 * The one place every sign-in ends. A first factor (a password, a provider, a passkey: see
 * first-factor.ts) identifies the account and proves something; the module that verified it then
 * calls `complete`, which runs, in order:
 * 1. the account checks: disabled (ACCOUNT_DISABLED), the address proved by the first factor
 *    stamped verified, and the e-mail verification policy (EMAIL_NOT_VERIFIED);
 * 2. the steps modules registered (`SignInStep`), in order: each may let the sign-in go on, refuse
 *    it, or stop it with a challenge (a second factor, say) that a later request answers;
 * 3. the session, written only if the account is still as the first factor found it (see
 *    `SessionService.startSession`), and, for an account with no language for its mails yet, the
 *    sign-in's language (users/locale.ts);
 * and records the outcome in the audit log once, with the factor's kind as `method` and what the
 * factor says of itself (nothing here switches on its kind). Outcomes are values; the routes (JSON
 * API, form posts, provider callbacks) turn them into answers and set the browser's cookies in one
 * place (`setBrowserSession`).
 *
 * A challenge is answered at the asking module's own routes; when it is met, that module calls
 * `complete` again with `resume`: the account checks run again (the account may have been
 * disabled meanwhile), the steps up to and including the one that asked are skipped, and the
 * session records the methods of both factors (`amr`).
 */
import type { User, UserService } from '../users/user.service.ts';
import type { SessionService, StartedSession } from '../sessions/session.service.ts';
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import type { Clock } from '../lib/clock.ts';
import type { ErrorCode } from '../errors.ts';
import type { FirstFactor, FirstFactorKind } from './first-factor.ts';

/**
 * How the session a sign-in starts reaches the client: in the answer's body only (`tokens`: `POST
 * /api/auth`), or also as the browser's cookies (`cookies`: `POST /api/auth/signin`). A challenge
 * keeps it, so that its answer delivers the session the way the sign-in that asked would have.
 */
export type SessionDelivery = 'tokens' | 'cookies';

export interface SignInAttempt {
  user: User;
  factor: FirstFactor;
  source: AuditSource;
  /** Default `tokens`. */
  delivery?: SessionDelivery;
}

/** A sign-in going on after the challenge of `step` was met by `method` (`totp`, `passkey`), proving `amr` (e.g. `['otp', 'mfa']`). */
export interface ResumedSignIn {
  step: string;
  method: string;
  amr: readonly string[];
}

/** Why a sign-in whose first factor succeeded is refused. */
export type SignInRefusal = 'ACCOUNT_DISABLED' | 'EMAIL_NOT_VERIFIED' | 'CREDENTIALS_CHANGED';

/**
 * What a step asks for before the sign-in may go on. Every sign-in route answers it the same way:
 * `code`'s status with `{error: code, message, ...fields}` and no session, no cookie; the step's
 * module answers the follow-up at routes of its own.
 */
export interface SignInChallenge {
  /** The step that asked, e.g. `second-factor`. */
  step: string;
  code: ErrorCode;
  /** What the client needs to answer it (a token for the follow-up, the methods it may use); never a secret of the account. */
  fields: Record<string, unknown>;
  /**
   * Where a browser answers it (a form post, a provider callback): the page, and the token the
   * page needs, which travels in a short-lived HttpOnly cookie, never in a URL.
   */
  browser?: { page: string; token: string; ttlSeconds: number };
}

/**
 * `note`: what a step that lets the sign-in go on says of why, for the sign-in's audit event (ids,
 * never a secret): the second-factor step's waiver, say.
 */
export type StepDecision = { action: 'continue'; note?: Record<string, unknown> } | { action: 'refuse'; reason: string } | { action: 'challenge'; challenge: SignInChallenge };

/** A step a module adds to every sign-in, after the account checks and before the session. */
export interface SignInStep {
  readonly name: string;
  decide(attempt: SignInAttempt): Promise<StepDecision>;
}

export type SignInOutcome =
  | { ok: true; user: User; session: StartedSession }
  /** A `SignInRefusal`, or the reason a step refused with. */
  | { ok: false; refusal: string }
  | { ok: false; challenge: SignInChallenge };

export type SignInPipeline = ReturnType<typeof createSignInPipeline>;

export function createSignInPipeline(deps: {
  users: UserService;
  sessions: SessionService;
  audit: AuditService;
  clock: Clock;
  /** REQUIRE_EMAIL_VERIFICATION. */
  requireEmailVerification: boolean;
  /** The registered steps, in order; read at each sign-in (the modules declaring them are built after the pipeline). */
  steps: () => readonly SignInStep[];
  /** The registered kinds of first factor; the same. A factor of another kind could never be resumed after a challenge. */
  firstFactorKinds: () => readonly FirstFactorKind[];
}) {
  const { users, sessions, audit, clock, steps } = deps;

  async function refuse(attempt: SignInAttempt, reason: string): Promise<SignInOutcome> {
    const { kind, audit: described } = attempt.factor;
    const details = { ...described.details, method: kind };
    await audit.record({ type: 'signin.failure', userId: attempt.user.id, source: attempt.source, reason, ...(described.email !== undefined && { email: described.email }), details });
    return { ok: false, refusal: reason };
  }

  return {
    /** Ends a sign-in whose first factor identified `attempt.user`: a session, a refusal or a challenge. */
    async complete(attempt: SignInAttempt, resume?: ResumedSignIn): Promise<SignInOutcome> {
      let { user } = attempt;
      const { factor, source } = attempt;
      if (!deps.firstFactorKinds().some((registered) => registered.kind === factor.kind)) throw new Error(`no module registers the first-factor kind "${factor.kind}"`);
      // Only someone who passed the first factor learns the account is disabled or unverified.
      if (user.disabledAt !== null) return refuse(attempt, 'ACCOUNT_DISABLED');
      if (factor.provesEmail && user.emailVerifiedAt === null) {
        await users.markEmailVerified(user.id);
        user = { ...user, emailVerifiedAt: clock() };
      }
      if (deps.requireEmailVerification && user.emailVerifiedAt === null) return refuse(attempt, 'EMAIL_NOT_VERIFIED');

      const all = steps();
      const resumeAt = resume === undefined ? 0 : all.findIndex((step) => step.name === resume.step) + 1;
      if (resumeAt === 0 && resume !== undefined) throw new Error(`no sign-in step is named "${resume.step}"`);
      let notes: Record<string, unknown> = {};
      for (const step of all.slice(resumeAt)) {
        const decision = await step.decide({ ...attempt, user });
        if (decision.action === 'refuse') return refuse(attempt, decision.reason);
        if (decision.action === 'challenge') return { ok: false, challenge: decision.challenge };
        if (decision.note !== undefined) notes = { ...notes, ...decision.note };
      }

      const amr = [...new Set([...factor.amr, ...(resume?.amr ?? [])])];
      const session = await sessions.startSession({
        userId: user.id,
        roles: user.roles,
        amr,
        verifiedPasswordHash: factor.passwordHash ?? null,
        ip: source.ip,
        userAgent: source.userAgent,
        // In the session's transaction: what subscribes to sign-ins (webhooks) never misses one.
        onStarted: async (trx, sessionId) => {
          await factor.onSessionStarted?.(trx);
          // What the factor says of itself, its kind, and the step whose challenge was met and by what.
          const details = { ...factor.audit.details, ...notes, sessionId, amr, method: factor.kind, ...(resume !== undefined && { step: resume.step, stepMethod: resume.method }) };
          await audit.record({ type: 'signin.success', userId: user.id, source, details }, { db: trx });
          // An account with no language yet (made before languages were stored, by an administrator
          // or a provider) takes this sign-in's for its mails: one write, once.
          if (user.locale === null && source.locale !== undefined) await users.setLocale(user.id, source.locale, { db: trx, onlyIfUnset: true });
        },
      });
      // The password was changed, reset or locked, or the account disabled, while the first
      // factor was being checked: what was verified is no longer the account's.
      if (session === null) return refuse(attempt, 'CREDENTIALS_CHANGED');
      return { ok: true, user, session };
    },
  };
}
