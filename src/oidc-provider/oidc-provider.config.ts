/** The OpenID Provider's part of the configuration (OIDC_PROVIDER_*). */
import type { ConfigSection, RateLimit } from '../config.ts';
import { isLoopbackHost } from '../config/env-reader.ts';
import { readCimdSettings, type CimdSettings } from './cimd.ts';

/** An API that access tokens may be issued for (RFC 8707 resource indicator). */
export interface ResourceServer {
  /** The resource indicator, an absolute URL without a fragment; also the tokens' `aud`. */
  readonly indicator: string;
  /** The scopes it defines; a token for it carries only these. */
  readonly scopes: readonly string[];
}

export const REGISTRATION_MODES = ['off', 'token', 'open'] as const;
export type RegistrationMode = (typeof REGISTRATION_MODES)[number];

export interface OidcProviderConfig {
  /** APIs tokens may be bound to (OIDC_PROVIDER_RESOURCES): `<url>=<scope> <scope>, <url>=…`. */
  readonly resources: readonly ResourceServer[];
  /** Access tokens (OIDC_PROVIDER_ACCESS_TOKEN_TTL, default 10 minutes). */
  readonly accessTokenTtlSeconds: number;
  /** ID tokens (OIDC_PROVIDER_ID_TOKEN_TTL, default 1 hour). */
  readonly idTokenTtlSeconds: number;
  /** Refresh tokens, absolute (OIDC_PROVIDER_REFRESH_TOKEN_TTL, default 30 days); each use rotates it. */
  readonly refreshTokenTtlSeconds: number;
  /** A device code waits this long for its user (OIDC_PROVIDER_DEVICE_CODE_TTL, default 10 minutes). */
  readonly deviceCodeTtlSeconds: number;
  /** Requests per IP to the token, introspection, revocation, device and PAR endpoints (RATE_LIMIT_OIDC_TOKEN, default 300/min). */
  readonly tokenEndpointLimit: RateLimit;
  /**
   * Dynamic client registration (RFC 7591) at /oidc/reg (OIDC_PROVIDER_REGISTRATION): `off` (404,
   * not in discovery), `token` (callers presenting `registrationToken`, as before) or `open` (anyone,
   * under the limits below: what MCP clients expect). Default `token` when the token is set, else `off`.
   */
  readonly registrationMode: RegistrationMode;
  /** The initial access token of `token` mode (OIDC_PROVIDER_REGISTRATION_TOKEN, at least 32 characters); set only in that mode. */
  readonly registrationToken: string | undefined;
  /** Registrations per IP (RATE_LIMIT_OIDC_REGISTRATION, default 10 an hour), in `token` and `open` mode. */
  readonly registrationLimit: RateLimit;
  /** Open registrations from all addresses together (RATE_LIMIT_OIDC_REGISTRATION_GLOBAL, default 40 an hour). */
  readonly registrationGlobalLimit: RateLimit;
  /** Self-registered (open mode) clients kept at most (OIDC_PROVIDER_REGISTRATION_MAX_CLIENTS, default 1000). */
  readonly registrationMaxClients: number;
  /** A self-registered client no person let in within this long is deleted (OIDC_PROVIDER_REGISTRATION_UNUSED_TTL, default 24 hours). */
  readonly registrationUnusedTtlSeconds: number;
  /** User codes typed on the /device page per IP (RATE_LIMIT_OIDC_USER_CODE, default 20 per 15 min): they are short. */
  readonly userCodeLimit: RateLimit;
  /**
   * Where the provider may post (back-channel logout tokens): the outbound rules webhooks follow
   * (http/outbound/target-rules.ts). Loopback, private and other non-public addresses only with
   * OIDC_PROVIDER_ALLOW_PRIVATE_TARGETS (default false; never the cloud metadata addresses); plain
   * http only when NODE_ENV is development or test.
   */
  readonly outbound: { readonly allowPrivateTargets: boolean; readonly allowHttp: boolean };
  /** Client ID metadata documents (OIDC_PROVIDER_CIMD*): cimd.ts. */
  readonly cimd: CimdSettings;
}

declare module '../config.ts' {
  interface Config {
    readonly oidcProvider: OidcProviderConfig;
  }
}

const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

