/**
 * `gatehouse-protect` (the adapters for Node/Express and Fastify are its `/node` and `/fastify`
 * subpaths, so this entry needs no Node types: Next.js middleware, Deno, Bun, workers): Gatehouse's route-protection rules for downstream apps, with the same
 * decisions the service makes (rules.ts). Tokens are verified against the issuer's JWKS:
 * EdDSA only, `typ: at+jwt`, `iss`, `aud`, `exp`, `nbf`; keys come from
 * `${issuer}/.well-known/jwks.json` only (never from the token), cached, and refetched on an
 * unknown `kid` at most once per `cooldownMs`, with concurrent misses sharing one fetch.
 *
 * Verification here is stateless: a token stays valid until it expires even after sign-out.
 * Gatehouse's access tokens live minutes (ACCESS_TOKEN_TTL, 15 by default); set `checkSession`
 * to confirm each token with Gatehouse (`GET /api/auth/session`, cached briefly) for at once.
 * An API that Gatehouse's OpenID Provider issues tokens for (OIDC_PROVIDER_RESOURCES) passes its
 * resource URL as `audience`: the tokens apps got for it verify here, described as the app
 * (`client`: its `clientId`, `scopes`, and the user when it calls for one); a machine's own token
 * (client credentials) has no user. `scopeRequirements` in the rules ask for scopes. A token in an
 * Authorization header that does not verify is refused as INVALID_TOKEN, a missing scope as
 * INSUFFICIENT_SCOPE, each with its RFC 6750 `WWW-Authenticate` challenge.
 *
 *   const protector = createProtector({ issuer: 'https://auth.example.com' });
 *   const denied = await protector.check(request); // null: allowed; else a Response to return
 */
