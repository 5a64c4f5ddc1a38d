/**
 * `POST /api/auth` (the seed's contract: JSON in, a token out, for API clients) and
 * `POST /api/auth/signin` (the same, and it sets the browser session cookies; an HTML form post
 * is answered with a 303 to the `callbackUrl`, a path of ours or a URL on one of TRUSTED_ORIGINS,
 * or back to the sign-in page with the error).
 */
import { z } from 'zod';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Config } from '../config.ts';
import { AppError } from '../errors.ts';
import { emailField } from '../users/email.ts';
import { bodyErrorResponses, errorResponse } from '../http/schemas.ts';
import { setBrowserSession } from '../sessions/session-cookie.ts';
import type { CsrfRotation } from '../http/csrf.ts';
import type { SessionService } from '../sessions/session.service.ts';
import { isFormPost } from '../http/forms.ts';
import { toCallbackUrl } from '../http/safe-redirect.ts';
import { SIGN_IN_PAGE } from '../http/sign-in-redirect.ts';
import { redirectToChallenge } from '../signin/challenge-cookie.ts';
import { signInBody } from '../signin/signin-response.ts';
import type { SessionDelivery } from '../signin/signin-pipeline.ts';
import { requestLocale } from '../audit/request-source.ts';
import { access, DURING_ENROLMENT } from '../authorization/access.ts';
import type { Clock } from '../lib/clock.ts';
import type { CredentialsService, SignInResult } from './credentials.service.ts';

const MAX_PASSWORD_INPUT_LENGTH = 4096;

const credentialsFields = {
  email: emailField.describe('E-mail address; compared after trimming, NFKC and lower-casing'),
  password: z
    .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
    .min(1, 'is required')
    .max(MAX_PASSWORD_INPUT_LENGTH, `must be at most ${MAX_PASSWORD_INPUT_LENGTH} characters`),
};

const apiSignInBody = z.object(credentialsFields, { error: 'must be a JSON object' }).meta({ id: 'AuthRequest' });

const browserSignInBody = z
  .object(
    {
      ...credentialsFields,
      callbackUrl: z.string().max(2048).optional().describe('Form posts: where to go after signing in (a path of ours, or an absolute URL on one of TRUSTED_ORIGINS)'),
      csrfToken: z.string().max(200).optional().describe('Form posts and cookie-carrying requests: the CSRF token'),
    },
    { error: 'must be a JSON object' },
  )
  .meta({ id: 'SignInRequest' });

const userSummary = z.object({ id: z.string(), email: z.string(), name: z.string() }).meta({ id: 'UserSummary' });

const signInResponse = z
  .object({
    token: z.string().describe('Access token: an EdDSA-signed JWT. Send it as `Authorization: Bearer <token>`'),
    user: userSummary,
    refreshToken: z.string().describe('Refresh token for POST /api/auth/refresh; single use'),
    expiresAt: z.iso.datetime().describe('When the access token expires'),
  })
  .meta({ id: 'AuthResponse' });

const signInErrors = {
  ...bodyErrorResponses,
  401: errorResponse.describe('Wrong e-mail or password (INVALID_CREDENTIALS); identical for unknown addresses'),
  // Loose: a step of the sign-in pipeline that asks for more adds the fields of its challenge.
  403: errorResponse
    .loose()
    .describe('Correct password, but the account is disabled (ACCOUNT_DISABLED) or its address unverified under REQUIRE_EMAIL_VERIFICATION (EMAIL_NOT_VERIFIED); or CSRF_FAILED'),
  429: errorResponse.describe('Too many attempts from this address, or too many consecutive failures for this account (RATE_LIMITED), with Retry-After; the same for addresses with and without an account'),
};

interface SignInRouteOptions {
  credentials: CredentialsService;
  sessions: SessionService;
  csrf: CsrfRotation;
  config: Config;
  clock: Clock;
}

/** `delivery`: how the session reaches the client, which a second-factor challenge keeps for its answer. */
function attempt(request: FastifyRequest, email: string, password: string, delivery: SessionDelivery) {
  return { email, password, ip: request.ip, userAgent: request.headers['user-agent'] ?? null, locale: requestLocale(request), delivery, cookie: (name: string) => request.cookies[name] };
}

async function signIn(credentials: CredentialsService, request: FastifyRequest, email: string, password: string, delivery: SessionDelivery): Promise<Extract<SignInResult, { ok: true }>> {
  const result = await credentials.signIn(attempt(request, email, password, delivery));
  if (result.ok) return result;
  throw toSignInError(result);
}

function toSignInError(result: Extract<SignInResult, { ok: false }>): AppError {
  if (result.reason === 'CHALLENGE') return new AppError(result.challenge.code, { fields: result.challenge.fields });
  return new AppError(result.reason, result.reason === 'RATE_LIMITED' ? { retryAfterSeconds: result.retryAfterSeconds } : {});
}


/** `POST /api/auth`: JSON only. */
export const apiSignInRoutes: FastifyPluginAsyncZod<SignInRouteOptions> = async (app, { credentials }) => {
  app.post(
    '/api/auth',
    {
      config: { access: access.anyone() },
      schema: {
        tags: ['auth'],
        summary: 'Sign in with e-mail and password; returns a JWT',
        body: apiSignInBody,
        response: { 200: signInResponse, ...signInErrors },
      },
    },
    async (request) => {
      return signInBody(await signIn(credentials, request, request.body.email, request.body.password, 'tokens'));
    },
  );
};

/** `POST /api/auth/signin`: JSON or an HTML form; register it where form bodies are parsed. */
export const browserSignInRoutes: FastifyPluginAsyncZod<SignInRouteOptions> = async (app, { credentials, sessions, csrf, config, clock }) => {
  app.post(
    '/api/auth/signin',
    {
      // A refused form comes back with the address typed, never the password (http/form-values.ts).
      config: { access: access.anyone({ exempt: [DURING_ENROLMENT] }), formErrorPage: SIGN_IN_PAGE, formKeptFields: ['email'] },
      schema: {
        tags: ['auth'],
        summary: 'Sign in with e-mail and password; sets the session cookies (form posts get a 303)',
        body: browserSignInBody,
        response: { 200: signInResponse, 303: z.null().describe('Form post: to callbackUrl, or to the sign-in page with ?error=CODE'), ...signInErrors },
      },
    },
    async (request, reply) => {
      // Where the browser goes now, or after the second factor (the challenge page carries it).
      const callbackUrl = toCallbackUrl(request.body.callbackUrl, config);
      if (isFormPost(request)) {
        // A form cannot read a challenge's JSON: it is sent to the page that answers it.
        const outcome = await credentials.signIn(attempt(request, request.body.email, request.body.password, 'cookies'));
        if (!outcome.ok && outcome.reason === 'CHALLENGE' && redirectToChallenge(reply, outcome.challenge, callbackUrl, config)) return reply;
        if (outcome.ok) {
          await setBrowserSession(request, reply, { sessions, csrf, config, nowMs: clock() }, { userId: outcome.user.id, session: outcome.session });
          return reply.redirect(callbackUrl, 303);
        }
        throw toSignInError(outcome);
      }
      const result = await signIn(credentials, request, request.body.email, request.body.password, 'cookies');
      await setBrowserSession(request, reply, { sessions, csrf, config, nowMs: clock() }, { userId: result.user.id, session: result.session });
      return signInBody(result);
    },
  );
};
