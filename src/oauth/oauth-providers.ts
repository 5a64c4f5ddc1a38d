/**
 * The configured providers, as `openid-client` sees them: how to send a browser out (authorization
 * code flow with PKCE S256, `state`, and `nonce` for OpenID Connect) and how to turn its return
 * into a checked identity. All protocol checks (state, PKCE, RFC 9207 `iss`, ID-token signature,
 * `iss`, `aud`, `exp`, `nonce`) are `openid-client`'s; this module only picks what to ask for and
 * reads the profile.
 */
import type * as OpenIdClient from 'openid-client';
import { loadedOpenIdClient, loadOpenIdClient } from '../lib/openid-client.ts';
import { z } from 'zod';
import type { OAuthProviderConfig } from './oauth.config.ts';
import type { Clock } from '../lib/clock.ts';
import { MAX_EMAIL_LENGTH, normaliseEmail } from '../users/email.ts';
import { toValidName } from '../users/name.ts';

/** Outbound calls to a provider (discovery, token, API) give up after this long. */
const PROVIDER_TIMEOUT_SECONDS = 10;
/** After a failed discovery, wait this long before asking again, so an outage is not a fetch storm. */
const DISCOVERY_RETRY_MS = 5_000;

/** Who the provider says the person is. Only `providerUserId` identifies them. */
export interface ProviderIdentity {
  provider: string;
  /** The provider's stable id (`sub`, GitHub's numeric id). */
  providerUserId: string;
  /** Normalised; null when the provider gave none. */
  email: string | null;
  /** True only when the provider asserts that the person controls `email`. */
  isEmailVerified: boolean;
  name: string | null;
}

export interface AuthorizationRequest {
  authorizationUrl: URL;
  state: string;
  codeVerifier: string;
  nonce: string | null;
}

/** Why a provider round trip failed, as the error page's code. */
export type ProviderFailure = 'AccessDenied' | 'OAuthCallback' | 'ProviderUnreachable';

export type IdentityResult = { ok: true; identity: ProviderIdentity } | { ok: false; reason: ProviderFailure; detail: string };

export interface OAuthProvider {
  readonly id: string;
  readonly name: string;
  readonly type: 'oauth' | 'oidc';
  /** `${AUTH_URL}/api/auth/callback/:provider`: the exact redirect_uri registered at the provider. */
  readonly callbackUrl: string;
  /** Origins the browser is sent to when it starts here (the page's CSP `form-action` must allow them). */
  authorizationOrigins(): string[];
  startAuthorization(): Promise<AuthorizationRequest>;
  /**
   * Checks the authorization response that came back to `currentUrl` (built from AUTH_URL and the
   * query string, never from request headers), exchanges the code with the verifier, and reads
   * the identity.
   */
  completeAuthorization(currentUrl: URL, checks: { state: string; codeVerifier: string; nonce: string | null }): Promise<IdentityResult>;
}

export function createOAuthProviders(configs: readonly OAuthProviderConfig[], authUrl: string, clock: Clock): Map<string, OAuthProvider> {
  const providers = new Map<string, OAuthProvider>();
  for (const config of configs) {
    const callbackUrl = `${authUrl}/api/auth/callback/${config.id}`;
    providers.set(config.id, config.kind === 'github' ? createGitHubProvider(config, callbackUrl) : createOidcProvider(config, callbackUrl, clock));
  }
  return providers;
}

function isHttp(url: string): boolean {
  return url.startsWith('http:');
}

/** PKCE S256 and a fresh state for every authorization. */
async function newChecks() {
  const client = await loadOpenIdClient();
  const codeVerifier = client.randomPKCECodeVerifier();
  return { codeVerifier, codeChallenge: await client.calculatePKCECodeChallenge(codeVerifier), state: client.randomState() };
}

