/**
 * Loopback stand-ins for the identity providers of the OAuth sign-in feature. Both listen on
 * 127.0.0.1 on a free port, never call out, and close every socket on `close()`.
 *
 * - `startOidcPeer` plays Google or any OpenID Connect provider. Discovery, JWKS, the authorize
 *   endpoint and ID-token signing come from oauth2-mock-server; its /token endpoint is replaced by
 *   a strict one here, because the package's accepts any client, lets a code be redeemed any
 *   number of times and for any redirect_uri, skips PKCE when `code_verifier` is left out, and
 *   answers a PKCE mismatch with a problem+json 400 that is not an OAuth error.
 * - `startGitHubPeer` plays github.com and api.github.com (OAuth apps): GitHub's own quirks included,
 *   such as token errors sent as HTTP 200 and comma-separated scopes.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, generateKeyPair } from 'jose';
import { Events, OAuth2Issuer, OAuth2Service, type MutableRedirectUri, type MutableResponse } from 'oauth2-mock-server';

// ---------------------------------------------------------------------------------------------
// OpenID Connect provider
// ---------------------------------------------------------------------------------------------

export interface OidcAccount {
  sub: string;
  email?: string;
  email_verified?: boolean;
  name?: string;
}

export interface OidcPeer {
  /** e.g. http://127.0.0.1:PORT, exactly what discovery's `issuer` says. */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The account every authorization from now on signs in as (the authorize endpoint auto-approves). */
  signInAs(account: OidcAccount): void;
  /** Next authorization answers redirect_uri?error=access_denied&state=… instead of a code. */
  denyNext(): void;
  /**
   * Tamper with the next ID token: override claims (aud, iss, nonce, exp, …; `undefined` removes
   * one) or sign it with a key not in the JWKS (same `kid` as the real key, so only the signature
   * check can catch it).
   */
  tamperNextIdToken(change: { claims?: Record<string, unknown>; foreignKey?: boolean }): void;
  /** Requests seen at the authorize endpoint (their query parameters), newest last. */
  readonly authorizeRequests: URLSearchParams[];
  close(): Promise<void>;
}

export const DEFAULT_OIDC_ACCOUNT: Readonly<OidcAccount> = Object.freeze({
  sub: 'oidc-subject-1',
  email: 'ada@example.com',
  email_verified: true,
  name: 'Ada Lovelace',
});

const CODE_TTL_SECONDS = 600;
const TOKEN_TTL_SECONDS = 3600;

interface OidcGrant {
  account: OidcAccount;
  clientId: string;
  redirectUri: string;
  scopes: Set<string>;
  nonce: string | undefined;
  codeChallenge: string | undefined;
  expiresAt: number;
  isUsed: boolean;
  accessTokens: string[];
}

/**
 * Starts an OpenID Connect provider: discovery at `${issuer}/.well-known/openid-configuration`,
 * `/authorize` (auto-approves as the current account), `/token` (client_secret_basic or
 * client_secret_post; codes single use, bound to client, redirect_uri and S256 code_challenge),
 * `/userinfo` and `/jwks`. Claims follow the granted scopes as Google does: `email` and
 * `email_verified` need the `email` scope, `name` needs `profile`.
 */
