/**
 * The database strategy's check cache (SESSION_CHECK_CACHE): the last check read of a session (its
 * row, user, roles, every module's claims), kept per instance, so a hot session is checked without
 * a round trip.
 *
 * On SQLite (a file) a kept read is used only while nothing at all has been committed to the
 * database since: before each use the cache reads SQLite's change counter (`PRAGMA data_version`
 * on the read-only connection, storage/database.ts `changeCounterOf`), which moves with every
 * commit of any other connection, this process's writer, another worker's, the CLI's; when it
 * moved, everything kept is dropped. Nothing is announced and nothing can be missed, at the price
 * of dropping more than a change needs.
 *
 * On PostgreSQL every change that could alter such a read is announced to every instance (`pg_notify` in the change's own transaction: delivered at its
 * commit, never for a rollback), and each instance drops what it names:
 * - a session ended (sign-out, all sessions, a reused refresh token, a deleted user): `revoke`;
 * - any domain event about a user (disabled, roles, password, e-mail, impersonation, membership):
 *   all of that user's sessions; an organization's event: every session (its slug or members
 *   may be in anyone's `org` claim);
 * - a step-up, an organization made active: that session.
 * A read racing a change is not kept: each announcement moves an epoch, and a read finishing in
 * another epoch than it started in is used once and forgotten. While the instance is not listening
 * (its connection lost) nothing is kept and every check reads storage, as without the cache.
 * Entries are also forgotten after CACHE_TTL_MS, so a change nobody announces (a renamed user)
 * shows within that time, as the jwt strategy's session view does.
 */
import type { SessionCheckRow } from './session.store.ts';
import { watchChanges } from '../storage/database.ts';

/** The longest an entry is used: what a change without an announcement (a new name) may take to show. */
export const CACHE_TTL_MS = 5_000;

/** What an announcement names: one session, every session of a user, or every session. */
export type SessionChange = { session: string } | { user: string } | 'all';

interface Entry {
  row: SessionCheckRow;
  until: number;
}

export interface SessionCheckCache {
  /** The kept read of `sessionId`, when fresh and the instance is listening. */
  get(sessionId: string, now: number): SessionCheckRow | undefined;
  /** The current epoch, to pass to `set` with a read started now. */
  epoch(): number;
  /** Keeps `row` for `sessionId` unless a change was announced since `startedIn` (an epoch). */
  set(sessionId: string, row: SessionCheckRow, startedIn: number, now: number): void;
  /** This instance wrote the session's use (`last_seen_at`) now: the kept read says so too. */
  touch(sessionId: string, now: number): void;
  /** Drops what a change names (an announcement, ours or another instance's). */
  apply(change: SessionChange): void;
  /** Listening (true) or not: while not, nothing is kept. */
  setListening(isListening: boolean): void;
}

/**
 * `changeCounter` (SQLite): read before each use; a value other than the last one read drops
 * everything kept and moves the epoch, so a read that began before a commit is not kept either.
 */
export function createSessionCheckCache(maxEntries: number, changeCounter?: () => number): SessionCheckCache {
  const entries = new Map<string, Entry>();
  /** Session ids by user, for "every session of a user". */
  const byUser = new Map<string, Set<string>>();
  let epoch = 0;
  let isListening = false;
  const hasChanged = changeCounter === undefined ? undefined : watchChanges(changeCounter);

  function drop(sessionId: string): void {
    const entry = entries.get(sessionId);
    if (entry === undefined) return;
    entries.delete(sessionId);
    const sessions = byUser.get(entry.row.user_id);
    sessions?.delete(sessionId);
    if (sessions?.size === 0) byUser.delete(entry.row.user_id);
  }

  function clear(): void {
    entries.clear();
    byUser.clear();
  }

  return {
    get(sessionId, now) {
      if (!isListening) return undefined;
      if (hasChanged?.() === true) {
        epoch++;
        clear();
        return undefined;
      }
      const entry = entries.get(sessionId);
      if (entry === undefined) return undefined;
      if (entry.until <= now) {
        drop(sessionId);
        return undefined;
      }
      return entry.row;
    },
    epoch: () => epoch,
    set(sessionId, row, startedIn, now) {
      if (!isListening || startedIn !== epoch) return;
      drop(sessionId);
      // Bounded: the oldest entry makes room (a Map iterates in insertion order).
      if (entries.size >= maxEntries) drop(entries.keys().next().value!);
      entries.set(sessionId, { row, until: now + CACHE_TTL_MS });
      let sessions = byUser.get(row.user_id);
      if (sessions === undefined) byUser.set(row.user_id, (sessions = new Set()));
      sessions.add(sessionId);
    },
    touch(sessionId, now) {
      const entry = entries.get(sessionId);
      if (entry !== undefined) entry.row = { ...entry.row, last_seen_at: now };
    },
    apply(change) {
      epoch++;
      if (change === 'all') return clear();
      if ('session' in change) return drop(change.session);
      for (const sessionId of [...(byUser.get(change.user) ?? [])]) drop(sessionId);
    },
    setListening(next) {
      epoch++;
      isListening = next;
      clear();
    },
  };
}
