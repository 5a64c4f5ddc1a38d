/**
 * The e-mail sign-in API (JSON, or the pages' HTML forms; register it where form bodies parse):
 * - `POST /api/auth/email/start {email, callbackUrl?}`: 202 with a `requestId`, the same for every
 *   address, and the browser-binding cookie; a form gets a 303 to the code page;
 * - `POST /api/auth/email/verify {token}` (the link's) or `{email, code, requestId}` (the code's;
 *   a form posts `{code}` and its cookie names the request): a sign-in through the pipeline,
 *   answered like `POST /api/auth/signin` (the body, the session cookies; a form a 303 to its
 *   `callbackUrl`, or to the second-factor page, or back to its page with `?error=CODE`).
 */
import { z } from 'zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Config } from '../config.ts';
import type { Clock } from '../lib/clock.ts';
import type { CsrfRotation } from '../http/csrf.ts';
import type { SessionService } from '../sessions/session.service.ts';
import { AppError, type ErrorCode } from '../errors.ts';
import { emailField } from '../users/email.ts';
import { bodyErrorResponses, errorResponse } from '../http/schemas.ts';
import { isFormPost } from '../http/forms.ts';
import { toCallbackUrl } from '../http/safe-redirect.ts';
import { accountKey, clientKey, rateLimitHook, type RateLimiters } from '../http/rate-limit.ts';
import { setBrowserSession } from '../sessions/session-cookie.ts';
import { redirectToChallenge } from '../signin/challenge-cookie.ts';
import { signInBody } from '../signin/signin-response.ts';
import { requestSource } from '../audit/request-source.ts';
import { access } from '../authorization/access.ts';
import { randomSecret } from '../lib/random.ts';
import { clearBrowserBinding, readBrowserBinding, setBrowserBinding } from './browser-binding.ts';
import { EMAIL_LINK_PAGE, type EmailSignInService, type UseResult } from './email-signin.service.ts';

/** The pages (email-signin-pages.ts): where a form starts, types its code, and where a link lands. */
export const EMAIL_START_PAGE = '/auth/email-signin';
export const EMAIL_CODE_PAGE = '/auth/email-signin/code';
export { EMAIL_LINK_PAGE };

export const START_ACCEPTED_MESSAGE = 'If this address can sign in here, a message with a sign-in link and a code is on its way.';

const csrfToken = z.string().max(200).optional().describe('Form posts and cookie-carrying requests: the CSRF token');
const required = (issue: { input: unknown }) => (issue.input === undefined ? 'is required' : 'must be a string');

const startBody = z
  .object(
    {
      email: emailField.describe('The address to send the link and the code to; compared after trimming, NFKC and lower-casing'),
      callbackUrl: z.string().max(2048).optional().describe('Where the link\'s sign-in goes (a path of ours, or an absolute URL on one of TRUSTED_ORIGINS)'),
      csrfToken,
    },
    { error: 'must be a JSON object' },
  )
  .meta({ id: 'EmailSignInStartRequest' });

const startAccepted = z
  .object({
    ok: z.literal(true),
    message: z.string(),
    requestId: z.string().describe('Send it back with the code (`POST /api/auth/email/verify`); it is what binds the code to this request'),
    expiresIn: z.number().int().describe('Seconds the link and the code work (EMAIL_SIGNIN_TTL)'),
  })
  .describe('The same for every address, with or without an account')
  .meta({ id: 'EmailSignInStarted' });

const verifyBody = z
  .object(
    {
      token: z.string({ error: required }).min(1, 'is required').max(512, 'is too long').optional().describe('The token of the mailed link'),
      code: z.string({ error: required }).min(1, 'is required').max(32, 'is too long').optional().describe('The mailed code (digits; spaces and dashes are ignored)'),
      requestId: z.string({ error: required }).min(1, 'is required').max(128, 'is too long').optional().describe('With `code`: the `requestId` the start answered (a page\'s form: its cookie)'),
      email: emailField.optional().describe('With `code`: the address the start was for'),
      csrfToken,
    },
    { error: 'must be a JSON object' },
  )
  .refine((body) => (body.token === undefined) !== (body.code === undefined), { error: 'give either `token` or `code`', path: ['token'] })
  .meta({ id: 'EmailSignInVerifyRequest' });

