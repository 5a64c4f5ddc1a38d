/**
 * gatehouse-client: a small typed client for a Gatehouse service, for browsers and Node.
 *
 * Web APIs only (fetch, Request, Headers, BroadcastChannel, Web Locks when present), so the same
 * file runs in a page, a worker, Node 20+ and edge runtimes. Expected outcomes (a wrong password, a
 * second factor, a network failure) are values; only programmer errors throw.
 */

import type { GatehouseClient, GatehouseClientOptions, GatehouseError, RefreshResult, SecondFactorAnswer, SessionResult, SessionState, SignInResult, SignOutResult, StoredTokens } from './types.ts';
import { memoryStorage } from './storage.ts';
import { errorFrom, errorFromBody, isCsrfFailure, isRecord, isReplayable, isRequest, isResponse, networkError, readJson, sessionFrom, tokensFrom, unexpected, urlOf } from './http.ts';
import { passkeyStep } from './passkey.ts';
import { refreshCoordinator } from './tabs.ts';

export type * from './types.ts';
export { memoryStorage, localStorageAdapter, type KeyValueStorage } from './storage.ts';
export { verifyWebhook, signWebhook, WebhookVerificationError, type WebhookEvent, type WebhookHeaders, type VerifyWebhookOptions, type WebhookVerificationReason } from './webhooks.ts';

