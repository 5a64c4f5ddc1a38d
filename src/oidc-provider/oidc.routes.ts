/**
 * The OpenID Provider on our HTTP server.
 *
 * - `providerBridge` (JSON scope): every provider endpoint (`/oidc/*`, `/device`, discovery) is
 *   handed to oidc-provider untouched: no body parser of ours runs (the provider reads and limits
 *   bodies itself), our CSRF check does not apply (its forms carry its own anti-forgery value,
 *   its token endpoints authenticate clients), and Host and scheme are pinned to AUTH_URL so no
 *   request can make it name another origin. Our security headers go out with its answers; its
 *   pages replace them with the page headers. The Gatehouse session of the browser is resolved
 *   first, for the provider's login check (provider.ts).
 * - `interactionRoutes` (browser scope): where the provider sends the browser to sign in and to
 *   consent: our sign-in page (password, providers, passkeys, the second factor), then the consent
 *   page for apps that are not first-party; and the dashboard's "Connected apps" disconnect form.
 *
 * The provider's endpoints and the interaction pages are open to anyone as far as our router is
 * concerned (the provider and the interaction decide, with the session when there is one); the
 * disconnect form is for a signed-in user. Only discovery (`/.well-known`) is reachable while the
 * MFA policy asks a user to enrol a second factor.
 */
import { z } from 'zod';
import type { FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { access, DURING_ENROLMENT, IN_PERSON, sessionOf, signedIn } from '../authorization/access.ts';
import type { Config } from '../config.ts';
import { clientKey, type RateLimiters } from '../http/rate-limit.ts';
import { AppError } from '../errors.ts';
import { isUnder, readRequestPath } from '../../packages/protect/src/rules.ts';
import { signInRedirect } from '../http/sign-in-redirect.ts';
import { requestSource } from '../audit/request-source.ts';
import type { RequestAuth } from '../sessions/request-authentication.ts';
import type { UserService } from '../users/user.service.ts';
import type { OidcClientsService } from '../oidc-clients/clients.service.ts';
import type { Clock } from '../lib/clock.ts';
import { formActionSource, type PageLanguage } from '../web/render.ts';
import { INTERACTION_PATH, OIDC_CLAIMS, OIDC_ROUTES } from './provider-routes.ts';
import { oidcErrorPage, type OidcPageRenderer } from './provider-pages.ts';
import type { OidcProviderService } from './oidc-provider.service.ts';
import type { Consent } from './consents.store.ts';
import { HUB_PAGES } from '../http/hub-pages.ts';

const hidden = { hide: true } as const;

/** Paths where the provider may look at the browser's Gatehouse session. */
const BROWSER_PATHS = [OIDC_ROUTES.authorization, OIDC_ROUTES.code_verification, OIDC_ROUTES.end_session];
/** Client-facing endpoints, counted per IP. */
const CLIENT_ENDPOINTS = new Set<string>([OIDC_ROUTES.token, OIDC_ROUTES.introspection, OIDC_ROUTES.revocation, OIDC_ROUTES.device_authorization, OIDC_ROUTES.pushed_authorization_request]);

/**
 * Whether the request's path is one of `routes` (lower case, as OIDC_ROUTES are), read as routers
 * read it (rules.ts, the route guard's reading): resolved (decoded, dot segments and doubled slashes
 * collapsed) and literal, each lower-cased, without a trailing slash, query, fragment or
 * `;parameters`. oidc-provider's router ignores case and a trailing slash, and the path Koa hands
 * it has no fragment: compared raw, `/oidc/token/`, `/oidc/TOKEN` or `/device#x` would not be the
 * endpoint, yet it serves them as the endpoint. An unreadable path never comes here (the route
 * guard refuses it).
 */
function isOneOf(request: FastifyRequest, routes: ReadonlySet<string>): boolean {
  const path = readRequestPath(request.url);
  return path !== null && (routes.has(path.resolved) || routes.has(path.literal));
}

export interface ProviderBridgeOptions {
  oidc: OidcProviderService;
  config: Config;
  rateLimiters: RateLimiters;
}

export const providerBridge: FastifyPluginAsyncZod<ProviderBridgeOptions> = async (app, { oidc, config, rateLimiters }) => {
  const authUrl = new URL(config.authUrl);
  const settings = config.oidcProvider;
  const perIp = (request: FastifyRequest) => clientKey(request.ip);
  const registration = new Set<string>([OIDC_ROUTES.registration]);
  // Each limit counts posts to its endpoints by route, however the path is spelled (isOneOf); a
  // request is counted per IP first, so one address's refused flood does not use up the global count.
  const limits = [
    { limiter: rateLimiters.create('oidc-client-endpoints', settings.tokenEndpointLimit), routes: CLIENT_ENDPOINTS, key: perIp },
    { limiter: rateLimiters.create('oidc-registration', settings.registrationLimit), routes: registration, key: perIp },
    // Open registration takes anyone's: all addresses together are held too (shared by instances).
    ...(settings.registrationMode === 'open' ? [{ limiter: rateLimiters.create('oidc-registration-global', settings.registrationGlobalLimit), routes: registration, key: () => 'all' }] : []),
    { limiter: rateLimiters.create('oidc-user-code', settings.userCodeLimit), routes: new Set<string>([OIDC_ROUTES.code_verification]), key: perIp },
  ];
  /** 429 RATE_LIMITED with Retry-After, and an `error_description` for OAuth clients (RFC 6749 §5.2's shape, as RFC 7591 §3.2.2 answers). */
  const clientLimit: preHandlerAsyncHookHandler = async (request) => {
    if (request.method !== 'POST') return;
    for (const { limiter, routes, key } of limits) {
      if (!isOneOf(request, routes)) continue;
      const wait = await limiter.consume(key(request));
      if (wait !== null) throw new AppError('RATE_LIMITED', { retryAfterSeconds: wait, fields: { error_description: `too many requests; try again in ${wait} seconds` } });
    }
  };

  // The provider reads the body itself (and refuses what it does not expect): leave the stream alone.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));

  async function forward(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const path = readRequestPath(request.url);
    const isBrowserPath = path !== null && BROWSER_PATHS.some((prefix) => isUnder(path.resolved, prefix) || isUnder(path.literal, prefix));
    const auth: RequestAuth | null = isBrowserPath ? sessionOf(request) : null;
    const raw = request.raw;
    // Pin what the provider builds URLs from to AUTH_URL (it trusts these headers: provider.proxy).
    raw.headers.host = authUrl.host;
    raw.headers['x-forwarded-proto'] = authUrl.protocol.slice(0, -1);
    delete raw.headers['x-forwarded-host'];
    delete raw.headers['x-forwarded-for'];
    reply.hijack();
    for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) reply.raw.setHeader(name, value as string | string[]);
    await oidc.handle(raw, reply.raw, auth);
  }

  // GET (and HEAD), POST and CORS preflights are all the provider answers; others are our 404.
  // Its endpoints read the browser's session (forward, on the browser paths); discovery reads none
  // and stays reachable during MFA enrolment, as everything under /.well-known.
  const endpoints = access.anyone({ readsSession: true });
  const discovery = access.anyone({ exempt: [DURING_ENROLMENT] });
  const routes = [
    { url: '/oidc/*', access: endpoints },
    { url: OIDC_ROUTES.code_verification, access: endpoints },
    { url: `${OIDC_ROUTES.code_verification}/*`, access: endpoints },
    { url: '/.well-known/openid-configuration', access: discovery },
    { url: '/.well-known/oauth-authorization-server', access: discovery },
  ];
  for (const { url, access: routeAccess } of routes) {
    app.route({ method: ['GET', 'POST', 'OPTIONS'], url, schema: hidden, config: { skipCsrf: true, access: routeAccess }, preHandler: clientLimit, handler: forward });
  }
};