function createOidcProvider(config: Extract<OAuthProviderConfig, { kind: 'oidc' }>, callbackUrl: string, clock: Clock): OAuthProvider {
  let discovered: Promise<OpenIdClient.Configuration> | null = null;
  let failedAt = Number.NEGATIVE_INFINITY;
  /** Known once discovery has answered; until then the issuer's origin stands in. */
  let authorizationOrigin: string | null = null;

  /** Discovery once, shared by concurrent callers; after a failure, not again for a few seconds. */
  function configuration(): Promise<OpenIdClient.Configuration> {
    if (discovered !== null) return discovered;
    if (clock() - failedAt < DISCOVERY_RETRY_MS) return Promise.reject(new ProviderUnreachableError('discovery failed recently'));
    discovered = loadOpenIdClient()
      .then((client) =>
        client.discovery(new URL(config.issuer), config.clientId, { client_secret: config.clientSecret }, client.ClientSecretPost(config.clientSecret), {
          // openid-client trusts an ID token from the token endpoint on the strength of TLS alone
          // (OIDC Core 3.1.3.7 allows it); we verify its signature against the provider's JWKS too,
          // so a token endpoint answer that was tampered with, or a plain-http test peer, proves nothing.
          execute: [client.enableNonRepudiationChecks, ...(isHttp(config.issuer) ? [client.allowInsecureRequests] : [])],
          timeout: PROVIDER_TIMEOUT_SECONDS,
        }),
      )
      .then((found) => {
        const endpoint = found.serverMetadata().authorization_endpoint;
        if (endpoint !== undefined) authorizationOrigin = new URL(endpoint).origin;
        return found;
      })
      .catch((error: unknown) => {
        discovered = null;
        failedAt = clock();
        throw error;
      });
    return discovered;
  }

  return {
    id: config.id,
    name: config.name,
    type: 'oidc',
    callbackUrl,
    authorizationOrigins() {
      const issuerOrigin = new URL(config.issuer).origin;
      return authorizationOrigin === null || authorizationOrigin === issuerOrigin ? [issuerOrigin] : [issuerOrigin, authorizationOrigin];
    },
    async startAuthorization() {
      const configuration_ = await configuration();
      const { codeVerifier, codeChallenge, state } = await newChecks();
      const client = await loadOpenIdClient();
      const nonce = client.randomNonce();
      const authorizationUrl = client.buildAuthorizationUrl(configuration_, {
        redirect_uri: callbackUrl,
        scope: 'openid email profile',
        code_challenge: codeChallenge,
        code_challenge_method: 'S256',
        state,
        nonce,
      });
      return { authorizationUrl, state, codeVerifier, nonce };
    },
    async completeAuthorization(currentUrl, checks) {
      try {
        if (checks.nonce === null) return { ok: false, reason: 'OAuthCallback', detail: 'no nonce in the flow' };
        const configuration_ = await configuration();
        const tokens = await (await loadOpenIdClient()).authorizationCodeGrant(configuration_, currentUrl, {
          expectedState: checks.state,
          pkceCodeVerifier: checks.codeVerifier,
          expectedNonce: checks.nonce,
          idTokenExpected: true,
        });
        const claims = tokens.claims();
        if (claims === undefined) return { ok: false, reason: 'OAuthCallback', detail: 'no ID token' };
        return { ok: true, identity: identityFromClaims(config.id, claims) };
      } catch (error) {
        return failure(error);
      }
    },
  };
}

/** The ID token's claims: `sub` is the identity; `email` counts only with `email_verified: true`. */
function identityFromClaims(provider: string, claims: OpenIdClient.IDToken): ProviderIdentity {
  const email = typeof claims.email === 'string' ? toEmail(claims.email) : null;
  return {
    provider,
    providerUserId: claims.sub,
    email,
    isEmailVerified: email !== null && claims.email_verified === true && isPlainAddress(claims.email as string),
    name: toName(typeof claims.name === 'string' ? claims.name : null),
  };
}

