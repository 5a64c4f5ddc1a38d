/**
 * The OpenID Provider itself: `oidc-provider` (OpenID Certified) configured for Gatehouse. This
 * file holds the configuration; the Fastify bridge is in oidc.routes.ts, the pages it renders in
 * provider-pages.ts.
 *
 * What we decide here, and why:
 * - The issuer is AUTH_URL; every endpoint lives under `/oidc` (the device page at `/device`),
 *   the JWKS is the one the service publishes (`/.well-known/jwks.json`, served by the sessions
 *   module), and the provider signs with those keys (signing-keys.ts: EdDSA by default, RS256 per
 *   client). A key rotation builds a new provider instance: all state is in storage.
 * - Code flow only (no implicit, hybrid or password), PKCE S256 required of public clients,
 *   client secrets compared by their SHA-256 (we never hold them in clear), exact redirect URIs.
 * - A provider session is good only while the browser's Gatehouse session is: the `login` prompt
 *   gets a check that compares them, so signing out of Gatehouse ends sign-in at every app.
 * - Access tokens for an API named in OIDC_PROVIDER_RESOURCES are RFC 9068 JWTs bound to it
 *   (`aud`), with the user's roles when the `roles` scope was granted; without a resource they are
 *   opaque and good for userinfo only. Each names its grant (`grant_id`), so that token exchange
 *   (RFC 8693, token-exchange.ts: a grant of its own at the token endpoint) can refuse a token
 *   whose grant has ended.
 */
import type { IncomingMessage } from 'node:http';
import Provider, { errors, interactionPolicy, type Configuration, type KoaContextWithOIDC, type ResourceServer as ProviderResourceServer } from 'oidc-provider';
import type { Config } from '../config.ts';
import type { Logger } from '../lib/logger.ts';
import type { SigningKeys } from '../sessions/signing-keys.ts';
import type { RequestAuth } from '../sessions/request-authentication.ts';
import type { UserService } from '../users/user.service.ts';
import { deriveKey } from '../lib/derive-key.ts';
import { formActionSource } from '../web/render.ts';
import { toErrorBody } from '../errors.ts';
import { newClientId, newClientSecret } from '../oidc-clients/client-credentials.ts';
import type { AdapterFactory } from 'oidc-provider';
import type { ProviderPages } from './provider-pages.ts';

import { CLOCK_TOLERANCE_SECONDS } from './oidc-provider.config.ts';
import { cimdFeature, documentClientHost, isDocumentClientId } from './cimd.ts';
import { createDocumentFetch } from '../http/outbound/fetcher.ts';
import { INTERACTION_PATH, OIDC_CLAIMS, OIDC_ROUTES } from './provider-routes.ts';
import { registerTokenExchange, tokenExchangeClaims, type ExchangeRegistry } from './token-exchange.ts';
export { CLOCK_TOLERANCE_SECONDS };

/** The CSP of the provider's own answers (see createProvider). */
const PROVIDER_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

export { INTERACTION_PATH, OIDC_CLAIMS, OIDC_ROUTES };

export interface ClientLookup {
  /** The client in oidc-provider's metadata shape (client_secret is the SHA-256 of the secret). */
  providerMetadata(clientId: string): Promise<Record<string, unknown> | undefined>;
}

export interface ProviderDeps {
  config: Config;
  keys: SigningKeys;
  adapter: AdapterFactory;
  users: Pick<UserService, 'findUserById'>;
  pages: ProviderPages;
  logger: Logger;
  /** The Gatehouse session of the browser making this request, resolved by the bridge before the provider runs. */
  gatehouseSession(req: IncomingMessage): RequestAuth | null | undefined;
  /** Whether a presented client secret matches the stored hash (constant time). */
  clientSecretMatches(secret: string, hash: string): boolean;
  /** The browser confirmed an RP-initiated logout: end its Gatehouse session too. */
  onLogout(req: IncomingMessage): void;
  /**
   * A client was issued a code (a person let it in) or tokens at the token endpoint: its last use,
   * and that person's (`accountId`; null for tokens with no person: client credentials). Not a
   * device code or a pushed request, which anyone holding a client_id can get.
   */
  onClientUsed(req: IncomingMessage, clientId: string, accountId: string | null): void;
  /** An app was authorized (a code issued): the sign-in to link for back-channel logout. */
  onAuthorized(req: IncomingMessage, authorized: { clientId: string; accountId: string; sid: string; grantId: string | null }): void;
  /** Each client's exchange policy and the audit of each exchange (token exchange, token-exchange.ts). */
  exchange: ExchangeRegistry;
}