export async function startOidcPeer(options: { clientId?: string; clientSecret?: string } = {}): Promise<OidcPeer> {
  const clientId = options.clientId ?? 'oidc-test-client';
  const clientSecret = options.clientSecret ?? 'oidc-test-secret';
  const authorizeRequests: URLSearchParams[] = [];
  const grants = new Map<string, OidcGrant>();
  const accessTokens = new Map<string, { grant: OidcGrant; expiresAt: number }>();
  let account: OidcAccount = { ...DEFAULT_OIDC_ACCOUNT };
  let isDenyingNext = false;
  let tamper: { claims?: Record<string, unknown>; foreignKey?: boolean } | null = null;

  const issuer = new OAuth2Issuer(false);
  const signingKey = await issuer.keys.generate('RS256');
  const service = new OAuth2Service(issuer);

  service.on(Events.BeforeWellKnownOpenIdConfiguration, (response: MutableResponse) => {
    if (response.body === '') return;
    Object.assign(response.body, {
      // The package advertises "none" and plain PKCE; this peer only does what Google does.
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      code_challenge_methods_supported: ['S256'],
      grant_types_supported: ['authorization_code'],
      scopes_supported: ['openid', 'email', 'profile'],
      claims_supported: ['iss', 'aud', 'sub', 'iat', 'exp', 'nonce', 'email', 'email_verified', 'name'],
    });
  });

  service.on(Events.BeforeAuthorizeRedirect, (redirect: MutableRedirectUri, req: IncomingMessage) => {
    const code = redirect.url.searchParams.get('code');
    if (code === null) return;
    if (isDenyingNext) {
      isDenyingNext = false;
      redirect.url.searchParams.delete('code');
      redirect.url.searchParams.set('error', 'access_denied');
      return;
    }
    const query = new URL(req.url ?? '/', 'http://peer').searchParams;
    grants.set(code, {
      account: { ...account },
      clientId: query.get('client_id') ?? '',
      redirectUri: query.get('redirect_uri') ?? '',
      scopes: parseScopes(query.get('scope')),
      nonce: query.get('nonce') ?? undefined,
      codeChallenge: query.get('code_challenge') ?? undefined,
      expiresAt: nowSeconds() + CODE_TTL_SECONDS,
      isUsed: false,
      accessTokens: [],
    });
  });

  function findAccessToken(req: IncomingMessage): OidcGrant | undefined {
    const token = readAccessToken(req.headers.authorization, ['bearer']);
    const entry = token === null ? undefined : accessTokens.get(token);
    return entry !== undefined && entry.expiresAt > nowSeconds() ? entry.grant : undefined;
  }

  // The front handler below has already refused requests without a live access token.
  service.on(Events.BeforeUserinfo, (response: MutableResponse, req: IncomingMessage) => {
    const grant = findAccessToken(req);
    if (grant === undefined) return;
    response.body = { sub: grant.account.sub, ...scopedClaims(grant.account, grant.scopes) };
  });

  async function signIdToken(grant: OidcGrant): Promise<string> {
    const change = tamper;
    tamper = null;
    let signedPayload: Record<string, unknown> = {};
    const token = await issuer.buildToken({
      kid: signingKey.kid,
      expiresIn: TOKEN_TTL_SECONDS,
      scopesOrTransform: (_header, payload) => {
        const claims: Record<string, unknown> = payload;
        Object.assign(claims, { sub: grant.account.sub, aud: grant.clientId, azp: grant.clientId });
        if (grant.nonce !== undefined) claims['nonce'] = grant.nonce;
        Object.assign(claims, scopedClaims(grant.account, grant.scopes), change?.claims);
        for (const [name, value] of Object.entries(claims)) if (value === undefined) delete claims[name];
        signedPayload = { ...claims };
      },
    });
    if (change?.foreignKey !== true) return token;
    const { privateKey } = await generateKeyPair('RS256');
    return await new SignJWT(signedPayload).setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: signingKey.kid }).sign(privateKey);
  }

  async function handleToken(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const refuse = (status: number, error: string, description: string): void =>
      sendJson(res, status, { error, error_description: description }, { 'cache-control': 'no-store' });
    if (!isFormEncoded(req)) return refuse(400, 'invalid_request', 'The body must be application/x-www-form-urlencoded.');
    const body = new URLSearchParams(await readBody(req));
    if (hasRepeatedParameter(body)) return refuse(400, 'invalid_request', 'A parameter is repeated.');
    const credentials = readClientCredentials(req.headers.authorization, body);
    if (credentials === 'ambiguous') return refuse(400, 'invalid_request', 'Use exactly one client authentication method.');
    if (credentials === null || credentials.clientId !== clientId || credentials.clientSecret !== clientSecret) {
      return refuse(401, 'invalid_client', 'Client authentication failed.');
    }
    if (body.get('grant_type') !== 'authorization_code') return refuse(400, 'unsupported_grant_type', 'Only authorization_code is supported.');
    const grant = grants.get(body.get('code') ?? '');
    if (grant === undefined) return refuse(400, 'invalid_grant', 'The code is unknown.');
    if (grant.isUsed) {
      // RFC 6749 §4.1.2: a replayed code revokes what it already bought.
      for (const token of grant.accessTokens) accessTokens.delete(token);
      return refuse(400, 'invalid_grant', 'The code has already been used.');
    }
    // Any redemption attempt spends the code, so a wrong verifier cannot be retried.
    grant.isUsed = true;
    if (grant.expiresAt <= nowSeconds()) return refuse(400, 'invalid_grant', 'The code has expired.');
    if (grant.clientId !== credentials.clientId) return refuse(400, 'invalid_grant', 'The code was issued to another client.');
    if (body.get('redirect_uri') !== grant.redirectUri) return refuse(400, 'invalid_grant', 'redirect_uri does not match the authorization request.');
    const pkceFailure = checkPkce(grant.codeChallenge, body.get('code_verifier'));
    if (pkceFailure !== null) return refuse(400, 'invalid_grant', pkceFailure);

    const accessToken = randomToken('oidc_at_');
    accessTokens.set(accessToken, { grant, expiresAt: nowSeconds() + TOKEN_TTL_SECONDS });
    grant.accessTokens.push(accessToken);
    const response: Record<string, unknown> = {
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: TOKEN_TTL_SECONDS,
      scope: [...grant.scopes].join(' '),
    };
    if (grant.scopes.has('openid')) response['id_token'] = await signIdToken(grant);
    sendJson(res, 200, response, { 'cache-control': 'no-store', pragma: 'no-cache' });
  }

  /** Refuses what a real provider refuses before redirecting; returns true if it answered. */
  function refuseAuthorize(query: URLSearchParams, res: ServerResponse): boolean {
    const redirectUri = parseAbsoluteUrl(query.get('redirect_uri'));
    // An unknown client or a bad redirect_uri gets an error page, never a redirect (RFC 6749 §4.1.2.1).
    if (query.get('client_id') !== clientId || redirectUri === null) {
      sendText(res, 400, 'invalid_request: unknown client_id or missing/invalid redirect_uri');
      return true;
    }
    const challenge = query.get('code_challenge');
    if (challenge !== null && (query.get('code_challenge_method') !== 'S256' || !/^[A-Za-z0-9_-]{43}$/.test(challenge))) {
      redirectUri.searchParams.set('error', 'invalid_request');
      redirectUri.searchParams.set('error_description', 'Only S256 code challenges are supported.');
      const state = query.get('state');
      if (state !== null) redirectUri.searchParams.set('state', state);
      res.writeHead(302, { location: redirectUri.href }).end();
      return true;
    }
    return false;
  }

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://peer');
    // The package routes "/token/" to "/token" too; match it the same way so nothing slips past.
    const path = url.pathname.length > 1 && url.pathname.endsWith('/') ? url.pathname.slice(0, -1) : url.pathname;
    if (req.method === 'POST' && path === '/token') {
      handleToken(req, res).catch((error: unknown) => failRequest(res, error));
      return;
    }
    if (req.method === 'GET' && path === '/userinfo' && findAccessToken(req) === undefined) {
      // RFC 6750 §3: the refusal is a Bearer challenge, which the package's hook cannot set.
      res.writeHead(401, { 'www-authenticate': 'Bearer error="invalid_token", error_description="The access token is unknown, expired or revoked."' }).end();
      return;
    }
    if (req.method === 'GET' && path === '/authorize') {
      authorizeRequests.push(new URLSearchParams(url.searchParams));
      if (refuseAuthorize(url.searchParams, res)) return;
    }
    service.requestHandler(req, res);
  });
  const origin = await listen(server);
  issuer.url = origin;

  return {
    issuer: origin,
    clientId,
    clientSecret,
    authorizeRequests,
    signInAs(next) {
      account = { ...next };
    },
    denyNext() {
      isDenyingNext = true;
    },
    tamperNextIdToken(change) {
      tamper = { ...change };
    },
    close: () => closeServer(server),
  };
}

