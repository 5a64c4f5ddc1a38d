/** Where a client keeps its tokens: in memory (the default) or in a Web `Storage`. */
import type { StoredTokens, TokenStorage } from './types.ts';
import { isTokens } from './http.ts';

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
