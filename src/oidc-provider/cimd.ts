/**
 * Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document, what MCP clients use
 * to connect with no prior registration): a `client_id` that is an https URL names a client whose
 * metadata Gatehouse fetches from that URL. oidc-provider does the protocol (its
 * `clientIdMetadataDocument` feature: the document's `client_id` must equal the URL, no shared-secret
 * authentication, no secret, https web URIs, a body of at most 5 KiB, cached by its HTTP caching
 * headers within bounds); this file is Gatehouse's policy around it:
 * - the fetch goes through the outbound rules webhooks follow (http/outbound/fetcher.ts: no private
 *   or metadata addresses unless OIDC_PROVIDER_ALLOW_PRIVATE_TARGETS, pinned resolved address, no
 *   redirects, time and size limits);
 * - operators may list the hosts allowed or denied (OIDC_PROVIDER_CIMD_ALLOW_HOSTS / _DENY_HOSTS:
 *   `example.com` or `*.example.com`);
 * - the client is held to the registry's rules for public clients (redirect URIs, grant types:
 *   the code flow and refresh), authenticates with `none` or, when its document names a
 *   `jwks_uri` on a host the lists allow, with a JWT signed by one of those keys (`private_key_jwt`;
 *   the keys are fetched under the same outbound rules), uses PKCE either way, and is never
 *   first-party: the consent page always asks, and names the client's host.
 */
import { readFileSync } from 'node:fs';
import type { KoaContextWithOIDC } from 'oidc-provider';
import type { EnvReader } from '../config/env-reader.ts';
import { checkGrantTypes, checkRedirectUris, isNativeApp } from '../oidc-clients/client-rules.ts';

export interface CimdSettings {
  /** OIDC_PROVIDER_CIMD (default true). */
  readonly enabled: boolean;
  /** Host patterns a document may be fetched from; empty: any host the outbound rules allow. */
  readonly allowHosts: readonly string[];
  /** Host patterns never fetched from (checked first). */
  readonly denyHosts: readonly string[];
  /** Extra certificate authorities (PEM, read from OIDC_PROVIDER_CIMD_CA_FILE) for fetching documents, for a private PKI. */
  readonly ca: string | undefined;
}

/** How long a document is cached when its headers say nothing (or less), and at most. */
export const CIMD_CACHE_SECONDS = { min: 300, max: 86_400 } as const;