function scopedClaims(account: OidcAccount, scopes: Set<string>): Record<string, unknown> {
  const claims: Record<string, unknown> = {};
  if (scopes.has('email')) {
    if (account.email !== undefined) claims['email'] = account.email;
    if (account.email_verified !== undefined) claims['email_verified'] = account.email_verified;
  }
  if (scopes.has('profile') && account.name !== undefined) claims['name'] = account.name;
  return claims;
}

// ---------------------------------------------------------------------------------------------
// GitHub
// ---------------------------------------------------------------------------------------------

export interface GitHubEmail {
  email: string;
  primary: boolean;
  verified: boolean;
  /**
   * As /user/emails reports it. Defaults to "public" for the primary address and null for the
   * others; set "private" on the primary to play a user who hides their email (`/user` then
   * says `email: null`).
   */
  visibility?: 'public' | 'private' | null;
}

export interface GitHubAccount {
  id: number;
  login: string;
  name: string | null;
  emails: GitHubEmail[];
}

export interface GitHubPeer {
  /** Base used as both GITHUB_URL and GITHUB_API_URL. */
  url: string;
  clientId: string;
  clientSecret: string;
  /** The account every authorization from now on signs in as. */
  signInAs(account: GitHubAccount): void;
  /** Next authorization answers ?error=access_denied&error_description=…&error_uri=…&state=… */
  denyNext(): void;
  /** /user and /user/emails answer 500 while on. */
  failApi(on: boolean): void;
  readonly authorizeRequests: URLSearchParams[];
  close(): Promise<void>;
}