const LOADING: SessionState = { status: 'loading', session: null };
const SIGNED_OUT: SessionState = { status: 'signed-out', session: null };
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function createGatehouseClient(options: GatehouseClientOptions): GatehouseClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const baseOrigin = new URL(baseUrl).origin;
  const cookieMode = options.mode === 'cookies';
  if (cookieMode && options.storage !== undefined) throw new TypeError("mode 'cookies' keeps no tokens: leave out `storage`");
  // Called through a wrapper: a browser's fetch throws when called with another `this`.
  const send: typeof fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const storage = options.storage ?? memoryStorage();
  const aheadMs = Math.max(0, options.refreshAheadSeconds ?? 30) * 1000;
  const tabs = refreshCoordinator(storage);

  let state: SessionState = LOADING;
  const listeners = new Set<(state: SessionState) => void>();
  let csrfToken: string | null = null;
  let inFlight: Promise<RefreshResult> | null = null;

  // Other tabs that share this session hear of sign-in and sign-out, so their UI follows.
  const channelKey = cookieMode ? `cookies:${baseOrigin}` : storage.sharedKey;
  const channel = channelKey !== undefined && typeof BroadcastChannel !== 'undefined' ? new BroadcastChannel(`gatehouse:${channelKey}`) : null;
  if (channel !== null) {
    channel.onmessage = (event: MessageEvent) => {
      const message = event.data as { type?: unknown; state?: SessionState } | null;
      if (message?.type === 'state' && message.state !== undefined) setState(message.state, false);
    };
    // Node: a listening channel would keep the process alive.
    (channel as { unref?: () => void }).unref?.();
  }

  function setState(next: SessionState, broadcast = true): void {
    // Same content, same object: useSyncExternalStore re-renders only on real changes.
    if (next.status === state.status && JSON.stringify(next.session) === JSON.stringify(state.session)) return;
    state = next;
    for (const listener of [...listeners]) listener(state);
    options.onSessionChange?.(state);
    if (broadcast) channel?.postMessage({ type: 'state', state });
  }

  /** A call to the service itself: never throws; a network failure is an error value. */
  async function callService(path: string, init: RequestInit & { json?: unknown; bearer?: string } = {}): Promise<Response | GatehouseError> {
    const { json, bearer, ...rest } = init;
    const unsafe = !SAFE_METHODS.has((rest.method ?? 'GET').toUpperCase());
    const attempt = async () => {
      const headers = new Headers(rest.headers);
      if (json !== undefined) headers.set('content-type', 'application/json');
      if (bearer !== undefined) headers.set('authorization', `Bearer ${bearer}`);
      if (cookieMode && unsafe) {
        const token = await csrf();
        if (token !== null) headers.set('x-csrf-token', token);
      }
      return send(`${baseUrl}${path}`, {
        ...rest,
        headers,
        ...(json !== undefined && { body: JSON.stringify(json) }),
        // Token mode carries no cookie, and takes none (a passkey's answer sets them for cookie mode):
        // on Gatehouse's own origin, cookies without a Bearer token would make its requests need CSRF tokens.
        credentials: cookieMode ? 'include' : 'omit',
      });
    };
    try {
      const response = await attempt();
      if (!cookieMode || !unsafe || !(await isCsrfFailure(response))) return response;
      // The CSRF secret changes with each sign-in (maybe in another tab): fetch a new token once.
      csrfToken = null;
      return await attempt();
    } catch (cause) {
      return networkError(cause);
    }
  }

  /** Cookie mode: the token the service wants with unsafe requests that carry its cookies. */
  async function csrf(): Promise<string | null> {
    if (csrfToken !== null) return csrfToken;
    try {
      const response = await send(`${baseUrl}/api/auth/csrf`, { credentials: 'include' });
      const body = await readJson(response);
      csrfToken = isRecord(body) && typeof body.csrfToken === 'string' ? body.csrfToken : null;
    } catch {
      csrfToken = null;
    }
    return csrfToken;
  }

  // --- refresh: one rotation at a time per session ---------------------------------------------

  /**
   * Joins the rotation under way in this instance, or starts one. `seen` is the refresh token the
   * caller knew: if the stored one differs once the lock is held, someone else rotated meanwhile
   * and their tokens are used, so a spent refresh token is never presented again.
   */
  function refreshOnce(seen: string | undefined): Promise<RefreshResult> {
    inFlight ??= (cookieMode ? refreshCookies() : tabs.exclusive(() => rotate(seen))).finally(() => {
      inFlight = null;
    });
    return inFlight;
  }

  async function rotate(seen: string | undefined): Promise<RefreshResult> {
    const current = await storage.get();
    if (current === null) return signedOut({ code: 'UNAUTHENTICATED', message: 'Not signed in.' });
    if (seen !== undefined && current.refreshToken !== seen) return { status: 'refreshed' };
    // Another tab rotated these tokens, and this tab's storage has not caught up yet.
    const elsewhere = await tabs.replacedElsewhere(current);
    if (elsewhere === 'replaced') return { status: 'refreshed' };
    if (elsewhere === 'signed-out') return signedOut({ code: 'UNAUTHENTICATED', message: 'Signed out in another tab.' });
    if (elsewhere === 'stale') return { status: 'error', error: { code: 'STORAGE_OUT_OF_SYNC', message: "Another tab refreshed the session, but its tokens did not reach this tab's storage." } };
    const response = await callService('/api/auth/refresh', { method: 'POST', json: { refreshToken: current.refreshToken } });
    if (!isResponse(response)) return { status: 'error', error: response };
    if (response.ok) {
      const tokens = tokensFrom(await readJson(response));
      if (tokens === null) return { status: 'error', error: unexpected(response.status) };
      await storage.set(tokens);
      await tabs.rotated(current.refreshToken);
      return { status: 'refreshed' };
    }
    const error = await errorFrom(response);
    if (response.status !== 401) return { status: 'error', error };
    // Refused. Unless another tab (one without Web Locks) rotated meanwhile, the session is over.
    const latest = await storage.get();
    if (latest !== null && latest.refreshToken !== current.refreshToken) return { status: 'refreshed' };
    return signedOut(error);
  }

  /** Cookie mode: the service refreshes the cookies itself on any request whose access cookie expired. */
  async function refreshCookies(): Promise<RefreshResult> {
    const result = await getSession();
    if (result.status === 'signed-in') return { status: 'refreshed' };
    if (result.status === 'signed-out') return { status: 'signed-out', error: { code: 'UNAUTHENTICATED', message: 'Not signed in.', status: 401 } };
    return result;
  }

  async function signedOut(error: GatehouseError): Promise<RefreshResult> {
    await storage.set(null);
    setState(SIGNED_OUT);
    return { status: 'signed-out', error };
  }

  async function refresh(): Promise<RefreshResult> {
    return refreshOnce(cookieMode ? undefined : (await storage.get())?.refreshToken);
  }

  // --- requests with the session ---------------------------------------------------------------

  /** Token mode: the stored tokens, refreshed first when the access token is (nearly) expired. */
  async function usableTokens(): Promise<StoredTokens | null> {
    const tokens = await storage.get();
    if (tokens === null || Date.parse(tokens.expiresAt) - aheadMs > Date.now()) return tokens;
    await refreshOnce(tokens.refreshToken);
    return storage.get();
  }

  /** The request with the session, and what the refresh it needed (if any) came to. */
  async function authorized(input: Request | string | URL, init: RequestInit = {}): Promise<{ response: Response; refreshed?: RefreshResult }> {
    const target = resolve(input);
    const headers = new Headers(init.headers ?? (isRequest(target) ? target.headers : undefined));
    if (cookieMode) return { response: await withCookies(target, init, headers) };
    // The caller chose its own credentials: leave them alone.
    if (headers.has('authorization')) return { response: await send(target, init) };

    const tokens = await usableTokens();
    const attempt = (accessToken: string | undefined) => {
      const attemptHeaders = new Headers(headers);
      if (accessToken !== undefined) attemptHeaders.set('authorization', `Bearer ${accessToken}`);
      return send(target, { ...init, headers: attemptHeaders });
    };
    const first = await attempt(tokens?.accessToken);
    if (first.status !== 401 || tokens === null) return { response: first };

    const refreshed = await refreshOnce(tokens.refreshToken);
    const next = await storage.get();
    // A streamed body was consumed by the first attempt: the caller gets the 401 (the next call has the new token).
    if (refreshed.status !== 'refreshed' || next === null || next.accessToken === tokens.accessToken || !isReplayable(target, init)) {
      return { response: first, refreshed };
    }
    await first.body?.cancel().catch(() => undefined);
    return { response: await attempt(next.accessToken), refreshed };
  }

  /** Cookie mode: the browser's cookies, and the CSRF token for unsafe requests to the service. */
  async function withCookies(target: Request | string | URL, init: RequestInit, headers: Headers): Promise<Response> {
    const method = (init.method ?? (isRequest(target) ? target.method : 'GET')).toUpperCase();
    const needsCsrf = !SAFE_METHODS.has(method) && new URL(urlOf(target)).origin === baseOrigin;
    const attempt = async () => {
      if (needsCsrf) {
        const token = await csrf();
        if (token !== null) headers.set('x-csrf-token', token);
      }
      return send(target, { ...init, headers, credentials: 'include' });
    };
    const first = await attempt();
    if (!needsCsrf || !isReplayable(target, init) || !(await isCsrfFailure(first))) return first;
    csrfToken = null;
    await first.body?.cancel().catch(() => undefined);
    return attempt();
  }

  async function clientFetch(input: Request | string | URL, init?: RequestInit): Promise<Response> {
    return (await authorized(input, init)).response;
  }

  // --- the session -----------------------------------------------------------------------------

  async function getSession(): Promise<SessionResult> {
    if (!cookieMode && (await storage.get()) === null) {
      setState(SIGNED_OUT);
      return { status: 'signed-out' };
    }
    let outcome: { response: Response; refreshed?: RefreshResult };
    try {
      outcome = await authorized(`${baseUrl}/api/auth/session`, cookieMode ? { credentials: 'include' } : {});
    } catch (cause) {
      return { status: 'error', error: networkError(cause) };
    }
    const { response, refreshed } = outcome;
    if (response.ok) {
      const session = sessionFrom(await readJson(response));
      if (session === null) return { status: 'error', error: unexpected(response.status) };
      setState({ status: 'signed-in', session });
      return { status: 'signed-in', session };
    }
    // A refresh that could not be tried (offline, rate limited) is not a sign-out.
    if (refreshed?.status === 'error') return { status: 'error', error: refreshed.error };
    if (response.status !== 401) return { status: 'error', error: await errorFrom(response) };
    if (!cookieMode) await storage.set(null);
    setState(SIGNED_OUT);
    return { status: 'signed-out' };
  }

  async function signIn(credentials: { email: string; password: string }): Promise<SignInResult> {
    const path = cookieMode ? '/api/auth/signin' : '/api/auth';
    return finishSignIn(await callService(path, { method: 'POST', json: { email: credentials.email, password: credentials.password } }));
  }

  /**
   * Both modes: the service finishes a challenge the way the sign-in that asked would have (cookie
   * mode's POST /api/auth/signin: with the cookies), and a passkey's answer sets them too.
   */
  async function verifySecondFactor(answer: SecondFactorAnswer & { mfaToken: string }): Promise<SignInResult> {
    if ('passkey' in answer) return passkeyStep(callService, finishSignIn, answer.mfaToken);
    const body = 'code' in answer ? { mfaToken: answer.mfaToken, code: answer.code } : { mfaToken: answer.mfaToken, recoveryCode: answer.recoveryCode };
    return finishSignIn(await callService('/api/auth/mfa/verify', { method: 'POST', json: body }));
  }

  function signInWithPasskey(): Promise<SignInResult> {
    return passkeyStep(callService, finishSignIn);
  }

  async function finishSignIn(response: Response | GatehouseError): Promise<SignInResult> {
    if (!isResponse(response)) return { status: 'error', error: response };
    const body = await readJson(response);
    if (response.ok) {
      if (cookieMode) {
        // The service gave this browser a new CSRF secret with the session.
        csrfToken = null;
      } else {
        const tokens = tokensFrom(body);
        if (tokens === null) return { status: 'error', error: unexpected(response.status) };
        const previous = await storage.get();
        await storage.set(tokens);
        // Signing in again replaces the session this storage held: end it rather than orphan it.
        if (previous !== null) await callService('/api/auth/signout', { method: 'POST', bearer: previous.accessToken });
      }
      // Should reading the session fail, the tokens stay: a later getSession() settles it.
      const result = await getSession();
      return result.status === 'signed-in' ? result : { status: 'error', error: result.status === 'error' ? result.error : unexpected(401) };
    }
    if (response.status === 403 && isRecord(body) && body.error === 'MFA_REQUIRED' && typeof body.mfaToken === 'string') {
      const mfaToken = body.mfaToken;
      return {
        status: 'second-factor',
        mfaToken,
        methods: Array.isArray(body.methods) ? body.methods.filter((method): method is string => typeof method === 'string') : [],
        verifySecondFactor: (answer) => verifySecondFactor({ ...answer, mfaToken }),
      };
    }
    return { status: 'error', error: errorFromBody(response, body) };
  }

  async function signOut(): Promise<SignOutResult> {
    let error: GatehouseError | null = null;
    const tokens = cookieMode ? null : await usableTokens();
    if (cookieMode || tokens !== null) {
      const response = await callService('/api/auth/signout', { method: 'POST', ...(tokens !== null && { bearer: tokens.accessToken }) });
      if (!isResponse(response)) error = response;
      else if (!response.ok) error = await errorFrom(response);
    }
    if (!cookieMode) await storage.set(null);
    setState(SIGNED_OUT);
    return error === null ? { status: 'signed-out' } : { status: 'error', error };
  }

  return {
    signIn,
    signInWithPasskey,
    verifySecondFactor,
    signOut,
    getSession,
    refresh,
    fetch: clientFetch,
    getState: () => state,
    subscribe(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    close() {
      channel?.close();
      tabs.close();
    },
  };

  /** Relative paths: against the page in a browser, against `baseUrl` where there is no page (Node). */
  function resolve(input: Request | string | URL): Request | string | URL {
    if (typeof input !== 'string' || /^[a-z][a-z\d+.-]*:/i.test(input)) return input;
    return new URL(input, typeof location === 'undefined' ? `${baseUrl}/` : location.href);
  }
}