export interface InteractionRouteOptions {
  oidc: OidcProviderService;
  clients: OidcClientsService;
  users: UserService;
  config: Config;
  clock: Clock;
  pages: OidcPageRenderer;
}

interface MissingConsent {
  missingOIDCScope?: string[];
  missingOIDCClaims?: string[];
  missingResourceScopes?: Record<string, string[]>;
}

/** Scopes the consent page puts in words (`oidc-provider.consent.scope.<scope>`); others are named. */
export const SCOPES_IN_WORDS: ReadonlySet<string> = new Set(['openid', 'profile', 'email', 'roles', 'offline_access']);

/**
 * The scopes of a consent in words, in the page's language, for the consent page. `resources` are
 * the APIs the request is for: the roles, when asked, go into their tokens too, and the page says so.
 */
export function consentItems(missing: MissingConsent, i18n: PageLanguage, resources: readonly string[] = []): string[] {
  const items = (missing.missingOIDCScope ?? []).map((scope) => {
    if (scope === 'roles' && resources.length > 0) return i18n.t('oidc-provider.consent.scope.rolesForResource', { resource: resources.join(', ') });
    return SCOPES_IN_WORDS.has(scope) ? i18n.t(`oidc-provider.consent.scope.${scope}`, { brand: i18n.brand.name }) : i18n.t('oidc-provider.consent.scope.other', { scope });
  });
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) {
    items.push(i18n.t('oidc-provider.consent.resource', { resource: indicator, scopes: scopes.join(', ') }));
  }
  return items;
}

/** The `resource` parameter of an authorization request, as a list. */
function requestedResources(value: unknown): string[] {
  return (Array.isArray(value) ? value : [value]).filter((item): item is string => typeof item === 'string');
}

