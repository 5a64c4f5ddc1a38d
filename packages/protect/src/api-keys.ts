/**
 * Gatehouse API keys (`gatehouse_pk_…` personal, `gatehouse_ok_…` organization) checked by
 * Gatehouse's introspection endpoint (`POST {issuer}/api/auth/keys/introspect`, RFC 7662), as a
 * confidential client of its registry. Answers are cached per key for `cacheMs` (default 30 s,
 * never past the key's expiry): a key revoked in Gatehouse may still pass here for up to that
 * long. Gatehouse unreachable or answering oddly: the key is refused (fail closed) and nothing is
 * cached. A personal key's caller is its owner (`user`, with `amr: ['api_key']`, the roles the key
 * keeps now and its scopes); an organization key's is a machine (`client`, `clientId:
 * 'api-key:<id>'`) with the organization and its role there (`apiKey.org`), which the
 * `organizationRoles` and `scopeRequirements` rules judge.
 */
import type { Caller } from './token-claims.ts';
import type { GatehouseApiKey, GatehouseUser } from './protector.types.ts';

export interface ApiKeyOptions {
  /** A confidential client registered in Gatehouse (`gatehouse clients create`): the introspection caller. */
  clientId: string;
  clientSecret: string;
  /** How long an answer is reused, in ms (default 30 000): the longest a revoked key may still pass. */
  cacheMs?: number;
}

/** The shape secret scanners match; anything else is not sent to Gatehouse. */
export const API_KEY_PATTERN = /^gatehouse_(?:pk|ok)_[0-9A-Za-z]{48}$/;
const MAX_CACHED = 10_000;

const strings = (value: unknown): string[] | null => (Array.isArray(value) && value.every((item) => typeof item === 'string') ? [...value] : null);

/** The caller an introspection answer describes, or null (inactive, or a shape Gatehouse does not send). */
export function callerOfIntrospection(answer: Record<string, unknown>): { caller: Caller; expiresAtMs: number } | null {
  const { active, key_id: id, kind, scope, roles, sub, org, exp } = answer;
  const heldRoles = strings(roles);
  if (active !== true || typeof id !== 'string' || typeof scope !== 'string' || heldRoles === null || typeof exp !== 'number') return null;
  const scopes = scope.split(' ').filter((value) => value !== '');
  if (kind === 'personal' && typeof sub === 'string') {
    const apiKey: GatehouseApiKey = { id, kind, org: null };
    const user: GatehouseUser = { userId: sub, sessionId: null, clientId: null, scopes, roles: heldRoles, amr: ['api_key'], authTime: null, org: null, actors: [], apiKey };
    return { caller: { user, client: null }, expiresAtMs: exp * 1000 };
  }
  if (kind === 'organization' && typeof org === 'object' && org !== null) {
    const { id: orgId, slug, roles: orgRoles } = org as Record<string, unknown>;
    const held = strings(orgRoles);
    if (typeof orgId !== 'string' || typeof slug !== 'string' || held === null) return null;
    const apiKey: GatehouseApiKey = { id, kind, org: { id: orgId, slug, roles: held } };
    return { caller: { user: null, client: { clientId: `api-key:${id}`, scopes, user: null, actors: [], apiKey } }, expiresAtMs: exp * 1000 };
  }
  return null;
}

/** Checks a presented key with Gatehouse, through a per-key cache of `cacheMs`. */
export function createApiKeyCheck(issuer: string, fetchImpl: typeof fetch, options: ApiKeyOptions) {
  const cacheMs = options.cacheMs ?? 30_000;
  if (!(cacheMs >= 0)) throw new TypeError('gatehouse-protect: apiKeys.cacheMs must be 0 or more');
  const authorization = `Basic ${btoa(`${encodeURIComponent(options.clientId)}:${encodeURIComponent(options.clientSecret)}`)}`;
  const cache = new Map<string, { caller: Caller | null; until: number }>();
  return async (token: string): Promise<Caller | null> => {
    if (!API_KEY_PATTERN.test(token)) return null;
    const now = Date.now();
    const cached = cache.get(token);
    if (cached !== undefined && cached.until > now) return cached.caller;
    let answer: Record<string, unknown>;
    try {
      const response = await fetchImpl(`${issuer}/api/auth/keys/introspect`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams({ token, token_type_hint: 'api_key' }).toString(),
        signal: AbortSignal.timeout(5_000),
      });
      if (response.status !== 200) {
        await response.body?.cancel();
        return null; // a misconfigured client, or Gatehouse failing: refused, not cached
      }
      answer = (await response.json()) as Record<string, unknown>;
    } catch {
      return null; // fail closed: an unreachable Gatehouse grants nothing
    }
    const found = typeof answer === 'object' && answer !== null ? callerOfIntrospection(answer) : null;
    if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
    cache.set(token, { caller: found?.caller ?? null, until: Math.min(now + cacheMs, found?.expiresAtMs ?? Number.POSITIVE_INFINITY) });
    return found?.caller ?? null;
  };
}
