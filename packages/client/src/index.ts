/**
 * gatehouse-client: a small typed client for a Gatehouse service, for browsers and Node.
 *
 * Web APIs only (fetch, Request, Headers, BroadcastChannel, Web Locks when present), so the same
 * file runs in a page, a worker, Node 20+ and edge runtimes. Expected outcomes (a wrong password, a
 * second factor, a network failure) are values; only programmer errors throw.
 */

/** The tokens a sign-in or a refresh answers with; what a `TokenStorage` keeps. */
export interface StoredTokens {
  accessToken: string;
  refreshToken: string;
  /** When the access token expires (ISO 8601, from the service). */
  expiresAt: string;
}

/**
 * Where the tokens live. `get`/`set` may be synchronous or not (e.g. a native app's async store).
 * `sharedKey` says that other instances (other tabs) see the same tokens under that name: the
 * client then coordinates refreshes with them (Web Locks) and tells them of sign-in and sign-out
 * (BroadcastChannel). Leave it out for storage that belongs to one instance.
 */
export interface TokenStorage {
  get(): StoredTokens | null | Promise<StoredTokens | null>;
  set(tokens: StoredTokens | null): void | Promise<void>;
  readonly sharedKey?: string;
}

export interface SessionUser {
  id: string;
  email: string;
  name: string;
  roles: string[];
}

/** `GET /api/auth/session`'s answer. */
export interface Session {
  user: SessionUser;
  session: {
    id: string;
    /** Absolute end of the session (not of the access token). */
    expiresAt: string;
    /** How the user proved who they are (RFC 8176): pwd, otp, mfa, hwk… */
    amr: string[];
    authTime: string;
  };
}

export type SessionState =
  | { status: 'loading'; session: null }
  | { status: 'signed-in'; session: Session }
  | { status: 'signed-out'; session: null };

/** The service's stable codes this client meets, and its own three (last line). */
export type GatehouseErrorCode =
  | 'INVALID_CREDENTIALS' | 'ACCOUNT_DISABLED' | 'EMAIL_NOT_VERIFIED' | 'RATE_LIMITED' | 'VALIDATION_ERROR'
  | 'INVALID_CODE' | 'INVALID_TOKEN' | 'TOKEN_REUSED' | 'UNAUTHENTICATED' | 'CSRF_FAILED'
  | 'SERVICE_UNAVAILABLE' | 'INTERNAL_ERROR' | 'MALFORMED_JSON' | 'PAYLOAD_TOO_LARGE' | 'UNSUPPORTED_MEDIA_TYPE'
  | 'NETWORK_ERROR' | 'UNEXPECTED_RESPONSE' | 'NOT_SUPPORTED';

export interface GatehouseError {
  /** The service's `error` code, or NETWORK_ERROR / UNEXPECTED_RESPONSE / NOT_SUPPORTED from this client. */
  code: GatehouseErrorCode | (string & {});
  message: string;
  /** The HTTP status; absent when no answer came. */
  status?: number;
  /** From `Retry-After` (RATE_LIMITED, SERVICE_UNAVAILABLE). */
  retryAfterSeconds?: number;
  /** VALIDATION_ERROR: every bad field. */
  errors?: { field: string; message: string; reason?: string }[];
  /** NETWORK_ERROR: what fetch threw. */
  cause?: unknown;
}

export type SecondFactorAnswer = { code: string } | { recoveryCode: string };

export type SignInResult =
  | { status: 'signed-in'; session: Session }
  | {
      status: 'second-factor';
      /** Lives 5 minutes and allows 5 wrong codes; keep it if the page may reload. */
      mfaToken: string;
      /** What the challenge may be answered with: 'totp', 'recovery_code', 'passkey'. */
      methods: string[];
      /** Answers this challenge; may be called again after an INVALID_CODE. */
      verifySecondFactor(answer: SecondFactorAnswer): Promise<SignInResult>;
    }
  | { status: 'error'; error: GatehouseError };

