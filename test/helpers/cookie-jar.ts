/** A minimal browser-like cookie store for `app.inject()` flows. */
import type { LightMyRequestResponse } from 'fastify';

export class CookieJar {
  readonly #cookies = new Map<string, string>();

  /** Applies every Set-Cookie of a response (an empty value or Max-Age=0 deletes). */
  store(response: LightMyRequestResponse): this {
    for (const cookie of response.cookies) {
      const expired = cookie.maxAge === 0 || (cookie.expires !== undefined && new Date(cookie.expires).getTime() <= Date.now());
      if (expired || cookie.value === '') this.#cookies.delete(cookie.name);
      else this.#cookies.set(cookie.name, cookie.value);
    }
    return this;
  }

  get(name: string): string | undefined {
    return this.#cookies.get(name);
  }

  has(name: string): boolean {
    return this.#cookies.has(name);
  }

  /** The Cookie request header. */
  header(): string {
    return [...this.#cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }
}

/** What `inject` needs of an app, for the helpers below. */
interface Injector {
  inject(options: { method: 'GET' | 'POST'; url: string; headers?: Record<string, string>; payload?: string }): Promise<LightMyRequestResponse>;
}

/** A browser with a CSRF token, as a page load gives it. */
export async function formBrowser(app: Injector): Promise<{ jar: CookieJar; csrfToken: string }> {
  const jar = new CookieJar();
  const response = await app.inject({ method: 'GET', url: '/api/auth/csrf' });
  jar.store(response);
  return { jar, csrfToken: (response.json() as { csrfToken: string }).csrfToken };
}

/** A form post from `origin` with the browser's cookies and CSRF token; its cookies are kept. */
export async function postForm(app: Injector, browser: { jar: CookieJar; csrfToken: string }, url: string, fields: Record<string, string>, origin: string): Promise<LightMyRequestResponse> {
  const response = await app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin, cookie: browser.jar.header() },
    payload: new URLSearchParams({ ...fields, csrfToken: browser.csrfToken }).toString(),
  });
  browser.jar.store(response);
  return response;
}
