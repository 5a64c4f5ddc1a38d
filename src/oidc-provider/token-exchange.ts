/**
 * Token exchange (RFC 8693) for a client acting for a person (on behalf of): a client that holds
 * a person's access token for one API (the subject token) gets, at the token endpoint, a token for
 * another API it is allowed to call, narrower than the one it holds. Registered with
 * oidc-provider's grant API (`registerGrantType`); the new token is the provider's own AccessToken,
 * formatted and signed as every other resource token (RFC 9068).
 *
 * What is checked, and the error each refusal answers (RFC 8693 §2.2.2, RFC 6749 §5.2):
 * - the client authenticated (the provider did) and is confidential, and its exchange policy lists
 *   the target: else `unauthorized_client` (a client without a policy is not even allowed the grant
 *   type, exchange-policy.ts) or `invalid_target`;
 * - the target (`resource`, or `audience` naming the same) is one API of OIDC_PROVIDER_RESOURCES:
 *   else `invalid_target`;
 * - the subject token is an access token of ours for an API (signature by one of our keys, issuer,
 *   `typ: at+jwt`, not expired, an API as its audience), for a person (not a machine's own token),
 *   whose grant is still alive (signed out everywhere, disconnected, the password changed… end
 *   it), for a user still enabled: else `invalid_request`, which RFC 8693 requires for an invalid
 *   or unacceptable subject token;
 * - the scopes only shrink: those asked must be the subject token's and the target's, none asked
 *   is every scope they share; none shared: `invalid_scope`.
 *
 * The token issued is for the target (`aud`), for the same person (`sub`), to the exchanging
 * client (`client_id`), names it as the acting party (`act: { sub: client_id }`, the subject
 * token's own `act` nested inside: a chain), never outlives the subject token, carries the
 * person's roles when the subject token did, and is DPoP-bound when the request has a proof.
 * Each exchange is audited (`oidc_client.token_exchanged`).
 */
import { jwtVerify, decodeProtectedHeader, type JWTPayload } from 'jose';
import type Provider from 'oidc-provider';
import { errors, type ResourceServer, type TokenEndpointGrantContext } from 'oidc-provider';
// The helpers oidc-provider offers custom grants (typed by @types/oidc-provider; marked experimental,
// outside semver: package-lock.json pins the version, and the token exchange tests would catch a
// change): the DPoP proof and the token response.
import { buildTokenResponse, checkDpopReplay, checkDpopRequired, validateDpop } from 'oidc-provider/lib/helpers/grants.js';
import type { SigningKeys } from '../sessions/signing-keys.ts';
import type { UserService } from '../users/user.service.ts';
import type { TokenExchanged } from '../oidc-clients/exchange-policy.ts';
import { TOKEN_EXCHANGE_GRANT } from '../oidc-clients/client-rules.ts';

export { TOKEN_EXCHANGE_GRANT };
/** The only token type taken and issued: an access token (RFC 8693 §3). */
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
/** The claim that carries the token's grant, so that an exchange can tell whether it still lives. */
export const GRANT_CLAIM = 'grant_id';
/** How many acting parties a chain may hold: a longer one is refused (and the token stays small). */
export const MAX_ACTORS = 5;
/** Our tokens are well under this; anything larger is refused before any parsing. */
const MAX_TOKEN_LENGTH = 8192;
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** The parameters of the grant (RFC 8693 §2.1); `resource` comes with resource indicators. */
const PARAMETERS = ['subject_token', 'subject_token_type', 'actor_token', 'actor_token_type', 'requested_token_type', 'audience', 'resource', 'scope'];

/** What the registry tells of clients: their exchange policy, and where exchanges are audited. */
export interface ExchangeRegistry {
  exchangePolicy(clientId: string): Promise<string[]>;
  recordExchange(exchanged: TokenExchanged): Promise<void>;
}

export interface TokenExchangeDeps {
  issuer: string;
  keys: Pick<SigningKeys, 'verificationKey' | 'reloadForUnknownKid'>;
  clockToleranceSeconds: number;
  /** OIDC_PROVIDER_RESOURCES: each API and its scopes. */
  resources: ReadonlyMap<string, { scopes: readonly string[] }>;
  /** The provider's description of an API (as its resource indicators feature gives it). */
  resourceServer(indicator: string): ResourceServer;
  /** The most an access token for an API lives (OIDC_PROVIDER_ACCESS_TOKEN_TTL). */
  accessTokenTtlSeconds: number;
  users: Pick<UserService, 'findUserById'>;
  registry: ExchangeRegistry;
}