export const DEFAULT_GITHUB_ACCOUNT: Readonly<GitHubAccount> = Object.freeze({
  id: 583231,
  login: 'octo-ada',
  name: 'Ada Lovelace',
  emails: [{ email: 'ada@example.com', primary: true, verified: true }],
});

const GITHUB_DOCS = 'https://docs.github.com';

interface GitHubGrant {
  account: GitHubAccount;
  redirectUri: string;
  scopes: string[];
  codeChallenge: string | undefined;
  expiresAt: number;
  isUsed: boolean;
}

/**
 * Starts a GitHub-compatible server: `GET /login/oauth/authorize`, `POST /login/oauth/access_token`,
 * `GET /user`, `GET /user/emails`; every other path is a 404. Token errors come as HTTP 200 with
 * `{error, error_description, error_uri}` as GitHub sends them (`bad_verification_code`,
 * `incorrect_client_credentials`, `redirect_uri_mismatch`); the granted scope is comma-separated;
 * /user/emails needs the `user:email` (or `user`) scope and is a 404 without it, as on GitHub.
 */
export async function startGitHubPeer(options: { clientId?: string; clientSecret?: string } = {}): Promise<GitHubPeer> {
  const clientId = options.clientId ?? 'Iv1.githubtestclient';
  const clientSecret = options.clientSecret ?? 'github-test-secret';
  const authorizeRequests: URLSearchParams[] = [];
  const grants = new Map<string, GitHubGrant>();
  const accessTokens = new Map<string, { account: GitHubAccount; scopes: string[] }>();
  let account: GitHubAccount = cloneGitHubAccount(DEFAULT_GITHUB_ACCOUNT);
  let isDenyingNext = false;
  let isApiFailing = false;

  function authorize(query: URLSearchParams, res: ServerResponse): void {
    authorizeRequests.push(new URLSearchParams(query));
    const redirectUri = parseAbsoluteUrl(query.get('redirect_uri'));
    if (query.get('client_id') !== clientId || redirectUri === null) {
      sendText(res, 404, 'Not Found: unknown client_id or missing/invalid redirect_uri');
      return;
    }
    const redirectWith = (params: Record<string, string>): void => {
      for (const [name, value] of Object.entries(params)) redirectUri.searchParams.set(name, value);
      const state = query.get('state');
      if (state !== null) redirectUri.searchParams.set('state', state);
      res.writeHead(302, { location: redirectUri.href }).end();
    };
    if (isDenyingNext) {
      isDenyingNext = false;
      redirectWith({
        error: 'access_denied',
        error_description: 'The user has denied your application access.',
        error_uri: `${GITHUB_DOCS}/apps/managing-oauth-apps/troubleshooting-authorization-request-errors/#access-denied`,
      });
      return;
    }
    const challenge = query.get('code_challenge');
    if (challenge !== null && query.get('code_challenge_method') !== 'S256') {
      redirectWith({ error: 'invalid_request', error_description: 'code_challenge_method must be S256.' });
      return;
    }
    const code = randomBytes(10).toString('hex');
    grants.set(code, {
      account: cloneGitHubAccount(account),
      redirectUri: query.get('redirect_uri') ?? '',
      scopes: [...parseScopes(query.get('scope'))],
      codeChallenge: challenge ?? undefined,
      expiresAt: nowSeconds() + CODE_TTL_SECONDS,
      isUsed: false,
    });
    redirectWith({ code });
  }

  async function accessToken(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const wantsJson = (req.headers.accept ?? '').includes('application/json');
    const answer = (body: Record<string, string>): void => {
      if (wantsJson) return sendJson(res, 200, body);
      res.writeHead(200, { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' }).end(new URLSearchParams(body).toString());
    };
    // GitHub reports token errors with HTTP 200 and an `error` member.
    const refuse = (error: string, description: string, anchor: string): void =>
      answer({ error, error_description: description, error_uri: `${GITHUB_DOCS}/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#${anchor}` });
    const raw = await readBody(req);
    const body = (req.headers['content-type'] ?? '').includes('application/json') ? jsonToParams(raw) : new URLSearchParams(raw);
    const credentials = readClientCredentials(req.headers.authorization, body);
    if (credentials === 'ambiguous' || credentials === null || credentials.clientId !== clientId || credentials.clientSecret !== clientSecret) {
      return refuse('incorrect_client_credentials', 'The client_id and/or client_secret passed are incorrect.', 'incorrect-client-credentials');
    }
    const badCode = (): void => refuse('bad_verification_code', 'The code passed is incorrect or expired.', 'bad-verification-code');
    const grant = grants.get(body.get('code') ?? '');
    if (grant === undefined || grant.isUsed || grant.expiresAt <= nowSeconds()) return badCode();
    grant.isUsed = true;
    // GitHub lets redirect_uri be left out here; this peer insists, so a client that forgets it is caught.
    if (body.get('redirect_uri') !== grant.redirectUri) {
      return refuse('redirect_uri_mismatch', 'The redirect_uri MUST match the registered callback URL for this application.', 'redirect-uri-mismatch');
    }
    if (checkPkce(grant.codeChallenge, body.get('code_verifier')) !== null) return badCode();
    const token = randomToken('gho_');
    accessTokens.set(token, { account: grant.account, scopes: grant.scopes });
    answer({ access_token: token, token_type: 'bearer', scope: grant.scopes.join(',') });
  }

  function api(path: '/user' | '/user/emails', req: IncomingMessage, res: ServerResponse): void {
    if (req.headers['user-agent'] === undefined) {
      sendJson(res, 403, { message: 'Request forbidden by administrative rules. Please make sure your request has a User-Agent header.' });
      return;
    }
    if (isApiFailing) {
      sendJson(res, 500, { message: 'Server Error' });
      return;
    }
    const token = readAccessToken(req.headers.authorization, ['bearer', 'token']);
    const entry = token === null ? undefined : accessTokens.get(token);
    if (entry === undefined) {
      sendJson(res, 401, { message: 'Bad credentials', documentation_url: `${GITHUB_DOCS}/rest`, status: '401' });
      return;
    }
    const headers = { 'x-oauth-scopes': entry.scopes.join(', ') };
    const emails = entry.account.emails.map((email) => ({
      email: email.email,
      primary: email.primary,
      verified: email.verified,
      visibility: email.visibility !== undefined ? email.visibility : email.primary ? 'public' : null,
    }));
    if (path === '/user/emails') {
      if (!entry.scopes.includes('user:email') && !entry.scopes.includes('user')) {
        sendJson(res, 404, { message: 'Not Found', documentation_url: `${GITHUB_DOCS}/rest`, status: '404' }, headers);
        return;
      }
      sendJson(res, 200, emails, headers);
      return;
    }
    const { id, login, name } = entry.account;
    const publicEmail = emails.find((email) => email.primary && email.visibility === 'public')?.email ?? null;
    sendJson(res, 200, {
      login,
      id,
      node_id: Buffer.from(`04:User${id}`).toString('base64'),
      avatar_url: `https://avatars.githubusercontent.com/u/${id}?v=4`,
      html_url: `https://github.com/${login}`,
      type: 'User',
      name,
      email: publicEmail,
    }, headers);
  }

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://peer');
    const route = `${req.method ?? ''} ${url.pathname}`;
    const handle = async (): Promise<void> => {
      switch (route) {
        case 'GET /login/oauth/authorize':
          return authorize(url.searchParams, res);
        case 'POST /login/oauth/access_token':
          return await accessToken(req, res);
        case 'GET /user':
          return api('/user', req, res);
        case 'GET /user/emails':
          return api('/user/emails', req, res);
        default:
          return sendJson(res, 404, { message: 'Not Found', documentation_url: `${GITHUB_DOCS}/rest` });
      }
    };
    handle().catch((error: unknown) => failRequest(res, error));
  });
  const origin = await listen(server);

  return {
    url: origin,
    clientId,
    clientSecret,
    authorizeRequests,
    signInAs(next) {
      account = cloneGitHubAccount(next);
    },
    denyNext() {
      isDenyingNext = true;
    },
    failApi(on) {
      isApiFailing = on;
    },
    close: () => closeServer(server),
  };
}