import { createRemoteJWKSet, customFetch, errors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { SEED_RULES, decidePath, isApiRequestPath, readRequestPath, type Decision, type ProtectionRules } from './rules.ts';

export { SEED_RULES, GATEHOUSE_RULES, decide, normalisePath, type ProtectionRules } from './rules.ts';
export { createSignIn } from './sign-in.ts';
export type { SignIn, SignInOptions, SignInPaths, SignInResult, SignInStore } from './sign-in.types.ts';
export type { Evaluation, GatehouseApiKey, GatehouseClient, GatehouseUser, PresentedCredentials, Protector } from './protector.types.ts';
import type { Evaluation, PresentedCredentials, Protector } from './protector.types.ts';
import { CLOCK_TOLERANCE_SECONDS, DENIALS, cookieNames as cookieNamesFor, readBearerToken } from './contract.ts';
import { createResourceMetadata, withResourceMetadata, type ResourceMetadataOptions } from './resource-metadata.ts';
import { createDpopVerifier, DPOP_ALGORITHMS, readDpopToken, type DpopOptions } from './dpop.ts';
import { copyOfCaller, judged, readCaller, readConfirmation, type Caller } from './token-claims.ts';
import { createApiKeyCheck, type ApiKeyOptions } from './api-keys.ts';

export type { DpopOptions } from './dpop.ts';
export type { ApiKeyOptions } from './api-keys.ts';
export { API_KEY_PATTERN } from './api-keys.ts';
export type { ResourceMetadataOptions } from './resource-metadata.ts';

export interface ProtectorOptions {
  /** Gatehouse's public URL (its AUTH_URL): the token issuer and the JWKS location. */
  issuer: string;
  /**
   * Expected `aud`: the API's resource URL for tokens Gatehouse's OpenID Provider issues for it, or
   * several (a token must name one of them). Default: the issuer, whose own session tokens name it.
   */
  audience?: string | readonly string[];
  /**
   * Default: the seed's rules exactly (`SEED_RULES`): `/dashboard`, `/admin`, `/api` need a session,
   * `/admin` and `/api/admin` need ADMIN, with no exemptions — your own `/api/auth/...` routes
   * stay protected.
   */
  rules?: ProtectionRules;
  /** Where pages send people without a session; `callbackUrl` is appended. Default: Gatehouse's sign-in page. */
  signInUrl?: string;
  /**
   * This app's public origin (e.g. `https://app.example.com`), when it is not Gatehouse's: the
   * `callbackUrl` given to the sign-in page is then absolute, so Gatehouse sends the user back here
   * (list the origin in Gatehouse's TRUSTED_ORIGINS). Default: a path, for apps on Gatehouse's origin.
   */
  appUrl?: string;
  /**
   * Cookie names that may carry the token, for apps on Gatehouse's own origin. Default: the one
   * Gatehouse sets for the issuer's scheme (`__Host-gatehouse.session` on https), so a sibling
   * subdomain cannot plant an unprefixed cookie and sign someone in as the attacker.
   */
  cookieNames?: readonly string[];
  /** Minimum time between JWKS fetches caused by an unknown `kid`. Default 30 s. */
  cooldownMs?: number;
  /** How long a fetched JWKS is used before it is refreshed. Default 10 min. */
  jwksMaxAgeMs?: number;
  /** Also ask Gatehouse whether the session is still live (catches sign-out at once). Default false. */
  checkSession?: boolean | { cacheMs?: number };
  /**
   * This app is an API or MCP server (a protected resource, RFC 9728): it serves its metadata at
   * `/.well-known/oauth-protected-resource` (plus the resource's path), naming Gatehouse as its
   * authorization server; every challenge carries `resource_metadata="…"`; and every refusal is an
   * API's (JSON with the challenge, never a redirect to sign in), whatever the path. `true`: the
   * resource is `audience`.
   */
  resourceMetadata?: true | ResourceMetadataOptions;
  /**
   * DPoP (RFC 9449): a token bound to a key (`cnf.jkt`, as Gatehouse issues to a client that sends
   * DPoP proofs) counts only as `Authorization: DPoP <token>` with a valid proof in the `DPoP`
   * header; sent as a Bearer token it is refused. Always on; this sets the origin proofs must name
   * (`htu`; default: that of the resource or `audience`) and how old a proof may be.
   */
  dpop?: DpopOptions;
  /**
   * Also accept Gatehouse API keys (`Authorization: Bearer gatehouse_pk_…` / `gatehouse_ok_…`),
   * checked by Gatehouse's introspection endpoint as this confidential client, each answer cached
   * for `cacheMs` (default 30 s): a key revoked in Gatehouse may still pass for up to that long.
   * Without this option, API keys are refused like any token that does not verify.
   */
  apiKeys?: ApiKeyOptions;
  /** For tests and special transports. */
  fetch?: typeof fetch;
}

const MAX_TOKEN_LENGTH = 4096;
const MAX_REMEMBERED_TOKENS = 10_000;

export function createProtector(options: ProtectorOptions): Protector {
  const issuer = options.issuer.replace(/\/+$/, '');
  const audience = typeof options.audience === 'string' ? options.audience : options.audience === undefined ? issuer : [...options.audience];
  if (Array.isArray(audience) && audience.length === 0) throw new TypeError('gatehouse-protect: audience is an empty list; name at least one');
  const rules = options.rules ?? SEED_RULES;
  assertWellFormedRules(rules);
  const signInUrl = options.signInUrl ?? `${issuer}/auth/signin`;
  // Only the origin: the path comes from each request (its raw target, so the app's own query too).
  const appOrigin = options.appUrl === undefined ? null : new URL(options.appUrl).origin;
  const callbackFor = (rawPath: string) => (appOrigin === null ? rawPath : `${appOrigin}${rawPath}`);
  const cookieNames = options.cookieNames ?? [cookieNamesFor(issuer.startsWith('https://')).access];
  const cooldownMs = options.cooldownMs ?? 30_000;
  const fetchImpl = options.fetch ?? fetch;
  const remoteKeys = createRemoteJWKSet(new URL(`${issuer}/.well-known/jwks.json`), {
    cooldownDuration: cooldownMs,
    cacheMaxAge: options.jwksMaxAgeMs ?? 600_000,
    timeoutDuration: 5_000,
    ...(options.fetch !== undefined && { [customFetch]: options.fetch }),
  });
  // jose's cooldown covers unknown kids after a successful fetch; this covers failed fetches, so an
  // unreachable Gatehouse costs one attempt per cooldown, not one per request. Still fail-closed.
  let jwksFailedAt = Number.NEGATIVE_INFINITY;
  const keys: JWTVerifyGetKey = async (header, token) => {
    if (Date.now() - jwksFailedAt < cooldownMs) throw new errors.JWKSTimeout('JWKS recently unreachable');
    try {
      return await remoteKeys(header, token);
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey) && !(error instanceof errors.JWKSMultipleMatchingKeys)) jwksFailedAt = Date.now();
      throw error;
    }
  };
  const metadata = options.resourceMetadata === undefined ? null : createResourceMetadata(options.resourceMetadata, { issuer, audience, rules });
  const dpop = createDpopVerifier(options.dpop ?? {}, originOf(metadata?.url ?? (typeof audience === 'string' && audience !== issuer ? audience : null)));
  const apiKeyCheck = options.apiKeys === undefined ? null : createApiKeyCheck(issuer, fetchImpl, options.apiKeys);
  const sessionCheck = options.checkSession === undefined || options.checkSession === false ? null : createSessionCheck(issuer, fetchImpl, options.checkSession === true ? {} : options.checkSession);

  /**
   * Verified tokens are remembered (bounded, until they expire), so a client that reuses its token
   * for its whole lifetime costs one signature check, not one per request.
   */
  const verified = new Map<string, { caller: Caller; jkt: string | null; expiresAtMs: number }>();

  /** The caller of a verified token, and the key it is bound to (DPoP), if any. */
  async function verifyToken(token: string): Promise<{ caller: Caller; jkt: string | null } | null> {
    const remembered = verified.get(token);
    if (remembered !== undefined) {
      if (remembered.expiresAtMs + CLOCK_TOLERANCE_SECONDS * 1000 > Date.now()) return { caller: copyOfCaller(remembered.caller), jkt: remembered.jkt };
      verified.delete(token);
      return null;
    }
    let payload;
    try {
      ({ payload } = await jwtVerify(token, keys, {
        issuer,
        audience,
        algorithms: ['EdDSA'],
        typ: 'at+jwt',
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        requiredClaims: ['sub', 'exp'],
      }));
    } catch {
      // Bad signature, unknown kid, expired, wrong issuer, or the JWKS unreachable: no user.
      return null;
    }
    const caller = readCaller(payload);
    const jkt = readConfirmation(payload.cnf);
    if (caller === null || jkt === undefined) return null;
    if (verified.size >= MAX_REMEMBERED_TOKENS) verified.delete(verified.keys().next().value!);
    verified.set(token, { caller: copyOfCaller(caller), jkt, expiresAtMs: (payload.exp as number) * 1000 });
    return { caller, jkt };
  }

  async function authenticateCredentials(credentials: PresentedCredentials, rawPath: string): Promise<Caller | null> {
    const presented = readToken(credentials, cookieNames);
    if (presented === null || presented.token.length > MAX_TOKEN_LENGTH) return null;
    const { token, scheme } = presented;
    // A Gatehouse API key (never a JWT: those begin `eyJ`), asked of Gatehouse when this app accepts keys.
    if (token.startsWith('gatehouse_')) {
      if (apiKeyCheck === null || scheme !== 'bearer') return null;
      const caller = await apiKeyCheck(token);
      return caller === null ? null : copyOfCaller(caller);
    }
    const found = await verifyToken(token);
    if (found === null) return null;
    const { caller, jkt } = found;
    // A bound token only with its proof; the DPoP scheme only with a bound token (RFC 9449 §7.1, §7.2).
    if (jkt !== null || scheme === 'dpop') {
      if (jkt === null || scheme !== 'dpop') return null;
      if (!(await dpop.verify({ proof: credentials.dpop, jkt, token, method: credentials.method ?? 'GET', rawPath }))) return null;
    }
    // The session check asks Gatehouse about the token's session; an app's token has none (it
    // lives minutes, and its grant dies with the user's sessions: see docs/openid-provider.md).
    if (sessionCheck !== null && caller.user?.sessionId != null && !(await sessionCheck(token))) return null;
    return caller;
  }

  async function evaluateCredentials(credentials: PresentedCredentials, rawPath: string): Promise<Evaluation> {
    if (metadata !== null && metadata.paths.has(rawPath.split('?')[0]!)) return { decision: { action: 'allow' }, user: null, client: null, denial: metadata.response() };
    const path = readRequestPath(rawPath);
    let decision = decidePath(path, null, rules);
    let caller: Caller | null = null;
    if (decision.action === 'deny' && decision.reason === 'UNAUTHENTICATED') {
      caller = await authenticateCredentials(credentials, rawPath);
      decision = decidePath(path, caller === null ? null : judged(caller), rules);
    }
    const user = caller?.user ?? null;
    const client = caller?.client ?? null;
    if (decision.action === 'allow') return { decision, user, client, denial: null };
    // A Bearer token that does not verify gets RFC 6750's answer on an API path (a page still sends
    // the browser to sign in); another scheme (Basic) presents no bearer token: no error code (§3.1).
    const scheme = typeof readDpopToken(credentials.authorization) === 'string' ? 'DPoP' : typeof readBearerToken(credentials.authorization) === 'string' ? 'Bearer' : null;
    return { decision, user, client, denial: denialFor(decision, metadata !== null || isApiRequestPath(path), scheme, rawPath) };
  }

  /** The challenge in the scheme the request used (DPoP's names the algorithms it takes). */
  const challenge = (scheme: 'Bearer' | 'DPoP' | null, params: string) =>
    withResourceMetadata(scheme === 'DPoP' ? `DPoP algs="${DPOP_ALGORITHMS.join(' ')}", ${params}` : `Bearer ${params}`, metadata);

  function denialFor(decision: Extract<Decision, { action: 'deny' }>, isApi: boolean, scheme: 'Bearer' | 'DPoP' | null, rawPath: string): Response {
    if (isApi && scheme !== null && decision.reason === 'UNAUTHENTICATED') return denialJson('INVALID_TOKEN', challenge(scheme, 'error="invalid_token"'));
    if (decision.reason === 'INSUFFICIENT_SCOPE') return denialJson('INSUFFICIENT_SCOPE', challenge(scheme, `error="insufficient_scope", scope="${decision.scopes.join(' ')}"`));
    if (isApi && decision.reason === 'UNAUTHENTICATED') return denialJson(decision.reason, withResourceMetadata('Bearer', metadata));
    if (isApi || decision.reason === 'BAD_REQUEST') return denialJson(decision.reason);
    if (decision.reason === 'UNAUTHENTICATED') {
      const target = new URL(signInUrl);
      target.searchParams.set('callbackUrl', callbackFor(rawPath));
      return new Response(null, { status: 303, headers: { location: target.toString(), 'cache-control': 'no-store' } });
    }
    if (decision.reason === 'STEP_UP_REQUIRED') {
      // Signing in again asks for the second factor, and the new session's token says so.
      const target = new URL(signInUrl);
      target.searchParams.set('callbackUrl', callbackFor(rawPath));
      return new Response(null, { status: 303, headers: { location: target.toString(), 'cache-control': 'no-store' } });
    }
    const text = decision.reason === 'ORGANIZATION_ROLE_REQUIRED' ? 'Your role in the active organization does not allow this page.' : 'Your account does not have the role this page needs.';
    return new Response(`<!doctype html><title>Access denied</title><h1>Access denied</h1><p>${text}</p>`, {
      status: 403,
      headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' },
    });
  }

  const credentialsOf = (request: Request): PresentedCredentials => ({
    authorization: request.headers.get('authorization'),
    cookie: request.headers.get('cookie'),
    dpop: request.headers.get('dpop'),
    method: request.method,
  });

  function evaluate(request: Request, rawPath?: string): Promise<Evaluation> {
    return evaluateCredentials(credentialsOf(request), rawPath ?? pathAndQuery(request.url));
  }

  return {
    authenticate: async (request) => (await authenticateCredentials(credentialsOf(request), pathAndQuery(request.url)))?.user ?? null,
    evaluate,
    evaluateCredentials,
    async check(request) {
      return (await evaluate(request)).denial;
    },
  };
}

