/**
 * Gatehouse as an OpenID Connect relying party to an organization's own provider, one connection at
 * a time, on `openid-client`: discovery from the issuer, authorization code with PKCE S256, `state`
 * and `nonce`, the ID token's signature checked against the provider's keys, its `iss`, `aud`, `exp`
 * and `nonce` (all openid-client's). Each connection has its own client ID and secret. Every request
 * to the provider (discovery, its keys, the token request) goes through the outbound fetch the SAML
 * metadata uses (http/outbound/fetcher.ts: no private or metadata addresses unless
 * SSO_ALLOW_PRIVATE_TARGETS, the resolved address pinned, no redirect, size and time limits), never
 * openid-client's own `fetch`: an issuer is a URL an organization's admin typed.
 */
import type * as OpenIdClient from 'openid-client';
import { loadedOpenIdClient, loadOpenIdClient } from '../lib/openid-client.ts';
import type { Clock } from '../lib/clock.ts';
import type { DocumentFetch } from '../http/outbound/fetcher.ts';
import { DeliveryError } from '../http/outbound/sender.ts';
import type { AttributeMapping } from './sso.model.ts';
import { oidcRedirectUri } from './sso-endpoints.ts';

const TIMEOUT_SECONDS = 10;

export interface OidcRpConnection {
  id: string;
  updatedAt: number;
  issuer: string;
  clientId: string;
  clientSecret: string;
}

export interface OidcChecks {
  state: string;
  codeVerifier: string;
  nonce: string;
}

export type OidcResult = { ok: true; claims: Record<string, unknown> } | { ok: false; reason: 'IDP_ERROR' | 'INVALID_RESPONSE' | 'IDP_UNREACHABLE' | 'IDP_ADDRESS_REFUSED'; detail: string };

/** The outbound fetch's refusal somewhere in what openid-client threw (it wraps what it does not know). */
function deliveryErrorIn(error: unknown): DeliveryError | null {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 5; cause = cause.cause, depth++) if (cause instanceof DeliveryError) return cause;
  return null;
}

/** Why a request to the provider failed: its address refused by the outbound rules, not reached, or something else. */
function failureOf(error: unknown): 'IDP_ADDRESS_REFUSED' | 'IDP_UNREACHABLE' | null {
  const delivery = deliveryErrorIn(error);
  if (delivery !== null) return delivery.code === 'ADDRESS_NOT_ALLOWED' || delivery.code === 'URL_NOT_ALLOWED' ? 'IDP_ADDRESS_REFUSED' : 'IDP_UNREACHABLE';
  return error instanceof TypeError ? 'IDP_UNREACHABLE' : null;
}

// The redirect URI is declared apart, for the routes that show it (sso-endpoints.ts).
export { oidcRedirectUri } from './sso-endpoints.ts';

export function createOidcRelyingParty(deps: { authUrl: string; clock: Clock; allowHttp: boolean; fetch: DocumentFetch }) {
  const discovered = new Map<string, Promise<OpenIdClient.Configuration>>();
  // openid-client keeps it on the configuration, for every later request (keys, token).
  const outbound: OpenIdClient.CustomFetch = (url, options) => {
    if (options.body instanceof ReadableStream) return Promise.reject(new TypeError('a streamed body is not sent'));
    return deps.fetch(url, { method: options.method, headers: options.headers, body: options.body, signal: options.signal ?? null });
  };

  function configuration(connection: OidcRpConnection): Promise<OpenIdClient.Configuration> {
    // A changed connection (another issuer, a new secret) is discovered again.
    const key = `${connection.id}:${connection.updatedAt}`;
    const known = discovered.get(key);
    if (known !== undefined) return known;
    const insecure = deps.allowHttp && connection.issuer.startsWith('http:');
    const found = loadOpenIdClient()
      .then((client) =>
        client.discovery(new URL(connection.issuer), connection.clientId, { client_secret: connection.clientSecret }, client.ClientSecretBasic(connection.clientSecret), {
          execute: [client.enableNonRepudiationChecks, ...(insecure ? [client.allowInsecureRequests] : [])],
          timeout: TIMEOUT_SECONDS,
          [client.customFetch]: outbound,
        }),
      )
      .catch((error: unknown) => {
        discovered.delete(key);
        throw error;
      });
    for (const other of discovered.keys()) if (other.startsWith(`${connection.id}:`)) discovered.delete(other);
    discovered.set(key, found);
    return found;
  }

  return {
    async start(connection: OidcRpConnection): Promise<{ ok: true; url: string; checks: OidcChecks } | { ok: false; reason: 'IDP_ADDRESS_REFUSED' | 'IDP_UNREACHABLE'; detail: string }> {
      try {
        const config = await configuration(connection);
        const client = await loadOpenIdClient();
        const codeVerifier = client.randomPKCECodeVerifier();
        const checks = { state: client.randomState(), codeVerifier, nonce: client.randomNonce() };
        const url = client.buildAuthorizationUrl(config, {
          redirect_uri: oidcRedirectUri(deps.authUrl, connection.id),
          scope: 'openid email profile',
          code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
          code_challenge_method: 'S256',
          state: checks.state,
          nonce: checks.nonce,
        });
        return { ok: true, url: url.href, checks };
      } catch (error) {
        return { ok: false, reason: failureOf(error) === 'IDP_ADDRESS_REFUSED' ? 'IDP_ADDRESS_REFUSED' : 'IDP_UNREACHABLE', detail: error instanceof Error ? error.message.slice(0, 200) : 'discovery failed' };
      }
    },

    /** Checks the answer that came back to `currentUrl` (built from AUTH_URL and the query, never from headers). */
    async complete(connection: OidcRpConnection, currentUrl: URL, checks: OidcChecks): Promise<OidcResult> {
      try {
        const config = await configuration(connection);
        const tokens = await (await loadOpenIdClient()).authorizationCodeGrant(config, currentUrl, {
          expectedState: checks.state,
          pkceCodeVerifier: checks.codeVerifier,
          expectedNonce: checks.nonce,
          idTokenExpected: true,
        });
        const claims = tokens.claims();
        if (claims === undefined) return { ok: false, reason: 'INVALID_RESPONSE', detail: 'no ID token' };
        return { ok: true, claims: { ...claims } };
      } catch (error) {
        const client = loadedOpenIdClient();
        if (client !== null && error instanceof client.AuthorizationResponseError) return { ok: false, reason: 'IDP_ERROR', detail: error.error };
        const detail = error instanceof Error ? error.message.slice(0, 200) : 'refused';
        return { ok: false, reason: failureOf(error) ?? 'INVALID_RESPONSE', detail };
      }
    },
  };
}

export type OidcRelyingParty = ReturnType<typeof createOidcRelyingParty>;

/** The mapped values of an OIDC connection's claims. */
export function claimsIdentity(claims: Record<string, unknown>, mapping: AttributeMapping) {
  const email = claims[mapping.email];
  const name = claims[mapping.name];
  const groups = claims[mapping.groups];
  return {
    subject: String(claims['sub']),
    email: typeof email === 'string' ? email : null,
    emailAsserted: claims['email_verified'] === true,
    name: typeof name === 'string' ? name : null,
    groups: Array.isArray(groups) ? groups.filter((group): group is string => typeof group === 'string') : typeof groups === 'string' ? [groups] : [],
  };
}
