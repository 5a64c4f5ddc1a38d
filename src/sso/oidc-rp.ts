/**
 * Gatehouse as an OpenID Connect relying party to an organization's own provider, one connection at
 * a time, on `openid-client`: discovery from the issuer, authorization code with PKCE S256, `state`
 * and `nonce`, the ID token's signature checked against the provider's keys, its `iss`, `aud`, `exp`
 * and `nonce` (all openid-client's). Each connection has its own client ID and secret.
 */
import * as client from 'openid-client';
import type { Clock } from '../lib/clock.ts';
import type { AttributeMapping } from './sso.model.ts';

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

export type OidcResult = { ok: true; claims: Record<string, unknown> } | { ok: false; reason: 'IDP_ERROR' | 'INVALID_RESPONSE' | 'IDP_UNREACHABLE'; detail: string };

export function oidcRedirectUri(authUrl: string, connectionId: string): string {
  return `${authUrl}/sso/oidc/${connectionId}/callback`;
}

export function createOidcRelyingParty(deps: { authUrl: string; clock: Clock; allowHttp: boolean }) {
  const discovered = new Map<string, Promise<client.Configuration>>();

  function configuration(connection: OidcRpConnection): Promise<client.Configuration> {
    // A changed connection (another issuer, a new secret) is discovered again.
    const key = `${connection.id}:${connection.updatedAt}`;
    const known = discovered.get(key);
    if (known !== undefined) return known;
    const insecure = deps.allowHttp && connection.issuer.startsWith('http:');
    const found = client
      .discovery(new URL(connection.issuer), connection.clientId, { client_secret: connection.clientSecret }, client.ClientSecretBasic(connection.clientSecret), {
        execute: [client.enableNonRepudiationChecks, ...(insecure ? [client.allowInsecureRequests] : [])],
        timeout: TIMEOUT_SECONDS,
      })
      .catch((error: unknown) => {
        discovered.delete(key);
        throw error;
      });
    for (const other of discovered.keys()) if (other.startsWith(`${connection.id}:`)) discovered.delete(other);
    discovered.set(key, found);
    return found;
  }

  return {
    async start(connection: OidcRpConnection): Promise<{ ok: true; url: string; checks: OidcChecks } | { ok: false; detail: string }> {
      try {
        const config = await configuration(connection);
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
        return { ok: false, detail: error instanceof Error ? error.message.slice(0, 200) : 'discovery failed' };
      }
    },

    /** Checks the answer that came back to `currentUrl` (built from AUTH_URL and the query, never from headers). */
    async complete(connection: OidcRpConnection, currentUrl: URL, checks: OidcChecks): Promise<OidcResult> {
      try {
        const tokens = await client.authorizationCodeGrant(await configuration(connection), currentUrl, {
          expectedState: checks.state,
          pkceCodeVerifier: checks.codeVerifier,
          expectedNonce: checks.nonce,
          idTokenExpected: true,
        });
        const claims = tokens.claims();
        if (claims === undefined) return { ok: false, reason: 'INVALID_RESPONSE', detail: 'no ID token' };
        return { ok: true, claims: { ...claims } };
      } catch (error) {
        if (error instanceof client.AuthorizationResponseError) return { ok: false, reason: 'IDP_ERROR', detail: error.error };
        const detail = error instanceof Error ? error.message.slice(0, 200) : 'refused';
        return { ok: false, reason: error instanceof TypeError ? 'IDP_UNREACHABLE' : 'INVALID_RESPONSE', detail };
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