function denialJson(reason: keyof typeof DENIALS, challenge?: string): Response {
  const { status, message } = DENIALS[reason];
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' };
  if (challenge !== undefined) headers['www-authenticate'] = challenge;
  else if (status === 401) headers['www-authenticate'] = 'Bearer';
  return new Response(JSON.stringify({ error: reason, message }), { status, headers });
}

/** The request target of an absolute URL: its path and query. */
function pathAndQuery(url: string): string {
  const { pathname, search } = new URL(url);
  return `${pathname}${search}`;
}

/** `Authorization: Bearer <token>` or `DPoP <token>`, else one of our session cookies; an explicit header never falls back. */
function readToken(credentials: PresentedCredentials, cookieNames: readonly string[]): { token: string; scheme: 'bearer' | 'dpop' | 'cookie' } | null {
  const dpop = readDpopToken(credentials.authorization);
  if (dpop !== undefined) return dpop === null ? null : { token: dpop, scheme: 'dpop' };
  const bearer = readBearerToken(credentials.authorization);
  if (bearer !== undefined) return bearer === null ? null : { token: bearer, scheme: 'bearer' };
  const cookies = parseCookies(credentials.cookie ?? null);
  for (const name of cookieNames) {
    const value = cookies.get(name);
    if (value !== undefined) return { token: value, scheme: 'cookie' };
  }
  return null;
}