function cloneGitHubAccount(account: GitHubAccount): GitHubAccount {
  return { ...account, emails: account.emails.map((email) => ({ ...email })) };
}

function jsonToParams(raw: string): URLSearchParams {
  const params = new URLSearchParams();
  try {
    const parsed: unknown = JSON.parse(raw);
    if (typeof parsed === 'object' && parsed !== null) {
      for (const [name, value] of Object.entries(parsed)) if (typeof value === 'string') params.set(name, value);
    }
  } catch {
    // A malformed body is treated as empty; the handler then refuses for missing credentials.
  }
  return params;
}

// ---------------------------------------------------------------------------------------------
// Shared plumbing
// ---------------------------------------------------------------------------------------------

const MAX_BODY_BYTES = 64 * 1024;

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

function randomToken(prefix: string): string {
  return `${prefix}${randomBytes(27).toString('base64url')}`;
}

function parseScopes(scope: string | null): Set<string> {
  return new Set((scope ?? '').split(/[\s,]+/).filter((name) => name !== ''));
}

function parseAbsoluteUrl(value: string | null): URL | null {
  if (value === null || !URL.canParse(value)) return null;
  const url = new URL(value);
  return url.protocol === 'http:' || url.protocol === 'https:' ? url : null;
}

function isFormEncoded(req: IncomingMessage): boolean {
  return (req.headers['content-type'] ?? '').toLowerCase().startsWith('application/x-www-form-urlencoded');
}

