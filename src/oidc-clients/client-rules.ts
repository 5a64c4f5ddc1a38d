/**
 * What a registered client may be: the rules every way of registering one (API, page, CLI) goes
 * through, as plain values (a problem list, never an exception). Redirect URIs follow OAuth 2.0
 * Security BCP and RFC 8252 (native apps): absolute, https (plain http only on a loopback host),
 * no fragment, no wildcard, and a custom scheme (a reverse domain name, `com.example.app:/cb`)
 * only for a public client, which the provider then treats as a native app. URIs are kept exactly
 * as written: the provider compares them character for character.
 */

export const GRANT_TYPES = ['authorization_code', 'refresh_token', 'client_credentials', 'urn:ietf:params:oauth:grant-type:device_code'] as const;
export type GrantType = (typeof GRANT_TYPES)[number];
export const DEVICE_CODE_GRANT: GrantType = 'urn:ietf:params:oauth:grant-type:device_code';
export const DEFAULT_GRANT_TYPES: readonly GrantType[] = ['authorization_code', 'refresh_token'];

export const ID_TOKEN_ALGS = ['EdDSA', 'RS256'] as const;
export type IdTokenAlg = (typeof ID_TOKEN_ALGS)[number];
export const DEFAULT_ID_TOKEN_ALG: IdTokenAlg = 'EdDSA';

// In this file rather than the service's: the admin API's schema names them, and the service's code is imported at its first call.
/**
 * How a client came: registered by an administrator (`admin`: the admin API or pages), at the
 * command line (`cli`), or by itself through dynamic registration (RFC 7591): with the initial
 * access token (`registration`) or by anyone in open mode (`open_registration`: counted against
 * the cap, and deleted when never used).
 */
export const CLIENT_ORIGINS = ['admin', 'cli', 'registration', 'open_registration'] as const;
export type ClientOrigin = (typeof CLIENT_ORIGINS)[number];

export const MAX_NAME_LENGTH = 100;
/** Per list (redirect URIs, post-logout redirect URIs). */
export const MAX_URIS = 20;
export const MAX_URI_LENGTH = 2000;
/** The hosts where plain http is allowed (RFC 8252 §7.3, and what the provider calls loopback). */
export const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** Grant types refused outright, with why: OAuth 2.0 Security BCP (RFC 9700) forbids both. */
const REFUSED_GRANTS: Readonly<Record<string, string>> = {
  implicit: 'the implicit grant is not supported: it leaks tokens in URLs (RFC 9700); use authorization_code with PKCE',
  password: 'the password grant is not supported: it hands the user’s password to the client (RFC 9700); use authorization_code',
};

/** Stable codes for what is wrong with one field (the `reason` of an entry of `errors`). */
export type ClientProblemReason =
  | 'NAME_REQUIRED'
  | 'NAME_TOO_LONG'
  | 'NAME_INVALID'
  | 'REDIRECT_URI_REQUIRED'
  | 'TOO_MANY_URIS'
  | 'INVALID_URI'
  | 'HTTPS_REQUIRED'
  | 'FRAGMENT_NOT_ALLOWED'
  | 'WILDCARD_NOT_ALLOWED'
  | 'CUSTOM_SCHEME_PUBLIC_ONLY'
  | 'CUSTOM_SCHEME_NOT_REVERSE_DOMAIN'
  | 'LOOPBACK_HTTPS_NOT_ALLOWED'
  | 'GRANT_TYPE_REQUIRED'
  | 'GRANT_TYPE_REFUSED'
  | 'UNKNOWN_GRANT_TYPE'
  | 'CLIENT_CREDENTIALS_PUBLIC'
  | 'REFRESH_TOKEN_WITHOUT_GRANT'
  | 'GRANT_TYPE_NOT_FOR_OPEN_REGISTRATION'
  | 'UNSUPPORTED_ALG'
  | 'TOO_MANY_RESOURCES'
  | 'EXCHANGE_PUBLIC'
  | 'EXCHANGE_SELF_REGISTERED'
  | 'KEYS_NOT_FOR_PUBLIC';

export interface ClientProblem {
  /** The input field, as the API names it: `name`, `redirectUris.0`, `grantTypes`… */
  readonly field: string;
  readonly reason: ClientProblemReason;
  readonly message: string;
}

