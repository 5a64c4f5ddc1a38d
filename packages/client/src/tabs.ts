/**
 * One refresh at a time among the instances that share a storage: a Web Lock across tabs when the
 * storage is shared (`sharedKey`) and the runtime has Web Locks, otherwise a queue in this realm.
 *
 * The lock alone is not enough across tabs: Chromium gives each tab's process its own copy of
 * `localStorage` and delivers another tab's writes asynchronously, so a tab granted the lock right
 * after another rotated may still read the spent refresh token. So the tab that rotated holds a
 * second lock named after the token it spent (a SHA-256 of it) until its next rotation; the Lock
 * Manager is one for all tabs of the origin, and its `query()` is always current. A tab that holds
 * the refresh lock and still reads a token so marked waits for its storage to show the new tokens
 * instead of presenting it again (which Gatehouse would take as theft, `TOKEN_REUSED`).
 */
import type { StoredTokens, TokenStorage } from './types.ts';

/** How long a tab waits for another tab's tokens to reach its storage, checking every 10 ms. */
const SETTLE_MS = 5_000;

/** Node has no tabs: instances in one realm sharing a storage (the object, or its `sharedKey`) queue here. */
const queuesByStorage = new WeakMap<object, Promise<unknown>>();
const queuesByKey = new Map<string, Promise<unknown>>();

export function refreshCoordinator(storage: TokenStorage) {
  const key = storage.sharedKey;
  const locks = key !== undefined && typeof navigator !== 'undefined' ? navigator.locks : undefined;
  const subtle = typeof crypto === 'undefined' ? undefined : crypto.subtle;
  let releaseMarker: (() => void) | null = null;

  async function markerName(refreshToken: string): Promise<string> {
    const digest = new Uint8Array(await subtle!.digest('SHA-256', new TextEncoder().encode(refreshToken)));
    return `gatehouse-spent:${key}:${Array.from(digest, (byte) => byte.toString(16).padStart(2, '0')).join('')}`;
  }

  return {
    /** Runs `task` while no other instance sharing the storage runs one. */
    exclusive<T>(task: () => Promise<T>): Promise<T> {
      if (locks !== undefined) return locks.request(`gatehouse-refresh:${key}`, task);
      const previous = (key === undefined ? queuesByStorage.get(storage) : queuesByKey.get(key)) ?? Promise.resolve();
      const run = previous.then(task, task);
      const settled = run.catch(() => undefined);
      if (key === undefined) queuesByStorage.set(storage, settled);
      else queuesByKey.set(key, settled);
      return run;
    },

    /** Under the refresh lock, once `spent` was rotated and the new tokens stored: marks it for the other tabs. */
    async rotated(spent: string): Promise<void> {
      if (locks === undefined || subtle === undefined) return;
      const name = await markerName(spent);
      releaseMarker?.();
      await new Promise<void>((granted) => {
        void locks.request(name, () => {
          granted();
          return new Promise<void>((release) => {
            releaseMarker = release;
          });
        });
      });
    },

    /**
     * Under the refresh lock, with `current` in storage: null when no other tab spent its refresh
     * token; else what this tab's storage shows once it catches up: new tokens (`replaced`), none
     * (`signed-out`: the other tab signed out since), or still the spent ones (`stale`, after SETTLE_MS).
     */
    async replacedElsewhere(current: StoredTokens): Promise<'replaced' | 'signed-out' | 'stale' | null> {
      if (locks === undefined || subtle === undefined) return null;
      const name = await markerName(current.refreshToken);
      const { held = [] } = await locks.query();
      if (!held.some((lock) => lock.name === name)) return null;
      const deadline = Date.now() + SETTLE_MS;
      while (Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        const latest = await storage.get();
        if (latest === null) return 'signed-out';
        if (latest.refreshToken !== current.refreshToken) return 'replaced';
      }
      return 'stale';
    },

    /** Lets go of the mark of this instance's last rotation (the client is closed). */
    close(): void {
      releaseMarker?.();
      releaseMarker = null;
    },
  };
}
