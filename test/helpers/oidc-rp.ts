/**
 * A relying party's view of Gatehouse as an OpenID Provider, for tests: the service listening on a
 * loopback port whose address is AUTH_URL (openid-client talks to it over real HTTP), a client
 * registered through the registry, and a browser stand-in that follows the sign-in over plain
 * HTTP requests (a cookie jar, form posts with the page's CSRF token).
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import * as client from 'openid-client';
import type { Backend, TestDatabase } from './databases.ts';
import { createTestApp, createUser, type TestApp } from './app.ts';
import { SYSTEM_SOURCE } from '../../src/audit/audit.service.ts';
import type { ClientInput } from '../../src/oidc-clients/clients.service.ts';
import type { Env } from '../../src/config.ts';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface ListeningApp extends TestApp {
  /** AUTH_URL: where it listens. */
  readonly url: string;
}

/** The service, listening on 127.0.0.1 at the AUTH_URL it was configured with. */
export async function listeningApp(database: TestDatabase, env: Env = {}): Promise<ListeningApp> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const t = await createTestApp(database, { env: { AUTH_URL: url, ...env } });
  await t.app.listen({ port, host: '127.0.0.1' });
  return { ...t, url };
}

/** `before`/`after` for a suite on `backend`: a listening app and its database. */
export function useListeningApp(backend: Backend, env: Env = {}): { get(): ListeningApp; setup(): Promise<void>; teardown(): Promise<void> } {
  let database: TestDatabase | undefined;
  let app: ListeningApp | undefined;
  return {
    get: () => app!,
    async setup() {
      database = await backend.create();
      app = await listeningApp(database, env);
    },
    async teardown() {
      await app?.close();
      await database?.drop();
    },
  };
}

export async function registerClient(t: TestApp, input: Partial<ClientInput> & { redirectUris?: string[] }): Promise<{ clientId: string; clientSecret: string | undefined }> {
  const result = await t.services.oidcClients.create({ name: 'Test app', ...input }, SYSTEM_SOURCE);
  if (!result.ok) throw new Error(`client not registered: ${JSON.stringify(result)}`);
  return { clientId: result.client.id, clientSecret: result.clientSecret };
}

/** openid-client's configuration for the client, from discovery (plain HTTP allowed: loopback). */
export async function discover(url: string, clientId: string, clientSecret?: string): Promise<client.Configuration> {
  return client.discovery(new URL(url), clientId, clientSecret, clientSecret === undefined ? client.None() : client.ClientSecretBasic(clientSecret), {
    execute: [client.allowInsecureRequests],
  });
}

/** Cookies kept across fetches (names and values only: one origin). */
export class Browser {
  readonly cookies = new Map<string, string>();
  readonly origin: string;
  constructor(origin: string) {
    this.origin = origin;
  }