/** What registering a client asks for: the API's fields, before the rules. */
export interface ClientInput {
  name: string;
  redirectUris?: readonly string[];
  postLogoutRedirectUris?: readonly string[];
  /** Default: authorization_code and refresh_token. */
  grantTypes?: readonly string[];
  /** No secret; token_endpoint_auth_method `none` (PKCE). Default false. */
  isPublic?: boolean;
  /** Ours: the provider may skip the consent screen for it. Default false. */
  isFirstParty?: boolean;
  /** Default EdDSA. */
  idTokenSignedResponseAlg?: string;
  /** Where Gatehouse posts a logout token when the person signs out (OpenID Back-Channel Logout 1.0); https, or http on a loopback host. */
  backchannelLogoutUri?: string | null;
  /**
   * The APIs (resource indicators, as in OIDC_PROVIDER_RESOURCES) it may exchange a person's access
   * token for (token exchange, RFC 8693); empty or absent: none. Confidential clients only.
   */
  exchangeResources?: readonly string[];
  /** Its token requests must carry a DPoP proof (RFC 9449 `dpop_bound_access_tokens`): every token it gets is bound to its key. Default false. */
  dpopBoundAccessTokens?: boolean;
  /**
   * Where its public keys are (a JWKS; https, or http on a loopback host): it authenticates with a
   * JWT signed by one of them (`private_key_jwt`, RFC 7523) and gets no secret, and may sign request
   * objects with them (JAR, RFC 9101). Confidential clients only. Absent: a secret.
   */
  jwksUri?: string | null;
}

/** The settings once the rules accept them. */
export interface ClientSettings {
  name: string;
  redirectUris: string[];
  postLogoutRedirectUris: string[];
  grantTypes: GrantType[];
  isPublic: boolean;
  isFirstParty: boolean;
  idTokenSignedResponseAlg: IdTokenAlg;
  backchannelLogoutUri: string | null;
  exchangeResources: string[];
  dpopBoundAccessTokens: boolean;
  jwksUri: string | null;
}

export type RulesResult = { ok: true; settings: ClientSettings } | { ok: false; problems: ClientProblem[] };

/** Whether a redirect URI uses a scheme other than http(s): only public (native) clients may. */
export function isCustomScheme(uri: string): boolean {
  const parsed = URL.parse(uri);
  return parsed !== null && parsed.protocol !== 'https:' && parsed.protocol !== 'http:';
}

/** The name as stored (trimmed), or what is wrong with it. */
export function checkName(name: string): { ok: true; name: string } | { ok: false; problem: ClientProblem } {
  const trimmed = name.trim();
  const problem = (reason: ClientProblemReason, message: string) => ({ ok: false as const, problem: { field: 'name', reason, message } });
  if (trimmed === '') return problem('NAME_REQUIRED', 'is required');
  if ([...trimmed].length > MAX_NAME_LENGTH) return problem('NAME_TOO_LONG', `must be at most ${MAX_NAME_LENGTH} characters`);
  if (/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(trimmed)) return problem('NAME_INVALID', 'must not contain control characters or line breaks');
  return { ok: true, name: trimmed };
}

/**
 * Whether the provider will see a native app: a public client with a custom-scheme URI in either
 * list. There the provider refuses https on a loopback host (RFC 8252 §8.4: that would be a
 * claimed https URI, not a loopback one), so the rules do too.
 */
export function isNativeApp(isPublic: boolean, ...lists: ReadonlyArray<readonly string[]>): boolean {
  return isPublic && lists.some((uris) => uris.some(isCustomScheme));
}

/**
 * The problems of one list of redirect URIs (`field` is `redirectUris` or `postLogoutRedirectUris`)
 * for a client that is public or not (and a native app or not: see `isNativeApp`); duplicates are
 * dropped (the first kept), the rest kept as written.
 */
export function checkRedirectUris(field: string, uris: readonly string[], isPublic: boolean, isNative: boolean): { uris: string[]; problems: ClientProblem[] } {
  const problems: ClientProblem[] = [];
  const unique = [...new Set(uris)];
  if (unique.length > MAX_URIS) problems.push({ field, reason: 'TOO_MANY_URIS', message: `must list at most ${MAX_URIS} URIs` });
  unique.forEach((uri, index) => {
    const problem = uriProblem(uri, isPublic, isNative);
    if (problem !== null) problems.push({ field: `${field}.${index}`, ...problem });
  });
  return { uris: unique, problems };
}