const signInResponse = z
  .object({
    token: z.string().describe('Access token: an EdDSA-signed JWT'),
    user: z.object({ id: z.string(), email: z.string(), name: z.string() }),
    refreshToken: z.string().describe('Refresh token for POST /api/auth/refresh; single use'),
    expiresAt: z.iso.datetime(),
  })
  .meta({ id: 'EmailSignInResponse' });

const disabled = errorResponse.describe('Signing in by e-mail is turned off (EMAIL_SIGNIN_DISABLED); or CSRF_FAILED');

export interface EmailSignInRouteOptions {
  emailSignIn: EmailSignInService;
  sessions: SessionService;
  rateLimiters: RateLimiters;
  csrf: CsrfRotation;
  config: Config;
  clock: Clock;
}

/** What a refused use answers with (INVALID_TOKEN is 400 here, as for the other mailed links). */
function toError(result: Exclude<UseResult, { ok: true } | { challenge: unknown }>): AppError {
  if ('refusal' in result) {
    if (result.refusal === 'ACCOUNT_DISABLED' || result.refusal === 'EMAIL_NOT_VERIFIED') return new AppError(result.refusal);
    return new AppError('INVALID_TOKEN', { status: 400 });
  }
  if (result.reason === 'RATE_LIMITED') return new AppError('RATE_LIMITED', { retryAfterSeconds: result.retryAfterSeconds });
  return new AppError(result.reason as ErrorCode, result.reason === 'INVALID_TOKEN' ? { status: 400 } : {});
}

