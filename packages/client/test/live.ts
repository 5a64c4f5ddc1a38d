/**
 * What the client's tests share: a live Gatehouse on loopback (the real service over real HTTP,
 * AUTH_URL its own address), a fetch that records what the client sent, a browser stand-in for
 * cookie mode, and a Storage double for the localStorage adapter.
 */
import type { TestDatabase } from '../../../test/helpers/databases.ts';
import { createUser } from '../../../test/helpers/app.ts';
import { listeningApp, type ListeningApp } from '../../../test/helpers/oidc-rp.ts';
import type { Env } from '../../../src/config.ts';

export const PASSWORD = 'correct horse battery staple';

/**
 * The reuse grace at its minimum (1 s): a spent refresh token presented again later than that ends
 * the session, so "no reuse detected" below means more than "nothing came within the grace".
 */
export const STRICT_REFRESH: Env = { REFRESH_REUSE_GRACE: '1' };

export interface LiveService {
  readonly app: ListeningApp;
  readonly url: string;
  /** A new password user with a verified address. */
  user(prefix?: string): Promise<{ id: string; email: string }>;
  /** How many times the service caught a spent refresh token (audit `refresh.reuse_detected`). */
  reuseDetections(): Promise<number>;
  close(): Promise<void>;
}

export async function startService(database: TestDatabase, env: Env = {}): Promise<LiveService> {
  const app = await listeningApp(database, { ...STRICT_REFRESH, ...env });
  let count = 0;
  return {
    app,
    url: app.url,
    async user(prefix = 'user') {
      const email = `${prefix}${++count}@example.com`;
      const created = await createUser(app.services, { email, password: PASSWORD });
      return { id: created.id, email };
    },
    async reuseDetections() {
      const rows = await app.services.storage.db.selectFrom('audit_events').select('id').where('type', '=', 'refresh.reuse_detected').execute();
      return rows.length;
    },
    async close() {
      await app.close();
      await database.drop();
    },
  };
}

export interface RecordedCall {
  method: string;
  url: URL;
  authorization: string | null;
  csrf: string | null;
}

/** A fetch that records each request the client makes, then makes it. */
export function recordingFetch(inner: typeof fetch = fetch) {
  const calls: RecordedCall[] = [];
  const recording: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    calls.push({ method: request.method, url: new URL(request.url), authorization: request.headers.get('authorization'), csrf: request.headers.get('x-csrf-token') });
    return inner(request);
  };
  return {
    fetch: recording,
    calls,
    count: (method: string, path: string) => calls.filter((call) => call.method === method && call.url.pathname === path).length,
    refreshes: () => calls.filter((call) => call.method === 'POST' && call.url.pathname === '/api/auth/refresh').length,
  };
}

/**
 * What a browser does for a same-origin script: keeps the service's cookies (names and values;
 * one origin) and sends them with `credentials: 'include'`, and says where unsafe requests come
 * from (Origin). Nothing else of the page is simulated.
 */
export function browserFetch(origin: string): { fetch: typeof fetch; cookies: Map<string, string> } {
  const cookies = new Map<string, string>();
  const browser: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const headers = new Headers(request.headers);
    if (request.credentials === 'include' && cookies.size > 0) headers.set('cookie', [...cookies].map(([name, value]) => `${name}=${value}`).join('; '));
    if (!['GET', 'HEAD'].includes(request.method)) headers.set('origin', origin);
    const response = await fetch(new Request(request, { headers }));
    if (request.credentials === 'include') {
      for (const line of response.headers.getSetCookie()) {
        const [pair = ''] = line.split(';');
        const index = pair.indexOf('=');
        const name = pair.slice(0, index).trim();
        const value = pair.slice(index + 1).trim();
        if (value === '' || /max-age=0/i.test(line) || /expires=Thu, 01 Jan 1970/i.test(line)) cookies.delete(name);
        else cookies.set(name, value);
      }
    }
    return response;
  };
  return { fetch: browser, cookies };
}

/** `localStorage` as far as the adapter uses it. */
export function storageDouble(): Pick<Storage, 'getItem' | 'setItem' | 'removeItem'> & { readonly items: Map<string, string> } {
  const items = new Map<string, string>();
  return {
    items,
    getItem: (key) => items.get(key) ?? null,
    setItem: (key, value) => {
      items.set(key, String(value));
    },
    removeItem: (key) => {
      items.delete(key);
    },
  };
}

/** Resolves when `condition` holds, checking after each macrotask; fails after `ms`. */
export async function eventually(condition: () => boolean, ms = 2_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