function uriProblem(uri: string, isPublic: boolean, isNative: boolean): { reason: ClientProblemReason; message: string } | null {
  if (uri.length > MAX_URI_LENGTH) return { reason: 'INVALID_URI', message: `must be at most ${MAX_URI_LENGTH} characters` };
  // Exactly as the provider will compare it: no spaces or controls that a parser would drop.
  if (/[\s\u0000-\u001f\u007f]/.test(uri)) return { reason: 'INVALID_URI', message: 'must not contain spaces or control characters' };
  if (uri.includes('*')) return { reason: 'WILDCARD_NOT_ALLOWED', message: 'must not contain a wildcard (*): register each URI exactly' };
  if (uri.includes('#')) return { reason: 'FRAGMENT_NOT_ALLOWED', message: 'must not contain a fragment (#)' };
  const parsed = URL.parse(uri);
  if (parsed === null || !/^[a-z][a-z0-9+.-]*:/i.test(uri)) return { reason: 'INVALID_URI', message: 'must be an absolute URI, such as https://app.example.com/callback' };
  if (parsed.username !== '' || parsed.password !== '') return { reason: 'INVALID_URI', message: 'must not contain a user name or password' };
  const { protocol, hostname } = parsed;
  if (protocol === 'https:') {
    if (parsed.hostname === '') return { reason: 'INVALID_URI', message: 'must name a host' };
    if (isNative && LOOPBACK_HOSTS.has(hostname)) {
      return { reason: 'LOOPBACK_HTTPS_NOT_ALLOWED', message: 'a native app (a public client with a custom scheme) must use http, not https, on a loopback host' };
    }
    return null;
  }
  if (protocol === 'http:') {
    if (LOOPBACK_HOSTS.has(hostname)) return null;
    return { reason: 'HTTPS_REQUIRED', message: 'must use https (plain http only on 127.0.0.1, [::1] or localhost)' };
  }
  if (!isPublic) {
    return { reason: 'CUSTOM_SCHEME_PUBLIC_ONLY', message: `uses the custom scheme "${protocol.slice(0, -1)}": only a public (native app) client may; a confidential client must use https` };
  }
  // RFC 8252 §7.1: a scheme based on a domain name the app controls, in reverse order. This also
  // keeps out javascript:, data:, file: and the like.
  if (!/^[a-z][a-z0-9-]*(\.[a-z0-9-]+)+:$/i.test(protocol)) {
    return { reason: 'CUSTOM_SCHEME_NOT_REVERSE_DOMAIN', message: 'a custom scheme must be a reverse domain name the app controls, such as com.example.app:/callback (RFC 8252)' };
  }
  return null;
}

/** The grant types as stored (each once, in the order given), or what is wrong with them. */
export function checkGrantTypes(requested: readonly string[] | undefined, isPublic: boolean): { grantTypes: GrantType[]; problems: ClientProblem[] } {
  const field = 'grantTypes';
  const problems: ClientProblem[] = [];
  const given = requested === undefined ? [...DEFAULT_GRANT_TYPES] : [...new Set(requested)];
  if (given.length === 0) problems.push({ field, reason: 'GRANT_TYPE_REQUIRED', message: 'must list at least one grant type' });
  const grantTypes: GrantType[] = [];
  for (const grant of given) {
    const refusal = Object.hasOwn(REFUSED_GRANTS, grant) ? REFUSED_GRANTS[grant] : undefined;
    if (refusal !== undefined) problems.push({ field, reason: 'GRANT_TYPE_REFUSED', message: refusal });
    else if (!(GRANT_TYPES as readonly string[]).includes(grant)) {
      problems.push({ field, reason: 'UNKNOWN_GRANT_TYPE', message: `"${grant.slice(0, 100)}" is not a grant type: use ${GRANT_TYPES.join(', ')}` });
    } else grantTypes.push(grant as GrantType);
  }
  if (isPublic && grantTypes.includes('client_credentials')) {
    problems.push({ field, reason: 'CLIENT_CREDENTIALS_PUBLIC', message: 'client_credentials needs a client that can keep a secret: a public client cannot use it' });
  }
  if (grantTypes.includes('refresh_token') && !grantTypes.includes('authorization_code') && !grantTypes.includes(DEVICE_CODE_GRANT)) {
    problems.push({ field, reason: 'REFRESH_TOKEN_WITHOUT_GRANT', message: `refresh_token needs authorization_code or ${DEVICE_CODE_GRANT}: nothing else issues a refresh token` });
  }
  return { grantTypes, problems };
}

