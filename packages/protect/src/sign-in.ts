/**
 * Sign-in mode: gatehouse-protect as the app's OpenID Connect relying party, for an app on any
 * origin. Gatehouse's session cookie never reaches an app on another host, so the app gets a
 * session of its own from Gatehouse's OpenID Provider:
 *
 * - `GET {signIn}?returnTo=/path` starts the authorization code flow with PKCE (`state`, `nonce`,
 *   kept in a sealed, short-lived cookie); openid-client does the protocol.
 * - `GET {callback}` finishes it: `state`, `iss` (RFC 9207), the ID token and its `nonce` checked by
 *   openid-client; the app's session is a sealed cookie (session-cookie.ts) holding the user's
 *   claims and the tokens, and the browser goes on to `returnTo` (a path of this app only).
 * - Every request: the session is opened, refreshed before its access token expires (one refresh
 *   per refresh token in this process, however many requests ask at once: Gatehouse rotates refresh
 *   tokens and treats a reused one as stolen), and judged by the same rules as token mode.
 * - `POST {signOut}` (from this app's pages only) ends the app's session and sends the browser to
 *   Gatehouse's end-session endpoint (RP-initiated logout), which comes back to `postLogoutPath`.
 * - `POST {backchannelLogout}` takes Gatehouse's logout tokens (OpenID Back-Channel Logout 1.0):
 *   verified against Gatehouse's keys, each accepted once; the sessions they name end at their next
 *   request. Remembered in `store` (this process's memory by default: give a shared store when the
 *   app runs on several instances).
 */
