/**
 * The second-factor API:
 * - `GET /api/auth/mfa`: which factors the signed-in user has;
 * - `POST /api/auth/mfa/totp/setup`, `/totp/enable`, `/totp/disable`, `/recovery-codes`: enrolment
 *   and removal (signed in, by Bearer or cookie + CSRF, and signed in at most REAUTH_WINDOW ago;
 *   adding the app also needs a recent second factor from a user who has one);
 * - `POST /api/auth/mfa/verify`: finishes a sign-in that answered 403 MFA_REQUIRED, with the same
 *   body `POST /api/auth` gives; a sign-in started at `POST /api/auth/signin` (its challenge says
 *   so) also gets the browser session cookies that endpoint sets, by the same code
 *   (`setBrowserSession`), under the same CSRF and origin checks (http/csrf.ts, for every route).
 */
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { AppError } from '../errors.ts';
import { bodyErrorResponses, errorResponse } from '../http/schemas.ts';
import { access, DURING_ENROLMENT, RECENT_SECOND_FACTOR, RECENT_SIGN_IN, signedIn } from '../authorization/access.ts';
import { requestSource } from '../audit/request-source.ts';
import type { UserService } from '../users/user.service.ts';
import type { Clock } from '../lib/clock.ts';
import { isoTime } from '../lib/clock.ts';
import type { Config } from '../config.ts';
import type { SessionService } from '../sessions/session.service.ts';
import { setAccessCookie, setBrowserSession } from '../sessions/session-cookie.ts';
import type { CsrfRotation } from '../http/csrf.ts';
import type { MfaConfig } from './mfa.config.ts';
import { statusJson, type MfaService } from './mfa.service.ts';
import type { ChallengeResult, SecondFactor } from './second-factor.ts';
import { signInBody } from '../signin/signin-response.ts';

export interface MfaRouteOptions {
  mfa: MfaService;
  secondFactor: SecondFactor;
  users: UserService;
  sessions: SessionService;
  config: MfaConfig;
  /** For the access cookie a step-up replaces. */
  cookieConfig: Config;
  /** A cookie-mode sign-in finished here gets a new CSRF secret with its session, as at POST /api/auth/signin. */
  csrf: CsrfRotation;
  clock: Clock;
}

const MAX_CODE_LENGTH = 64;
const required = (issue: { input: unknown }) => (issue.input === undefined ? 'is required' : 'must be a string');
const code = z.string({ error: required }).min(1, 'is required').max(MAX_CODE_LENGTH, `must be at most ${MAX_CODE_LENGTH} characters`);
const codeBody = z.object({ code: code.describe('A 6-digit code from the authenticator app, or a recovery code') }, { error: 'must be a JSON object' }).meta({ id: 'MfaCodeRequest' });
const recoveryCodes = z.object({ recoveryCodes: z.array(z.string()).describe('Ten single-use codes, shown this once: only their hashes are kept') }).meta({ id: 'RecoveryCodes' });
const verifyBody = z
  .object(
    {
      mfaToken: z.string({ error: required }).min(1, 'is required').max(200).describe('The `mfaToken` of the 403 MFA_REQUIRED answer'),
      code: code.optional().describe('A 6-digit code from the authenticator app'),
      recoveryCode: code.optional().describe('Or one of the recovery codes'),
      rememberDevice: z.boolean({ error: 'must be a boolean' }).optional().describe("Don't ask again on this browser: the answer sets a trusted-device cookie (when trusted devices are on for this account), which waives the second factor of this user's next sign-ins from this browser"),
    },
    { error: 'must be a JSON object' },
  )
  .refine((body) => (body.code === undefined) !== (body.recoveryCode === undefined), { message: 'send either code or recoveryCode', path: ['code'] })
  .meta({ id: 'MfaVerifyRequest' });

