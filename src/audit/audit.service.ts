/**
 * The audit log: who did what to which account, when, from where. Features call `record()` where
 * the thing happens; operators read it through the admin API; a background job deletes what is
 * older than `AUDIT_RETENTION`.
 *
 * Recording never costs the user their action: outside a transaction a failed write is logged and
 * swallowed. A security-relevant change made in a transaction (roles, disabling, ending sessions)
 * passes its transaction, and then the event and the change commit or fail together.
 *
 * The audit events are Gatehouse's domain events: modules subscribe to them in-process
 * (`EventSubscription`, declared through the module contract). A subscriber runs in the same
 * transaction as the event (and so as the change it describes): what it writes commits with the
 * change or not at all, so a subscriber that persists (a webhook outbox, say) never sees an event
 * whose change rolled back. An event recorded outside a transaction gets one of its own when
 * someone subscribes to it.
 */
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { Db } from '../storage/database.ts';
import type { AuditEventRow } from '../storage/schema.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { randomId } from '../lib/random.ts';
import { toPage, type KeysetPosition } from '../lib/keyset-cursor.ts';
import * as store from './audit.store.ts';
import type { AuditSource } from './audit-source.ts';

/**
 * Every event type, by name: stable, lower-case dotted, never renamed. Each module declares the
 * types it records, in its module definition (`auditEvents`) and in this type:
 *
 *   const AUDIT_EVENTS = ['mfa.enabled', 'mfa.disabled'] as const;
 *   type MfaAuditEvents = Record<(typeof AUDIT_EVENTS)[number], true>;
 *   declare module '../audit/audit.service.ts' {
 *     interface AuditEventTypes extends MfaAuditEvents {}
 *   }
 */
export interface AuditEventTypes {}

export type AuditEventType = keyof AuditEventTypes & string;

export { CLI_SOURCE, SYSTEM_SOURCE, type AuditSource } from './audit-source.ts';

export interface AuditEventInput {
  type: AuditEventType;
  /** The account the event is about; null when there is none (a sign-in to an unknown address). */
  userId?: string | null;
  source?: AuditSource;
  /** Sign-in failures only: the address tried. Ignored for every other type. */
  email?: string | null;
  /** A stable UPPER_SNAKE code. */
  reason?: string | null;
  /** Small and never secret: ids, role names, counts. */
  details?: Record<string, unknown> | null;
}

export interface AuditEvent {
  id: string;
  type: string;
  userId: string | null;
  actorUserId: string | null;
  email: string | null;
  ip: string | null;
  userAgent: string | null;
  reason: string | null;
  details: Record<string, unknown> | null;
  /** Epoch ms. */
  createdAt: number;
}

export interface EventPage {
  events: AuditEvent[];
  next: KeysetPosition | null;
}

/** A module's interest in domain events; `handle` runs inside the event's transaction (`db`). */
export interface EventSubscription {
  readonly types: readonly AuditEventType[];
  handle(event: AuditEvent, db: Db): Promise<void>;
}

export type AuditService = ReturnType<typeof createAuditService>;

const MAX_DETAILS_LENGTH = 2_000;
/** Belt and braces: a details key that names a secret is dropped, whatever a caller passed. */
const SECRET_KEY = /pass(word|phrase)?|token|secret|hash|seed|cookie|authorization|credential/i;