import * as oidc from 'openid-client';
import { createRemoteJWKSet, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { DENIALS } from './contract.ts';
import { SEED_RULES, decidePath, isApiRequestPath, readRequestPath, type Decision } from './rules.ts';
import type { GatehouseUser } from './protector.types.ts';
import type { SignIn, SignInOptions, SignInPaths, SignInResult } from './sign-in.types.ts';
import { createLogoutRecord, memoryStore } from './sign-in-logout.ts';
import { clearChunked, createSealer, parseCookieHeader, readChunked, serializeCookie, writeChunked, type CookieOptions } from './session-cookie.ts';

const DEFAULT_PATHS: SignInPaths = { signIn: '/auth/signin', callback: '/auth/callback', signOut: '/auth/signout', backchannelLogout: '/auth/backchannel-logout' };
const TRANSACTION_SECONDS = 600;
/** Refresh this long before the access token expires. */
const REFRESH_AHEAD_SECONDS = 30;
/** After a failed refresh that may be temporary (Gatehouse unreachable), wait this long before trying again. */
const REFRESH_RETRY_SECONDS = 15;
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/** The session as sealed in the cookie. */
interface SessionData extends JWTPayload {
  sub: string;
  /** Gatehouse's session id for this app (the ID token's `sid`), when it says. */
  sid?: string;
  name?: string;
  email?: string;
  roles: string[];
  amr: string[];
  authTime?: number;
  scope: string;
  idToken?: string;
  accessToken: string;
  /** Epoch seconds. */
  accessTokenExpiresAt: number;
  refreshToken?: string;
  /** Epoch seconds: the session began (a back-channel logout ends those begun before it). */
  since: number;
  /** Epoch seconds: the session's absolute end. */
  until: number;
}

export function createSignIn(options: SignInOptions): SignIn {
  const issuer = new URL(options.issuer);
  if (issuer.protocol !== 'https:' && !(issuer.protocol === 'http:' && LOOPBACK_HOSTS.has(issuer.hostname))) {
    throw new TypeError('gatehouse-protect: the issuer must be an https URL (http only on localhost, for development)');
  }
  const appUrl = new URL(options.appUrl);
  const appOrigin = appUrl.origin;
  const paths: SignInPaths = { ...DEFAULT_PATHS, ...options.paths };
  for (const [name, path] of Object.entries(paths)) {
    if (!/^\/[A-Za-z0-9._~\-/]*$/.test(path)) throw new TypeError(`gatehouse-protect: paths.${name} must be a path such as /auth/callback`);
  }
  const postLogoutPath = options.postLogoutPath ?? '/';
  const rules = options.rules ?? SEED_RULES;
  const scope = options.scope ?? 'openid email profile roles offline_access';
  if (!scope.split(' ').includes('openid')) throw new TypeError('gatehouse-protect: the sign-in scope must include openid');
  const maxAge = options.sessionMaxAgeSeconds ?? 7 * 86_400;
  const secure = appUrl.protocol === 'https:';
  const prefix = secure ? '__Host-' : '';
  const sessionCookie = `${prefix}gatehouse-app.session`;
  const transactionCookie = `${prefix}gatehouse-app.signin`;
  const cookieOptions: CookieOptions = { secure, maxAgeSeconds: maxAge };
  const secrets = typeof options.secret === 'string' ? [options.secret] : [...options.secret];
  const sessions = createSealer(secrets, 'session');
  const transactions = createSealer(secrets, 'sign-in transaction');
  const store = options.store ?? memoryStore();
  const fetchImpl = options.fetch;

  let discovered: Promise<{ config: oidc.Configuration; keys: JWTVerifyGetKey }> | undefined;
  function configuration() {
    discovered ??= (async () => {
      const config = await oidc.discovery(
        issuer,
        options.clientId,
        options.clientSecret,
        options.clientSecret === undefined ? oidc.None() : oidc.ClientSecretBasic(options.clientSecret),
        { ...(issuer.protocol === 'http:' && { execute: [oidc.allowInsecureRequests] }), ...(fetchImpl !== undefined && { [oidc.customFetch]: fetchImpl as unknown as oidc.CustomFetch }) },
      );
      const jwksUri = config.serverMetadata().jwks_uri;
      if (jwksUri === undefined) throw new Error('gatehouse-protect: the issuer publishes no jwks_uri');
      return { config, keys: createRemoteJWKSet(new URL(jwksUri), { cooldownDuration: 30_000 }) };
    })().catch((error: unknown) => {
      discovered = undefined; // an unreachable Gatehouse is asked again by the next request
      throw error;
    });
    return discovered;
  }

  const logouts = createLogoutRecord({
    store,
    rememberSeconds: maxAge,
    clientId: options.clientId,
    verification: async () => {
      const { keys, config } = await configuration();
      return { keys, issuer: config.serverMetadata().issuer };
    },
  });

  /** One refresh per refresh token at a time, and its answer kept briefly for requests still carrying the old cookie. */
  const refreshes = new Map<string, { until: number; result: Promise<SessionData | null | 'retry'> }>();
  const now = () => Math.floor(Date.now() / 1000);

  async function sealSession(session: SessionData, present: ReadonlyMap<string, string>): Promise<string[]> {
    return writeChunked(sessionCookie, await sessions.seal(session, session.until), { ...cookieOptions, maxAgeSeconds: session.until - now() }, present);
  }

  /**
   * The session the tokens make, with the user's claims: the ID token says who and how (`sub`,
   * `sid`, `amr`, `auth_time`), userinfo what they are now (name, e-mail, roles: Gatehouse puts the
   * scopes' claims there when it issues an access token).
   */
  async function sessionFrom(config: oidc.Configuration, tokens: oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers, previous: SessionData | null): Promise<SessionData> {
    const idClaims = tokens.claims() as (oidc.IDToken & Record<string, unknown>) | undefined;
    const subject = idClaims?.sub ?? previous?.sub;
    if (subject === undefined) throw new Error('no ID token');
    // On a refresh the new tokens are kept whatever userinfo does (the old refresh token is spent:
    // dropping them would reuse it, and Gatehouse ends a grant whose refresh token comes back).
    const info = previous === null ? ((await oidc.fetchUserInfo(config, tokens.access_token, subject)) as Record<string, unknown>) : await oidc.fetchUserInfo(config, tokens.access_token, subject).catch(() => ({}) as Record<string, unknown>);
    const claims = { ...idClaims, ...info } as Record<string, unknown> & { sub: string };
    const held = (value: unknown): string[] | undefined => (Array.isArray(value) && value.every((item) => typeof item === 'string') ? [...value] : undefined);
    const sub = subject;
    const since = previous?.since ?? now();
    const session: SessionData = {
      sub,
      roles: held(claims.roles) ?? previous?.roles ?? [],
      amr: held(claims.amr) ?? previous?.amr ?? [],
      scope: tokens.scope ?? previous?.scope ?? scope,
      accessToken: tokens.access_token,
      accessTokenExpiresAt: now() + (tokens.expiresIn() ?? 300),
      since,
      until: previous?.until ?? since + maxAge,
    };
    const sid = typeof claims.sid === 'string' ? claims.sid : previous?.sid;
    if (sid !== undefined) session.sid = sid;
    const name = typeof claims.name === 'string' ? claims.name : previous?.name;
    if (name !== undefined) session.name = name;
    const email = typeof claims.email === 'string' ? claims.email : previous?.email;
    if (email !== undefined) session.email = email;
    const authTime = typeof claims.auth_time === 'number' ? claims.auth_time : previous?.authTime;
    if (authTime !== undefined) session.authTime = authTime;
    const idToken = tokens.id_token ?? previous?.idToken;
    if (idToken !== undefined) session.idToken = idToken;
    const refreshToken = tokens.refresh_token ?? previous?.refreshToken;
    if (refreshToken !== undefined) session.refreshToken = refreshToken;
    return session;
  }

  function refreshed(session: SessionData): Promise<SessionData | null | 'retry'> {
    const refreshToken = session.refreshToken!;
    const current = refreshes.get(refreshToken);
    if (current !== undefined && current.until > now()) return current.result;
    const result = (async () => {
      try {
        const { config } = await configuration();
        return await sessionFrom(config, await oidc.refreshTokenGrant(config, refreshToken), session);
      } catch (error) {
        // Gatehouse ended the grant (a sign-out everywhere, a new password, the app disconnected): so does the session.
        if (error instanceof oidc.ResponseBodyError && error.error === 'invalid_grant') return null;
        return 'retry';
      }
    })();
    for (const [token, entry] of refreshes) if (entry.until <= now()) refreshes.delete(token);
    refreshes.set(refreshToken, { until: now() + 60, result });
    void result.then((outcome) => {
      if (outcome === 'retry') refreshes.set(refreshToken, { until: now() + REFRESH_RETRY_SECONDS, result: Promise.resolve('retry') });
    });
    return result;
  }

  /** The request's session, current (refreshed when due), or null; and the cookies to set. */
  async function currentSession(cookies: ReadonlyMap<string, string>): Promise<{ session: SessionData | null; setCookie: string[] }> {
    const sealed = readChunked(cookies, sessionCookie);
    if (sealed === undefined) return { session: null, setCookie: [] };
    const opened = (await sessions.open(sealed, 'session')) as SessionData | null;
    const end = (): { session: null; setCookie: string[] } => ({ session: null, setCookie: clearChunked(sessionCookie, cookieOptions, cookies) });
    if (opened === null || typeof opened.sub !== 'string' || opened.until <= now()) return end();
    if (await logouts.isEnded(opened)) return end();
    if (opened.refreshToken === undefined || opened.accessTokenExpiresAt - REFRESH_AHEAD_SECONDS > now()) return { session: opened, setCookie: [] };
    const next = await refreshed(opened);
    if (next === null) return end();
    if (next === 'retry') return { session: opened, setCookie: [] };
    return { session: next, setCookie: await sealSession(next, cookies) };
  }

  function userOf(session: SessionData): GatehouseUser {
    return {
      userId: session.sub,
      sessionId: null,
      clientId: options.clientId,
      scopes: session.scope.split(' ').filter((value) => value !== ''),
      roles: [...session.roles],
      amr: [...session.amr],
      authTime: session.authTime ?? null,
      org: null,
      actors: [],
      ...(session.email !== undefined && { email: session.email }),
      ...(session.name !== undefined && { name: session.name }),
    };
  }

  /** A path of this app to come back to; anything else (another origin, `//host`, a backslash) is `/`. */
  function safeReturnTo(value: string | null): string {
    if (value === null || !value.startsWith('/') || value.startsWith('//') || value.includes('\\') || /[\u0000-\u001f]/.test(value)) return '/';
    // As a URL encodes it (non-ASCII percent-encoded: it goes into a Location header), and still this app's.
    const parsed = new URL(value, appOrigin);
    return parsed.origin === appOrigin ? `${parsed.pathname}${parsed.search}${parsed.hash}` : '/';
  }

  const redirect = (location: string, setCookie: string[] = []): Response => {
    const headers = new Headers({ location, 'cache-control': 'no-store' });
    for (const cookie of setCookie) headers.append('set-cookie', cookie);
    return new Response(null, { status: 303, headers });
  };
  const plain = (status: number, body: Record<string, string>): Response =>
    new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' } });

  async function startSignIn(url: URL): Promise<Response> {
    const { config } = await configuration();
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const returnTo = safeReturnTo(url.searchParams.get('returnTo'));
    const parameters: Record<string, string> = {
      redirect_uri: `${appOrigin}${paths.callback}`,
      scope,
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    };
    // A refresh token is issued only when consent was asked for it (OpenID Connect Core 11).
    if (scope.split(' ').includes('offline_access')) parameters.prompt = 'consent';
    if (url.searchParams.get('stepUp') === '1') parameters.prompt = parameters.prompt === undefined ? 'login' : `${parameters.prompt} login`;
    const transaction = await transactions.seal({ state, nonce, verifier, returnTo }, now() + TRANSACTION_SECONDS);
    return redirect(oidc.buildAuthorizationUrl(config, parameters).href, [serializeCookie(transactionCookie, transaction, { secure, maxAgeSeconds: TRANSACTION_SECONDS })]);
  }

  async function finishSignIn(rawPath: string, cookies: ReadonlyMap<string, string>): Promise<Response> {
    const clearTransaction = serializeCookie(transactionCookie, '', { secure, maxAgeSeconds: 0 });
    const sealed = cookies.get(transactionCookie);
    const transaction = sealed === undefined ? null : await transactions.open(sealed, 'sign-in transaction');
    if (transaction === null) return redirect(`${paths.signIn}?returnTo=${encodeURIComponent('/')}`, [clearTransaction]);
    const { state, nonce, verifier, returnTo } = transaction as { state: string; nonce: string; verifier: string; returnTo: string };
    const callbackUrl = new URL(rawPath, appOrigin);
    if (callbackUrl.searchParams.has('error')) {
      // Refused at Gatehouse (the person declined, or the app may not sign them in): say so, plainly.
      return new Response(`<!doctype html><title>Not signed in</title><h1>Not signed in</h1><p>The sign-in was not completed (${escapeHtml(callbackUrl.searchParams.get('error') ?? '')}).</p><p><a href="/">Back</a></p>`, {
        status: 400,
        headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'set-cookie': clearTransaction },
      });
    }
    let session: SessionData;
    try {
      const { config } = await configuration();
      const tokens = await oidc.authorizationCodeGrant(config, callbackUrl, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true });
      session = await sessionFrom(config, tokens, null);
    } catch {
      // A forged or replayed callback, another browser's, an expired code: no session, start again.
      const headers = new Headers({ 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
      headers.append('set-cookie', clearTransaction);
      return new Response(JSON.stringify({ error: 'SIGN_IN_FAILED', message: 'The sign-in could not be completed. Start it again.' }), { status: 400, headers });
    }
    return redirect(returnTo, [clearTransaction, ...(await sealSession(session, cookies))]);
  }

  async function signOut(request: Request, cookies: ReadonlyMap<string, string>): Promise<Response> {
    // Only this app's own pages may sign its users out (a cross-site form must not).
    const origin = request.headers.get('origin');
    const site = request.headers.get('sec-fetch-site');
    if (!(origin === appOrigin || (origin === null && site === 'same-origin'))) return plain(403, { error: 'FORBIDDEN', message: 'Sign out from this app’s own pages.' });
    const sealed = readChunked(cookies, sessionCookie);
    const session = sealed === undefined ? null : ((await sessions.open(sealed, 'session')) as SessionData | null);
    const cleared = clearChunked(sessionCookie, cookieOptions, cookies);
    const back = `${appOrigin}${postLogoutPath}`;
    if (session === null) return redirect(back, cleared);
    // A copy of the cookie must not outlive the sign-out: its session is recorded as ended, and its
    // refresh token revoked at Gatehouse (best effort: the redirect below ends Gatehouse's part too).
    await logouts.recordSignOut(session);
    try {
      const { config } = await configuration();
      if (session.refreshToken !== undefined) await oidc.tokenRevocation(config, session.refreshToken, { token_type_hint: 'refresh_token' }).catch(() => undefined);
      const parameters: Record<string, string> = { post_logout_redirect_uri: back, client_id: options.clientId };
      if (session.idToken !== undefined) parameters.id_token_hint = session.idToken;
      return redirect(oidc.buildEndSessionUrl(config, parameters).href, cleared);
    } catch {
      return redirect(back, cleared);
    }
  }

  function denial(decision: Extract<Decision, { action: 'deny' }>, isApi: boolean, rawPath: string, setCookie: string[]): Response {
    const withCookies = (response: Response) => {
      for (const cookie of setCookie) response.headers.append('set-cookie', cookie);
      return response;
    };
    if (isApi || decision.reason === 'BAD_REQUEST' || decision.reason === 'INSUFFICIENT_SCOPE') {
      const { status, message } = DENIALS[decision.reason];
      const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' };
      if (status === 401) headers['www-authenticate'] = 'Bearer';
      return withCookies(new Response(JSON.stringify({ error: decision.reason, message }), { status, headers }));
    }
    if (decision.reason === 'UNAUTHENTICATED' || decision.reason === 'STEP_UP_REQUIRED') {
      const target = new URLSearchParams({ returnTo: rawPath, ...(decision.reason === 'STEP_UP_REQUIRED' && { stepUp: '1' }) });
      return redirect(`${paths.signIn}?${target}`, setCookie);
    }
    const text = decision.reason === 'ORGANIZATION_ROLE_REQUIRED' ? 'Your role in the active organization does not allow this page.' : 'Your account does not have the role this page needs.';
    return withCookies(new Response(`<!doctype html><title>Access denied</title><h1>Access denied</h1><p>${text}</p>`, { status: 403, headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' } }));
  }

  return {
    paths,
    async authenticate(request) {
      const header = request === null || typeof request === 'string' ? request : request.headers.get('cookie');
      const sealed = readChunked(parseCookieHeader(header), sessionCookie);
      const session = sealed === undefined ? null : ((await sessions.open(sealed, 'session')) as SessionData | null);
      if (session === null || typeof session.sub !== 'string' || session.until <= now() || (await logouts.isEnded(session))) return null;
      return userOf(session);
    },
    async handle(request, rawPath) {
      const url = new URL(request.url);
      const target = rawPath ?? `${url.pathname}${url.search}`;
      const path = url.pathname;
      const cookies = parseCookieHeader(request.headers.get('cookie'));
      const answer = (response: Response): SignInResult => ({ response, user: null, accessToken: null, setCookie: [] });
      try {
        if (path === paths.signIn && request.method === 'GET') return answer(await startSignIn(url));
        if (path === paths.callback && request.method === 'GET') return answer(await finishSignIn(target, cookies));
        if (path === paths.signOut && request.method === 'POST') return answer(await signOut(request, cookies));
        if (path === paths.backchannelLogout && request.method === 'POST') return answer(await logouts.receiveLogoutToken(request));
      } catch {
        // Gatehouse unreachable while starting or finishing: nothing is granted.
        return answer(plain(503, { error: 'SIGN_IN_UNAVAILABLE', message: 'Signing in is not possible right now. Try again shortly.' }));
      }
      const requestPath = readRequestPath(target);
      // A store or Gatehouse that fails here grants nothing (no session), and is no 500.
      const { session, setCookie } = await currentSession(cookies).catch(() => ({ session: null, setCookie: [] as string[] }));
      const user = session === null ? null : userOf(session);
      const decision = decidePath(requestPath, user === null ? null : { roles: user.roles, amr: user.amr, org: null, scopes: user.scopes }, rules);
      const accessToken = session?.accessToken ?? null;
      if (decision.action === 'allow') return { response: null, user, accessToken, setCookie };
      return { response: denial(decision, isApiRequestPath(requestPath), target, setCookie), user, accessToken, setCookie: [] };
    },
  };
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`);
}
