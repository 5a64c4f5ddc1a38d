/**
 * `gatehouse-protect/next`: sign-in mode (`createSignIn`) for the Next.js App Router (tested with 16).
 * The proxy (Next.js 16's `proxy.ts`, 15's `middleware.ts`) keeps the session: it refreshes it when due,
 * applies the rules, and hands the refreshed cookie both to the browser and to the request the page
 * renders; route handlers answer the sign-in paths (start, callback, sign-out, back-channel logout);
 * server components and route handlers read the user from the request's cookies.
 *
 *   // lib/gatehouse.ts: options as a function, read at the first request (not at `next build`)
 *   export const gatehouse = createNextSignIn(() => ({ issuer: process.env.GATEHOUSE_URL!, … }));
 *   // proxy.ts
 *   export function proxy(request: NextRequest) { return gatehouse.proxy(request, NextResponse); }
 *   // app/auth/[...gatehouse]/route.ts
 *   export const { GET, POST } = gatehouse;
 *   // a server component or route handler
 *   const user = await gatehouse.user(await cookies());
 *
 * Structural on Web `Request`/`Response`: this entry imports nothing from Next.js (the app passes
 * `NextResponse`), so it works with whichever Next.js the app has and needs none installed here.
 *
 * The proxy and the route handlers are bundled apart by Next.js, each with its own instance of this
 * module; what they must share (the sign-outs and back-channel logouts that end sessions) lives by
 * default in one store per process (on `globalThis`), which `next start` shares between them (the
 * proxy runs on Node.js; an Edge middleware, Next.js 15's default, has a context of its own). An
 * app on several instances, on serverless functions or with an Edge middleware passes a shared
 * `store` (Redis, say).
 */
import { createSignIn } from './sign-in.ts';
import { memoryStore } from './sign-in-logout.ts';
import { parseCookieHeader } from './session-cookie.ts';
import type { GatehouseUser } from './protector.types.ts';
import type { SignIn, SignInOptions, SignInStore } from './sign-in.types.ts';

export type { GatehouseUser } from './protector.types.ts';
export type { SignIn, SignInOptions, SignInPaths, SignInStore } from './sign-in.types.ts';

/** What of Next.js's `NextResponse` the proxy uses: `NextResponse.next({ request: { headers }, headers })`. */
export interface NextResponseLike {
  next(init?: { request?: { headers?: Headers }; headers?: Headers }): Response;
}

/** `await cookies()` (from `next/headers`), a Cookie header, a `Request`, or nothing. */
export type CookieSource = { getAll(): ReadonlyArray<{ name: string; value: string }> } | Request | string | null | undefined;

export interface NextSignIn {
  /**
   * For `proxy.ts` (`middleware.ts` on Next.js 15): a page or API path without a session is sent
   * to sign in (pages, 303) or refused (401 JSON under /api), one without the role refused (403);
   * otherwise the request goes on, with the refreshed session's cookies set on the browser and on
   * the request the page sees. The sign-in paths go on untouched, to the route handlers.
   */
  proxy(request: Request, nextResponse: NextResponseLike): Promise<Response>;
  /** For `app/auth/[...gatehouse]/route.ts`: starts a sign-in and finishes it (the callback). */
  GET(request: Request): Promise<Response>;
  /** For the same route: the sign-out form and Gatehouse's back-channel logout. */
  POST(request: Request): Promise<Response>;
  /**
   * The signed-in user of a request's session, or null; it refreshes nothing and sets no cookie (the
   * proxy did). In a server component or route handler: `await gatehouse.user(await cookies())`.
   */
  user(cookies: CookieSource): Promise<GatehouseUser | null>;
  /** The sign-in mode underneath (made at the first call, from the options). */
  signIn(): SignIn;
}

const SHARED_STORES = Symbol.for('gatehouse-protect.next.stores');

/** One memory store per client in this process, reached through `globalThis` by every bundle of the app. */
function processStore(clientId: string): SignInStore {
  const holder = globalThis as typeof globalThis & { [SHARED_STORES]?: Map<string, SignInStore> };
  const stores = (holder[SHARED_STORES] ??= new Map());
  let store = stores.get(clientId);
  if (store === undefined) {
    store = memoryStore();
    stores.set(clientId, store);
  }
  return store;
}