export type SessionResult = { status: 'signed-in'; session: Session } | { status: 'signed-out' } | { status: 'error'; error: GatehouseError };

/** 'signed-out': the refresh token was refused (tokens forgotten); 'error': try again later (tokens kept). */
export type RefreshResult = { status: 'refreshed' } | { status: 'signed-out'; error: GatehouseError } | { status: 'error'; error: GatehouseError };

/** This client forgets the session either way; 'error' means the service may not have ended it. */
export type SignOutResult = { status: 'signed-out' } | { status: 'error'; error: GatehouseError };

export interface GatehouseClientOptions {
  /** The service's AUTH_URL, e.g. `https://auth.example.com`. */
  baseUrl: string;
  /** Defaults to the global fetch. */
  fetch?: typeof fetch;
  /** Token mode only. Defaults to `memoryStorage()`. */
  storage?: TokenStorage;
  /**
   * 'tokens' (default): the client holds the tokens and sends `Authorization: Bearer`.
   * 'cookies': same-site browser apps; the service's HttpOnly cookies carry the session, no token
   * is kept in JavaScript, requests go with `credentials: 'include'` and a CSRF token.
   */
  mode?: 'tokens' | 'cookies';
  /** Refresh this long before the access token expires (default 30; expired tokens are always refreshed first). */
  refreshAheadSeconds?: number;
  /** Called on every change of `getState()`, including changes made in other tabs. */
  onSessionChange?: (state: SessionState) => void;
}

export interface GatehouseClient {
  signIn(credentials: { email: string; password: string }): Promise<SignInResult>;
  /** Finishes a sign-in that answered 'second-factor' (e.g. after a reload, with the kept mfaToken). */
  verifySecondFactor(answer: SecondFactorAnswer & { mfaToken: string }): Promise<SignInResult>;
  signOut(): Promise<SignOutResult>;
  /** Asks the service (refreshing once if the access token is refused) and updates `getState()`. */
  getSession(): Promise<SessionResult>;
  /** Rotates the refresh token; concurrent calls, here and in other tabs, share one rotation. */
  refresh(): Promise<RefreshResult>;
  /** `fetch` with the session: throws on network failure like fetch; a 401 refreshes once and retries once. */
  fetch(input: Request | string | URL, init?: RequestInit): Promise<Response>;
  getState(): SessionState;
  subscribe(listener: (state: SessionState) => void): () => void;
  /** Stops listening to other tabs. */
  close(): void;
}

/** Tokens in this instance's memory: gone on reload, out of reach of other tabs and of storage-reading XSS. */
export function memoryStorage(initial: StoredTokens | null = null): TokenStorage {
  let tokens = initial;
  return {
    get: () => tokens,
    set: (next) => {
      tokens = next;
    },
  };
}

/**
 * Tokens in `localStorage`: they survive reloads and are shared by the tabs of the origin (which
 * then share one session and coordinate refreshes). Any script running on the page can read them,
 * so an XSS hole leaks a refresh token that works from anywhere until it is rotated or the session
 * ends; prefer memory storage, or cookie mode, where that matters.
 */
/** What `localStorageAdapter` needs of a Web `Storage` (`localStorage`, `sessionStorage`, or one of your own); no DOM types needed. */
export interface KeyValueStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

export function localStorageAdapter(options: { key?: string; storage?: KeyValueStorage } = {}): TokenStorage {
  const key = options.key ?? 'gatehouse.tokens';
  const store = options.storage ?? (typeof localStorage === 'undefined' ? undefined : localStorage);
  if (store === undefined) throw new TypeError('localStorage is not available here: pass { storage } or use memoryStorage()');
  return {
    sharedKey: key,
    get() {
      const raw = store.getItem(key);
      if (raw === null) return null;
      try {
        const parsed: unknown = JSON.parse(raw);
        return isTokens(parsed) ? parsed : null;
      } catch {
        return null;
      }
    },
    set(tokens) {
      if (tokens === null) store.removeItem(key);
      else store.setItem(key, JSON.stringify(tokens));
    },
  };
}