function hasRepeatedParameter(params: URLSearchParams): boolean {
  return new Set(params.keys()).size !== [...params.keys()].length;
}

/** Null if the verifier proves the challenge (RFC 7636 §4.6, S256 only), else why not. */
function checkPkce(challenge: string | undefined, verifier: string | null): string | null {
  if (challenge === undefined) {
    // Refusing an unexpected verifier stops a downgrade where the challenge was stripped in transit.
    return verifier === null ? null : 'code_verifier sent for a code issued without a code_challenge.';
  }
  if (verifier === null) return 'code_verifier is required.';
  if (!/^[A-Za-z0-9\-._~]{43,128}$/.test(verifier)) return 'code_verifier is malformed.';
  const computed = createHash('sha256').update(verifier).digest('base64url');
  return computed === challenge ? null : 'code_verifier does not match the code_challenge.';
}

type ClientCredentials = { clientId: string; clientSecret: string };

/**
 * Reads client_secret_basic (RFC 6749 §2.3.1: both halves form-urlencoded, then base64) or
 * client_secret_post. A body client_id beside Basic is allowed if it agrees; a secret in both is not.
 */
function readClientCredentials(authorization: string | undefined, body: URLSearchParams): ClientCredentials | 'ambiguous' | null {
  const basic = /^basic\s+(\S+)$/i.exec(authorization ?? '');
  if (basic?.[1] !== undefined) {
    if (body.has('client_secret')) return 'ambiguous';
    const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon === -1) return null;
    const formDecode = (part: string): string => decodeURIComponent(part.replaceAll('+', ' '));
    try {
      const credentials = { clientId: formDecode(decoded.slice(0, colon)), clientSecret: formDecode(decoded.slice(colon + 1)) };
      const bodyClientId = body.get('client_id');
      if (bodyClientId !== null && bodyClientId !== credentials.clientId) return 'ambiguous';
      return credentials;
    } catch {
      return null;
    }
  }
  const id = body.get('client_id');
  const secret = body.get('client_secret');
  return id === null || secret === null ? null : { clientId: id, clientSecret: secret };
}