/**
 * The OpenID scopes the token being issued at the token endpoint was asked for and granted: those
 * of the code, device code or refresh token it comes from (a refresh may ask for fewer), kept only
 * if the grant holds them. Empty when there is no such source: nothing is granted by default.
 */
function grantedScopes(ctx: KoaContextWithOIDC): ReadonlySet<string> {
  const { entities, params } = ctx.oidc;
  const source = entities.AuthorizationCode ?? entities.DeviceCode ?? entities.RefreshToken;
  const asked = typeof params?.scope === 'string' ? ctx.oidc.requestParamScopes : source?.scopes;
  if (asked === undefined || entities.Grant === undefined) return new Set();
  return new Set(entities.Grant.getOIDCScopeFiltered(asked).split(' '));
}

/** A provider instance for the keys of this moment. */
export function createProvider(deps: ProviderDeps): Provider {
  const { config, keys, users, pages } = deps;
  const settings = config.oidcProvider;
  const resources = new Map(settings.resources.map((resource) => [resource.indicator, resource]));
  const resourceScopes = [...new Set(settings.resources.flatMap((resource) => resource.scopes))];
  /** How the provider issues tokens for an API of OIDC_PROVIDER_RESOURCES: RFC 9068 JWTs bound to it. */
  const resourceServer = (indicator: string): ProviderResourceServer => {
    const resource = resources.get(indicator);
    if (resource === undefined) throw new errors.InvalidTarget();
    return {
      scope: resource.scopes.join(' '),
      audience: resource.indicator,
      accessTokenTTL: settings.accessTokenTtlSeconds,
      accessTokenFormat: 'jwt',
      jwt: { sign: { alg: 'EdDSA' } },
    };
  };

  const policy = interactionPolicy.base();
  const login = policy.get('login')!;
  login.checks.push(
    new interactionPolicy.Check('gatehouse_session', 'the End-User is not signed in to Gatehouse', 'login_required', (ctx) => {
      const accountId = ctx.oidc.session?.accountId;
      if (accountId === undefined) return interactionPolicy.Check.NO_NEED_TO_PROMPT;
      const auth = deps.gatehouseSession(ctx.req);
      return auth?.userId === accountId ? interactionPolicy.Check.NO_NEED_TO_PROMPT : interactionPolicy.Check.REQUEST_PROMPT;
    }),
  );

  const configuration: Configuration = {
    adapter: deps.adapter,
    clients: [],
    // Whatever the provider fetches (client ID metadata documents) goes out under the outbound
    // rules webhooks follow, with the setting that allows non-public addresses named in refusals.
    fetch: createDocumentFetch({
      policy: { allowHttp: settings.outbound.allowHttp, allowPrivate: settings.outbound.allowPrivateTargets, allowPrivateSetting: 'OIDC_PROVIDER_ALLOW_PRIVATE_TARGETS' },
      ...(settings.cimd.ca !== undefined && { ca: settings.cimd.ca }),
      userAgent: 'Gatehouse-OpenID-Provider/1.0',
    }) as unknown as Configuration['fetch'],
    routes: OIDC_ROUTES,
    interactions: {
      policy,
      url: (_ctx, interaction) => `${INTERACTION_PATH}/${interaction.uid}`,
    },
    async findAccount(_ctx, sub) {
      const user = await users.findUserById(sub);
      if (user === null || user.disabledAt !== null) return undefined;
      return {
        accountId: user.id,
        async claims() {
          return {
            sub: user.id,
            name: user.name,
            email: user.email,
            email_verified: user.emailVerifiedAt !== null,
            updated_at: Math.floor(user.updatedAt / 1000),
            roles: user.roles,
          };
        },
      };
    },
    claims: { acr: null, sid: null, iss: null, ...Object.fromEntries(Object.entries(OIDC_CLAIMS).map(([scope, claims]) => [scope, [...claims]])) },
    scopes: ['openid', 'offline_access', ...Object.keys(OIDC_CLAIMS).filter((scope) => scope !== 'openid'), ...resourceScopes],
    responseTypes: ['code'],
    // private_key_jwt (RFC 7523) for a client that registered its public keys (a jwks_uri, fetched
    // under the outbound rules): it keeps no secret at all; each assertion is accepted once.
    clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'],
    clientDefaults: {
      grant_types: ['authorization_code'],
      response_types: ['code'],
      id_token_signed_response_alg: 'EdDSA',
      token_endpoint_auth_method: 'client_secret_basic',
    },
    enabledJWA: {
      idTokenSigningAlgValues: ['EdDSA', 'RS256'],
      userinfoSigningAlgValues: ['EdDSA', 'RS256'],
      introspectionSigningAlgValues: ['EdDSA', 'RS256'],
      authorizationSigningAlgValues: ['EdDSA', 'RS256'],
      // JWTs a client signs (its authentication, its request objects) only with its own private
      // keys: never an HMAC with the secret, which is only ever compared by its hash and must
      // never serve as a key (no client_secret_jwt, no HS256 request objects, no unsigned ones).
      // Ed25519 is EdDSA's fully specified name (RFC 9864), which current clients (openid-client) send.
      clientAuthSigningAlgValues: ['Ed25519', 'EdDSA', 'ES256', 'PS256', 'RS256'],
      requestObjectSigningAlgValues: ['Ed25519', 'EdDSA', 'ES256', 'PS256', 'RS256'],
    },
    jwks: { keys: keys.privateJwks().map((jwk) => ({ ...jwk })) as never },
    // PKCE for every public client, and for every client named by a metadata document (MCP asks
    // it of all), whatever it authenticates with.
    pkce: { required: (_ctx, client) => client.clientAuthMethod === 'none' || isDocumentClientId(client.clientId) },
    allowOmittingSingleRegisteredRedirectUri: false,
    clockTolerance: CLOCK_TOLERANCE_SECONDS,
    rotateRefreshToken: true,
    cookies: {
      keys: [deriveKey(config.authSecret, 'gatehouse oidc-provider cookies v1').toString('base64url')],
      names: { session: 'gatehouse.oidc.session', interaction: 'gatehouse.oidc.interaction', resume: 'gatehouse.oidc.resume' },
      long: { signed: true, httpOnly: true, sameSite: 'lax' },
      short: { signed: true, httpOnly: true, sameSite: 'lax' },
    },
    ttl: {
      AccessToken: settings.accessTokenTtlSeconds,
      AuthorizationCode: 60,
      ClientCredentials: settings.accessTokenTtlSeconds,
      DeviceCode: settings.deviceCodeTtlSeconds,
      Grant: settings.refreshTokenTtlSeconds,
      IdToken: settings.idTokenTtlSeconds,
      Interaction: 60 * 60,
      PushedAuthorizationRequest: 60,
      RefreshToken: settings.refreshTokenTtlSeconds,
      Session: settings.refreshTokenTtlSeconds,
    },
    async extraTokenClaims(ctx, token) {
      // A user's access token (for an API, or opaque and read by introspection) carries the roles
      // the user holds when it is issued (a refresh re-reads them), and only when the app asked
      // for the `roles` scope and the user granted it: the consent page then says so.
      const accountId = 'accountId' in token ? token.accountId : undefined;
      if (typeof accountId !== 'string' || !grantedScopes(ctx).has('roles')) return undefined;
      const user = await users.findUserById(accountId);
      return user === null ? undefined : { roles: user.roles };
    },
    features: {
      devInteractions: { enabled: false },
      claimsParameter: { enabled: false },
      clientCredentials: { enabled: true },
      // Introspection is for confidential clients (resource servers among them); a public client
      // has nothing to prove who asks. A client revokes only its own tokens: another's is refused to
      // a confidential client and ignored for a public one (RFC 7009's 200), as the library's default,
      // stated here so that it is a decision and not a notice on standard error.
      introspection: { enabled: true, allowedPolicy: async (_ctx, client) => client.clientAuthMethod !== 'none' },
      revocation: {
        enabled: true,
        allowedPolicy: async (_ctx, client, token) => {
          if (token.clientId === client.clientId) return true;
          if (client.clientAuthMethod === 'none') return false;
          throw new errors.InvalidRequest('client is not authorized to revoke the presented token');
        },
      },
      userinfo: { enabled: true },
      // DPoP (RFC 9449): a client that sends proofs gets tokens bound to its key (refresh tokens of
      // public clients too), and must use a nonce of ours, the same on every instance (AUTH_SECRET).
      dPoP: { enabled: true, nonceSecret: deriveKey(config.authSecret, 'gatehouse oidc-provider dpop nonces v1'), requireNonce: () => true },
      pushedAuthorizationRequests: { enabled: true, requirePushedAuthorizationRequests: false },
      // Request objects (JAR, RFC 9101): the authorization request as a JWT the client signed with
      // its own keys (requestObjectSigningAlgValues above: no HMAC, no `none`), by value or pushed
      // (PAR). A client without keys cannot make one the provider accepts.
      requestObjects: { enabled: true, requireSignedRequestObject: false },
      // A client_id that is an https URL names a client by its metadata document (cimd.ts).
      clientIdMetadataDocument: cimdFeature(settings.cimd, (clientId, reason) => deps.logger.info({ clientHost: documentClientHost(clientId), reason }, 'client ID metadata document refused')),
      // OIDC_PROVIDER_REGISTRATION: off, behind the initial access token, or open to anyone (with
      // the limits the bridge and the registry hold: rates, the cap, what open mode refuses).
      // Registered clients follow the rules of those an admin registers (the adapter refuses
      // others) and are never first-party.
      registration: {
        enabled: settings.registrationMode !== 'off',
        initialAccessToken: settings.registrationMode === 'token' && settings.registrationToken !== undefined ? settings.registrationToken : false,
        issueRegistrationAccessToken: false,
        idFactory: () => newClientId(),
        secretFactory: async () => newClientSecret(),
      },
      // Logout tokens to apps that registered a back-channel URI (and `sid` in their ID tokens);
      // sent by backchannel-logout.ts when the Gatehouse session ends, not by the provider itself.
      backchannelLogout: { enabled: true },
      rpInitiatedLogout: {
        enabled: true,
        async logoutSource(ctx, form) {
          const redirect = ctx.oidc.params?.post_logout_redirect_uri;
          pages.logout(ctx, form, typeof redirect === 'string' ? redirect : undefined);
        },
        async postLogoutSuccessSource(ctx) {
          pages.loggedOut(ctx);
        },
      },
      deviceFlow: {
        enabled: true,
        charset: 'base-20',
        mask: '****-****',
        async userCodeInputSource(ctx, form, _out, error) {
          pages.deviceInput(ctx, form, error);
        },
        async userCodeConfirmSource(ctx, form, client, _deviceInfo, userCode) {
          pages.deviceConfirm(ctx, form, client.clientName ?? client.clientId, userCode);
        },
        async successSource(ctx) {
          pages.deviceDone(ctx);
        },
      },
      resourceIndicators: {
        enabled: true,
        async defaultResource(_ctx, _client, oneOf) {
          return oneOf ?? undefined;
        },
        async useGrantedResource() {
          return true;
        },
        async getResourceServerInfo(_ctx, indicator): Promise<ProviderResourceServer> {
          return resourceServer(indicator);
        },
      },
    },
    // A token for an API names its grant (so that token exchange can tell whether it still lives)
    // and, when exchanged, the acting party (token-exchange.ts).
    formats: {
      customizers: {
        jwt(_ctx, token, parts) {
          Object.assign(parts.payload, tokenExchangeClaims(token));
        },
      },
    },
    async renderError(ctx, out) {
      pages.error(ctx, out);
    },
  };

  const provider = new Provider(config.authUrl, configuration);
  // Token exchange (RFC 8693) for a client acting for a person; listed in discovery's grant_types_supported.
  registerTokenExchange(provider, {
    issuer: config.authUrl,
    keys,
    clockToleranceSeconds: CLOCK_TOLERANCE_SECONDS,
    resources,
    resourceServer,
    accessTokenTtlSeconds: settings.accessTokenTtlSeconds,
    users,
    registry: deps.exchange,
  });
  const ownOrigin = new URL(config.authUrl).origin;
  // What the provider answers itself gets a CSP first: no script but the one a `form_post`
  // response adds (oidc-provider appends its hash to script-src) and forms only to us; a form_post
  // answer may also post to the app's redirect URI. Our own pages replace this with the page CSP.
  provider.use(async (ctx, next) => {
    ctx.set('content-security-policy', PROVIDER_CSP);
    try {
      await next();
    } catch (error) {
      // oidc-provider 9 saves a provider session it touched after the handler has answered, and
      // throws when that session was never stored (a device-flow request without one, say): the
      // answer is already set and right, and there is nothing to save. Anything else is a fault.
      if (!(error instanceof TypeError && error.message.startsWith('persist can only be called on previously persisted Sessions'))) throw error;
    }
    // RFC 6749 §5.2 names this refusal `unauthorized_client`; oidc-provider 9 says `invalid_request`.
    const answer = ctx.body as { error?: unknown; error_description?: unknown } | undefined;
    if (ctx.path === OIDC_ROUTES.token && ctx.status === 400 && answer?.error === 'invalid_request' && answer.error_description === 'requested grant type is not allowed for this client') {
      ctx.body = { ...answer, error: 'unauthorized_client' };
    }
    // A path the provider does not serve (registration while off, say) answers like any of ours.
    if (ctx.status === 404 && ctx.body === undefined) {
      ctx.status = 404;
      ctx.body = toErrorBody('NOT_FOUND');
      return;
    }
    // Without a provider session, oidc-provider answers a logout request with a page that submits
    // itself: any site could sign the browser out of its apps by a link. Ask, as with a session.
    if (ctx.path === OIDC_ROUTES.end_session && typeof ctx.body === 'string' && ctx.body.includes('document.forms[0].submit()')) {
      const redirect = ctx.oidc?.params?.post_logout_redirect_uri;
      pages.logout(ctx as KoaContextWithOIDC, ctx.body, typeof redirect === 'string' ? redirect : undefined);
      return;
    }
    const csp = ctx.response.get('content-security-policy');
    const redirectUri = ctx.oidc?.params?.redirect_uri;
    if (ctx.oidc?.params?.response_mode === 'form_post' && typeof redirectUri === 'string' && csp.includes("'sha256-")) {
      const source = formActionSource(redirectUri);
      if (source !== null && source !== ownOrigin) ctx.set('content-security-policy', csp.replace("form-action 'self'", `form-action 'self' ${source}`));
    }
  });
  // The bridge pins Host and the scheme to AUTH_URL (see oidc.routes.ts), so the provider may read them.
  provider.proxy = true;
  // Client secrets are stored as SHA-256 hashes: compare the presented one by its hash.
  provider.Client.prototype.compareClientSecret = function compareClientSecret(this: { clientSecret?: string }, actual: string) {
    return Promise.resolve(typeof this.clientSecret === 'string' && deps.clientSecretMatches(actual, this.clientSecret));
  };
  // Both answers to the logout page end the app's part; only "Sign out" on our page ends the
  // Gatehouse session (its form carries `gatehouse=signout`; no other form the provider makes does).
  provider.on('end_session.success', (ctx: KoaContextWithOIDC) => {
    const body = (ctx.oidc as { body?: Record<string, unknown> }).body;
    if (ctx.oidc.params?.logout && body?.gatehouse === 'signout') deps.onLogout(ctx.req);
  });
  provider.on('authorization.success', (ctx: KoaContextWithOIDC) => {
    const { client, session } = ctx.oidc;
    if (client === undefined || session?.accountId === undefined) return;
    deps.onClientUsed(ctx.req, client.clientId, session.accountId);
    const grantId = session.grantIdFor(client.clientId);
    deps.onAuthorized(ctx.req, { clientId: client.clientId, accountId: session.accountId, sid: session.sidFor(client.clientId) as string, grantId: typeof grantId === 'string' ? grantId : null });
  });
  provider.on('grant.success', (ctx: KoaContextWithOIDC) => {
    if (ctx.oidc.client === undefined) return;
    const accountId = ctx.oidc.entities.Grant?.accountId ?? ctx.oidc.entities.AccessToken?.accountId;
    deps.onClientUsed(ctx.req, ctx.oidc.client.clientId, typeof accountId === 'string' ? accountId : null);
  });
  // What the provider would send on an RP-initiated logout is sent instead when the Gatehouse
  // session ends (backchannel-logout.ts): through the outbox and the outbound rules, and also for
  // sign-outs the provider never sees.
  provider.Client.prototype.backchannelLogout = async function backchannelLogout() {};
  provider.on('server_error', (_ctx: unknown, error: Error) => deps.logger.error({ err: error }, 'OpenID Provider error'));
  return provider;
}
