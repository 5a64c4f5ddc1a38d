/**
 * Sign-in with a provider (RFC 9700, the OAuth 2.0 Security BCP):
 * - `POST /api/auth/signin/:provider` (a form with the CSRF token) sends the browser to the
 *   provider with `state`, PKCE S256 and, for OpenID Connect, a `nonce`, all kept in an encrypted,
 *   HttpOnly flow cookie of this browser;
 * - `GET /api/auth/callback/:provider` checks the answer against that cookie, exchanges the code,
 *   and signs the person in (session cookies, 303 to the `callbackUrl`: a path of ours or a URL on
 *   one of TRUSTED_ORIGINS), or ends on `/auth/error?error=CODE` with no session.
 * Signed-in users link a provider (`POST /api/auth/link/:provider`, back on the dashboard) and
 * unlink one (`DELETE /api/auth/accounts/:provider`), never their last way to sign in. Linking
 * needs what adding a second factor needs: a sign-in within REAUTH_WINDOW (403 REAUTH_REQUIRED),
 * and for an account with a second factor a recent use of it (`RECENT_SIGN_IN` and
 * `RECENT_SECOND_FACTOR`, declared on the route): a linked provider is a way in that outlives a
 * password reset, so a stolen session must not add one.
 * Register this plugin where form bodies are parsed.
 */
import { redirectToChallenge } from '../signin/challenge-cookie.ts';
import { z } from 'zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Config } from '../config.ts';
import { isoTime, type Clock } from '../lib/clock.ts';
import type { RequestLimits } from '../http/request-limits.ts';
import { AppError } from '../errors.ts';
import { errorResponse } from '../http/schemas.ts';
import { access, DURING_ENROLMENT, IN_PERSON, RECENT_SECOND_FACTOR, RECENT_SIGN_IN, sessionOf, signedIn } from '../authorization/access.ts';
import type { CsrfRotation } from '../http/csrf.ts';
import { baseCookieOptions, cookieNames, setBrowserSession } from '../sessions/session-cookie.ts';
import { toCallbackUrl } from '../http/safe-redirect.ts';
import { SIGN_IN_PAGE, signInRedirect } from '../http/sign-in-redirect.ts';
import type { SessionService } from '../sessions/session.service.ts';
import { requestSource } from '../audit/request-source.ts';
import { FLOW_TTL_SECONDS } from './oauth-flow-cookie.ts';
import type { OAuthService } from './oauth.service.ts';
import { HUB_PAGES } from '../http/hub-pages.ts';

export interface OAuthRouteOptions {
  oauth: OAuthService;
  sessions: SessionService;
  csrf: CsrfRotation;
  config: Config;
  clock: Clock;
  limits: RequestLimits;
}

export const AUTH_ERROR_PAGE = '/auth/error';
const DASHBOARD_PAGE = HUB_PAGES.dashboard;

const providerParams = z.object({ provider: z.string().max(64) });

const startBody = z
  .object({
    callbackUrl: z.string().max(2048).optional().describe('Where to go after signing in (a path of ours, or an absolute URL on one of TRUSTED_ORIGINS); default /dashboard'),
    csrfToken: z.string().max(200).optional().describe('The CSRF token (form field or X-CSRF-Token header)'),
  })
  .nullish();

const providerSummary = z.object({
  id: z.string(),
  name: z.string(),
  type: z.enum(['oauth', 'oidc']),
  signinUrl: z.string().describe('POST a form here (with csrfToken and an optional callbackUrl) to start'),
  callbackUrl: z.string().describe('The redirect URI to register at the provider, exactly'),
});

const linkedAccounts = z
  .object({
    accounts: z.array(
      z.object({
        provider: z.string(),
        providerName: z.string(),
        email: z.string().nullable().describe('The address the provider gave at the last sign-in'),
        createdAt: z.iso.datetime(),
        lastUsedAt: z.iso.datetime(),
      }),
    ),
  })
  .meta({ id: 'LinkedAccounts' });


function errorPage(code: string): string {
  return `${AUTH_ERROR_PAGE}?${new URLSearchParams({ error: code })}`;
}

function dashboardWith(kind: 'error' | 'notice', code: string): string {
  return `${DASHBOARD_PAGE}?${new URLSearchParams({ [kind]: code })}`;
}