/** An acting party (RFC 8693 §4.1): a client, and the one it acted after, if any. */
export interface Actor {
  sub: string;
  act?: Actor;
}

/** The claims an exchanged token carries on top of the provider's, by token (the JWT customizer adds them). */
const exchangedClaims = new WeakMap<object, Record<string, unknown>>();

/**
 * The claims to add to the JWT of `token` (the provider's `formats.customizers.jwt` calls this):
 * its grant for every token that has one, and what an exchange adds.
 */
export function tokenExchangeClaims(token: object): Record<string, unknown> {
  const grantId = 'grantId' in token ? token.grantId : undefined;
  return { ...(typeof grantId === 'string' && { [GRANT_CLAIM]: grantId }), ...exchangedClaims.get(token) };
}

/** The acting parties of an `act` claim, outermost first; undefined for a claim of the wrong shape or too long a chain. */
export function actorsOf(act: unknown): string[] | undefined {
  const actors: string[] = [];
  let current = act;
  while (current !== undefined) {
    if (typeof current !== 'object' || current === null || Array.isArray(current)) return undefined;
    const { sub, act: inner } = current as Record<string, unknown>;
    if (typeof sub !== 'string' || sub === '' || actors.length >= MAX_ACTORS) return undefined;
    actors.push(sub);
    current = inner;
  }
  return actors;
}

/** The claims of a subject token, verified as one of ours for an API; null when it is not. */
async function verifySubjectToken(deps: TokenExchangeDeps, token: string): Promise<JWTPayload | null> {
  if (token.length > MAX_TOKEN_LENGTH || !COMPACT_JWS.test(token)) return null;
  let kid: unknown;
  try {
    ({ kid } = decodeProtectedHeader(token));
  } catch {
    return null;
  }
  if (typeof kid !== 'string') return null;
  let key = deps.keys.verificationKey(kid);
  if (key === undefined) {
    await deps.keys.reloadForUnknownKid();
    key = deps.keys.verificationKey(kid);
    if (key === undefined) return null;
  }
  try {
    const { payload } = await jwtVerify(token, key, {
      algorithms: ['EdDSA', 'RS256'],
      typ: 'at+jwt',
      issuer: deps.issuer,
      clockTolerance: deps.clockToleranceSeconds,
      requiredClaims: ['sub', 'client_id', 'aud', 'exp', 'iat', 'jti'],
    });
    return payload;
  } catch {
    return null;
  }
}

/** A single parameter value (a repeated one is refused with `error`). */
function single(value: unknown, error: () => Error): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.length === 1 && typeof value[0] === 'string') return value[0];
  throw error();
}

/** Registers the grant on `provider`; discovery then lists it in `grant_types_supported`. */
export function registerTokenExchange(provider: Provider, deps: TokenExchangeDeps): void {
  provider.registerGrantType(TOKEN_EXCHANGE_GRANT, (ctx) => exchange(provider, deps, ctx), PARAMETERS, ['resource', 'audience']);
}