export function parseResources(value: string, problems: string[], authUrl?: string): ResourceServer[] {
  const resources: ResourceServer[] = [];
  for (const entry of value.split(',').map((part) => part.trim()).filter((part) => part !== '')) {
    const separator = entry.indexOf('=');
    const indicator = (separator < 0 ? entry : entry.slice(0, separator)).trim();
    const scopes = separator < 0 ? [] : entry.slice(separator + 1).trim().split(/\s+/).filter((scope) => scope !== '');
    let url: URL | undefined;
    try {
      url = new URL(indicator);
    } catch {
      url = undefined;
    }
    const isHttps = url?.protocol === 'https:' || (url?.protocol === 'http:' && isLoopbackHost(url.hostname));
    if (url === undefined || !isHttps || url.hash !== '' || url.search !== '') {
      problems.push(`OIDC_PROVIDER_RESOURCES: "${indicator}" must be an https URL (http only on loopback) without query or fragment`);
      continue;
    }
    // Gatehouse's own API takes only its own session tokens: no app's token may be made for it.
    if (authUrl !== undefined && url.origin === new URL(authUrl).origin) {
      problems.push(`OIDC_PROVIDER_RESOURCES: "${indicator}" is on Gatehouse's own origin; list the APIs of your apps`);
      continue;
    }
    if (scopes.length === 0 || !scopes.every((scope) => SCOPE_TOKEN.test(scope)) || scopes.includes('openid')) {
      problems.push(`OIDC_PROVIDER_RESOURCES: "${indicator}" needs one or more scopes after "=" (space-separated, not "openid")`);
      continue;
    }
    if (resources.some((resource) => resource.indicator === indicator)) {
      problems.push(`OIDC_PROVIDER_RESOURCES: "${indicator}" is listed twice`);
      continue;
    }
    resources.push({ indicator, scopes: [...new Set(scopes)] });
  }
  return resources;
}

/**
 * The registration mode and its token: `token` needs the token, and a token means `token` (set with
 * `off` or `open` it would be ignored, which an operator would not expect). Unset, the mode follows
 * the token, so deployments from before the mode existed keep what they had.
 */
function registration(mode: string | undefined, token: string | undefined, problems: string[]): { registrationMode: RegistrationMode; registrationToken: string | undefined } {
  if (mode !== undefined && !(REGISTRATION_MODES as readonly string[]).includes(mode)) {
    problems.push(`OIDC_PROVIDER_REGISTRATION must be one of ${REGISTRATION_MODES.join(', ')} (got "${mode}")`);
    return { registrationMode: 'off', registrationToken: undefined };
  }
  const registrationMode = (mode as RegistrationMode | undefined) ?? (token === undefined ? 'off' : 'token');
  if (registrationMode === 'token' && token === undefined) problems.push('OIDC_PROVIDER_REGISTRATION=token needs OIDC_PROVIDER_REGISTRATION_TOKEN (the initial access token callers present)');
  if (registrationMode !== 'token' && token !== undefined) problems.push(`OIDC_PROVIDER_REGISTRATION_TOKEN is set but OIDC_PROVIDER_REGISTRATION is ${registrationMode}: unset the token, or use token mode`);
  if (token !== undefined && (token.length < 32 || /\s/.test(token))) problems.push('OIDC_PROVIDER_REGISTRATION_TOKEN must be at least 32 characters without spaces (e.g. openssl rand -base64 32)');
  return { registrationMode, registrationToken: registrationMode === 'token' ? token : undefined };
}

export const oidcProviderConfigSection: ConfigSection = (read, basis, problems) => ({
  oidcProvider: {
    ...registration(read.string('OIDC_PROVIDER_REGISTRATION'), read.string('OIDC_PROVIDER_REGISTRATION_TOKEN'), problems),
    registrationLimit: read.rateLimit('RATE_LIMIT_OIDC_REGISTRATION', { points: 10, durationSeconds: 3_600 }),
    // 40 an hour for 24 hours stays under the 1000 kept: a flood alone cannot fill the registry
    // before its unused registrations expire.
    registrationGlobalLimit: read.rateLimit('RATE_LIMIT_OIDC_REGISTRATION_GLOBAL', { points: 40, durationSeconds: 3_600 }),
    registrationMaxClients: read.integer('OIDC_PROVIDER_REGISTRATION_MAX_CLIENTS', 1_000, { min: 1, max: 1_000_000 }),
    registrationUnusedTtlSeconds: read.duration('OIDC_PROVIDER_REGISTRATION_UNUSED_TTL', 24 * 3_600),
    resources: parseResources(read.string('OIDC_PROVIDER_RESOURCES') ?? '', problems, basis.authUrl),
    accessTokenTtlSeconds: read.duration('OIDC_PROVIDER_ACCESS_TOKEN_TTL', 10 * 60),
    idTokenTtlSeconds: read.duration('OIDC_PROVIDER_ID_TOKEN_TTL', 60 * 60),
    refreshTokenTtlSeconds: read.duration('OIDC_PROVIDER_REFRESH_TOKEN_TTL', 30 * 86_400),
    deviceCodeTtlSeconds: read.duration('OIDC_PROVIDER_DEVICE_CODE_TTL', 10 * 60),
    tokenEndpointLimit: read.rateLimit('RATE_LIMIT_OIDC_TOKEN', { points: 300, durationSeconds: 60 }),
    userCodeLimit: read.rateLimit('RATE_LIMIT_OIDC_USER_CODE', { points: 20, durationSeconds: 15 * 60 }),
    outbound: { allowPrivateTargets: read.boolean('OIDC_PROVIDER_ALLOW_PRIVATE_TARGETS', false), allowHttp: basis.env === 'development' || basis.env === 'test' },
    cimd: readCimdSettings(read, problems),
  },
});

/** Leeway for clocks of relying parties (the provider's `clockTolerance`; stored rows outlive their tokens by as much). */
export const CLOCK_TOLERANCE_SECONDS = 15;