function createGitHubProvider(config: Extract<OAuthProviderConfig, { kind: 'github' }>, callbackUrl: string): OAuthProvider {
  // GitHub is OAuth 2.0 without discovery or ID tokens; its endpoints are fixed paths.
  // Made on the first sign-in with it, when openid-client is loaded.
  let configured: OpenIdClient.Configuration | null = null;
  const configuration = (client: typeof OpenIdClient): OpenIdClient.Configuration => {
    if (configured !== null) return configured;
    configured = new client.Configuration(
      {
        issuer: config.url,
        authorization_endpoint: `${config.url}/login/oauth/authorize`,
        token_endpoint: `${config.url}/login/oauth/access_token`,
      },
      config.clientId,
      { client_secret: config.clientSecret },
      client.ClientSecretPost(config.clientSecret),
    );
    configured.timeout = PROVIDER_TIMEOUT_SECONDS;
    if (isHttp(config.url)) client.allowInsecureRequests(configured);
    return configured;
  };

  async function callApi(path: string, accessToken: string): Promise<unknown> {
    const response = await fetch(`${config.apiUrl}${path}`, {
      headers: {
        accept: 'application/vnd.github+json',
        authorization: `Bearer ${accessToken}`,
        'user-agent': 'Gatehouse',
        'x-github-api-version': '2022-11-28',
      },
      redirect: 'error',
      signal: AbortSignal.timeout(PROVIDER_TIMEOUT_SECONDS * 1000),
    });
    if (response.status >= 500) throw new ProviderUnreachableError(`GitHub API ${path} answered ${response.status}`);
    if (!response.ok) throw new Error(`GitHub API ${path} answered ${response.status}`);
    return response.json();
  }

  return {
    id: config.id,
    name: config.name,
    type: 'oauth',
    callbackUrl,
    authorizationOrigins() {
      return [new URL(config.url).origin];
    },
    async startAuthorization() {
      const { codeVerifier, codeChallenge, state } = await newChecks();
      const client = await loadOpenIdClient();
      const authorizationUrl = client.buildAuthorizationUrl(configuration(client), {
        redirect_uri: callbackUrl,
        scope: 'read:user user:email',
        code_challenge: codeChallenge,
        code_challenge_method: 'S256',
        state,
        allow_signup: 'true',
      });
      return { authorizationUrl, state, codeVerifier, nonce: null };
    },
    async completeAuthorization(currentUrl, checks) {
      try {
        const client = await loadOpenIdClient();
        const tokens = await client.authorizationCodeGrant(configuration(client), currentUrl, {
          expectedState: checks.state,
          pkceCodeVerifier: checks.codeVerifier,
        });
        const user = (await callApi('/user', tokens.access_token)) as { id?: unknown; login?: unknown; name?: unknown };
        if (typeof user?.id !== 'number' || !Number.isSafeInteger(user.id)) return { ok: false, reason: 'OAuthCallback', detail: 'GitHub user without an id' };
        const emails = await callApi('/user/emails', tokens.access_token);
        // Only the primary address, and only when GitHub has verified it: any other address on the
        // account may be one its holder never proved to own.
        const primary = Array.isArray(emails)
          ? (emails as Array<{ email?: unknown; primary?: unknown; verified?: unknown }>).find((entry) => entry?.primary === true)
          : undefined;
        const email = typeof primary?.email === 'string' ? toEmail(primary.email) : null;
        const login = typeof user.login === 'string' ? user.login : null;
        return {
          ok: true,
          identity: {
            provider: config.id,
            providerUserId: String(user.id),
            email,
            isEmailVerified: email !== null && primary?.verified === true && isPlainAddress(primary.email as string),
            name: toName(typeof user.name === 'string' && user.name.trim() !== '' ? user.name : login),
          },
        };
      } catch (error) {
        return failure(error);
      }
    },
  };
}

class ProviderUnreachableError extends Error {
  override name = 'ProviderUnreachableError';
}

const NETWORK_ERROR_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_SOCKET', 'UND_ERR_HEADERS_TIMEOUT']);

/**
 * The page code for a failed round trip: the person said no (`access_denied`), the provider could
 * not be reached or failed (timeouts, refused connections, 5xx), or its answer did not pass our
 * checks (everything else: state, PKCE, ID token, a bad code).
 */
function failure(error: unknown): { ok: false; reason: ProviderFailure; detail: string } {
  const detail = describe(error);
  const client = loadedOpenIdClient();
  if (client !== null && error instanceof client.AuthorizationResponseError) {
    return { ok: false, reason: error.error === 'access_denied' ? 'AccessDenied' : 'OAuthCallback', detail };
  }
  return { ok: false, reason: isProviderUnreachable(error) ? 'ProviderUnreachable' : 'OAuthCallback', detail };
}

export function isProviderUnreachable(error: unknown): boolean {
  const client = loadedOpenIdClient();
  for (let current: unknown = error, depth = 0; current !== undefined && current !== null && depth < 5; depth += 1) {
    if (current instanceof ProviderUnreachableError) return true;
    if (current instanceof Response && current.status >= 500) return true;
    if (client !== null && current instanceof client.ResponseBodyError && current.status >= 500) return true;
    const { name, code, message } = current as { name?: unknown; code?: unknown; message?: unknown };
    if (name === 'TimeoutError' || name === 'AbortError') return true;
    if (typeof code === 'string' && NETWORK_ERROR_CODES.has(code)) return true;
    if (current instanceof TypeError && message === 'fetch failed') return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** For the log: the error's class, code and message; never a token (errors here carry none). */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  return `${error.name}${typeof code === 'string' ? ` ${code}` : ''}: ${error.message}`.slice(0, 300);
}

/**
 * Whether a provider's word that it verified an address can vouch for the address we store: only
 * when the address is printable ASCII. Our normal form (NFKC, lower case) folds look-alikes such as
 * `ſam@corp.example` (long s), full-width letters or the Kelvin sign into plain ASCII, so a
 * mailbox the provider verified could otherwise stand for someone else's plain address.
 */
function isPlainAddress(raw: string): boolean {
  return /^[\x21-\x7e]+$/.test(raw.trim());
}

/** A provider's address, normalised, or null when it is not one we could store. */
function toEmail(value: string): string | null {
  const email = normaliseEmail(value);
  return email.length <= MAX_EMAIL_LENGTH && z.regexes.html5Email.test(email) ? email : null;
}

/**
 * A display name from a provider, made to pass the name rule (users/name.ts) rather than refused:
 * the characters it forbids dropped, trimmed, bounded.
 */
function toName(value: string | null): string | null {
  return value === null ? null : toValidName(value);
}
