/**
 * The second-factor step of every sign-in, and the follow-up that answers it.
 *
 * After a right first factor, an account with a second factor gets no session: the step answers
 * 403 MFA_REQUIRED with an `mfaToken` and the `methods` it may be finished with. The token is a
 * 256-bit secret of which only the SHA-256 is stored, with the user, the first factor's kind and
 * binding (for a password, a SHA-256 of the hash it was verified against: signin/first-factor.ts)
 * and a count of wrong codes. It lives 5 minutes, allows 5 wrong codes, and is spent by the
 * sign-in it finishes; every code also counts against the account's throttle. The sign-in then
 * resumes in the pipeline, after this step, with the first factor its registered kind rebuilds
 * from the binding (a kind no module registers any more: the token is refused), and the session
 * records both factors in its `amr`. The challenge also keeps how the sign-in that asked delivers
 * its session (`tokens`, or `cookies` for a cookie-setting sign-in), and the finished sign-in says
 * so: its answer sets the browser's cookies exactly when the sign-in that asked would have.
 */
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import type { UserService } from '../users/user.service.ts';
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import type { SessionDelivery, SignInOutcome, SignInPipeline, SignInStep } from '../signin/signin-pipeline.ts';
import type { FirstFactorKind } from '../signin/first-factor.ts';
import type { SecondFactorWaiver } from '../signin/second-factor-waiver.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { User } from '../users/user.service.ts';
import type { PageContext } from '../web/page-context.ts';
import { randomSecret, sha256Base64url } from '../lib/random.ts';
import { RECOVERY_CODE_METHOD, type MfaService } from './mfa.service.ts';
import { normalise } from './recovery-codes.ts';
import { TOTP_METHOD } from './totp-factor.ts';
import * as store from './mfa.store.ts';

export const SECOND_FACTOR_STEP = 'second-factor';
/** The page where a browser answers the challenge (mfa-pages.routes.ts). */
export const MFA_PROMPT_PAGE = '/auth/mfa';
const CHALLENGE_TTL_MS = 5 * 60_000;
const MAX_WRONG_CODES = 5;
/** The longest `mfaToken` looked up: ours are 43 characters. */
const MAX_TOKEN_LENGTH = 128;

/** What answers a challenge: the token and one code (a TOTP or a recovery code). */
export interface ChallengeAnswer {
  mfaToken: string;
  code: string;
}

/** The second factor that met a challenge: its method (`totp`, `passkey`) and what it proves (`amr`: `otp`, `hwk`). */
export interface MetChallenge {
  method: string;
  amr: readonly string[];
}

/** A sign-in finished through its challenge: the session, and how the sign-in that asked delivers it. */
export type FinishedSignIn = Extract<SignInOutcome, { ok: true }> & { delivery: SessionDelivery };

export type ChallengeResult =
  | FinishedSignIn
  | Exclude<SignInOutcome, { ok: true }>
  | { ok: false; reason: 'INVALID_TOKEN' | 'INVALID_CODE' }
  | { ok: false; reason: 'RATE_LIMITED'; retryAfterSeconds: number };

