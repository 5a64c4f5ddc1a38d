/**
 * The route-protection rules: one implementation, used by the service's own guard and by
 * `gatehouse-protect` in downstream apps. Pure functions of a path and a user; no I/O, no framework,
 * no dependency, so a downstream app gets exactly the decisions the service makes.
 *
 * The seed's rules, in order, over the matcher `/dashboard/:path*`, `/admin/:path*`, `/api/:path*`:
 *   1. exactly `/` is allowed;
 *   2. no session user: denied (401 / sign-in redirect);
 *   3. a path under `/admin` (or `/api/admin`) without role ADMIN: denied (403);
 *   4. otherwise allowed.
 * Deviation (DESIGN.md), for Gatehouse itself only: `/api/auth` and below, `/api/health` and the
 * API docs are public, or nobody could sign in.
 *
 * Paths are compared after normalisation (see `normalisePath`), and case-insensitively: routers
 * differ (Fastify is case-sensitive, Express is not by default), and the guard must never be
 * looser than the router behind it. So `/Admin`, `/%61dmin`, `//admin`, `/admin/.`, `/admin;x`
 * and `/dashboard/../admin` are all `/admin` here.
 */
import { ADMIN_ROLE } from './contract.ts';

export interface ProtectionRules {
  /** Path prefixes the guard applies to (a prefix matches itself and everything below it). */
  readonly protectedPrefixes: readonly string[];
  /** Path prefixes inside the protected ones that need no session. */
  readonly publicPrefixes: readonly string[];
  /** Path prefixes that need a role, checked in order; the first match decides. */
  readonly roleRequirements: readonly { readonly prefix: string; readonly role: string }[];
  /**
   * Path prefixes that need a session whose user proved a second factor (`mfa` in the token's
   * `amr`, RFC 8176); denied with STEP_UP_REQUIRED otherwise. None by default.
   */
  readonly mfaPrefixes?: readonly string[];
  /**
   * Path prefixes that need a role in the session's active organization (the token's `org`
   * claim, see Gatehouse's organizations): a user whose `org.roles` holds none of `roles`, or who
   * has no active organization, is denied with ORGANIZATION_ROLE_REQUIRED. Every rule whose prefix
   * covers the path must be met. A path under one of these prefixes needs a session even outside
   * `protectedPrefixes`, and `publicPrefixes` do not exempt it. None by default.
   */
  readonly organizationRoles?: readonly { readonly prefix: string; readonly roles: readonly string[] }[];
  /**
   * Path prefixes that need a token carrying scopes (its `scope` claim: a token Gatehouse's OpenID
   * Provider issued to an app, for a user or for the app itself): a caller whose token lacks one of
   * `scopes` is denied with INSUFFICIENT_SCOPE (Gatehouse's own session tokens carry none). Every
   * rule whose prefix covers the path must be met. As with `organizationRoles`, a path under one of
   * these prefixes needs a token even outside `protectedPrefixes`, and `publicPrefixes` do not
   * exempt it. None by default.
   */
  readonly scopeRequirements?: readonly { readonly prefix: string; readonly scopes: readonly string[] }[];
}

export { ADMIN_ROLE };

/** The seed's rules exactly: no exemptions. The default for downstream apps (`gatehouse-protect`). */
export const SEED_RULES: ProtectionRules = Object.freeze({
  protectedPrefixes: Object.freeze(['/dashboard', '/admin', '/api']),
  publicPrefixes: Object.freeze([]),
  roleRequirements: Object.freeze([
    Object.freeze({ prefix: '/admin', role: ADMIN_ROLE }),
    Object.freeze({ prefix: '/api/admin', role: ADMIN_ROLE }),
  ]),
});

/**
 * Gatehouse's own rules: the seed's, with DESIGN.md's exemptions for its sign-in, health and docs
 * endpoints. Not the downstream default: an app's own `/api/auth/...` routes must stay protected.
 */
export const GATEHOUSE_RULES: ProtectionRules = Object.freeze({
  ...SEED_RULES,
  publicPrefixes: Object.freeze(['/api/auth', '/api/health', '/api/docs']),
});

export type Decision =
  | { readonly action: 'allow' }
  | { readonly action: 'deny'; readonly reason: 'UNAUTHENTICATED' | 'FORBIDDEN' | 'BAD_REQUEST' | 'STEP_UP_REQUIRED' | 'ORGANIZATION_ROLE_REQUIRED' }
  /** `scopes`: every scope the path's rules ask for (what a token must carry). */
  | { readonly action: 'deny'; readonly reason: 'INSUFFICIENT_SCOPE'; readonly scopes: readonly string[] };