function originOf(url: string | null): string | null {
  if (url === null) return null;
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

function parseCookies(header: string | null): Map<string, string> {
  const cookies = new Map<string, string>();
  if (header === null) return cookies;
  for (const part of header.split(';')) {
    const separator = part.indexOf('=');
    if (separator === -1) continue;
    const name = part.slice(0, separator).trim();
    if (!cookies.has(name)) cookies.set(name, part.slice(separator + 1).trim());
  }
  return cookies;
}

/** Asks Gatehouse whether the token's session is live; answers are cached briefly per token. */
function createSessionCheck(issuer: string, fetchImpl: typeof fetch, options: { cacheMs?: number }) {
  const cacheMs = options.cacheMs ?? 5_000;
  const cache = new Map<string, { live: boolean; until: number }>();
  return async (token: string): Promise<boolean> => {
    const now = Date.now();
    const cached = cache.get(token);
    if (cached !== undefined && cached.until > now) return cached.live;
    let live = false;
    try {
      const response = await fetchImpl(`${issuer}/api/auth/session`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(5_000) });
      live = response.status === 200;
      await response.body?.cancel();
    } catch {
      live = false; // fail closed: an unreachable Gatehouse grants nothing
    }
    if (cache.size >= 10_000) cache.delete(cache.keys().next().value!);
    cache.set(token, { live, until: now + cacheMs });
    return live;
  };
}