/** The Cookie header of what `user()` is given. */
function cookieHeaderOf(source: CookieSource): string | null {
  if (source === null || source === undefined) return null;
  if (typeof source === 'string') return source;
  if (!('getAll' in source)) return source.headers.get('cookie');
  return source
    .getAll()
    .map(({ name, value }) => `${name}=${value}`)
    .join('; ');
}

/**
 * The request's Cookie header once `setCookie` is applied: cookies set get their new value, cookies
 * cleared (`Max-Age=0`) are gone, the others stay.
 */
export function applySetCookie(cookieHeader: string | null, setCookie: readonly string[]): string {
  const cookies = parseCookieHeader(cookieHeader);
  for (const header of setCookie) {
    const [pair = '', ...attributes] = header.split(';');
    const separator = pair.indexOf('=');
    if (separator === -1) continue;
    const name = pair.slice(0, separator).trim();
    const cleared = attributes.some((attribute) => /^\s*max-age\s*=\s*0\s*$/i.test(attribute));
    if (cleared) cookies.delete(name);
    else cookies.set(name, pair.slice(separator + 1).trim());
  }
  return [...cookies].map(([name, value]) => `${name}=${value}`).join('; ');
}

/** Next.js takes a proxy's redirect only to an absolute URL (a path is an "Invalid URL" there, and a 500). */
function withAbsoluteLocation(response: Response, origin: string): Response {
  const location = response.headers.get('location');
  if (location === null || !location.startsWith('/')) return response;
  const headers = new Headers(response.headers);
  headers.set('location', new URL(location, origin).href);
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

/** `options`, or a function giving them (called at the first request: `next build` runs without the app's secrets). */
export function createNextSignIn(options: SignInOptions | (() => SignInOptions)): NextSignIn {
  let made: SignIn | undefined;
  let appOrigin = '';
  const signIn = (): SignIn => {
    if (made === undefined) {
      const given = typeof options === 'function' ? options() : options;
      made = createSignIn({ ...given, store: given.store ?? processStore(given.clientId) });
      appOrigin = new URL(given.appUrl).origin;
    }
    return made;
  };
  const isSignInPath = (pathname: string) => Object.values(signIn().paths).includes(pathname);

  async function route(request: Request, method: 'GET' | 'POST'): Promise<Response> {
    const { paths } = signIn();
    const { pathname } = new URL(request.url);
    const allowed = pathname === paths.signIn || pathname === paths.callback ? 'GET' : pathname === paths.signOut || pathname === paths.backchannelLogout ? 'POST' : null;
    const headers = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' };
    if (allowed === null) return new Response(JSON.stringify({ error: 'NOT_FOUND', message: 'No such sign-in path.' }), { status: 404, headers });
    if (allowed !== method) return new Response(JSON.stringify({ error: 'METHOD_NOT_ALLOWED', message: `Use ${allowed}.` }), { status: 405, headers: { ...headers, allow: allowed } });
    const { response } = await signIn().handle(request);
    // handle() answers every sign-in path with the method above.
    return response!;
  }

  return {
    signIn,
    GET: (request) => route(request, 'GET'),
    POST: (request) => route(request, 'POST'),
    user: (cookies) => signIn().authenticate(cookieHeaderOf(cookies)),
    async proxy(request, nextResponse) {
      if (isSignInPath(new URL(request.url).pathname)) return nextResponse.next();
      const { response, setCookie } = await signIn().handle(request);
      if (response !== null) return withAbsoluteLocation(response, appOrigin);
      if (setCookie.length === 0) return nextResponse.next();
      // A refreshed (or ended) session: the browser gets the new cookies, and so does the request
      // the page renders (its `cookies()` would otherwise read the old session).
      const requestHeaders = new Headers(request.headers);
      const cookieHeader = applySetCookie(request.headers.get('cookie'), setCookie);
      if (cookieHeader === '') requestHeaders.delete('cookie');
      else requestHeaders.set('cookie', cookieHeader);
      const responseHeaders = new Headers();
      for (const cookie of setCookie) responseHeaders.append('set-cookie', cookie);
      return nextResponse.next({ request: { headers: requestHeaders }, headers: responseHeaders });
    },
  };
}