const HOST_PATTERN = /^(\*\.)?([a-z0-9]([a-z0-9-]*[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;

function hostList(read: EnvReader, name: string, problems: string[]): string[] {
  const value = read.string(name) ?? '';
  const hosts = value.split(',').map((entry) => entry.trim().toLowerCase()).filter((entry) => entry !== '');
  for (const host of hosts) if (!HOST_PATTERN.test(host)) problems.push(`${name}: "${host}" is not a host name or *.host pattern (no scheme, port or path)`);
  return hosts;
}

export function readCimdSettings(read: EnvReader, problems: string[]): CimdSettings {
  return {
    enabled: read.boolean('OIDC_PROVIDER_CIMD', true),
    allowHosts: hostList(read, 'OIDC_PROVIDER_CIMD_ALLOW_HOSTS', problems),
    denyHosts: hostList(read, 'OIDC_PROVIDER_CIMD_DENY_HOSTS', problems),
    ca: readCa(read.string('OIDC_PROVIDER_CIMD_CA_FILE'), problems),
  };
}

function readCa(path: string | undefined, problems: string[]): string | undefined {
  if (path === undefined) return undefined;
  try {
    const pem = readFileSync(path, 'utf8');
    if (pem.includes('-----BEGIN CERTIFICATE-----')) return pem;
    problems.push(`OIDC_PROVIDER_CIMD_CA_FILE: ${path} holds no PEM certificate`);
  } catch {
    problems.push(`OIDC_PROVIDER_CIMD_CA_FILE: ${path} cannot be read`);
  }
  return undefined;
}

/** Whether `host` matches a pattern: the host itself, or (`*.example.com`) any host below example.com. */
function matches(host: string, pattern: string): boolean {
  return pattern.startsWith('*.') ? host.endsWith(pattern.slice(1)) : host === pattern;
}

/** Whether a client id is a metadata document's URL (an https URL; oidc-provider checks the rest of its shape). */
export function isDocumentClientId(clientId: string): boolean {
  return clientId.startsWith('https://');
}

/** The host people are shown for a document client (`app.example.com`, with a port when not 443). */
export function documentClientHost(clientId: string): string | null {
  try {
    return isDocumentClientId(clientId) ? new URL(clientId).host : null;
  } catch {
    return null;
  }
}

/** Characters a name shown to people must not carry: controls, line breaks, bidi overrides and isolates, zero-width ones. */
const UNSHOWN = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;

/**
 * The name a document gives its client, as people are shown it (consent, connected apps): without
 * the characters that could disguise it (a right-to-left override turning `gpj.exe` around, say),
 * spaces collapsed, at most 100 characters; null when nothing is left (the host is shown instead).
 */
export function documentClientName(raw: unknown): string | null {
  if (typeof raw !== 'string') return null;
  const name = [...raw.replace(UNSHOWN, '').replace(/\s+/g, ' ').trim()].slice(0, 100).join('');
  return name === '' ? null : name;
}

export function isHostAllowed(settings: Pick<CimdSettings, 'allowHosts' | 'denyHosts'>, clientId: string): boolean {
  const host = new URL(clientId).hostname.toLowerCase();
  if (settings.denyHosts.some((pattern) => matches(host, pattern))) return false;
  return settings.allowHosts.length === 0 || settings.allowHosts.some((pattern) => matches(host, pattern));
}

/** The part of a client the policy reads (oidc-provider's Client, from the document). */
interface DocumentClient {
  clientId: string;
  redirectUris?: readonly string[] | undefined;
  postLogoutRedirectUris?: readonly string[] | undefined;
  grantTypes?: readonly string[] | undefined;
  tokenEndpointAuthMethod?: string | undefined;
  jwksUri?: string | undefined;
  jwks?: unknown;
}

/** What the registry's rules find wrong with the client a document describes; empty: nothing. */
export function documentClientProblems(client: DocumentClient, settings: Pick<CimdSettings, 'allowHosts' | 'denyHosts'>): string[] {
  const problems: string[] = [];
  const method = client.tokenEndpointAuthMethod;
  if (method !== 'none' && method !== 'private_key_jwt') problems.push('token_endpoint_auth_method must be none (PKCE) or private_key_jwt (with jwks_uri)');
  if (client.jwks !== undefined) problems.push('jwks: keys are taken from jwks_uri only');
  if (method === 'private_key_jwt' && client.jwksUri === undefined) problems.push('jwks_uri: private_key_jwt needs the URL of the client’s keys');
  if (client.jwksUri !== undefined && !isHostAllowed(settings, client.jwksUri)) problems.push('jwks_uri: its host is not one client documents may use');
  const redirectUris = client.redirectUris ?? [];
  const postLogout = client.postLogoutRedirectUris ?? [];
  const isNative = isNativeApp(true, redirectUris, postLogout);
  for (const [field, list] of [['redirect_uris', redirectUris], ['post_logout_redirect_uris', postLogout]] as const) {
    for (const problem of checkRedirectUris(field, list, true, isNative).problems) problems.push(`${problem.field}: ${problem.message}`);
  }
  if (redirectUris.length === 0) problems.push('redirect_uris: at least one is needed');
  const grants = checkGrantTypes(client.grantTypes ?? ['authorization_code'], true);
  for (const problem of grants.problems) problems.push(`${problem.field}: ${problem.message}`);
  if (grants.grantTypes.some((grant) => grant !== 'authorization_code' && grant !== 'refresh_token')) problems.push('grant_types: only authorization_code and refresh_token');
  return problems;
}

/** oidc-provider's `features.clientIdMetadataDocument`, with the policy above. */
export function cimdFeature(settings: CimdSettings, onRefused: (clientId: string, reason: string) => void) {
  return {
    enabled: settings.enabled,
    ack: 'draft-02' as const,
    cacheDuration: CIMD_CACHE_SECONDS,
    async allowFetch(_ctx: KoaContextWithOIDC | undefined, clientId: string): Promise<boolean> {
      if (isHostAllowed(settings, clientId)) return true;
      onRefused(clientId, 'HOST_NOT_ALLOWED');
      return false;
    },
    async allowClient(_ctx: KoaContextWithOIDC | undefined, client: DocumentClient): Promise<boolean> {
      const problems = documentClientProblems(client, settings);
      if (problems.length === 0) return true;
      onRefused(client.clientId, `CLIENT_NOT_ALLOWED: ${problems.join('; ')}`);
      return false;
    },
  };
}
