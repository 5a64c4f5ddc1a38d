/**
 * The browser's side of SSO:
 * - `POST /sso/:connectionId/start` (a form with the CSRF token): a 303 to the connection's IdP
 *   (SAML: a signed AuthnRequest, HTTP-Redirect binding, RelayState = the callback path; OIDC: the
 *   authorization endpoint with PKCE, state and nonce, the flow bound to this browser by a cookie);
 * - `POST /sso/saml/:connectionId/acs`: the IdP's response (a cross-site form post, so no CSRF token:
 *   the response's signature and InResponseTo protect it), checked for this connection only;
 * - `GET /sso/oidc/:connectionId/callback`: the OIDC provider's answer;
 * - `GET /sso/saml/:connectionId/metadata`: our SP metadata for the connection.
 * Success: the session's cookies and a 303 to the callback (RelayState only when a same-origin
 * path, else the dashboard). Failure: `/auth/error?error=AccessDenied` (or OAuthAccountNotLinked),
 * nothing created; the reason is in the audit log (`sso.signin_failed`), never in the URL.
 */
import { z } from 'zod';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Config } from '../config.ts';
import type { Clock } from '../lib/clock.ts';
import type { CsrfRotation } from '../http/csrf.ts';
import type { RequestLimits } from '../http/request-limits.ts';
import { access, DURING_ENROLMENT } from '../authorization/access.ts';
import { baseCookieOptions, setBrowserSession } from '../sessions/session-cookie.ts';
import type { SessionService } from '../sessions/session.service.ts';
import { requestSource } from '../audit/request-source.ts';
import { toSafeLocalPath } from '../http/safe-redirect.ts';
import { redirectToChallenge } from '../signin/challenge-cookie.ts';
import { HUB_PAGES } from '../http/hub-pages.ts';
import { errorResponse } from '../http/schemas.ts';
import { AppError } from '../errors.ts';
import type { SetupTestAnswered, SsoService, SsoSignInResult } from './sso.service.ts';
import { setupTestPage } from './sso-setup.paths.ts';

export interface SsoRouteOptions {
  sso: SsoService;
  limits: RequestLimits;
  sessions: SessionService;
  csrf: CsrfRotation;
  config: Config;
  clock: Clock;
}

const connectionParams = z.object({ connectionId: z.string().min(1).max(32) });
const ERROR_PAGE = '/auth/error';
/** A SAML response with its certificate and an encrypted assertion is far above the usual form limit. */
const ACS_BODY_LIMIT = 512 * 1024;

export function ssoFlowCookie(config: Pick<Config, 'isSecureOrigin'>): string {
  return `${config.isSecureOrigin ? '__Host-' : ''}gatehouse.sso-flow`;
}

function errorPage(reason: string): string {
  const shown = reason === 'SSO_ACCOUNT_NOT_LINKED' ? 'OAuthAccountNotLinked' : reason === 'SSO_IDP_UNREACHABLE' || reason === 'SSO_IDP_ADDRESS_REFUSED' ? 'ProviderUnreachable' : 'AccessDenied';
  return `${ERROR_PAGE}?${new URLSearchParams({ error: shown })}`;
}