  async fetch(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.cookies.size > 0) headers.set('cookie', [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; '));
    const response = await fetch(new URL(path, this.origin), { ...init, headers, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const index = pair!.indexOf('=');
      const name = pair!.slice(0, index).trim();
      const value = pair!.slice(index + 1).trim();
      const expired = /max-age=0/i.test(line) || /expires=Thu, 01 Jan 1970/i.test(line);
      if (value === '' || expired) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return response;
  }

  /** A form post as a browser on our origin sends it. */
  async post(path: string, fields: Record<string, string>): Promise<Response> {
    return this.fetch(path, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: this.origin, 'sec-fetch-site': 'same-origin' },
      body: new URLSearchParams(fields).toString(),
    });
  }

  /** Signs in with e-mail and password (JSON, as a script on our origin would). */
  async signIn(email: string, password: string): Promise<void> {
    const response = await this.fetch('/api/auth/signin', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
    if (response.status !== 200) throw new Error(`sign-in failed: ${response.status} ${await response.text()}`);
  }
}

/** Where a redirect (3xx Location) or a self-refreshing page (Refresh header) sends the browser. */
export function nextLocation(response: Response): string | null {
  const location = response.headers.get('location');
  if (location !== null) return location;
  const refresh = response.headers.get('refresh');
  return refresh === null ? null : refresh.replace(/^\d+;\s*url=/i, '');
}

/**
 * Follows redirects and self-refreshing pages on the provider's origin until the browser is sent
 * elsewhere (the app's redirect URI: returned) or lands on a page (returned with its response).
 */
export async function follow(browser: Browser, start: string, limit = 15): Promise<{ external: string } | { page: Response; url: string }> {
  let url = start;
  for (let hop = 0; hop < limit; hop += 1) {
    const target = new URL(url, browser.origin);
    if (target.origin !== browser.origin) return { external: target.href };
    const response = await browser.fetch(target.pathname + target.search);
    const next = nextLocation(response);
    if (next === null) return { page: response, url: target.pathname + target.search };
    await response.body?.cancel();
    url = new URL(next, target).href;
  }
  throw new Error(`more than ${limit} redirects from ${start}`);
}

/** The value of a hidden input in an HTML page. */
export function hiddenValue(html: string, name: string): string {
  const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  if (match === null) throw new Error(`no ${name} field in the page`);
  return match[1]!.replaceAll('&amp;', '&').replaceAll('&quot;', '"').replaceAll('&#39;', "'");
}

export const USER = { email: 'ada@example.com', password: 'correct horse battery staple 1815', name: 'Ada Lovelace' };

export async function createRpUser(t: TestApp, roles: string[] = []) {
  return createUser(t.services, { ...USER, roles });
}

export interface AuthorizeOptions {
  redirectUri: string;
  /** Default `openid email`; with `offline_access` the request also says prompt=consent (OpenID Connect Core 11). */
  scope?: string;
  resource?: string;
  consent?: 'allow' | 'deny';
  /** false: no code_challenge (to see a public client refused). */
  pkce?: boolean;
  user?: { email: string; password: string };
  extra?: Record<string, string>;
  /** Sees each consent page's HTML before it is answered. */
  onConsentPage?: (html: string) => void;
  /** Sends the request as a request object (JAR, RFC 9101) signed with this key of the client's. */
  requestObjectKey?: client.CryptoKey;
}

/**
 * Runs an authorization request in `browser` until the app's redirect URI: signs in when the
 * sign-in page comes, answers each consent page; what comes back, with the PKCE verifier, state
 * and nonce it sent, and how many consent pages it saw.
 */
export async function authorize(browser: Browser, config: client.Configuration, options: AuthorizeOptions) {
  const user = options.user ?? USER;
  const codeVerifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const scope = options.scope ?? 'openid email';
  const build = (parameters: Record<string, string>) =>
    options.requestObjectKey === undefined ? Promise.resolve(client.buildAuthorizationUrl(config, parameters)) : client.buildAuthorizationUrlWithJAR(config, parameters, options.requestObjectKey);
  const url = await build({
    redirect_uri: options.redirectUri,
    scope,
    ...(scope.includes('offline_access') && { prompt: 'consent' }),
    ...(options.pkce !== false && { code_challenge: await client.calculatePKCECodeChallenge(codeVerifier), code_challenge_method: 'S256' }),
    state,
    // A nonce goes with an ID token: oidc-provider refuses one in a request without `openid`.
    ...(scope.split(' ').includes('openid') && { nonce }),
    ...(options.resource !== undefined && { resource: options.resource }),
    ...options.extra,
  });
  let step = await follow(browser, url.pathname + url.search);
  let consentPages = 0;
  while ('page' in step) {
    const html = await step.page.text();
    if (step.url.startsWith('/auth/signin')) {
      await browser.signIn(user.email, user.password);
      const callback = new URL(step.url, browser.origin).searchParams.get('callbackUrl')!;
      step = await follow(browser, callback);
      continue;
    }
    assert.match(step.url, /^\/oidc\/interaction\//, `landed on ${step.url}: ${html.slice(0, 300)}`);
    consentPages += 1;
    options.onConsentPage?.(html);
    const response = await browser.post(`${step.url}/consent`, { csrfToken: hiddenValue(html, 'csrfToken'), decision: options.consent ?? 'allow' });
    assert.equal(response.status, 303);
    step = await follow(browser, response.headers.get('location')!);
  }
  return { callback: new URL(step.external), codeVerifier, state, nonce, consentPages };
}
