import type { Kysely } from 'kysely';

/**
 * Fair delivery (issue 30.3): one attempt at a time per endpoint, across instances.
 * - `webhook_endpoints.lane_locked_until` / `lane_locked_by`: the endpoint's lane lease, taken by a
 *   worker with one conditional UPDATE before it claims one of the endpoint's deliveries and given
 *   back when that attempt is recorded; a lease whose holder died runs out with the delivery's own
 *   (both three times WEBHOOK_TIMEOUT_MS). Null while no attempt to the endpoint is in flight.
 * - `webhook_deliveries (endpoint_id, status, next_attempt_at)`: an endpoint's due pending
 *   deliveries, oldest first (the claim), and how many it has pending (the backlog cap), without
 *   reading its delivered and failed history.
 *
 * Safe on a live database: two nullable columns without a default are a change to the catalog
 * only, and code from before it neither reads nor writes them (an older instance still claims by
 * the delivery's lease alone, as it did).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('webhook_endpoints').addColumn('lane_locked_until', 'bigint').execute();
  await db.schema.alterTable('webhook_endpoints').addColumn('lane_locked_by', 'varchar(32)').execute();
  await db.schema.createIndex('webhook_deliveries_endpoint_id_status_next_attempt_at_idx').on('webhook_deliveries').columns(['endpoint_id', 'status', 'next_attempt_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('webhook_deliveries_endpoint_id_status_next_attempt_at_idx').execute();
  await db.schema.alterTable('webhook_endpoints').dropColumn('lane_locked_by').execute();
  await db.schema.alterTable('webhook_endpoints').dropColumn('lane_locked_until').execute();
}