/**
 * Request paths are compared lower-cased and without a trailing slash: a prefix written otherwise
 * (`/Billing`, `/billing/`, `billing`) would never match, and a rule that silently never applies
 * lets everything through. Refused when the protector is made instead.
 */
function assertWellFormedRules(rules: ProtectionRules): void {
  const prefixes = [
    ...rules.protectedPrefixes,
    ...rules.publicPrefixes,
    ...(rules.mfaPrefixes ?? []),
    ...(rules.organizationRoles ?? []).map((rule) => rule.prefix),
    ...(rules.scopeRequirements ?? []).map((rule) => rule.prefix),
  ];
  for (const prefix of prefixes) {
    if (prefix !== '/' && !/^(\/[^/A-Z]+)+$/.test(prefix)) {
      throw new TypeError(`gatehouse-protect: the rule prefix ${JSON.stringify(prefix)} must start with "/", be lower-case and not end with "/" (e.g. "/billing")`);
    }
  }
  for (const rule of rules.organizationRoles ?? []) {
    if (rule.roles.length === 0) throw new TypeError(`gatehouse-protect: the organization rule for ${rule.prefix} names no role`);
  }
  for (const rule of rules.scopeRequirements ?? []) {
    // A scope is one token of the `scope` claim: a space inside one could never match.
    if (rule.scopes.length === 0 || rule.scopes.some((scope) => !/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(scope))) {
      throw new TypeError(`gatehouse-protect: the scope rule for ${rule.prefix} must name one or more scopes, each without spaces or quotes`);
    }
  }
}