/** Every rule on a new client at once: all of its problems, or its settings. */
export function checkClientInput(input: ClientInput): RulesResult {
  const isPublic = input.isPublic ?? false;
  const problems: ClientProblem[] = [];
  const name = checkName(input.name);
  if (!name.ok) problems.push(name.problem);
  const grants = checkGrantTypes(input.grantTypes, isPublic);
  const exchange = checkExchangeResources(input.exchangeResources ?? [], isPublic);
  // A client that only exchanges tokens (an API calling another for the person) needs no other grant.
  const onlyExchanges = exchange.resources.length > 0 && grants.grantTypes.length === 0;
  problems.push(...grants.problems.filter((problem) => !(onlyExchanges && problem.reason === 'GRANT_TYPE_REQUIRED')), ...exchange.problems);
  const isNative = isNativeApp(isPublic, input.redirectUris ?? [], input.postLogoutRedirectUris ?? []);
  const redirect = checkRedirectUris('redirectUris', input.redirectUris ?? [], isPublic, isNative);
  if (grants.grantTypes.includes('authorization_code') && redirect.uris.length === 0) {
    problems.push({ field: 'redirectUris', reason: 'REDIRECT_URI_REQUIRED', message: 'must list at least one redirect URI for the authorization_code grant' });
  }
  problems.push(...redirect.problems);
  const postLogout = checkRedirectUris('postLogoutRedirectUris', input.postLogoutRedirectUris ?? [], isPublic, isNative);
  problems.push(...postLogout.problems);
  const backchannel = checkBackchannelLogoutUri(input.backchannelLogoutUri ?? null);
  if (!backchannel.ok) problems.push(backchannel.problem);
  const keys = checkJwksUri(input.jwksUri ?? null, isPublic);
  if (!keys.ok) problems.push(keys.problem);
  const alg = input.idTokenSignedResponseAlg ?? DEFAULT_ID_TOKEN_ALG;
  if (!(ID_TOKEN_ALGS as readonly string[]).includes(alg)) {
    problems.push({ field: 'idTokenSignedResponseAlg', reason: 'UNSUPPORTED_ALG', message: `must be one of ${ID_TOKEN_ALGS.join(', ')}` });
  }
  if (problems.length > 0 || !name.ok) return { ok: false, problems };
  return {
    ok: true,
    settings: {
      name: name.name,
      redirectUris: redirect.uris,
      postLogoutRedirectUris: postLogout.uris,
      grantTypes: grants.grantTypes,
      isPublic,
      isFirstParty: input.isFirstParty ?? false,
      idTokenSignedResponseAlg: alg as IdTokenAlg,
      backchannelLogoutUri: backchannel.ok ? backchannel.uri : null,
      exchangeResources: exchange.resources,
      dpopBoundAccessTokens: input.dpopBoundAccessTokens ?? false,
      jwksUri: keys.ok ? keys.uri : null,
    },
  };
}

/**
 * A back-channel logout URI: an absolute https URI (http only on a loopback host), without a
 * fragment (OpenID Back-Channel Logout 1.0 §2.2); null or empty for none. Where it may point is
 * judged again at each delivery (the outbound rules: no private address unless allowed).
 */
export function checkBackchannelLogoutUri(uri: string | null): { ok: true; uri: string | null } | { ok: false; problem: ClientProblem } {
  if (uri === null || uri.trim() === '') return { ok: true, uri: null };
  const problem = uriProblem(uri, false, false);
  return problem === null ? { ok: true, uri } : { ok: false, problem: { field: 'backchannelLogoutUri', ...problem } };
}

