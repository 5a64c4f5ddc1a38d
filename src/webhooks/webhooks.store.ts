/**
 * Queries on webhook endpoints and their deliveries (the outbox). Functions take `db` so callers
 * can pass a transaction. A worker claims an endpoint's lane, then one of its deliveries, each with
 * one conditional UPDATE that re-checks every condition on the row itself (and, on PostgreSQL,
 * skips rows another worker is locking), so of two workers racing for the same row exactly one gets
 * it; every later write about the attempt names the claim's owner, so a worker whose lease ran out
 * and was taken over changes nothing.
 */
import type { ExpressionBuilder, Selectable } from 'kysely';
import type { Database } from '../storage/schema.ts';
import type { Db } from '../storage/database.ts';

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
  /** The lane lease: one attempt to this endpoint at a time, across instances (see claimNextDue). */
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

/** A delivery that can be attempted now: pending, due, and not leased to a live attempt. */
const isClaimableAt =
  (now: number) =>
  (eb: ExpressionBuilder<Database, 'webhook_deliveries'>) =>
    eb.and([
      eb('webhook_deliveries.status', '=', 'pending'),
      eb('webhook_deliveries.next_attempt_at', '<=', now),
      eb.or([eb('webhook_deliveries.locked_until', 'is', null), eb('webhook_deliveries.locked_until', '<', now)]),
    ]);

/** An endpoint no attempt is in flight to (or only one whose holder died: its lease ran out). */
const isLaneFreeAt =
  (now: number) =>
  (eb: ExpressionBuilder<Database, 'webhook_endpoints'>) =>
    eb.or([eb('webhook_endpoints.lane_locked_until', 'is', null), eb('webhook_endpoints.lane_locked_until', '<', now)]);

/**
 * Takes the lane of an enabled endpoint (not one of `excludeEndpointIds`) that has a claimable
 * delivery and whose lane is free, then that endpoint's oldest claimable delivery, both for `owner`
 * (the claim's lease token) until `lockedUntil`, and counts the attempt; null when no endpoint has
 * anything claimable. The lane is what keeps every other worker, on any instance, off the endpoint
 * until releaseLane (or until the lease runs out, when its holder died): one attempt per endpoint
 * at a time, so a receiver that never answers holds one attempt, never a backlog of them.
 */
export async function claimNextDue(
  db: Db,
  options: { now: number; owner: string; lockedUntil: number; isPostgres: boolean; excludeEndpointIds?: readonly string[] },
): Promise<DeliveryRow | null> {
  const excluded = [...(options.excludeEndpointIds ?? [])];
  // Bounded: each turn either claims, or leaves out one more endpoint whose lane it just gave back.
  for (;;) {
    const endpointId = await claimLane(db, { ...options, excludeEndpointIds: excluded });
    if (endpointId === null) return null;
    const row = await claimDeliveryOf(db, endpointId, options);
    if (row !== null) return row;
    // Its claimable delivery went meanwhile (delivered by a worker whose lane lease had run out,
    // the endpoint deleted): give the lane back and look at the other endpoints.
    await releaseLane(db, endpointId, options.owner);
    excluded.push(endpointId);
  }
}

async function claimLane(
  db: Db,
  options: { now: number; owner: string; lockedUntil: number; isPostgres: boolean; excludeEndpointIds: readonly string[] },
): Promise<string | null> {
  const { now, owner, lockedUntil, excludeEndpointIds } = options;
  let candidate = db
    .selectFrom('webhook_endpoints')
    .select('webhook_endpoints.id')
    .where('webhook_endpoints.disabled_at', 'is', null)
    .where(isLaneFreeAt(now))
    .$if(excludeEndpointIds.length > 0, (query) => query.where('webhook_endpoints.id', 'not in', [...excludeEndpointIds]))
    .where((eb) => eb.exists(eb.selectFrom('webhook_deliveries').select('webhook_deliveries.id').whereRef('webhook_deliveries.endpoint_id', '=', 'webhook_endpoints.id').where(isClaimableAt(now))))
    .orderBy('webhook_endpoints.id')
    .limit(1);
  // PostgreSQL: skip an endpoint another worker is claiming instead of waiting for its transaction.
  if (options.isPostgres) candidate = candidate.forUpdate('webhook_endpoints').skipLocked();
  const lane = await db
    .updateTable('webhook_endpoints')
    .set({ lane_locked_until: lockedUntil, lane_locked_by: owner })
    // `=` and not `in`: PostgreSQL then runs the locking sub-select once (as the mail outbox does).
    .where('id', '=', candidate)
    // Re-checked on the row as it is when the UPDATE takes it, whatever the sub-select saw.
    .where('disabled_at', 'is', null)
    .where(isLaneFreeAt(now))
    .returning('id')
    .executeTakeFirst();
  return lane?.id ?? null;
}