export const oauthRoutes: FastifyPluginAsyncZod<OAuthRouteOptions> = async (app, options) => {
  const { oauth, sessions, csrf, config, clock, limits } = options;
  const flowCookie = cookieNames(config).oauthFlow;
  const cookieOptions = baseCookieOptions(config);

  async function sendToProvider(
    request: FastifyRequest<{ Params: { provider: string } }>,
    reply: FastifyReply,
    start: { callbackUrl: string; linkUserId: string | null; errorTarget: (code: string) => string },
  ) {
    const result = await oauth.startAuthorization(request.params.provider, start);
    if (!result.ok) return reply.redirect(start.errorTarget(result.reason === 'NOT_FOUND' ? 'OAuthSignin' : result.reason), 303);
    const sealed = await oauth.flowSeal.seal(result.flow, clock());
    void reply.setCookie(flowCookie, sealed, { ...cookieOptions, maxAge: FLOW_TTL_SECONDS });
    return reply.redirect(result.authorizationUrl.href, 303);
  }

  app.get(
    '/api/auth/providers',
    {
      config: { access: access.anyone({ exempt: [DURING_ENROLMENT] }) },
      schema: {
        tags: ['oauth'],
        summary: 'The configured sign-in providers, keyed by id, with the callback URL to register at each',
        response: { 200: z.record(z.string(), providerSummary).meta({ id: 'Providers' }) },
      },
    },
    async () => Object.fromEntries(oauth.listProviders().map((provider) => [provider.id, provider])),
  );

  app.post(
    '/api/auth/signin/:provider',
    {
      config: { access: access.anyone({ exempt: [DURING_ENROLMENT] }), formErrorPage: SIGN_IN_PAGE },
      preHandler: limits.oauthStart,
      schema: {
        tags: ['oauth'],
        summary: 'Start signing in with a provider: a 303 to its authorization endpoint',
        params: providerParams,
        body: startBody,
        response: { 303: z.null().describe('To the provider; or to /auth/error?error=OAuthSignin|ProviderUnreachable'), 403: errorResponse.describe('CSRF_FAILED') },
      },
    },
    async (request, reply) => {
      return sendToProvider(request, reply, {
        // Sealed into the flow cookie, so it survives the round trip to the provider unchanged.
        callbackUrl: toCallbackUrl(request.body?.callbackUrl, config),
        linkUserId: null,
        errorTarget: errorPage,
      });
    },
  );

  app.post(
    '/api/auth/link/:provider',
    {
      config: {
        access: access.user({
          // A linked provider is a way in that outlives a password reset: a stolen session must not add one.
          requires: [RECENT_SIGN_IN, RECENT_SECOND_FACTOR],
          // The dashboard's button: without a session, sign in and come back there.
          signedOutRedirect: signInRedirect(DASHBOARD_PAGE),
        }),
        formErrorPage: DASHBOARD_PAGE,
      },
      preHandler: limits.oauthStart,
      schema: {
        tags: ['oauth'],
        summary: 'Link a provider to your account: a 303 to the provider, then back to /dashboard',
        description:
          'Needs a sign-in within REAUTH_WINDOW and, for an account with a second factor, a use of it in this session within that window ' +
          '(`POST /api/auth/mfa/step-up`). The owner is mailed when the provider is linked. A form post that is refused goes to `/dashboard?error=CODE`.',
        params: providerParams,
        body: startBody,
        response: {
          303: z.null().describe('To the provider; without a session, to the sign-in page'),
          403: errorResponse.describe('REAUTH_REQUIRED (signed in, or second factor used, longer ago than REAUTH_WINDOW), or CSRF_FAILED'),
        },
      },
    },
    async (request, reply) => {
      const auth = signedIn(request);
      return sendToProvider(request, reply, {
        // Linking starts and ends on the dashboard: no callback is taken, so it stays ours.
        callbackUrl: DASHBOARD_PAGE,
        linkUserId: auth.userId,
        errorTarget: (code) => dashboardWith('error', code),
      });
    },
  );

  app.get(
    '/api/auth/callback/:provider',
    {
      // A link's callback reads the session that asked for it.
      config: { access: access.anyone({ readsSession: true, exempt: [DURING_ENROLMENT] }) },
      schema: {
        tags: ['oauth'],
        summary: 'Where the provider sends the browser back; signs in and redirects to the callbackUrl',
        params: providerParams,
        response: { 303: z.null().describe('To the callbackUrl with a new session; or to /auth/error?error=CODE with none') },
      },
    },
    async (request, reply) => {
      const flow = await oauth.flowSeal.open(request.cookies[flowCookie], clock());
      // Used once, whatever happens next: a replayed callback finds no flow.
      void reply.clearCookie(flowCookie, cookieOptions);
      // Everything after the first `?`, as sent (a later `?` is part of the query, not a new one).
      const url = request.raw.url ?? '';
      const query = url.includes('?') ? url.slice(url.indexOf('?') + 1) : '';
      const isLink = flow?.linkUserId !== null && flow?.linkUserId !== undefined;
      const errorTarget = isLink ? (code: string) => dashboardWith('error', code) : errorPage;

      const callback = await oauth.completeAuthorization(request.params.provider, flow, query);
      if (!callback.ok) return reply.redirect(errorTarget(callback.reason), 303);
      const { identity } = callback;

      if (flow !== null && flow.linkUserId !== null) {
        // Only into the account that asked, and only while it is still signed in here.
        const auth = sessionOf(request);
        if (auth === null || auth.userId !== flow.linkUserId) return reply.redirect(errorPage('SessionRequired'), 303);
        const linked = await oauth.linkIdentity(auth.userId, identity, requestSource(request, auth.userId));
        return reply.redirect(linked.ok ? dashboardWith('notice', 'PROVIDER_LINKED') : dashboardWith('error', linked.reason), 303);
      }

      const outcome = await oauth.signInWithIdentity(identity, requestSource(request, null));
      // Judged when the flow began; judged again against today's TRUSTED_ORIGINS, which a restart
      // may have changed within the flow's 10 minutes.
      const callbackUrl = toCallbackUrl(flow?.callbackUrl ?? DASHBOARD_PAGE, config);
      if (!outcome.ok && outcome.reason === 'CHALLENGE' && redirectToChallenge(reply, outcome.challenge, callbackUrl, config)) return reply;
      if (!outcome.ok) return reply.redirect(errorPage(outcome.reason), 303);
      await setBrowserSession(request, reply, { sessions, csrf, config, nowMs: clock() }, { userId: outcome.user.id, session: outcome.session });
      return reply.redirect(callbackUrl, 303);
    },
  );

  app.get(
    '/api/auth/accounts',
    {
      config: { access: access.user() },
      schema: {
        tags: ['oauth'],
        summary: 'The providers linked to your account',
        security: [{ bearer: [] }],
        response: { 200: linkedAccounts, 401: errorResponse.describe('UNAUTHENTICATED') },
      },
    },
    async (request) => {
      const auth = signedIn(request);
      const accounts = await oauth.listLinkedAccounts(auth.userId);
      return { accounts: accounts.map((account) => ({ ...account, createdAt: isoTime(account.createdAt), lastUsedAt: isoTime(account.lastUsedAt) })) };
    },
  );

  app.delete(
    '/api/auth/accounts/:provider',
    {
      config: { access: access.user({ requires: [IN_PERSON] }) },
      schema: {
        tags: ['oauth'],
        summary: 'Unlink a provider from your account (not your last way to sign in)',
        security: [{ bearer: [] }],
        params: providerParams,
        response: {
          200: z.object({ ok: z.literal(true) }),
          401: errorResponse.describe('UNAUTHENTICATED'),
          403: errorResponse.describe('CSRF_FAILED'),
          404: errorResponse.describe('No such provider linked (NOT_FOUND)'),
          409: errorResponse.describe('No password and no other provider: it is your last way to sign in (LAST_SIGN_IN_METHOD)'),
        },
      },
    },
    async (request) => {
      const auth = signedIn(request);
      const result = await oauth.unlinkIdentity(auth.userId, request.params.provider, requestSource(request, auth.userId));
      if (!result.ok) throw new AppError(result.reason);
      return { ok: true as const };
    },
  );
};