async function exchange(provider: Provider, deps: TokenExchangeDeps, ctx: TokenEndpointGrantContext): Promise<void> {
  const { client } = ctx.oidc;
  const params: Record<string, unknown> = ctx.oidc.params;
  // The client: confidential (the provider authenticated it), with a policy.
  if (client.clientAuthMethod === 'none') throw new errors.UnauthorizedClient('a public client cannot exchange tokens');
  const policy = await deps.registry.exchangePolicy(client.clientId);
  if (policy.length === 0) throw new errors.UnauthorizedClient('this client may not exchange tokens');

  // The request.
  const subjectToken = single(params.subject_token, () => new errors.InvalidRequest('subject_token must be given once'));
  if (subjectToken === undefined || subjectToken === '') throw new errors.InvalidRequest('missing required parameter: subject_token');
  if (params.subject_token_type !== ACCESS_TOKEN_TYPE) throw new errors.InvalidRequest(`subject_token_type must be ${ACCESS_TOKEN_TYPE}`);
  if (params.actor_token !== undefined || params.actor_token_type !== undefined) {
    throw new errors.InvalidRequest('actor_token is not supported: the acting party is the authenticated client');
  }
  if (params.requested_token_type !== undefined && params.requested_token_type !== ACCESS_TOKEN_TYPE) {
    throw new errors.InvalidRequest(`requested_token_type must be ${ACCESS_TOKEN_TYPE}`);
  }
  const oneTarget = () => new errors.InvalidTarget('name exactly one target API');
  const resource = single(params.resource, oneTarget);
  const audience = single(params.audience, oneTarget);
  if (resource !== undefined && audience !== undefined && resource !== audience) throw oneTarget();
  const target = resource ?? audience;
  if (target === undefined) throw new errors.InvalidRequest('missing required parameter: resource (or audience), the target API');
  const targetResource = deps.resources.get(target);
  if (targetResource === undefined) throw new errors.InvalidTarget('the target is not an API this server issues tokens for');
  if (!policy.includes(target)) throw new errors.InvalidTarget('this client may not exchange tokens for that API');

  // The subject token, and what still stands behind it.
  const subject = await verifySubjectToken(deps, subjectToken);
  const invalid = (why: string) => new errors.InvalidRequest(`subject_token is invalid: ${why}`);
  if (subject === null) throw invalid('not an unexpired access token of this server');
  const { sub: userId, client_id: subjectClientId, aud: fromAudience, exp } = subject as JWTPayload & { client_id: unknown };
  if (typeof fromAudience !== 'string' || !deps.resources.has(fromAudience)) throw invalid('not a token for an API of this server');
  if (typeof userId !== 'string' || typeof subjectClientId !== 'string' || typeof exp !== 'number') throw invalid('malformed');
  if (userId === subjectClientId) throw invalid('a client’s own token speaks for no person');
  const priorActors = actorsOf(subject.act);
  if (priorActors === undefined) throw invalid(`its act claim is malformed or names more than ${MAX_ACTORS} acting parties`);
  if (priorActors.length >= MAX_ACTORS) throw invalid(`its chain already has ${MAX_ACTORS} acting parties, the most there may be`);
  const grantId = subject[GRANT_CLAIM];
  const grant = typeof grantId === 'string' ? await provider.Grant.find(grantId) : undefined;
  // An exchanged token keeps the grant of the person's token it came from: that of the app the
  // person let in, which is the subject token's client only at the start of a chain.
  const isGrantOfSubject = grant !== undefined && grant.accountId === userId && (priorActors.length > 0 || grant.clientId === subjectClientId);
  if (!isGrantOfSubject) throw invalid('its grant has ended');
  const user = await deps.users.findUserById(userId);
  if (user === null || user.disabledAt !== null) throw invalid('its user is disabled or gone');
  const remaining = exp - Math.floor(Date.now() / 1000);
  if (remaining <= 0) throw invalid('expired');

  // The scopes: only ever fewer.
  const subjectScopes = new Set(typeof subject.scope === 'string' ? subject.scope.split(' ').filter(Boolean) : []);
  const shared = targetResource.scopes.filter((scope) => subjectScopes.has(scope));
  const requested = single(params.scope, () => new errors.InvalidScope('scope must be given once', 'scope'));
  const asked = requested === undefined ? shared : [...new Set(requested.split(' ').filter(Boolean))];
  const widening = asked.find((scope) => !shared.includes(scope));
  if (widening !== undefined) throw new errors.InvalidScope('a scope neither the subject token nor the target API holds: an exchange only narrows', widening);
  if (asked.length === 0) throw new errors.InvalidScope('the subject token holds no scope of the target API', targetResource.scopes.join(' '));
  const scope = asked.join(' ');

  // The token: the provider's own, for the target, bound to the proof's key when there is one.
  const dPoP = await validateDpop(provider, ctx);
  const token = new provider.AccessToken({ accountId: userId, client, grantId: grantId as string, gty: 'token_exchange', scope });
  token.resourceServer = new provider.ResourceServer(target, deps.resourceServer(target));
  (token as unknown as { expiresIn: number }).expiresIn = Math.min(remaining, deps.accessTokenTtlSeconds);
  if (dPoP !== undefined) {
    await checkDpopReplay(provider, ctx, dPoP, client.clientId);
    token.setThumbprint('jkt', dPoP.thumbprint);
  }
  checkDpopRequired(provider, ctx, dPoP);
  // Rebuilt from the names alone: nothing else of the subject token's `act` is carried over.
  const act = [client.clientId, ...priorActors].reduceRight<Actor | undefined>((inner, sub) => ({ sub, ...(inner !== undefined && { act: inner }) }), undefined)!;
  exchangedClaims.set(token, { act, ...(Array.isArray(subject.roles) && { roles: user.roles }) });
  ctx.oidc.entity('AccessToken', token);
  const value = await token.save();
  await deps.registry.recordExchange({ clientId: client.clientId, userId, subjectClientId, fromAudience, toAudience: target, scopes: asked, priorActors });

  ctx.body = buildTokenResponse(provider, {
    accessToken: value,
    expiresIn: token.expiration,
    issuedTokenType: ACCESS_TOKEN_TYPE,
    scope,
    tokenType: token.tokenType,
  });
}