export const ssoRoutes: FastifyPluginAsyncZod<SsoRouteOptions> = async (app, options) => {
  const { sso, sessions, csrf, config, clock, limits } = options;
  const origin = new URL(config.authUrl).origin;
  const cookieOptions = baseCookieOptions(config);
  const flowCookie = ssoFlowCookie(config);

  async function finish(request: FastifyRequest, reply: FastifyReply, result: SsoSignInResult | SetupTestAnswered | { ok: false; reason: string }, callbackUrl: string) {
    // A setup link's test sign-in: to its result, on the link's page (no session was made).
    if (!result.ok && 'testId' in result) return reply.redirect(setupTestPage(result.testId), 303);
    if (!result.ok && 'challenge' in result && redirectToChallenge(reply, result.challenge, callbackUrl, config)) return reply;
    if (!result.ok || !('session' in result)) return reply.redirect(errorPage(result.ok ? 'AccessDenied' : result.reason), 303);
    await setBrowserSession(request, reply, { sessions, csrf, config, nowMs: clock() }, { userId: result.user.id, session: result.session });
    return reply.redirect(callbackUrl, 303);
  }

  app.post(
    '/sso/:connectionId/start',
    {
      config: { access: access.anyone({ exempt: [DURING_ENROLMENT] }), formErrorPage: HUB_PAGES.signIn },
      // The limit of provider sign-ins (RATE_LIMIT_OAUTH_PER_IP): each start stores a request.
      preHandler: limits.oauthStart,
      schema: {
        tags: ['sso'],
        summary: 'Start signing in through an SSO connection: a 303 to its identity provider',
        description:
          'A browser endpoint (the sign-in page\'s "Continue with SSO" form, with its `csrfToken`). SAML: a signed AuthnRequest by the HTTP-Redirect binding, ' +
          'the callback path as RelayState. OpenID Connect: the authorization endpoint with PKCE, `state` and `nonce`, the flow bound to this browser by a cookie. ' +
          '`callbackUrl` is kept only when it is a path of this origin (else the dashboard). An unknown or disabled connection goes to `/auth/error`.',
        params: connectionParams,
        body: z.object({ callbackUrl: z.string().max(2048).optional().describe('Where to land after signing in: a path of this origin'), csrfToken: z.string().max(200).optional() }).nullish(),
        response: {
          303: z.null().describe("To the connection's identity provider; or to /auth/error?error=CODE (an unknown or disabled connection, an unreachable provider)"),
          403: errorResponse.describe('CSRF_FAILED'),
        },
      },
    },
    async (request, reply) => {
      const callbackUrl = toSafeLocalPath(request.body?.callbackUrl, origin, HUB_PAGES.dashboard);
      const started = await sso.start(request.params.connectionId, callbackUrl, requestSource(request, null));
      if (!started.ok) return reply.redirect(errorPage(started.reason), 303);
      if (started.browserBinding !== null) void reply.setCookie(flowCookie, started.browserBinding, { ...cookieOptions, maxAge: 600 });
      return reply.redirect(started.url, 303);
    },
  );

  app.post(
    '/sso/saml/:connectionId/acs',
    {
      // The IdP's form post comes from its site: the response's signature and InResponseTo protect it.
      config: { access: access.anyone({ exempt: [DURING_ENROLMENT] }), skipCsrf: true },
      preHandler: limits.oauthStart,
      bodyLimit: ACS_BODY_LIMIT,
      schema: {
        tags: ['sso'],
        summary: 'SAML assertion consumer service of one connection (HTTP-POST binding)',
        description:
          "The identity provider's form post (from its site, so no CSRF token: the response's signature, audience, recipient, destination, InResponseTo, " +
          'validity window and one use of each assertion ID protect it), checked for this connection only. A refused response creates nothing; ' +
          'its reason is in the audit log (`sso.signin_failed`), never in the URL. Bodies up to 512 KiB.',
        params: connectionParams,
        consumes: ['application/x-www-form-urlencoded'],
        body: z.object({
          SAMLResponse: z.string().max(ACS_BODY_LIMIT).describe('The base64 SAML Response'),
          RelayState: z.string().max(2048).optional().describe('The callback path sent with the request; kept only when a path of this origin'),
        }),
        response: { 303: z.null().describe('To the RelayState path (else the dashboard) with a new session; or to /auth/error with none') },
      },
    },
    async (request, reply) => {
      const result = await sso.completeSaml(request.params.connectionId, request.body.SAMLResponse, requestSource(request, null));
      return finish(request, reply, result, toSafeLocalPath(request.body.RelayState, origin, HUB_PAGES.dashboard));
    },
  );

  app.get(
    '/sso/oidc/:connectionId/callback',
    {
      config: { access: access.anyone({ exempt: [DURING_ENROLMENT] }) },
      schema: {
        tags: ['sso'],
        summary: 'Where an OpenID Connect connection’s provider sends the browser back',
        description:
          "The provider's authorization response (`code` and `state`, or `error`), for the browser the flow cookie binds it to: the code is exchanged " +
          "with PKCE and the ID token checked (issuer, audience, nonce). A refused answer creates nothing; its reason is in the audit log, never in the URL.",
        params: connectionParams,
        response: { 303: z.null().describe('To the callback with a new session; or to /auth/error with none') },
      },
    },
    async (request, reply) => {
      const binding = request.cookies[flowCookie];
      void reply.clearCookie(flowCookie, cookieOptions);
      const url = request.raw.url ?? '';
      const query = url.includes('?') ? url.slice(url.indexOf('?') + 1) : '';
      const { result, callbackUrl } = await sso.completeOidc(request.params.connectionId, query, binding, requestSource(request, null));
      return finish(request, reply, result, toSafeLocalPath(callbackUrl, origin, HUB_PAGES.dashboard));
    },
  );

  app.get(
    '/sso/saml/:connectionId/metadata',
    {
      config: { access: access.anyone({ exempt: [DURING_ENROLMENT] }) },
      schema: {
        tags: ['sso'],
        summary: 'Our SAML service provider metadata for one connection (entity ID, ACS URL, certificates)',
        description: "What the identity provider's administrator imports: an `EntityDescriptor` (as `application/samlmetadata+xml`) with the connection's entity ID, ACS URL and signing and encryption certificates.",
        params: connectionParams,
        response: { 200: { description: 'The SP metadata XML', content: { 'application/samlmetadata+xml': { schema: z.string() } } }, 404: errorResponse.describe('SSO_CONNECTION_NOT_FOUND (also for a connection that is not SAML)') },
      },
    },
    async (request, reply) => {
      const metadata = await sso.spMetadata(request.params.connectionId);
      if (metadata === null) throw new AppError('SSO_CONNECTION_NOT_FOUND');
      return reply.type('application/samlmetadata+xml; charset=utf-8').send(metadata);
    },
  );
};
