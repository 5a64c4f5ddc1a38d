/** What a verified access token's claims say: who calls (a user, an app for a user, an app for itself) and the key it is bound to. */
import type { GatehouseClient, GatehouseUser } from './protector.types.ts';

/** Who a verified token speaks for: a user (Gatehouse's session token), an app for a user, or an app for itself. */
export interface Caller {
  user: GatehouseUser | null;
  client: GatehouseClient | null;
}

/** Each request gets its own copy: an app that changes `req.gatehouse` must not change the next request's. */
type ApiKey = NonNullable<GatehouseUser['apiKey']>;
const copyOfKey = (key: ApiKey): ApiKey => ({ ...key, org: key.org === null ? null : { ...key.org, roles: [...key.org.roles] } });

function copyOfUser(user: Readonly<GatehouseUser>): GatehouseUser {
  const copy: GatehouseUser = { ...user, roles: [...user.roles], amr: [...user.amr], scopes: [...user.scopes], actors: [...user.actors], org: user.org === null ? null : { ...user.org, roles: [...user.org.roles] } };
  if (user.apiKey !== undefined) copy.apiKey = copyOfKey(user.apiKey);
  return copy;
}

export function copyOfCaller(caller: Caller): Caller {
  const user = caller.user === null ? null : copyOfUser(caller.user);
  const client: GatehouseClient | null = caller.client === null ? null : { clientId: caller.client.clientId, scopes: [...caller.client.scopes], user, actors: [...caller.client.actors] };
  if (client !== null && caller.client!.apiKey !== undefined) client.apiKey = copyOfKey(caller.client!.apiKey);
  return { user, client };
}

/**
 * What the rules judge of a caller: the user's roles, proof and organization (none for a machine;
 * an organization API key's organization), and the scopes of the token (or of the API key).
 */
export function judged(caller: Caller) {
  const scopes = caller.client?.scopes ?? (caller.user?.apiKey !== undefined ? caller.user.scopes : []);
  return { roles: caller.user?.roles ?? [], amr: caller.user?.amr ?? [], org: caller.user?.org ?? caller.client?.apiKey?.org ?? null, scopes, isMachine: caller.user === null };
}

/**
 * The caller a verified token's claims describe, or null for claims of the wrong shape (refused,
 * never read loosely). Gatehouse's own tokens name a session and carry `roles`. A token of its
 * OpenID Provider (RFC 9068) names the app it was issued to (`client_id`) and what it may do
 * (`scope`), and has no session; `roles` only when the app asked for them. One the app got for
 * itself (client credentials) has the app as its subject: it speaks for no user.
 */
export function readCaller(payload: Record<string, unknown>): Caller | null {
  const { sub, sid, roles, client_id: clientId, scope } = payload;
  if (typeof sub !== 'string') return null;
  if (clientId !== undefined && (typeof clientId !== 'string' || typeof scope !== 'string')) return null;
  const scopes = typeof scope === 'string' ? scope.split(' ').filter((value) => value !== '') : [];
  const actors = readActorClaim(payload.act);
  if (actors === undefined) return null;
  if (clientId === sub) return { user: null, client: { clientId, scopes, user: null, actors } };
  if (clientId === undefined && (typeof sid !== 'string' || roles === undefined)) return null;
  const heldRoles = roles ?? [];
  if (!Array.isArray(heldRoles) || !heldRoles.every((role) => typeof role === 'string')) return null;
  const amr = payload.amr ?? [];
  if (!Array.isArray(amr) || !amr.every((method) => typeof method === 'string')) return null;
  const org = readOrganizationClaim(payload.org);
  if (org === undefined) return null;
  const user: GatehouseUser = {
    userId: sub,
    sessionId: typeof sid === 'string' ? sid : null,
    clientId: clientId ?? null,
    scopes,
    roles: [...heldRoles],
    amr: [...amr],
    authTime: typeof payload.auth_time === 'number' ? payload.auth_time : null,
    org,
    actors,
  };
  return { user, client: clientId === undefined ? null : { clientId, scopes: [...scopes], user, actors: [...actors] } };
}

/** More acting parties than any chain Gatehouse issues: a token naming more is refused. */
const MAX_ACTORS = 10;

/**
 * The token's `act` claim (RFC 8693 §4.1, token exchange) as the acting clients, outermost first:
 * empty when absent, undefined when malformed (the token is then refused).
 */
function readActorClaim(claim: unknown): string[] | undefined {
  const actors: string[] = [];
  for (let current = claim; current !== undefined; ) {
    if (typeof current !== 'object' || current === null || Array.isArray(current) || actors.length >= MAX_ACTORS) return undefined;
    const { sub, act } = current as Record<string, unknown>;
    if (typeof sub !== 'string' || sub === '') return undefined;
    actors.push(sub);
    current = act;
  }
  return actors;
}

/** The token's `org` claim: null when absent, undefined when malformed (the token is then refused). */
function readOrganizationClaim(claim: unknown): GatehouseUser['org'] | undefined {
  if (claim === undefined || claim === null) return null;
  if (typeof claim !== 'object' || Array.isArray(claim)) return undefined;
  const { id, slug, roles } = claim as Record<string, unknown>;
  if (typeof id !== 'string' || typeof slug !== 'string' || !Array.isArray(roles) || !roles.every((role) => typeof role === 'string')) return undefined;
  return { id, slug, roles: [...roles] };
}

/** The key a token is bound to (`cnf.jkt`, RFC 9449 §6.1): null when unbound, undefined when the claim is malformed (refused). */
export function readConfirmation(cnf: unknown): string | null | undefined {
  if (cnf === undefined) return null;
  if (typeof cnf !== 'object' || cnf === null || Array.isArray(cnf)) return undefined;
  const { jkt } = cnf as Record<string, unknown>;
  // Another confirmation method (an mTLS certificate, x5t#S256) cannot be checked here: refused.
  return typeof jkt === 'string' && jkt !== '' ? jkt : undefined;
}