export function createSecondFactor(deps: {
  db: Db;
  clock: Clock;
  users: UserService;
  audit: AuditService;
  mfa: MfaService;
  pipeline: SignInPipeline;
  /** The registered kinds of first factor, which resume a sign-in once its challenge is met. */
  firstFactorKinds: () => readonly FirstFactorKind[];
  /** What may waive the challenge (a trusted browser), asked before it is made; read at each sign-in. */
  waivers: () => readonly SecondFactorWaiver[];
}) {
  const { db, clock, users, audit, mfa, pipeline } = deps;

  const step: SignInStep = {
    name: SECOND_FACTOR_STEP,
    async decide(attempt) {
      const { user, factor, delivery } = attempt;
      // A first factor that is two already (a user-verified passkey).
      if (factor.amr.includes('mfa')) return { action: 'continue' };
      const methods = await mfa.methodsOf(user.id);
      if (methods.length === 0) return { action: 'continue' };
      // A waiver (a browser the user trusted) lets it go on, said in the audit event; the session's amr claims no second factor.
      for (const waiver of deps.waivers()) {
        const waived = await waiver.waive(attempt);
        if (waived !== null) return { action: 'continue', note: { ...waived.details, secondFactorWaivedBy: waived.by } };
      }
      const mfaToken = randomSecret();
      const now = clock();
      await store.insertChallenge(db, {
        id: sha256Base64url(mfaToken),
        user_id: user.id,
        factor: factor.kind,
        binding: factor.binding,
        delivery: delivery ?? 'tokens',
        failed_attempts: 0,
        created_at: now,
        expires_at: now + CHALLENGE_TTL_MS,
      });
      return {
        action: 'challenge',
        challenge: { step: SECOND_FACTOR_STEP, code: 'MFA_REQUIRED', fields: { mfaToken, methods }, browser: { page: MFA_PROMPT_PAGE, token: mfaToken, ttlSeconds: CHALLENGE_TTL_MS / 1000 } },
      };
    },
  };

  /**
   * The live challenge `mfaToken` names, its user and the kind of its first factor; null when there
   * is none, or when no module registers that kind any more: it fails closed, never as another kind.
   */
  async function openChallenge(mfaToken: unknown) {
    if (typeof mfaToken !== 'string' || mfaToken.length > MAX_TOKEN_LENGTH) return null;
    const id = sha256Base64url(mfaToken);
    const challenge = await store.findChallenge(db, id);
    if (challenge === undefined || challenge.expires_at <= clock()) return null;
    const kind = deps.firstFactorKinds().find((registered) => registered.kind === challenge.factor);
    if (kind === undefined) return null;
    const user = await users.findUserById(challenge.user_id);
    return user === null ? null : { id, challenge, kind, user };
  }

  /** Spends the challenge and resumes its sign-in in the pipeline, with the second factor's method and `amr`. */
  async function finish(open: NonNullable<Awaited<ReturnType<typeof openChallenge>>>, met: MetChallenge, source: AuditSource): Promise<ChallengeResult> {
    const { id, challenge, kind, user } = open;
    // Spent by exactly one request: another one finishing it with another code gets nothing.
    if (!(await store.deleteChallenge(db, id))) return { ok: false, reason: 'INVALID_TOKEN' };
    // The first factor as it holds now: a password changed or reset since does not count.
    const factor = await kind.resume({ user, binding: challenge.binding });
    if (factor === null) {
      await audit.record({ type: 'signin.failure', userId: user.id, email: user.email, source, reason: 'CREDENTIALS_CHANGED', details: { step: SECOND_FACTOR_STEP } });
      return { ok: false, refusal: 'CREDENTIALS_CHANGED' };
    }
    const delivery: SessionDelivery = challenge.delivery === 'cookies' ? 'cookies' : 'tokens';
    const outcome = await pipeline.complete({ user, factor, source, delivery }, { step: SECOND_FACTOR_STEP, method: met.method, amr: [...met.amr, 'mfa'] });
    return outcome.ok ? { ...outcome, delivery } : outcome;
  }

  return {
    step,

    /** After a challenge was met by a request that asked to be remembered (`rememberDevice`): what each waiver gives the client. */
    async remember(request: FastifyRequest, reply: FastifyReply, user: User, source: AuditSource): Promise<void> {
      for (const waiver of deps.waivers()) await waiver.remember(request, reply, user, source);
    },

    /** The waivers' fields for the prompt's form `formId` (HTML, rendered by their own templates). */
    async promptFields(page: PageContext, userId: string, formId: string): Promise<string[]> {
      const fields = await Promise.all(deps.waivers().map(async (waiver) => (await waiver.promptField?.({ page, userId, formId })) ?? null));
      return fields.filter((field): field is string => field !== null);
    },

    /** The user a live `mfaToken` is for (a passkey answer must be that user's); null otherwise. */
    async userOf(mfaToken: unknown): Promise<string | null> {
      return (await openChallenge(mfaToken))?.user.id ?? null;
    },

    /**
     * Finishes the sign-in `mfaToken` waits for with a second factor another module verified for
     * `userId` (a passkey: `amr` its `hwk`/`swk`); INVALID_TOKEN when the token is not that user's.
     */
    async finishWith(mfaToken: unknown, userId: string, met: MetChallenge, source: AuditSource): Promise<ChallengeResult> {
      const open = await openChallenge(mfaToken);
      if (open === null || open.user.id !== userId) return { ok: false, reason: 'INVALID_TOKEN' };
      return finish(open, met, source);
    },

    /** Finishes the sign-in `answer.mfaToken` waits for, when `answer.code` is a valid second factor. */
    async answer(answer: ChallengeAnswer, source: AuditSource): Promise<ChallengeResult> {
      const open = await openChallenge(answer.mfaToken);
      if (open === null) return { ok: false, reason: 'INVALID_TOKEN' };
      const { id, user } = open;
      // One of its 5 tries, taken before the code is checked: parallel guesses count at once.
      if (!(await store.reserveChallengeAttempt(db, id, MAX_WRONG_CODES, clock()))) return { ok: false, reason: 'INVALID_TOKEN' };

      const check = await mfa.checkCode(user, answer.code, source.ip);
      if (!check.ok) {
        if (check.reason === 'RATE_LIMITED') return check;
        // Which second factor failed: a code in the shape of a recovery code is checked as one.
        const method = normalise(answer.code) === null ? TOTP_METHOD : RECOVERY_CODE_METHOD;
        await audit.record({ type: 'signin.failure', userId: user.id, email: user.email, source, reason: 'INVALID_CODE', details: { step: SECOND_FACTOR_STEP, method } });
        return { ok: false, reason: 'INVALID_CODE' };
      }
      // RFC 8176: a recovery code is a one-time password too.
      return finish(open, { method: check.method, amr: ['otp'] }, source);
    },
  };
}

export type SecondFactor = ReturnType<typeof createSecondFactor>;