export const emailSignInRoutes: FastifyPluginAsyncZod<EmailSignInRouteOptions> = async (app, options) => {
  const { emailSignIn, sessions, csrf, config, clock } = options;
  const limits = config.emailSignin;
  const byIp = (request: FastifyRequest) => clientKey(request.ip);
  const startLimits = rateLimitHook([
    { limiter: options.rateLimiters.create('email-signin-ip', limits.perIp), key: byIp },
    { limiter: options.rateLimiters.create('email-signin-address', limits.perAddress), key: (request) => accountKey((request.body as { email: string }).email) },
  ]);
  const verifyLimits = rateLimitHook([{ limiter: options.rateLimiters.create('email-signin-verify-ip', limits.verifyPerIp), key: byIp }]);
  // Turned off means turned off, whatever the body holds (after the CSRF check, before validation).
  const refuseWhenOff = async () => {
    if (!emailSignIn.isEnabled) throw new AppError('EMAIL_SIGNIN_DISABLED');
  };
  // Like POST /api/auth: a browser whose session MFA_REQUIRED_ROLES asks to enrol first enrols (its pages, under /auth, are exempt).
  const anyone = access.anyone();

  app.post(
    '/api/auth/email/start',
    {
      config: { access: anyone, formErrorPage: EMAIL_START_PAGE, formKeptFields: ['email'] },
      preValidation: refuseWhenOff,
      preHandler: startLimits,
      schema: {
        tags: ['email-signin'],
        summary: 'Mail a one-time sign-in link and code (202, the same whether or not the address has an account)',
        description:
          'An address with an account gets a link and a code, each good for one sign-in within EMAIL_SIGNIN_TTL; an unknown one gets nothing, or, while ALLOW_SIGNUP, a link that creates its account. The answer, its cookie and its timing are the same either way. The `requestId` and the browser-binding cookie (`gatehouse.email-signin`) bind the code to this request and this browser.',
        body: startBody,
        response: {
          202: startAccepted,
          303: z.null().describe(`Form post: to ${EMAIL_CODE_PAGE}, or to ${EMAIL_START_PAGE}?error=CODE`),
          ...bodyErrorResponses,
          403: disabled,
          429: errorResponse.describe('Too many requests for this address or from this client (RATE_LIMITED), with Retry-After; the same for every address'),
        },
      },
    },
    async (request, reply) => {
      const browserSecret = randomSecret();
      const callbackUrl = request.body.callbackUrl === undefined ? null : toCallbackUrl(request.body.callbackUrl, config);
      const { requestId } = await emailSignIn.start({ email: request.body.email, callbackUrl, browserSecret, source: requestSource(request, null) });
      setBrowserBinding(reply, config, { requestId, secret: browserSecret }, emailSignIn.ttlSeconds);
      reply.header('cache-control', 'no-store');
      if (isFormPost(request)) return reply.redirect(EMAIL_CODE_PAGE, 303);
      return reply.code(202).send({ ok: true as const, message: START_ACCEPTED_MESSAGE, requestId, expiresIn: emailSignIn.ttlSeconds });
    },
  );

  /** A refused form goes back to the page it came from, with the code. */
  function formRefusal(reply: FastifyReply, page: string, error: AppError): FastifyReply {
    if (error.retryAfterSeconds !== undefined) void reply.header('retry-after', String(error.retryAfterSeconds));
    return reply.redirect(`${page}?${new URLSearchParams({ error: error.code })}`, 303);
  }

  app.post(
    '/api/auth/email/verify',
    {
      config: { access: anyone, formErrorPage: EMAIL_START_PAGE },
      preValidation: refuseWhenOff,
      preHandler: verifyLimits,
      schema: {
        tags: ['email-signin'],
        summary: 'Sign in with a mailed link\'s token or code; returns a JWT and sets the session cookies',
        description:
          'Either `{token}` (the link\'s) or `{email, code, requestId}`. Each works once (of two racing uses, one signs in), until EMAIL_SIGNIN_TTL; five wrong codes void the request. The sign-in goes through the pipeline: a second factor is asked for (403 MFA_REQUIRED) when the account has one; `amr` is `email`, and `otp` for a code. Under EMAIL_SIGNIN_SAME_BROWSER a link works only in the browser that asked (its cookie). A first use verifies an unverified address; a sign-up link creates the account.',
        body: verifyBody,
        response: {
          200: signInResponse,
          303: z.null().describe('Form post: to the callbackUrl, the second-factor page, or back to the page with ?error=CODE'),
          ...bodyErrorResponses,
          400: errorResponse.describe('An unknown, used or replaced link or request (INVALID_TOKEN), an expired one (TOKEN_EXPIRED), a wrong code (INVALID_CODE), a request voided by wrong codes (EMAIL_SIGNIN_VOIDED); or MALFORMED_JSON'),
          403: errorResponse
            .loose()
            .describe('A second factor is needed (MFA_REQUIRED, with `mfaToken` and `methods`); the account is disabled (ACCOUNT_DISABLED); the link was opened in another browser (EMAIL_SIGNIN_OTHER_BROWSER); EMAIL_SIGNIN_DISABLED; or CSRF_FAILED'),
          429: errorResponse.describe('Too many tries from this client, or too many wrong codes for this address (RATE_LIMITED), with Retry-After'),
        },
      },
    },
    async (request, reply) => {
      const isForm = isFormPost(request);
      const binding = readBrowserBinding(request, config);
      const input = { browserSecret: binding?.secret ?? null, source: requestSource(request, null), delivery: 'cookies' as const };
      const { token, code, email } = request.body;
      let result: UseResult;
      if (token !== undefined) result = await emailSignIn.useLink(token, input);
      else {
        const requestId = isForm ? binding?.requestId : request.body.requestId;
        if (!isForm && (requestId === undefined || email === undefined)) {
          throw new AppError('VALIDATION_ERROR', { errors: [...(requestId === undefined ? [{ field: 'requestId', message: 'is required with `code`' }] : []), ...(email === undefined ? [{ field: 'email', message: 'is required with `code`' }] : [])] });
        }
        result =
          requestId === undefined
            ? { ok: false, reason: 'INVALID_TOKEN' }
            : // A browser carrying this request's cookie must carry the right one; a page's form always does.
              await emailSignIn.useCode({ requestId, code: code!, email: email ?? null, requireBrowser: isForm || binding?.requestId === requestId }, input);
      }
      const callbackUrl = toCallbackUrl('callbackUrl' in result ? result.callbackUrl : undefined, config);
      if (result.ok) {
        await setBrowserSession(request, reply, { sessions, csrf, config, nowMs: clock() }, { userId: result.user.id, session: result.session });
        if (binding !== null) clearBrowserBinding(reply, config);
        if (isForm) return reply.redirect(callbackUrl, 303);
        reply.header('cache-control', 'no-store');
        return signInBody(result);
      }
      if ('challenge' in result) {
        if (binding !== null) clearBrowserBinding(reply, config);
        if (isForm && redirectToChallenge(reply, result.challenge, callbackUrl, config)) return reply;
        throw new AppError(result.challenge.code, { fields: result.challenge.fields });
      }
      const error = toError(result);
      if (isForm) return formRefusal(reply, token !== undefined ? EMAIL_LINK_PAGE : EMAIL_CODE_PAGE, error);
      throw error;
    },
  );
};