function readAccessToken(authorization: string | undefined, schemes: string[]): string | null {
  const match = /^(\S+)\s+(\S+)$/.exec(authorization ?? '');
  if (match?.[1] === undefined || match[2] === undefined) return null;
  return schemes.includes(match[1].toLowerCase()) ? match[2] : null;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += buffer.length;
    if (size > MAX_BODY_BYTES) throw new Error('request body too large');
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const content = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(content), ...headers }).end(content);
}

function sendText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' }).end(text);
}

function failRequest(res: ServerResponse, error: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, 500, { error: 'server_error', error_description: error instanceof Error ? error.message : String(error) });
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return `http://127.0.0.1:${port}`;
}

async function closeServer(server: Server): Promise<void> {
  if (!server.listening) return;
  const closed = new Promise<void>((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
  // Keep-alive sockets from fetch would otherwise hold the test process open.
  server.closeAllConnections();
  await closed;
}

/** The environment that points Gatehouse's providers at these peers. */
export function peerEnv(peers: { google?: OidcPeer; oidc?: OidcPeer; github?: GitHubPeer }): Record<string, string> {
  const { google, oidc, github } = peers;
  return {
    ...(google && { GOOGLE_CLIENT_ID: google.clientId, GOOGLE_CLIENT_SECRET: google.clientSecret, GOOGLE_ISSUER: google.issuer }),
    ...(oidc && { OIDC_CLIENT_ID: oidc.clientId, OIDC_CLIENT_SECRET: oidc.clientSecret, OIDC_ISSUER: oidc.issuer }),
    ...(github && { GITHUB_CLIENT_ID: github.clientId, GITHUB_CLIENT_SECRET: github.clientSecret, GITHUB_URL: github.url, GITHUB_API_URL: github.url }),
  };
}