export function createAuditService(deps: {
  db: Db;
  clock: Clock;
  logger: Logger;
  /** Every module's subscriptions, read at each event (the modules declaring them are built later). */
  subscriptions?: () => readonly EventSubscription[];
  /**
   * Every type the modules declare, in list order (the admin filters offer them), with the module
   * that declares it (where the admin log finds its words: `<module>.eventType.<type>`).
   */
  eventOwners?: ReadonlyMap<AuditEventType, string>;
}) {
  const { db, clock, logger } = deps;

  /** The subscriptions to `type`, in module order. */
  function subscribersOf(type: string): EventSubscription[] {
    return (deps.subscriptions?.() ?? []).filter((subscription) => (subscription.types as readonly string[]).includes(type));
  }

  /** The event, and what its subscribers write, in `trx`. */
  async function write(trx: Db, row: AuditEventRow, subscribers: readonly EventSubscription[]): Promise<void> {
    await store.insertEvent(trx, row);
    if (subscribers.length === 0) return;
    const event = toEvent(row);
    for (const subscriber of subscribers) await subscriber.handle(event, trx);
  }

  function toRow(event: AuditEventInput): AuditEventRow {
    const source = event.source;
    const details = { ...(event.details ?? {}), ...(source?.via !== undefined && { via: source.via }) };
    return {
      id: randomId(),
      type: event.type,
      user_id: event.userId ?? null,
      actor_user_id: source?.actorUserId ?? null,
      email: event.type === 'signin.failure' ? cut(event.email, 320) : null,
      ip: cut(source?.ip, 64),
      user_agent: cut(source?.userAgent, 512),
      reason: cut(event.reason, 64),
      details: serializeDetails(details),
      created_at: clock(),
    };
  }

  return {
    eventTypes: [...(deps.eventOwners?.keys() ?? [])] as readonly AuditEventType[],
    eventOwners: deps.eventOwners ?? new Map<AuditEventType, string>(),
    /**
     * Writes one event. With `options.db` (a transaction) a failure propagates, so the change it
     * describes is rolled back with it; without, a failure is logged and the caller carries on.
     */
    async record(event: AuditEventInput, options: { db?: Db } = {}): Promise<void> {
      const row = toRow(event);
      const subscribers = subscribersOf(row.type);
      if (options.db !== undefined) {
        await write(options.db, row, subscribers);
        return;
      }
      try {
        // One statement needs no transaction; with subscribers, the event and their writes share one.
        if (subscribers.length === 0) await store.insertEvent(db, row);
        else await db.transaction().execute((trx) => write(trx, row, subscribers));
      } catch (error) {
        logger.error({ err: error, auditEvent: { type: row.type, userId: row.user_id, reason: row.reason } }, 'audit event not recorded');
      }
    },

    /** For an account being deleted, inside its transaction: see `store.erasePersonalData`. */
    async erasePersonalData(userId: string, email: string, options: { db: Db }): Promise<void> {
      await store.erasePersonalData(options.db, userId, email);
    },

    /** Newest first; pass the previous page's `next` as `before` to continue. */
    async listEvents(filter: store.EventFilter & { before?: KeysetPosition; limit: number }): Promise<EventPage> {
      const rows = await store.findEvents(db, { ...filter, limit: filter.limit + 1 });
      const { items, next } = toPage(rows, filter.limit, (row) => ({ createdAt: row.created_at, id: row.id }));
      return { events: items.map(toEvent), next };
    },

    /** Events of `types` per UTC day (days since the epoch) since `from`, counted in one grouped query. */
    countEventsPerDay: (types: readonly string[], from: number) => store.countEventsPerDay(db, types, from),
    /** Events of `type` per UTC day since `from`, by string fields of their details (a sign-in's `method`, `provider`). */
    countEventsPerDayBy: (type: string, detailKeys: readonly string[], from: number) => store.countEventsPerDayBy(db, type, detailKeys, from),
    /** The condition "has / has no event of `type` since `from`" on a users query (the filter by last sign-in). */
    hasEventSince: store.hasEventSince,
    /** Distinct accounts with an event of `type` per UTC day since `from`, and over the whole range. */
    countDistinctUsersPerDay: (type: string, from: number) => store.countDistinctUsersPerDay(db, type, from),

    /**
     * Deletes events created before `cutoff`, oldest first, `batchSize` rows per statement and at
     * most `maxBatches` statements, yielding to the event loop between them so a large backlog
     * never holds up requests. `isDone` is false when old events remain.
     */
    async purgeOlderThan(
      cutoff: number,
      options: { batchSize: number; maxBatches?: number; shouldStop?: () => boolean },
    ): Promise<{ deleted: number; isDone: boolean }> {
      const maxBatches = options.maxBatches ?? Number.POSITIVE_INFINITY;
      let deleted = 0;
      for (let batch = 0; batch < maxBatches; batch++) {
        if (batch > 0) {
          if (options.shouldStop?.()) return { deleted, isDone: false };
          await yieldToEventLoop();
        }
        const count = await store.deleteOldestBefore(db, cutoff, options.batchSize);
        deleted += count;
        if (count < options.batchSize) return { deleted, isDone: true };
      }
      return { deleted, isDone: false };
    },
  };
}

function toEvent(row: AuditEventRow): AuditEvent {
  return {
    id: row.id,
    type: row.type,
    userId: row.user_id,
    actorUserId: row.actor_user_id,
    email: row.email,
    ip: row.ip,
    userAgent: row.user_agent,
    reason: row.reason,
    details: parseDetails(row.details),
    createdAt: row.created_at,
  };
}

function cut(value: string | null | undefined, max: number): string | null {
  if (value === null || value === undefined) return null;
  if (value.length <= max) return value;
  const cutValue = value.slice(0, max);
  return /[\uD800-\uDBFF]$/.test(cutValue) ? cutValue.slice(0, -1) : cutValue;
}

function withoutSecrets(value: unknown, depth = 0): unknown {
  if (depth > 4) return null;
  if (Array.isArray(value)) return value.slice(0, 100).map((item) => withoutSecrets(item, depth + 1));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([key]) => !SECRET_KEY.test(key))
        .map(([key, item]) => [key, withoutSecrets(item, depth + 1)]),
    );
  }
  return value;
}

function serializeDetails(details: Record<string, unknown>): string | null {
  if (Object.keys(details).length === 0) return null;
  const text = JSON.stringify(withoutSecrets(details));
  return text.length <= MAX_DETAILS_LENGTH ? text : JSON.stringify({ truncated: true });
}

function parseDetails(text: string | null): Record<string, unknown> | null {
  if (text === null) return null;
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