/**
 * The URL of a client's public keys (`jwksUri`): an absolute https URI (http only on a loopback
 * host), as a back-channel logout URI; the provider fetches it under the outbound rules. A public
 * client has no keys to prove itself with: it authenticates with nothing (PKCE).
 */
export function checkJwksUri(uri: string | null, isPublic: boolean): { ok: true; uri: string | null } | { ok: false; problem: ClientProblem } {
  if (uri === null || uri.trim() === '') return { ok: true, uri: null };
  if (isPublic) return { ok: false, problem: { field: 'jwksUri', reason: 'KEYS_NOT_FOR_PUBLIC', message: 'a public client authenticates with nothing (PKCE): keys are for a confidential client' } };
  const problem = uriProblem(uri, false, false);
  return problem === null ? { ok: true, uri } : { ok: false, problem: { field: 'jwksUri', ...problem } };
}

/** The token exchange grant (RFC 8693): never asked for, given to a client whose exchange policy lists an API. */
export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
/** Per client: the APIs it may exchange tokens for. */
export const MAX_EXCHANGE_RESOURCES = 20;

/**
 * A client's exchange policy (`exchangeResources`): absolute URIs without a fragment, as resource
 * indicators are (RFC 8707 §2), each once. Whether each is one of OIDC_PROVIDER_RESOURCES is judged
 * at each exchange (the setting may change). A public client may have none: it proves nothing of
 * who presents its id, so an `act` claim naming it would vouch for nobody.
 */
export function checkExchangeResources(resources: readonly string[], isPublic: boolean): { resources: string[]; problems: ClientProblem[] } {
  const field = 'exchangeResources';
  const unique = [...new Set(resources.map((resource) => resource.trim()).filter((resource) => resource !== ''))];
  const problems: ClientProblem[] = [];
  if (unique.length > 0 && isPublic) {
    problems.push({ field, reason: 'EXCHANGE_PUBLIC', message: 'token exchange needs a client that can keep a secret: a public client cannot exchange tokens' });
  }
  if (unique.length > MAX_EXCHANGE_RESOURCES) problems.push({ field, reason: 'TOO_MANY_RESOURCES', message: `must list at most ${MAX_EXCHANGE_RESOURCES} resources` });
  unique.forEach((resource, index) => {
    const parsed = URL.parse(resource);
    const isValid = parsed !== null && /^[a-z][a-z0-9+.-]*:\/\//i.test(resource) && parsed.hash === '' && !resource.includes('#') && resource.length <= MAX_URI_LENGTH && !/[\s\u0000-\u001f\u007f]/.test(resource);
    if (!isValid) problems.push({ field: `${field}.${index}`, reason: 'INVALID_URI', message: 'must be an absolute URI without a fragment, as listed in OIDC_PROVIDER_RESOURCES' });
  });
  return { resources: unique, problems };
}

/**
 * Grant types a client that registered itself in open mode (anyone, no prior setup) may not have:
 * - `client_credentials` mints tokens for APIs with no person in the loop: a self-registered
 *   client must never hold a machine's access;
 * - the device flow lets whoever started it collect the tokens anywhere, with no redirect URI that
 *   ties the client to a site the person can see on the consent page: the classic phishing route
 *   ("enter this code"), for a client whose name nobody vouched for.
 * An administrator registers such clients (API, pages, CLI) or gives out the initial access token.
 */
const NOT_FOR_OPEN_REGISTRATION: Readonly<Partial<Record<GrantType, string>>> = {
  client_credentials: 'client_credentials is not available to a self-registered client: it would mint tokens for APIs with no person consenting; ask the operator to register it',
  [DEVICE_CODE_GRANT]: 'the device flow is not available to a self-registered client (no redirect URI ties it to a site the person can see); use authorization_code with PKCE',
};

/** What open registration refuses on top of the rules every client follows (`checkClientInput`). */
export function checkOpenRegistration(input: Pick<ClientInput, 'grantTypes'>): ClientProblem[] {
  return (input.grantTypes ?? [])
    .filter((grant): grant is GrantType => Object.hasOwn(NOT_FOR_OPEN_REGISTRATION, grant))
    .map((grant) => ({ field: 'grantTypes', reason: 'GRANT_TYPE_NOT_FOR_OPEN_REGISTRATION' as const, message: NOT_FOR_OPEN_REGISTRATION[grant]! }));
}
