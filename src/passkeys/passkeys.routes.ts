/**
 * The passkeys API (JSON only):
 * - `POST /api/auth/passkeys/register/options` + `/register/verify`: add a passkey to the signed-in
 *   account (Bearer, or cookie + CSRF; signed in at most REAUTH_WINDOW ago, and with a recent second
 *   factor from a user who has one);
 * - `PATCH /api/auth/passkeys/:id` (rename; signed in) and `DELETE /api/auth/passkeys/:id` (remove;
 *   as adding); `GET /api/auth/mfa` lists them;
 * - `POST /api/auth/passkeys/authenticate/options` + `/authenticate/verify`: a whole sign-in with a
 *   passkey, or, with the `mfaToken` of a 403 MFA_REQUIRED, the second factor after a password
 *   (with `rememberDevice`, "don't ask again on this browser", as the code prompt offers).
 *   The answer is the body `POST /api/auth` gives, and, like `POST /api/auth/signin`, the browser
 *   session cookies (an API client may ignore them);
 * - `POST /api/auth/passkeys/step-up/options` + `/step-up/verify`: a signed-in user confirms it is
 *   them with a passkey (the session's `amr` gains the key, `user` and `mfa`).
 * Whatever a client sends, a refused passkey is 401 INVALID_PASSKEY, never a 5xx.
 */
import { z } from 'zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { access, DURING_ENROLMENT, RECENT_SECOND_FACTOR, RECENT_SIGN_IN, signedIn } from '../authorization/access.ts';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import { AppError } from '../errors.ts';
import type { Config } from '../config.ts';
import { bodyErrorResponses, errorResponse } from '../http/schemas.ts';
import type { CsrfRotation } from '../http/csrf.ts';
import { clientKey, rateLimitHook, type RateLimiters } from '../http/rate-limit.ts';
import type { SessionService } from '../sessions/session.service.ts';
import { setAccessCookie, setBrowserSession } from '../sessions/session-cookie.ts';
import { clearChallengeCookie, readChallengeCookie } from '../signin/challenge-cookie.ts';
import { signInBody } from '../signin/signin-response.ts';
import type { SignInOutcome, SignInPipeline } from '../signin/signin-pipeline.ts';
import type { AuditService } from '../audit/audit.service.ts';
import { requestSource } from '../audit/request-source.ts';
import type { User, UserService } from '../users/user.service.ts';
import { isoTime, type Clock } from '../lib/clock.ts';
import type { PasskeyService, RecoveryCodeIssuer } from './passkeys.service.ts';
import { credentialId, passkeyName, registrationResponse, authenticationResponse, mfaToken, passkeyView, creationOptions, requestOptions, signInResponse, noBody, idParams, signedInErrors, toJson } from './passkeys.schemas.ts';
import { PASSKEY_FACTOR, passkeyFactor } from './passkey-factor.ts';

/** What the routes need of the mfa module, which is built after this one (read at request time). */
export interface SecondFactorPort {
  userOf(mfaToken: unknown): Promise<string | null>;
  finishWith(mfaToken: unknown, userId: string, met: { method: string; amr: readonly string[] }, source: ReturnType<typeof requestSource>): Promise<SignInOutcome | { ok: false; reason: string; retryAfterSeconds?: number }>;
  /** After the passkey met the challenge of a request that asked to be remembered (`rememberDevice`): what each second-factor waiver gives the browser. */
  remember(request: FastifyRequest, reply: FastifyReply, user: User, source: ReturnType<typeof requestSource>): Promise<void>;
}

export interface PasskeyRouteOptions {
  passkeys: PasskeyService;
  users: UserService;
  sessions: SessionService;
  signInPipeline: SignInPipeline;
  audit: AuditService;
  rateLimiters: RateLimiters;
  /** The mfa module's services (recovery codes, the second-factor challenge), once every module is built. */
  mfa: () => { recoveryCodes: RecoveryCodeIssuer; secondFactor: SecondFactorPort };
  csrf: CsrfRotation;
  config: Config;
  clock: Clock;
}