function covers(consent: Consent | undefined, missing: MissingConsent): boolean {
  if (consent === undefined) return false;
  if (!(missing.missingOIDCScope ?? []).every((scope) => consent.scopes.has(scope))) return false;
  // Claims follow from scopes here (the claims parameter is off); OIDC_CLAIMS lists which.
  const releasable = new Set<string>(Object.entries(OIDC_CLAIMS).filter(([scope]) => consent.scopes.has(scope)).flatMap(([, claims]) => claims));
  if (!(missing.missingOIDCClaims ?? []).every((claim) => releasable.has(claim))) return false;
  return Object.entries(missing.missingResourceScopes ?? {}).every(([indicator, scopes]) => scopes.every((scope) => consent.resources[indicator]?.includes(scope)));
}

const uidParams = z.object({ uid: z.string().min(1).max(64).regex(/^[A-Za-z0-9_-]+$/) });
const consentBody = z.object({ decision: z.enum(['allow', 'deny']), csrfToken: z.string().max(200).optional() });

export const interactionRoutes: FastifyPluginAsyncZod<InteractionRouteOptions> = async (app, options) => {
  const { oidc, users, config, clock, pages } = options;

  function errorPage(reply: FastifyReply, code: string, status = 400): FastifyReply {
    const { i18n } = reply.page;
    return pages.send(reply, 'error', { ...oidcErrorPage(code, i18n) }, { status });
  }

  /** The provider's own cookie changes (set on the Node response) go out with our reply. */
  function keepProviderCookies(reply: FastifyReply): void {
    const cookies = reply.raw.getHeader('set-cookie');
    if (cookies === undefined) return;
    reply.raw.removeHeader('set-cookie');
    const existing = reply.getHeader('set-cookie');
    const merged = [...(existing === undefined ? [] : Array.isArray(existing) ? existing : [String(existing)]), ...(Array.isArray(cookies) ? cookies : [String(cookies)])];
    void reply.header('set-cookie', merged);
  }

  async function details(request: FastifyRequest, reply: FastifyReply, uid: string) {
    try {
      const interaction = await (await oidc.provider()).interactionDetails(request.raw, reply.raw);
      return interaction.uid === uid ? interaction : null;
    } catch {
      return null;
    }
  }

  type Interaction = NonNullable<Awaited<ReturnType<typeof details>>>;

  async function finish(request: FastifyRequest, reply: FastifyReply, result: Record<string, unknown>, merge = true): Promise<string> {
    const returnTo = await (await oidc.provider()).interactionResult(request.raw, reply.raw, result, { mergeWithLastSubmission: merge });
    keepProviderCookies(reply);
    return returnTo;
  }

  /** Grants what the consent prompt misses, remembering it for apps that asked for consent. */
  async function grant(interaction: Interaction, userId: string, missing: MissingConsent, remember: boolean): Promise<Record<string, unknown>> {
    const provider = await oidc.provider();
    const clientId = String(interaction.params.client_id);
    const existing = interaction.grantId === undefined ? undefined : await provider.Grant.find(interaction.grantId);
    const grant = existing ?? new provider.Grant({ accountId: userId, clientId });
    if ((missing.missingOIDCScope ?? []).length > 0) grant.addOIDCScope(missing.missingOIDCScope!.join(' '));
    if ((missing.missingOIDCClaims ?? []).length > 0) grant.addOIDCClaims(missing.missingOIDCClaims!);
    for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) grant.addResourceScope(indicator, scopes.join(' '));
    const grantId = await grant.save();
    if (remember) {
      await oidc.rememberConsent(userId, {
        clientId,
        scopes: new Set(missing.missingOIDCScope ?? []),
        resources: Object.fromEntries(Object.entries(missing.missingResourceScopes ?? {})),
      });
    }
    return { consent: existing === undefined ? { grantId } : {} };
  }

  /**
   * A page that moves on to `url` by itself. After a sign-in form, the way back to the app is a
   * chain of redirects that browsers check against the sign-in page's `form-action`; a refresh
   * starts a new navigation instead, so the app's address need not be allowed on our forms.
   */
  function continueTo(reply: FastifyReply, url: string): FastifyReply {
    // The provider answers with an absolute URL on our origin: keep its path.
    const target = new URL(url, config.authUrl);
    const safe = target.origin === new URL(config.authUrl).origin ? `${target.pathname}${target.search}` : '/';
    void reply.header('refresh', `0;url=${safe}`);
    const { i18n } = reply.page;
    return pages.send(reply, 'oidc-continue', { title: i18n.t('oidc-provider.continue.title'), url: safe });
  }

  // The interaction decides who must sign in (again) and comes back here: the session is read, not
  // required. Only the person may let an app act for them (never an administrator acting as them).
  const interactionAccess = { access: access.anyone({ readsSession: true, requires: [IN_PERSON] }) };

  app.get(`${INTERACTION_PATH}/:uid`, { config: interactionAccess, schema: { ...hidden, params: uidParams } }, async (request, reply) => {
    const { uid } = request.params;
    const interaction = await details(request, reply, uid);
    if (interaction === null) return errorPage(reply, 'expired_login_request');
    const auth = sessionOf(request);
    const here = `${INTERACTION_PATH}/${uid}`;

    if (interaction.prompt.name === 'login') {
      const reasons = interaction.prompt.reasons;
      const maxAge = typeof interaction.params.max_age === 'string' || typeof interaction.params.max_age === 'number' ? Number(interaction.params.max_age) : undefined;
      const startedAt = (interaction.iat ?? 0) * 1000;
      const isFresh =
        auth !== null &&
        (!reasons.includes('login_prompt') || auth.authTime >= startedAt) &&
        (maxAge === undefined || !Number.isFinite(maxAge) || clock() - auth.authTime <= maxAge * 1000);
      if (auth === null || !isFresh) return reply.redirect(signInRedirect(here), 303);
      const returnTo = await finish(request, reply, {
        login: { accountId: auth.userId, amr: [...auth.amr], ts: Math.floor(auth.authTime / 1000) },
      });
      return continueTo(reply, returnTo);
    }

    if (interaction.prompt.name === 'consent') {
      const accountId = interaction.session?.accountId;
      if (auth === null || auth.userId !== accountId) return reply.redirect(signInRedirect(here), 303);
      const clientId = String(interaction.params.client_id);
      const client = await oidc.describeClient(clientId);
      if (client === null) return errorPage(reply, 'invalid_client');
      const missing = interaction.prompt.details as MissingConsent;
      // A remembered consent answers for the user, unless the app asked them again (prompt=consent).
      const isAskedAgain = interaction.prompt.reasons.includes('consent_prompt');
      const remembered = client.isFirstParty || isAskedAgain ? undefined : await oidc.findConsent(auth.userId, clientId);
      if (client.isFirstParty || covers(remembered, missing)) {
        return reply.redirect(await finish(request, reply, await grant(interaction, auth.userId, missing, false)), 303);
      }
      const user = await users.findUserById(auth.userId);
      const redirectUri = typeof interaction.params.redirect_uri === 'string' ? interaction.params.redirect_uri : undefined;
      const source = redirectUri === undefined ? null : formActionSource(redirectUri);
      const { i18n } = reply.page;
      return pages.send(
        reply,
        'oidc-consent',
        {
          title: i18n.t('oidc-provider.consent.title', { client: client.name }),
          action: `${here}/consent`,
          clientName: client.name,
          clientHost: client.host,
          email: user?.email ?? '',
          items: consentItems(missing, i18n, requestedResources(interaction.params.resource)),
          redirectOrigin: redirectUri === undefined ? null : (source ?? redirectUri),
        },
        // The answer redirects to the app (through the provider): the CSP must allow its address.
        { formActionOrigins: source === null ? [] : [source] },
      );
    }
    return errorPage(reply, 'invalid_request');
  });

  app.post(`${INTERACTION_PATH}/:uid/consent`, { config: interactionAccess, schema: { ...hidden, params: uidParams, body: consentBody } }, async (request, reply) => {
    const { uid } = request.params;
    const interaction = await details(request, reply, uid);
    if (interaction === null) return errorPage(reply, 'expired_login_request');
    const auth = sessionOf(request);
    if (auth === null || interaction.prompt.name !== 'consent' || auth.userId !== interaction.session?.accountId) {
      return reply.redirect(signInRedirect(`${INTERACTION_PATH}/${uid}`), 303);
    }
    if (request.body.decision === 'deny') {
      return reply.redirect(await finish(request, reply, { error: 'access_denied', error_description: 'The user denied the request' }, false), 303);
    }
    const result = await grant(interaction, auth.userId, interaction.prompt.details as MissingConsent, true);
    return reply.redirect(await finish(request, reply, result), 303);
  });

  app.post(
    '/oidc/connected-apps/:clientId/disconnect',
    {
      // Signed out, sign in and come back to the dashboard (the form's page), never to this form's target.
      config: { access: access.user({ signedOutRedirect: signInRedirect(HUB_PAGES.dashboard) }) },
      schema: { ...hidden, params: z.object({ clientId: z.string().min(1).max(255) }), body: z.object({ csrfToken: z.string().max(200).optional() }) },
    },
    async (request, reply) => {
      const { userId } = signedIn(request);
      await oidc.disconnect(userId, request.params.clientId, requestSource(request, userId));
      return reply.redirect('/dashboard#connected-apps-heading', 303);
    },
  );
};