const signedInErrors = {
  401: errorResponse.describe('No valid session (UNAUTHENTICATED)'),
  403: errorResponse.describe('Signed in longer ago than REAUTH_WINDOW (REAUTH_REQUIRED), or a cookie-authenticated request without a valid CSRF token (CSRF_FAILED)'),
  429: errorResponse.describe('Too many wrong codes for this account (RATE_LIMITED), with Retry-After'),
};

// Everything here is enrolment (or answering a factor): reachable while MFA_REQUIRED_ROLES asks
// the user to enrol.
const signedInUser = access.user({ exempt: [DURING_ENROLMENT] });
/** Removing the app, renewing the codes: a code in the request, and a recent sign-in. */
const recentSignIn = access.user({ exempt: [DURING_ENROLMENT], requires: [RECENT_SIGN_IN] });
/**
 * Adding the app carries no code of an existing factor: a stolen session that never used the
 * user's factor must not add one of its own.
 */
const recentSecondFactor = access.user({ exempt: [DURING_ENROLMENT], requires: [RECENT_SECOND_FACTOR, RECENT_SIGN_IN] });

export const mfaRoutes: FastifyPluginAsyncZod<MfaRouteOptions> = async (app, { mfa, secondFactor, users, sessions, cookieConfig, csrf, clock }) => {
  /** The caller (the route's declaration admitted them) and their account. */
  async function caller(request: FastifyRequest) {
    const auth = signedIn(request);
    const user = await users.findUserById(auth.userId);
    if (user === null) throw new AppError('UNAUTHENTICATED');
    return { auth, user, source: requestSource(request, auth.userId) };
  }

  /** The answer to a refused code check. */
  function refusal(result: { reason: string; retryAfterSeconds?: number }): AppError {
    if (result.reason === 'RATE_LIMITED') return new AppError('RATE_LIMITED', { retryAfterSeconds: result.retryAfterSeconds });
    return new AppError(result.reason as 'INVALID_CODE' | 'MFA_NOT_ENABLED' | 'MFA_SETUP_REQUIRED' | 'TOTP_ALREADY_ENABLED');
  }

  app.get(
    '/api/auth/mfa',
    {
      config: { access: signedInUser },
      schema: {
        tags: ['mfa'],
        summary: 'Your second factors',
        security: [{ bearer: [] }],
        response: {
          // A field per kind of second factor (`totp`, `passkeys`), as the kind describes it.
          200: z
            .object({
              ...Object.fromEntries(mfa.factorKinds().map((kind) => [kind.statusKey, 'single' in kind.status ? z.boolean().describe(kind.status.single) : z.array(kind.status.item)])),
              recoveryCodesLeft: z.number().int(),
            })
            .meta({ id: 'MfaStatus' }),
          401: signedInErrors[401],
        },
      },
    },
    async (request) => {
      const { user } = await caller(request);
      return statusJson(await mfa.status(user.id));
    },
  );

  app.post(
    '/api/auth/mfa/totp/setup',
    {
      config: { access: recentSecondFactor },
      schema: {
        tags: ['mfa'],
        summary: 'Start setting up an authenticator app',
        description: 'A new secret, as text, as an otpauth:// URL and as a QR code (SVG). Nothing is enabled until /api/auth/mfa/totp/enable receives a code from it (within 15 minutes).',
        security: [{ bearer: [] }],
        response: {
          200: z.object({ secret: z.string().describe('Base32, for typing into the app'), otpauthUrl: z.string(), qrSvg: z.string() }).meta({ id: 'TotpSetup' }),
          409: errorResponse.describe('An authenticator app is already set up (TOTP_ALREADY_ENABLED)'),
          ...signedInErrors,
        },
      },
    },
    async (request, reply) => {
      const { user } = await caller(request);
      const result = await mfa.beginTotpSetup(user);
      if (!result.ok) throw refusal(result);
      reply.header('cache-control', 'no-store');
      return { secret: result.secret, otpauthUrl: result.otpauthUrl, qrSvg: result.qrSvg };
    },
  );

  app.post(
    '/api/auth/mfa/totp/enable',
    {
      config: { access: recentSecondFactor },
      schema: {
        tags: ['mfa'],
        summary: 'Turn on the authenticator app with a code from it',
        description: 'Returns the recovery codes, this once. The user is mailed.',
        security: [{ bearer: [] }],
        body: codeBody,
        response: {
          200: recoveryCodes,
          ...bodyErrorResponses,
          400: errorResponse.describe('The code is not one the new secret gives now (INVALID_CODE); or malformed JSON'),
          409: errorResponse.describe('No setup pending, or it expired (MFA_SETUP_REQUIRED); or already set up (TOTP_ALREADY_ENABLED)'),
          ...signedInErrors,
        },
      },
    },
    async (request, reply) => {
      const { auth, user, source } = await caller(request);
      const result = await mfa.enableTotp(user, request.body.code, source);
      if (!result.ok) throw refusal(result);
      // The code just proved the factor: this session counts as having used it.
      await sessions.reauthenticate(auth, ['otp', 'mfa']);
      reply.header('cache-control', 'no-store');
      return { recoveryCodes: result.recoveryCodes };
    },
  );

  app.post(
    '/api/auth/mfa/totp/disable',
    {
      config: { access: recentSignIn },
      schema: {
        tags: ['mfa'],
        summary: 'Remove the authenticator app, with a code from it or a recovery code',
        description: 'The recovery codes go with it. The user is mailed.',
        security: [{ bearer: [] }],
        body: codeBody,
        response: {
          200: z.object({ ok: z.literal(true) }),
          ...bodyErrorResponses,
          400: errorResponse.describe('Not a valid code now (INVALID_CODE); or malformed JSON'),
          409: errorResponse.describe('No authenticator app is set up (MFA_NOT_ENABLED)'),
          ...signedInErrors,
        },
      },
    },
    async (request) => {
      const { user, source } = await caller(request);
      const result = await mfa.disableTotp(user, request.body.code, source);
      if (!result.ok) throw refusal(result);
      return { ok: true as const };
    },
  );

  app.post(
    '/api/auth/mfa/recovery-codes',
    {
      config: { access: recentSignIn },
      schema: {
        tags: ['mfa'],
        summary: 'A new set of recovery codes, with a code from the app or a recovery code',
        description: 'The old set stops working. The user is mailed.',
        security: [{ bearer: [] }],
        body: codeBody,
        response: {
          200: recoveryCodes,
          ...bodyErrorResponses,
          400: errorResponse.describe('Not a valid code now (INVALID_CODE); or malformed JSON'),
          409: errorResponse.describe('No second factor is set up (MFA_NOT_ENABLED)'),
          ...signedInErrors,
        },
      },
    },
    async (request, reply) => {
      const { user, source } = await caller(request);
      const result = await mfa.regenerateRecoveryCodes(user, request.body.code, source);
      if (!result.ok) throw refusal(result);
      reply.header('cache-control', 'no-store');
      return { recoveryCodes: result.recoveryCodes };
    },
  );

  app.post(
    '/api/auth/mfa/step-up',
    {
      config: { access: signedInUser },
      schema: {
        tags: ['mfa'],
        summary: 'Confirm it is you with a second factor, in this session',
        description:
          'For what needs a recent second factor (the admin area under MFA_REQUIRED_ROLES, changing a password, an administrator changing a user): the session records the factor (`amr` gains `otp` and `mfa`) and the time (`auth_time`). Returns a new access token that says so; a browser gets it as its access cookie.',
        security: [{ bearer: [] }],
        body: codeBody,
        response: {
          200: z.object({ token: z.string(), expiresAt: z.iso.datetime() }).meta({ id: 'StepUpResponse' }),
          ...bodyErrorResponses,
          400: errorResponse.describe('Not a valid code now (INVALID_CODE); or malformed JSON'),
          401: signedInErrors[401],
          403: errorResponse.describe('A cookie-authenticated request without a valid CSRF token (CSRF_FAILED)'),
          409: errorResponse.describe('No second factor is set up (MFA_NOT_ENABLED)'),
          429: signedInErrors[429],
        },
      },
    },
    async (request, reply) => {
      const { auth, user } = await caller(request);
      if ((await mfa.methodsOf(user.id)).length === 0) throw new AppError('MFA_NOT_ENABLED');
      const check = await mfa.checkCode(user, request.body.code, request.ip);
      if (!check.ok) throw refusal(check);
      const access = await sessions.reauthenticate(auth, ['otp', 'mfa']);
      if (access === null) throw new AppError('UNAUTHENTICATED');
      if (auth.via === 'cookie') setAccessCookie(reply, cookieConfig, access, clock());
      reply.header('cache-control', 'no-store');
      return { token: access.accessToken, expiresAt: isoTime(access.accessTokenExpiresAt) };
    },
  );

  app.post(
    '/api/auth/mfa/verify',
    {
      config: { access: access.anyone({ exempt: [DURING_ENROLMENT] }) },
      schema: {
        tags: ['mfa'],
        summary: 'Finish a sign-in with a second factor; sets the session cookies when the sign-in did',
        description:
          'After a sign-in answered 403 MFA_REQUIRED: its `mfaToken` and a code. The token lives 5 minutes, allows 5 wrong codes and is spent on success; codes also count against the account\'s throttle. The answer is the body POST /api/auth gives. A sign-in started at POST /api/auth/signin (cookie mode) is finished the way it would have been: the browser session cookies are set too (and the CSRF secret replaced; a browser that already carries session cookies must send `X-CSRF-Token`, as there). One started at POST /api/auth gets no cookies.',
        body: verifyBody,
        response: {
          200: z.object({ token: z.string(), user: z.object({ id: z.string(), email: z.string(), name: z.string() }), refreshToken: z.string(), expiresAt: z.iso.datetime() }),
          ...bodyErrorResponses,
          401: errorResponse.describe('A wrong or used code (INVALID_CODE), or an unknown, expired, spent or exhausted mfaToken (INVALID_TOKEN)'),
          403: errorResponse.describe('The account was disabled meanwhile (ACCOUNT_DISABLED; a password changed meanwhile is answered as INVALID_TOKEN); or a cookie-carrying request from another origin or without a valid CSRF token (CSRF_FAILED)'),
          429: errorResponse.describe('Too many wrong codes or sign-in attempts for this account (RATE_LIMITED), with Retry-After'),
        },
      },
    },
    async (request, reply) => {
      const { mfaToken } = request.body;
      const answer = request.body.code ?? request.body.recoveryCode!;
      const source = requestSource(request, null);
      const result = await secondFactor.answer({ mfaToken, code: answer }, source);
      if (!result.ok) throw challengeError(result);
      if (request.body.rememberDevice === true) await secondFactor.remember(request, reply, result.user, source);
      if (result.delivery === 'cookies') {
        await setBrowserSession(request, reply, { sessions, csrf, config: cookieConfig, nowMs: clock() }, { userId: result.user.id, session: result.session });
        reply.header('cache-control', 'no-store');
      }
      return signInBody(result);
    },
  );
};

/** How a refused answer to a second-factor challenge is told to a JSON client (the API, and `/auth/mfa`). */
export function challengeError(result: Exclude<ChallengeResult, { ok: true }>): AppError {
  if ('challenge' in result) return new AppError(result.challenge.code, { fields: result.challenge.fields });
  if ('refusal' in result) {
    if (result.refusal === 'ACCOUNT_DISABLED' || result.refusal === 'EMAIL_NOT_VERIFIED') return new AppError(result.refusal);
    return new AppError('INVALID_TOKEN', { status: 401 });
  }
  if (result.reason === 'RATE_LIMITED') return new AppError('RATE_LIMITED', { retryAfterSeconds: result.retryAfterSeconds });
  return new AppError(result.reason, { status: 401 });
}