/** Who the rules judge: a signed-in user, or an app calling with a token of its own (no roles). */
export interface SessionUser {
  /** The token's `scope` (tokens an app was issued); absent counts as none. */
  readonly scopes?: readonly string[];
  /**
   * An app calling for itself (client credentials: no user). It passes only paths a scope rule
   * covers: an API opts in to machines by saying which scopes they need; everywhere else FORBIDDEN.
   */
  readonly isMachine?: boolean;
  readonly roles: readonly string[];
  /** How the user proved who they are (the token's `amr`); absent counts as nothing proved. */
  readonly amr?: readonly string[];
  /** The session's active organization and the user's roles in it (the token's `org`); absent or null: none. */
  readonly org?: { readonly roles: readonly string[] } | null;
}

const ALLOW: Decision = Object.freeze({ action: 'allow' });
const MAX_DECODE_ROUNDS = 3;

/**
 * The path as the most permissive router could understand it, lower-cased: query and fragment
 * dropped, percent-decoding applied until nothing changes (so `%2561dmin` cannot hide `admin` from
 * a router that decodes twice), backslashes read as slashes, `;parameters` removed from every
 * segment, empty and `.` segments dropped, `..` resolved. Null for a path that is not
 * origin-form (an absolute URL such as `http://host/admin`, which routers reduce to its path),
 * cannot be decoded, or contains control characters: callers refuse it.
 */
