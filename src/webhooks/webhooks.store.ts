/**
 * Queries on webhook endpoints and their deliveries (the outbox). Functions take `db` so callers
 * can pass a transaction. Claiming an endpoint's lane and then one of its deliveries, finishing,
 * retrying and purging are the shared outbox's (storage/outbox/outbox.store.ts), on the tables and
 * columns `DELIVERY_QUEUE` names; every write about an attempt here names the claim's lease token,
 * so a worker whose lease ran out and was taken over changes nothing.
 */
import type { Selectable } from 'kysely';
import type { Db } from '../storage/database.ts';
import type { OutboxQueue } from '../storage/outbox/outbox.store.ts';

export interface WebhookEndpointsTable {
  id: string;
  url: string;
  description: string;
  /** JSON array of webhook event types. */
  event_types: string;
  /** The signing secret (`whsec_…`), sealed (see signing.ts). */
  secret_sealed: string;
  /** The secret before the last rotation, still signing until `previous_secret_expires_at`. */
  previous_secret_sealed: string | null;
  previous_secret_expires_at: number | null;
  disabled_at: number | null;
  /** `ADMIN` or `FAILING`; null while enabled. */
  disabled_reason: string | null;
  /** The first failed attempt since the last delivered one; null while healthy. */
  failing_since: number | null;
  created_at: number;
  updated_at: number;
  secret_rotated_at: number | null;
  /** The lane lease: one attempt to this endpoint at a time, across instances (see DELIVERY_QUEUE). */
  lane_locked_until: number | null;
  lane_locked_by: string | null;
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface WebhookDeliveriesTable {
  id: string;
  endpoint_id: string;
  /** The `webhook-id` header: the same on every attempt. */
  message_id: string;
  event_type: string;
  /** The audit event it was made from; null for none (a test event). */
  event_id: string | null;
  /** The JSON body, exactly as signed. */
  payload: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: number;
  first_attempt_at: number | null;
  last_attempt_at: number | null;
  locked_until: number | null;
  locked_by: string | null;
  last_response_code: number | null;
  last_error: string | null;
  last_response_snippet: string | null;
  /** The delivery this one redelivers. */
  redelivery_of: string | null;
  created_at: number;
  delivered_at: number | null;
}

declare module '../storage/schema.ts' {
  interface Database {
    webhook_endpoints: WebhookEndpointsTable;
    webhook_deliveries: WebhookDeliveriesTable;
  }
}

export type EndpointRow = Selectable<WebhookEndpointsTable>;
export type DeliveryRow = Selectable<WebhookDeliveriesTable>;

/**
 * The deliveries as the shared outbox sees them: a lane per endpoint, leased on the endpoint's row
 * (`lane_locked_until` / `lane_locked_by`), none for a disabled one; `delivered` when done.
 */
export const DELIVERY_QUEUE: OutboxQueue<DeliveryRow> = {
  table: 'webhook_deliveries',
  doneStatus: 'delivered',
  doneAtColumn: 'delivered_at',
  lanes: { table: 'webhook_endpoints', keyColumn: 'endpoint_id', leaseUntilColumn: 'lane_locked_until', leaseByColumn: 'lane_locked_by', closedColumn: 'disabled_at' },
};

// --- endpoints ---

export async function insertEndpoint(db: Db, row: EndpointRow): Promise<void> {
  await db.insertInto('webhook_endpoints').values(row).execute();
}

export async function findEndpoint(db: Db, id: string): Promise<EndpointRow | undefined> {
  return db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Every endpoint, newest first. */
export async function listEndpoints(db: Db): Promise<EndpointRow[]> {
  return db.selectFrom('webhook_endpoints').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
}

/** The enabled endpoints (the subscription filters them by event type: the list is short). */
export async function listEnabledEndpoints(db: Db): Promise<Array<Pick<EndpointRow, 'id' | 'event_types' | 'failing_since'>>> {
  return db.selectFrom('webhook_endpoints').select(['id', 'event_types', 'failing_since']).where('disabled_at', 'is', null).orderBy('id').execute();
}

export async function updateEndpoint(
  db: Db,
  id: string,
  changes: Partial<Pick<EndpointRow, 'url' | 'description' | 'event_types'>>,
  now: number,
): Promise<boolean> {
  const result = await db.updateTable('webhook_endpoints').set({ ...changes, updated_at: now }).where('id', '=', id).executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function replaceSecret(
  db: Db,
  id: string,
  secrets: { sealed: string; previousSealed: string | null; previousExpiresAt: number | null },
  now: number,
): Promise<boolean> {
  const result = await db
    .updateTable('webhook_endpoints')
    .set({ secret_sealed: secrets.sealed, previous_secret_sealed: secrets.previousSealed, previous_secret_expires_at: secrets.previousExpiresAt, secret_rotated_at: now, updated_at: now })
    .where('id', '=', id)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Disables an enabled endpoint; false when there is none, or it was already disabled. */
export async function disableEndpoint(db: Db, id: string, reason: 'ADMIN' | 'FAILING', now: number): Promise<boolean> {
  const result = await db
    .updateTable('webhook_endpoints')
    .set({ disabled_at: now, disabled_reason: reason, updated_at: now })
    .where('id', '=', id)
    .where('disabled_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Enables a disabled endpoint, healthy again; false when there is none, or it was enabled. */
export async function enableEndpoint(db: Db, id: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('webhook_endpoints')
    .set({ disabled_at: null, disabled_reason: null, failing_since: null, updated_at: now })
    .where('id', '=', id)
    .where('disabled_at', 'is not', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function deleteEndpoint(db: Db, id: string): Promise<boolean> {
  await db.deleteFrom('webhook_deliveries').where('endpoint_id', '=', id).execute();
  const result = await db.deleteFrom('webhook_endpoints').where('id', '=', id).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** A failed attempt: the endpoint counts as failing from `at` unless it already was. */
export async function markEndpointFailing(db: Db, id: string, at: number): Promise<void> {
  await db.updateTable('webhook_endpoints').set({ failing_since: at }).where('id', '=', id).where('failing_since', 'is', null).execute();
}

/** A delivered attempt: the endpoint is healthy. */
export async function markEndpointHealthy(db: Db, id: string): Promise<void> {
  await db.updateTable('webhook_endpoints').set({ failing_since: null }).where('id', '=', id).where('failing_since', 'is not', null).execute();
}

// --- deliveries ---

export async function insertDeliveries(db: Db, rows: readonly DeliveryRow[]): Promise<void> {
  if (rows.length > 0) await db.insertInto('webhook_deliveries').values([...rows]).execute();
}

export async function findDelivery(db: Db, id: string): Promise<DeliveryRow | undefined> {
  return db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirst();
}

/** An endpoint's deliveries, newest first. */
export async function listDeliveries(db: Db, endpointId: string, limit: number): Promise<DeliveryRow[]> {
  return db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('endpoint_id', '=', endpointId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

/** Ends the pending deliveries of an endpoint that was just disabled. */
export async function failPendingDeliveries(db: Db, endpointId: string, lastError: string): Promise<number> {
  const result = await db
    .updateTable('webhook_deliveries')
    .set({ status: 'failed', last_error: lastError, locked_until: null, locked_by: null })
    .where('endpoint_id', '=', endpointId)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** How many pending deliveries each of `endpointIds` has (an endpoint with none is left out). */
export async function countPending(db: Db, endpointIds: readonly string[]): Promise<Map<string, number>> {
  if (endpointIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('webhook_deliveries')
    .select((eb) => ['endpoint_id', eb.fn.countAll<number | string | bigint>().as('pending')])
    .where('endpoint_id', 'in', [...endpointIds])
    .where('status', '=', 'pending')
    .groupBy('endpoint_id')
    .execute();
  return new Map(rows.map((row) => [row.endpoint_id, Number(row.pending)]));
}

/** Records the start of an attempt (its time, and the first attempt's); only the holder's write counts. */
export async function markAttempted(db: Db, id: string, owner: string, at: number): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set((eb) => ({ last_attempt_at: at, first_attempt_at: eb.fn.coalesce('first_attempt_at', eb.val(at)) }))
    .where('id', '=', id)
    .where('locked_by', '=', owner)
    .execute();
}