// Every route here is enrolment or answering a factor: reachable while MFA_REQUIRED_ROLES asks the
// user to enrol.
const anyone = access.anyone({ exempt: [DURING_ENROLMENT] });
const signedInUser = access.user({ exempt: [DURING_ENROLMENT] });
/**
 * Adding or removing a passkey carries no code of an existing factor: a stolen session that never
 * used the user's factor must not add one of its own, nor remove theirs.
 */
const recentSecondFactor = access.user({ exempt: [DURING_ENROLMENT], requires: [RECENT_SECOND_FACTOR, RECENT_SIGN_IN] });

export const passkeyRoutes: FastifyPluginAsyncZod<PasskeyRouteOptions> = async (app, options) => {
  const { passkeys, users, sessions, signInPipeline, audit, csrf, config, clock } = options;
  // Anyone may ask for a sign-in challenge (each is a row) and answer one: per client address,
  // as many as password sign-in attempts.
  const perIp = rateLimitHook([{ limiter: options.rateLimiters.create('passkey-ip', config.rateLimits.signinPerIp), key: (request) => clientKey(request.ip) }]);

  /** The caller (the route's declaration admitted them) and their account. */
  async function caller(request: FastifyRequest) {
    const auth = signedIn(request);
    const user = await users.findUserById(auth.userId);
    if (user === null) throw new AppError('UNAUTHENTICATED');
    return { auth, user, source: requestSource(request, auth.userId) };
  }

  /** Answers a finished sign-in like `POST /api/auth/signin`: the JSON body and the browser's cookies. */
  async function answerSignIn(request: FastifyRequest, reply: FastifyReply, outcome: SignInOutcome | { ok: false; reason: string; retryAfterSeconds?: number }) {
    if (outcome.ok) {
      const { user, session } = outcome;
      await setBrowserSession(request, reply, { sessions, csrf, config, nowMs: clock() }, { userId: user.id, session });
      reply.header('cache-control', 'no-store');
      return signInBody({ user, session });
    }
    if ('challenge' in outcome) throw new AppError(outcome.challenge.code, { fields: outcome.challenge.fields });
    if ('refusal' in outcome) {
      if (outcome.refusal === 'ACCOUNT_DISABLED' || outcome.refusal === 'EMAIL_NOT_VERIFIED') throw new AppError(outcome.refusal);
      throw new AppError('INVALID_PASSKEY');
    }
    if (outcome.reason === 'RATE_LIMITED') throw new AppError('RATE_LIMITED', { retryAfterSeconds: outcome.retryAfterSeconds ?? 1 });
    throw new AppError('INVALID_TOKEN', { status: 401 });
  }

  app.post(
    '/api/auth/passkeys/register/options',
    {
      config: { access: recentSecondFactor },
      schema: {
        tags: ['passkeys'],
        summary: 'Start adding a passkey to your account',
        description: 'Options for `navigator.credentials.create()`: a discoverable credential with user verification, none of your existing passkeys again. The challenge lives 5 minutes; asking again replaces it.',
        security: [{ bearer: [] }],
        body: noBody,
        response: {
          200: creationOptions,
          ...bodyErrorResponses,
          409: errorResponse.describe('The account has as many passkeys as it may (PASSKEY_LIMIT_REACHED)'),
          ...signedInErrors,
        },
      },
    },
    async (request, reply) => {
      const { user } = await caller(request);
      const result = await passkeys.registrationOptions(user);
      if (!result.ok) throw new AppError(result.reason);
      reply.header('cache-control', 'no-store');
      return result.options;
    },
  );

  app.post(
    '/api/auth/passkeys/register/verify',
    {
      config: { access: recentSecondFactor },
      schema: {
        tags: ['passkeys'],
        summary: 'Finish adding a passkey',
        description:
          'The authenticator\'s answer to the options, and a name for the passkey (default "Passkey", "Passkey 2"…). The first second factor of an account also returns `recoveryCodes`, shown this once. The user is mailed.',
        security: [{ bearer: [] }],
        body: z.object({ response: registrationResponse, name: passkeyName.optional().describe('What to call it (1 to 64 characters)') }, { error: 'must be a JSON object' }).meta({ id: 'PasskeyRegistrationRequest' }),
        response: {
          200: z
            .object({
              passkey: passkeyView,
              recoveryCodes: z.array(z.string()).optional().describe('Only when the account had no recovery codes: ten single-use codes, shown this once'),
            })
            .meta({ id: 'PasskeyRegistration' }),
          ...bodyErrorResponses,
          400: errorResponse.describe('The answer did not verify, or its challenge is unknown, spent or expired (PASSKEY_REGISTRATION_FAILED); or malformed JSON'),
          409: errorResponse.describe('This passkey is registered already (PASSKEY_ALREADY_REGISTERED), or the account has as many as it may (PASSKEY_LIMIT_REACHED)'),
          ...signedInErrors,
        },
      },
    },
    async (request, reply) => {
      const { auth, user, source } = await caller(request);
      const result = await passkeys.register(user, request.body.response as unknown as RegistrationResponseJSON, { name: request.body.name, source, backup: options.mfa().recoveryCodes });
      if (!result.ok) throw new AppError(result.reason);
      // The user-verified ceremony just proved the factor: this session counts as having used it.
      await sessions.reauthenticate(auth, [result.keyKind, 'user', 'mfa']);
      reply.header('cache-control', 'no-store');
      return { passkey: toJson(result.passkey), ...(result.recoveryCodes !== null && { recoveryCodes: result.recoveryCodes }) };
    },
  );

  app.patch(
    '/api/auth/passkeys/:id',
    {
      config: { access: signedInUser },
      schema: {
        tags: ['passkeys'],
        summary: 'Rename one of your passkeys',
        security: [{ bearer: [] }],
        params: idParams,
        body: z.object({ name: passkeyName }, { error: 'must be a JSON object' }).meta({ id: 'PasskeyRenameRequest' }),
        response: {
          200: z.object({ passkey: passkeyView }),
          ...bodyErrorResponses,
          401: signedInErrors[401],
          403: errorResponse.describe('A cookie-authenticated request without a valid CSRF token (CSRF_FAILED)'),
          404: errorResponse.describe('You have no passkey with this id (PASSKEY_NOT_FOUND)'),
        },
      },
    },
    async (request) => {
      const { user, source } = await caller(request);
      const passkey = await passkeys.rename(user.id, request.params.id, request.body.name, source);
      if (passkey === null) throw new AppError('PASSKEY_NOT_FOUND');
      return { passkey: toJson(passkey) };
    },
  );

  app.delete(
    '/api/auth/passkeys/:id',
    {
      config: { access: recentSecondFactor },
      schema: {
        tags: ['passkeys'],
        summary: 'Remove one of your passkeys',
        description: 'It can no longer sign in. The user is mailed.',
        security: [{ bearer: [] }],
        params: idParams,
        response: {
          200: z.object({ ok: z.literal(true) }),
          404: errorResponse.describe('You have no passkey with this id (PASSKEY_NOT_FOUND)'),
          ...signedInErrors,
        },
      },
    },
    async (request) => {
      const { user, source } = await caller(request);
      if (!(await passkeys.remove(user, request.params.id, source))) throw new AppError('PASSKEY_NOT_FOUND');
      return { ok: true as const };
    },
  );

  app.post(
    '/api/auth/passkeys/authenticate/options',
    {
      config: { access: anyone },
      preHandler: perIp,
      schema: {
        tags: ['passkeys'],
        summary: 'Start signing in with a passkey',
        description:
          'Without a body (or `{}`): options for a whole sign-in with any passkey the authenticator holds for us (discoverable: empty `allowCredentials`). With the `mfaToken` of a 403 MFA_REQUIRED: options for that user\'s passkeys, as the second factor. The challenge lives 5 minutes and works once.',
        body: z
          .object(
            {
              mfaToken: mfaToken.optional(),
              fromChallenge: z.literal(true).optional().describe('In a browser on the second-factor page: the mfaToken is the one in its challenge cookie'),
            },
            { error: 'must be a JSON object' },
          )
          .nullish(),
        response: {
          200: requestOptions,
          ...bodyErrorResponses,
          401: errorResponse.describe('An unknown, expired or spent mfaToken (INVALID_TOKEN)'),
          404: errorResponse.describe('The mfaToken\'s user has no passkey (PASSKEY_NOT_FOUND)'),
          429: errorResponse.describe('Too many sign-in requests from this address (RATE_LIMITED), with Retry-After'),
        },
      },
    },
    async (request, reply) => {
      const token = request.body?.mfaToken ?? (request.body?.fromChallenge === true ? (readChallengeCookie(request, config) ?? '') : undefined);
      let result;
      if (token === undefined) result = await passkeys.authenticationOptions({ purpose: 'authenticate' });
      else {
        const userId = await options.mfa().secondFactor.userOf(token);
        if (userId === null) throw new AppError('INVALID_TOKEN', { status: 401 });
        result = await passkeys.authenticationOptions({ purpose: 'second-factor', userId, mfaToken: token });
      }
      if (!result.ok) throw new AppError(result.reason, { message: 'This account has no passkey.' });
      reply.header('cache-control', 'no-store');
      return result.options;
    },
  );

  app.post(
    '/api/auth/passkeys/authenticate/verify',
    {
      config: { access: anyone },
      preHandler: perIp,
      schema: {
        tags: ['passkeys'],
        summary: 'Sign in with a passkey; returns a JWT and sets the session cookies',
        description:
          'The authenticator\'s answer to the options. Without `mfaToken`: a whole sign-in (the session\'s `amr` is `hwk` or `swk`, `user`, `mfa`). With it: the second factor of that sign-in, with the passkey of its user only (`amr` e.g. `pwd`, `hwk`, `mfa`). Either way the same body as POST /api/auth, and the browser session cookies as POST /api/auth/signin sets them.',
        body: z
          .object(
            {
              response: authenticationResponse,
              mfaToken: mfaToken.optional(),
              fromChallenge: z.literal(true).optional(),
              rememberDevice: z
                .boolean({ error: 'must be a boolean' })
                .optional()
                .describe("With `mfaToken` (or `fromChallenge`): don't ask again on this browser, as in POST /api/auth/mfa/verify (a trusted-device cookie, when trusted devices are on for this account). Ignored by a whole sign-in with a passkey, which asks for no second factor"),
            },
            { error: 'must be a JSON object' },
          )
          .meta({ id: 'PasskeyAuthenticationRequest' }),
        response: {
          200: signInResponse,
          ...bodyErrorResponses,
          401: errorResponse.describe(
            'The passkey is unknown, another user\'s, or its answer did not verify: wrong origin or RP ID, a bad signature, no user verification, a challenge unknown, spent or expired, a signature counter that went backwards (INVALID_PASSKEY); or an unknown, expired or spent mfaToken (INVALID_TOKEN)',
          ),
          403: errorResponse.loose().describe('A right passkey, but the account is disabled (ACCOUNT_DISABLED) or its address unverified under REQUIRE_EMAIL_VERIFICATION (EMAIL_NOT_VERIFIED); or CSRF_FAILED'),
          429: errorResponse.describe('Too many sign-in requests from this address (RATE_LIMITED), with Retry-After'),
        },
      },
    },
    async (request, reply) => {
      const response = request.body.response as unknown as AuthenticationResponseJSON;
      if (response.response.userHandle === null) delete response.response.userHandle;
      const fromChallenge = request.body.mfaToken === undefined && request.body.fromChallenge === true;
      const token = fromChallenge ? (readChallengeCookie(request, config) ?? '') : request.body.mfaToken;
      const source = requestSource(request, null);
      const refuse = async (userId: string | null, step?: string) => {
        await audit.record({ type: 'signin.failure', userId, source, reason: 'INVALID_PASSKEY', details: { method: PASSKEY_FACTOR, ...(step !== undefined && { step }) } });
        return new AppError('INVALID_PASSKEY');
      };

      if (token !== undefined) {
        const { secondFactor } = options.mfa();
        const userId = await secondFactor.userOf(token);
        if (userId === null) throw new AppError('INVALID_TOKEN', { status: 401 });
        const verified = await passkeys.verifyAssertion(response, { purpose: 'second-factor', userId, mfaToken: token });
        if (!verified.ok) throw await refuse(verified.userId, 'second-factor');
        const outcome = await secondFactor.finishWith(token, userId, { method: PASSKEY_FACTOR, amr: [verified.keyKind] }, source);
        if (fromChallenge && outcome.ok) clearChallengeCookie(reply, config);
        if (outcome.ok && request.body.rememberDevice === true) await secondFactor.remember(request, reply, outcome.user, source);
        return answerSignIn(request, reply, outcome);
      }

      const verified = await passkeys.verifyAssertion(response, { purpose: 'authenticate' });
      if (!verified.ok) throw await refuse(verified.userId);
      const user = await users.findUserById(verified.userId);
      if (user === null) throw await refuse(null);
      return answerSignIn(request, reply, await signInPipeline.complete({ user, factor: passkeyFactor(verified), source }));
    },
  );

  app.post(
    '/api/auth/passkeys/step-up/options',
    {
      config: { access: signedInUser },
      schema: {
        tags: ['passkeys'],
        summary: 'Start confirming it is you with a passkey, in this session',
        description: 'Options for `navigator.credentials.get()` with your passkeys; the challenge is bound to this session.',
        security: [{ bearer: [] }],
        body: noBody,
        response: {
          200: requestOptions,
          ...bodyErrorResponses,
          401: signedInErrors[401],
          403: errorResponse.describe('A cookie-authenticated request without a valid CSRF token (CSRF_FAILED)'),
          404: errorResponse.describe('You have no passkey (PASSKEY_NOT_FOUND)'),
        },
      },
    },
    async (request, reply) => {
      const { auth } = await caller(request);
      const result = await passkeys.authenticationOptions({ purpose: 'step-up', userId: auth.userId, sessionId: auth.sessionId });
      if (!result.ok) throw new AppError(result.reason, { message: 'You have no passkey.' });
      reply.header('cache-control', 'no-store');
      return result.options;
    },
  );

  app.post(
    '/api/auth/passkeys/step-up/verify',
    {
      config: { access: signedInUser },
      schema: {
        tags: ['passkeys'],
        summary: 'Confirm it is you with a passkey, in this session',
        description:
          'For what needs a recent sign-in or second factor (REAUTH_WINDOW, the admin area under MFA_REQUIRED_ROLES): the session records the passkey (`amr` gains `hwk` or `swk`, `user` and `mfa`) and the time (`auth_time`). Returns a new access token that says so; a browser gets it as its access cookie.',
        security: [{ bearer: [] }],
        body: z.object({ response: authenticationResponse }, { error: 'must be a JSON object' }).meta({ id: 'PasskeyStepUpRequest' }),
        response: {
          200: z.object({ token: z.string(), expiresAt: z.iso.datetime() }),
          ...bodyErrorResponses,
          401: errorResponse.describe('No valid session (UNAUTHENTICATED), or the passkey is not yours or did not verify (INVALID_PASSKEY)'),
          403: errorResponse.describe('A cookie-authenticated request without a valid CSRF token (CSRF_FAILED)'),
        },
      },
    },
    async (request, reply) => {
      const { auth } = await caller(request);
      const response = request.body.response as unknown as AuthenticationResponseJSON;
      if (response.response.userHandle === null) delete response.response.userHandle;
      const verified = await passkeys.verifyAssertion(response, { purpose: 'step-up', userId: auth.userId, sessionId: auth.sessionId });
      if (!verified.ok) throw new AppError('INVALID_PASSKEY');
      const access = await sessions.reauthenticate(auth, [verified.keyKind, 'user', 'mfa']);
      if (access === null) throw new AppError('UNAUTHENTICATED');
      if (auth.via === 'cookie') setAccessCookie(reply, config, access, clock());
      reply.header('cache-control', 'no-store');
      return { token: access.accessToken, expiresAt: isoTime(access.accessTokenExpiresAt) };
    },
  );
};