export function normalisePath(rawPath: string): string | null {
  const decoded = decodePath(rawPath);
  if (decoded === null) return null;
  const segments: string[] = [];
  for (const segment of splitSegments(decoded.replace(/\\/g, '/'))) {
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  return `/${segments.join('/')}`;
}

/**
 * The other reading of the same path: split only on the slashes that were literally there, each
 * segment decoded on its own, and `..` kept as a name. Routers that keep `%2F` inside a parameter
 * and do not resolve dot segments see the path this way, so `/admin/42%2F..%2F..` is still under
 * `/admin` for them even though it resolves to `/`.
 */
export function literalPath(rawPath: string): string | null {
  if (decodePath(rawPath) === null) return null;
  const path = stripQuery(rawPath);
  const segments: string[] = [];
  for (const raw of path.split('/')) {
    const segment = decodePath(`/${raw}`);
    if (segment === null) return null;
    segments.push(...splitSegments(segment.slice(1).replace(/\\/g, '/')));
  }
  return `/${segments.join('/')}`;
}

function stripQuery(path: string): string {
  const end = path.search(/[?#]/);
  return end === -1 ? path : path.slice(0, end);
}

/** Origin-form check, query dropped, percent-decoding to a fixed point; null when refused. */
function decodePath(rawPath: string): string | null {
  if (!rawPath.startsWith('/')) return null;
  let path = stripQuery(rawPath);
  for (let round = 0; round < MAX_DECODE_ROUNDS && path.includes('%'); round++) {
    try {
      const decoded = decodeURIComponent(path);
      if (decoded === path) break;
      path = decoded;
    } catch {
      return null;
    }
  }
  if (/%[0-9a-f]{2}/i.test(path)) return null; // still encoded after the rounds
  if (/[\u0000-\u001f\u007f]/.test(path)) return null;
  return path;
}

/** Non-empty, non-`.` segments, lower-cased, each without its `;parameters`. */
function splitSegments(path: string): string[] {
  const segments: string[] = [];
  for (const raw of path.split('/')) {
    const segment = raw.split(';')[0]!.trim().toLowerCase();
    if (segment !== '' && segment !== '.') segments.push(segment);
  }
  return segments;
}

/** True when `path` is `prefix` or below it (`/api` covers `/api/x`, not `/apix`). */
export function isUnder(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(`${prefix}/`) || prefix === '/';
}

/** Whether the guard applies to this path at all (the seed's matcher). */
export function isProtectedPath(normalisedPath: string, rules: ProtectionRules = GATEHOUSE_RULES): boolean {
  return rules.protectedPrefixes.some((prefix) => isUnder(normalisedPath, prefix));
}

/** A request path read both ways: as routers that resolve it see it, and as those that do not. */
export interface RequestPath {
  readonly resolved: string;
  readonly literal: string;
}

/**
 * Plain segments only: no percent, `;`, backslash, doubled slash or `.`/`..` segment, so both
 * readings agree. Dots inside a name (`/.well-known/jwks.json`, `/assets/app.css`) are plain.
 */
const PLAIN_PATH = /^(?:\/(?!\.\.?(?:\/|$))[A-Za-z0-9_.~-]+)+\/?$/;

/**
 * Reads a raw request path (query allowed) once, both ways; null when it is refused
 * (not origin-form, undecodable, control characters). Pass the result to `decidePath` as often as
 * needed: the guard decides once without a user and once with one.
 */
export function readRequestPath(rawPath: string): RequestPath | null {
  const path = stripQuery(rawPath);
  if (path === '/') return { resolved: '/', literal: '/' };
  if (PLAIN_PATH.test(path)) {
    const plain = path.endsWith('/') ? path.slice(0, -1).toLowerCase() : path.toLowerCase();
    return { resolved: plain, literal: plain };
  }
  const resolved = normalisePath(rawPath);
  const literal = literalPath(rawPath);
  return resolved === null || literal === null ? null : { resolved, literal };
}

/**
 * Applies the rules to a request path and the session user (null when there is none). Both readings
 * of the path are checked and the stricter answer wins, so no spelling is looser for the guard than
 * for any router behind it. A refused path (null) is BAD_REQUEST.
 */
export function decidePath(path: RequestPath | null, user: SessionUser | null, rules: ProtectionRules = GATEHOUSE_RULES): Decision {
  if (path === null) return { action: 'deny', reason: 'BAD_REQUEST' };
  const first = decideNormalised(path.resolved, user, rules);
  return first.action === 'deny' || path.literal === path.resolved ? first : decideNormalised(path.literal, user, rules);
}

/** `decidePath` for a raw request path. */
export function decide(rawPath: string, user: SessionUser | null, rules: ProtectionRules = GATEHOUSE_RULES): Decision {
  return decidePath(readRequestPath(rawPath), user, rules);
}

function decideNormalised(path: string, user: SessionUser | null, rules: ProtectionRules): Decision {
  const organizationRules = (rules.organizationRoles ?? []).filter((rule) => isUnder(path, rule.prefix));
  const scopeRules = (rules.scopeRequirements ?? []).filter((rule) => isUnder(path, rule.prefix));
  // Rule 1, and everything outside the matcher (a path an organization or scope rule covers is inside it).
  const isRuled = organizationRules.length > 0 || scopeRules.length > 0;
  if (path === '/' && !isRuled) return ALLOW;
  if (!isRuled && !isProtectedPath(path, rules)) return ALLOW;
  if (!isRuled && rules.publicPrefixes.some((prefix) => isUnder(path, prefix))) return ALLOW;
  // Rule 2.
  if (user === null) return { action: 'deny', reason: 'UNAUTHENTICATED' };
  if (user.isMachine === true && scopeRules.length === 0) return { action: 'deny', reason: 'FORBIDDEN' };
  // Scopes, where the rules ask for them: all of every covering rule's.
  if (scopeRules.length > 0) {
    const needed = [...new Set(scopeRules.flatMap((rule) => rule.scopes))];
    const held = user.scopes ?? [];
    if (!needed.every((scope) => held.includes(scope))) return { action: 'deny', reason: 'INSUFFICIENT_SCOPE', scopes: needed };
  }
  // Rule 3.
  const requirement = rules.roleRequirements.find((r) => isUnder(path, r.prefix));
  if (requirement !== undefined && !user.roles.includes(requirement.role)) return { action: 'deny', reason: 'FORBIDDEN' };
  // A second factor, where the rules ask for one.
  if (rules.mfaPrefixes?.some((prefix) => isUnder(path, prefix)) && !(user.amr ?? []).includes('mfa')) return { action: 'deny', reason: 'STEP_UP_REQUIRED' };
  // A role in the active organization, where the rules ask for one.
  const orgRoles = user.org?.roles ?? [];
  if (organizationRules.some((rule) => !rule.roles.some((role) => orgRoles.includes(role)))) return { action: 'deny', reason: 'ORGANIZATION_ROLE_REQUIRED' };
  // Rule 4.
  return ALLOW;
}

/** Whether a path gets JSON denials (API) rather than pages (redirect / 403 page); refused paths do. */
export function isApiRequestPath(path: RequestPath | null): boolean {
  return path === null || isUnder(path.resolved, '/api') || isUnder(path.literal, '/api');
}

/** `isApiRequestPath` for a raw request path. */
export function isApiPath(rawPath: string): boolean {
  return isApiRequestPath(readRequestPath(rawPath));
}
