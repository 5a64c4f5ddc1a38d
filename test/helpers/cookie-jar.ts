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
