/**
 * How instances tell each other that a session's check read changed (session-check-cache.ts):
 * PostgreSQL's LISTEN/NOTIFY. An announcement is a `pg_notify` on the change's own connection, so
 * inside a transaction it is delivered when the transaction commits and never if it rolls back;
 * every instance (the announcing one included) hears it on a connection of its own that LISTENs.
 * That connection lost, the cache is told to keep nothing until it listens again (it reconnects
 * every RETRY_MS).
 */
import { sql } from 'kysely';
import type pg from 'pg';
import { loadPg, type Db } from '../storage/database.ts';
import type { Logger } from '../lib/logger.ts';
import type { BackgroundJob } from '../module.ts';
import type { AuditEventType, EventSubscription } from '../audit/audit.service.ts';
import { createSessionCheckCache, type SessionChange, type SessionCheckCache } from './session-check-cache.ts';

export const SESSION_CHANGES_CHANNEL = 'gatehouse_session_changes';
const RETRY_MS = 1_000;

export function encodeChange(change: SessionChange): string {
  if (change === 'all') return '*';
  return 'session' in change ? `s:${change.session}` : `u:${change.user}`;
}

/** An announcement's payload as a change; anything else (another version's, say) as every session. */
export function decodeChange(payload: string | undefined): SessionChange {
  if (payload?.startsWith('s:') === true && payload.length > 2) return { session: payload.slice(2) };
  if (payload?.startsWith('u:') === true && payload.length > 2) return { user: payload.slice(2) };
  return 'all';
}

/** Announces `change` on `db`: at the commit of its transaction, or at once outside one. */
export async function announceChange(db: Db, change: SessionChange): Promise<void> {
  await sql`select pg_notify(${SESSION_CHANGES_CHANNEL}, ${encodeChange(change)})`.execute(db);
}

/**
 * Listens for announcements on a connection of its own while started; tells `onListening` when it
 * starts and stops hearing them (a lost connection), and `onChange` each one heard.
 */
export function createChangeListener(deps: {
  url: string;
  logger: Logger;
  onChange(change: SessionChange): void;
  onListening(isListening: boolean): void;
}): BackgroundJob {
  const { Client } = loadPg();
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  let isStopped = false;
  let hasWarned = false;

  function lost(from: pg.Client, error: unknown): void {
    if (client !== from) return;
    client = undefined;
    deps.onListening(false);
    from.end().catch(() => {});
    if (isStopped) return;
    if (!hasWarned) {
      // The code only: a connection error's text may name the server, never worth a secret's risk.
      deps.logger.warn({ code: (error as { code?: string } | undefined)?.code ?? null }, 'session check cache: not listening to PostgreSQL; every check reads storage until it is back');
      hasWarned = true;
    }
    retry = setTimeout(() => void connect(), RETRY_MS);
    retry.unref();
  }

  async function connect(): Promise<void> {
    retry = undefined;
    if (isStopped) return;
    const next = new Client({ connectionString: deps.url });
    client = next;
    next.on('error', (error) => lost(next, error));
    next.on('end', () => lost(next, undefined));
    next.on('notification', (message) => {
      if (client === next && message.channel === SESSION_CHANGES_CHANNEL) deps.onChange(decodeChange(message.payload));
    });
    try {
      await next.connect();
      await next.query(`LISTEN ${SESSION_CHANGES_CHANNEL}`);
    } catch (error) {
      lost(next, error);
      return;
    }
    if (client !== next) return;
    if (hasWarned) deps.logger.info({}, 'session check cache: listening to PostgreSQL again');
    hasWarned = false;
    deps.onListening(true);
  }

  return {
    start: () => connect(),
    async stop() {
      isStopped = true;
      if (retry !== undefined) clearTimeout(retry);
      const current = client;
      client = undefined;
      deps.onListening(false);
      await current?.end().catch(() => {});
    },
  };
}

/** What a domain event changes of check reads: its user's sessions; an organization's, anyone's (its slug, its members); else none. */
export function changeOfEvent(event: { type: string; userId: string | null }): SessionChange | null {
  if (event.type.startsWith('organization.')) return 'all';
  return event.userId === null ? null : { user: event.userId };
}

export interface SessionChanges {
  cache: SessionCheckCache;
  /** Tells every instance's cache: this one's at once, the others (and this one again) at the commit of `db`'s transaction. */
  announce(db: Db, change: SessionChange): Promise<void>;
  /** PostgreSQL: the LISTEN connection, started and stopped with the app. */
  listener?: BackgroundJob;
  /** PostgreSQL: every domain event, in its transaction: announces what it changes (`changeOfEvent`). */
  subscription?: EventSubscription;
}

/**
 * SESSION_CHECK_CACHE on SQLite: the cache alone, its reads kept while storage's change counter
 * (`changeCounter`) stays the same. Every commit of any connection moves it, so there is nothing
 * to announce or to listen for; this instance's own changes are still dropped at once.
 */
export function createSqliteSessionChanges(size: number, changeCounter: () => number): SessionChanges {
  const cache = createSessionCheckCache(size, changeCounter);
  cache.setListening(true);
  return { cache, announce: async (_db, change) => cache.apply(change) };
}

/** SESSION_CHECK_CACHE's parts: the cache, the announcements, the listener and the subscription to every event type. */
export function createSessionChanges(deps: { url: string; size: number; logger: Logger; eventTypes: readonly AuditEventType[] }): SessionChanges {
  const cache = createSessionCheckCache(deps.size);
  const announce = async (db: Db, change: SessionChange) => {
    cache.apply(change);
    await announceChange(db, change);
  };
  return {
    cache,
    announce,
    listener: createChangeListener({ url: deps.url, logger: deps.logger, onChange: (change) => cache.apply(change), onListening: (isListening) => cache.setListening(isListening) }),
    subscription: {
      types: deps.eventTypes,
      handle: async (event, db) => {
        const change = changeOfEvent(event);
        if (change !== null) await announce(db, change);
      },
    },
  };
}