const LOADING: SessionState = { status: 'loading', session: null };
const SIGNED_OUT: SessionState = { status: 'signed-out', session: null };
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Where Web Locks cannot be used, instances in one JavaScript realm that share a storage (the
 * object, or its `sharedKey`) queue their refreshes here. Node has no tabs: this is what holds there.
 */
const queuesByStorage = new WeakMap<object, Promise<unknown>>();
const queuesByKey = new Map<string, Promise<unknown>>();

export function createGatehouseClient(options: GatehouseClientOptions): GatehouseClient {
  const baseUrl = options.baseUrl.replace(/\/+$/, '');
  const baseOrigin = new URL(baseUrl).origin;
  const cookieMode = options.mode === 'cookies';
  if (cookieMode && options.storage !== undefined) throw new TypeError("mode 'cookies' keeps no tokens: leave out `storage`");
  // Called through a wrapper: a browser's fetch throws when called with another `this`.
  const send: typeof fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const storage = options.storage ?? memoryStorage();
  const aheadMs = Math.max(0, options.refreshAheadSeconds ?? 30) * 1000;

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
        ...(cookieMode && { credentials: 'include' as const }),
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
   * Runs `task` while no other instance sharing the storage runs one: a Web Lock across tabs when
   * the storage is shared and the runtime has them, otherwise a queue in this realm.
   */
  function exclusive<T>(task: () => Promise<T>): Promise<T> {
    const locks = typeof navigator === 'undefined' ? undefined : navigator.locks;
    if (storage.sharedKey !== undefined && locks !== undefined) return locks.request(`gatehouse-refresh:${storage.sharedKey}`, task);
    const key = storage.sharedKey;
    const previous = (key === undefined ? queuesByStorage.get(storage) : queuesByKey.get(key)) ?? Promise.resolve();
    const run = previous.then(task, task);
    const settled = run.catch(() => undefined);
    if (key === undefined) queuesByStorage.set(storage, settled);
    else queuesByKey.set(key, settled);
    return run;
  }

  /**
   * Joins the rotation under way in this instance, or starts one. `seen` is the refresh token the
   * caller knew: if the stored one differs once the lock is held, someone else rotated meanwhile
   * and their tokens are used, so a spent refresh token is never presented again.
   */
  function refreshOnce(seen: string | undefined): Promise<RefreshResult> {
    inFlight ??= (cookieMode ? refreshCookies() : exclusive(() => rotate(seen))).finally(() => {
      inFlight = null;
    });
    return inFlight;
  }

  async function rotate(seen: string | undefined): Promise<RefreshResult> {
    const current = await storage.get();
    if (current === null) return signedOut({ code: 'UNAUTHENTICATED', message: 'Not signed in.' });
    if (seen !== undefined && current.refreshToken !== seen) return { status: 'refreshed' };
    const response = await callService('/api/auth/refresh', { method: 'POST', json: { refreshToken: current.refreshToken } });
    if (!isResponse(response)) return { status: 'error', error: response };
    if (response.ok) {
      const tokens = tokensFrom(await readJson(response));
      if (tokens === null) return { status: 'error', error: unexpected(response.status) };
      await storage.set(tokens);
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

  async function verifySecondFactor(answer: SecondFactorAnswer & { mfaToken: string }): Promise<SignInResult> {
    if (cookieMode) {
      // The service's JSON second-factor endpoint answers with tokens and sets no cookies.
      return { status: 'error', error: { code: 'NOT_SUPPORTED', message: "A second factor cannot be answered in mode 'cookies': use the hosted sign-in page, or mode 'tokens'." } };
    }
    const body = 'code' in answer ? { mfaToken: answer.mfaToken, code: answer.code } : { mfaToken: answer.mfaToken, recoveryCode: answer.recoveryCode };
    return finishSignIn(await callService('/api/auth/mfa/verify', { method: 'POST', json: body }));
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
    },
  };

  /** Relative paths: against the page in a browser, against `baseUrl` where there is no page (Node). */
  function resolve(input: Request | string | URL): Request | string | URL {
    if (typeof input !== 'string' || /^[a-z][a-z\d+.-]*:/i.test(input)) return input;
    return new URL(input, typeof location === 'undefined' ? `${baseUrl}/` : location.href);
  }
}

// --- helpers ---------------------------------------------------------------------------------------

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

/** Not `instanceof`: a custom `fetch` may answer with another realm's or a polyfill's Response. */
function isResponse(value: Response | GatehouseError): value is Response {
  return 'headers' in value;
}

function isRequest(value: unknown): value is Request {
  return typeof Request !== 'undefined' && value instanceof Request;
}

function urlOf(input: Request | string | URL): string {
  return isRequest(input) ? input.url : String(input);
}

function isTokens(value: unknown): value is StoredTokens {
  return isRecord(value) && typeof value.accessToken === 'string' && typeof value.refreshToken === 'string' && typeof value.expiresAt === 'string';
}

/** Bodies that can be sent twice; a stream (or anything unknown) cannot. */
function isReplayable(input: Request | string | URL, init: RequestInit): boolean {
  const body = init.body;
  if (body === undefined || body === null) return !(isRequest(input) && input.body !== null);
  return (
    typeof body === 'string' ||
    body instanceof ArrayBuffer ||
    ArrayBuffer.isView(body) ||
    body instanceof URLSearchParams ||
    (typeof Blob !== 'undefined' && body instanceof Blob) ||
    (typeof FormData !== 'undefined' && body instanceof FormData)
  );
}

async function isCsrfFailure(response: Response): Promise<boolean> {
  if (response.status !== 403) return false;
  const body = await readJson(response.clone());
  return isRecord(body) && body.error === 'CSRF_FAILED';
}

async function readJson(response: Response): Promise<unknown> {
  try {
    return JSON.parse(await response.text());
  } catch {
    return null;
  }
}

function tokensFrom(body: unknown): StoredTokens | null {
  if (!isRecord(body) || typeof body.token !== 'string' || typeof body.refreshToken !== 'string' || typeof body.expiresAt !== 'string') return null;
  return { accessToken: body.token, refreshToken: body.refreshToken, expiresAt: body.expiresAt };
}

function sessionFrom(body: unknown): Session | null {
  if (!isRecord(body) || !isRecord(body.user) || !isRecord(body.session) || typeof body.user.id !== 'string' || typeof body.session.id !== 'string') return null;
  return body as unknown as Session;
}

async function errorFrom(response: Response): Promise<GatehouseError> {
  return errorFromBody(response, await readJson(response));
}

function errorFromBody(response: Response, body: unknown): GatehouseError {
  const error: GatehouseError =
    isRecord(body) && typeof body.error === 'string'
      ? { code: body.error, message: typeof body.message === 'string' ? body.message : body.error, status: response.status }
      : unexpected(response.status);
  const retryAfterSeconds = parseRetryAfter(response.headers.get('retry-after'));
  if (retryAfterSeconds !== undefined) error.retryAfterSeconds = retryAfterSeconds;
  if (isRecord(body) && Array.isArray(body.errors)) error.errors = body.errors as GatehouseError['errors'];
  return error;
}

function unexpected(status: number): GatehouseError {
  return { code: 'UNEXPECTED_RESPONSE', message: `Gatehouse answered HTTP ${status} with a body this client does not understand.`, status };
}

function networkError(cause: unknown): GatehouseError {
  return { code: 'NETWORK_ERROR', message: cause instanceof Error ? cause.message : 'The request failed.', cause };
}

/** `Retry-After` is seconds or an HTTP date. */
function parseRetryAfter(value: string | null): number | undefined {
  if (value === null) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}