async function claimDeliveryOf(db: Db, endpointId: string, options: { now: number; owner: string; lockedUntil: number; isPostgres: boolean }): Promise<DeliveryRow | null> {
  const { now, owner, lockedUntil } = options;
  let due = db
    .selectFrom('webhook_deliveries')
    .select('webhook_deliveries.id')
    .where('webhook_deliveries.endpoint_id', '=', endpointId)
    .where(isClaimableAt(now))
    .orderBy('webhook_deliveries.next_attempt_at')
    .orderBy('webhook_deliveries.id')
    .limit(1);
  // PostgreSQL: skip a row a worker whose lane lease ran out may still be claiming.
  if (options.isPostgres) due = due.forUpdate('webhook_deliveries').skipLocked();
  const row = await db
    .updateTable('webhook_deliveries')
    .set((eb) => ({ locked_until: lockedUntil, locked_by: owner, attempts: eb('attempts', '+', 1) }))
    .where('id', '=', due)
    // Re-checked on the row as it is when the UPDATE takes it, whatever the sub-select saw.
    .where(isClaimableAt(now))
    .returningAll()
    .executeTakeFirst();
  return row ?? null;
}

/** Gives an endpoint's lane back once its attempt is recorded; only the holder's write counts. */
export async function releaseLane(db: Db, endpointId: string, owner: string): Promise<void> {
  await db.updateTable('webhook_endpoints').set({ lane_locked_until: null, lane_locked_by: null }).where('id', '=', endpointId).where('lane_locked_by', '=', owner).execute();
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

export interface AttemptOutcome {
  responseCode: number | null;
  error: string | null;
  snippet: string | null;
}

export async function markDelivered(db: Db, id: string, owner: string, at: number, outcome: AttemptOutcome): Promise<boolean> {
  const result = await db
    .updateTable('webhook_deliveries')
    .set({
      status: 'delivered',
      delivered_at: at,
      locked_until: null,
      locked_by: null,
      last_response_code: outcome.responseCode,
      last_error: null,
      last_response_snippet: outcome.snippet,
    })
    .where('id', '=', id)
    .where('locked_by', '=', owner)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function scheduleRetry(db: Db, id: string, owner: string, nextAttemptAt: number, outcome: AttemptOutcome): Promise<boolean> {
  const result = await db
    .updateTable('webhook_deliveries')
    .set({
      next_attempt_at: nextAttemptAt,
      locked_until: null,
      locked_by: null,
      last_response_code: outcome.responseCode,
      last_error: outcome.error,
      last_response_snippet: outcome.snippet,
    })
    .where('id', '=', id)
    .where('locked_by', '=', owner)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function markFailed(db: Db, id: string, owner: string, outcome: AttemptOutcome): Promise<boolean> {
  const result = await db
    .updateTable('webhook_deliveries')
    .set({
      status: 'failed',
      locked_until: null,
      locked_by: null,
      last_response_code: outcome.responseCode,
      last_error: outcome.error,
      last_response_snippet: outcome.snippet,
    })
    .where('id', '=', id)
    .where('locked_by', '=', owner)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Deletes at most `batchSize` of the oldest delivered or failed deliveries created before `cutoff`. */
export async function deleteFinishedBefore(db: Db, cutoff: number, batchSize: number): Promise<number> {
  const result = await db
    .deleteFrom('webhook_deliveries')
    .where(
      'id',
      'in',
      db
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('status', 'in', ['delivered', 'failed'])
        .where('created_at', '<', cutoff)
        .orderBy('created_at')
        .limit(batchSize),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
