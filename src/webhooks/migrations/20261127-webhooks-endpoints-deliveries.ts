import type { Kysely } from 'kysely';

/**
 * Outbound webhooks.
 * - `webhook_endpoints`: one row per receiver. `url` as registered (https; checked again at each
 *   delivery); `event_types` a JSON array of the webhook event types it wants; `secret_sealed` the
 *   signing secret (`whsec_…`) sealed with AES-256-GCM under a key derived from AUTH_SECRET, bound
 *   to the endpoint id (a database dump alone yields no secret); after a rotation
 *   `previous_secret_sealed` keeps the old one signing too until `previous_secret_expires_at`.
 *   `disabled_at` / `disabled_reason` (`ADMIN`, or `FAILING` when the worker disabled it);
 *   `failing_since`: the first failed attempt since the last delivered one (null while healthy).
 * - `webhook_deliveries`: the outbox, one row per event and endpoint, written in the transaction of
 *   the change. `message_id` is the `webhook-id` header, the same on every attempt (receivers
 *   dedupe by it); `payload` the JSON body exactly as signed (ids and facts only, never a secret).
 *   Workers claim a row by setting `locked_until` / `locked_by` in one conditional UPDATE.
 *   `status` is pending, delivered or failed; `last_error` a short code, `last_response_snippet`
 *   the first few characters of the receiver's last answer.
 * Times are epoch milliseconds.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('url', 'varchar(2048)', (c) => c.notNull())
    .addColumn('description', 'varchar(200)', (c) => c.notNull())
    .addColumn('event_types', 'text', (c) => c.notNull())
    .addColumn('secret_sealed', 'text', (c) => c.notNull())
    .addColumn('previous_secret_sealed', 'text')
    .addColumn('previous_secret_expires_at', 'bigint')
    .addColumn('disabled_at', 'bigint')
    .addColumn('disabled_reason', 'varchar(16)')
    .addColumn('failing_since', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('secret_rotated_at', 'bigint')
    .execute();
  await db.schema.createIndex('webhook_endpoints_created_at_idx').on('webhook_endpoints').column('created_at').execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('endpoint_id', 'varchar(32)', (c) => c.notNull().references('webhook_endpoints.id').onDelete('cascade'))
    .addColumn('message_id', 'varchar(64)', (c) => c.notNull())
    .addColumn('event_type', 'varchar(64)', (c) => c.notNull())
    .addColumn('event_id', 'varchar(32)')
    .addColumn('payload', 'text', (c) => c.notNull())
    // pending | delivered | failed
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('first_attempt_at', 'bigint')
    .addColumn('last_attempt_at', 'bigint')
    .addColumn('locked_until', 'bigint')
    .addColumn('locked_by', 'varchar(32)')
    .addColumn('last_response_code', 'integer')
    .addColumn('last_error', 'varchar(64)')
    .addColumn('last_response_snippet', 'varchar(200)')
    .addColumn('redelivery_of', 'varchar(32)')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('delivered_at', 'bigint')
    .execute();
  // The worker's claim: the due pending rows, oldest first.
  await db.schema.createIndex('webhook_deliveries_status_next_attempt_at_idx').on('webhook_deliveries').columns(['status', 'next_attempt_at']).execute();
  // An endpoint's deliveries, newest first (its page, the CLI), and deleting them with it.
  await db.schema.createIndex('webhook_deliveries_endpoint_id_created_at_idx').on('webhook_deliveries').columns(['endpoint_id', 'created_at']).execute();
  // The retention purge deletes the oldest finished rows by time.
  await db.schema.createIndex('webhook_deliveries_created_at_idx').on('webhook_deliveries').column('created_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('webhook_deliveries').execute();
  await db.schema.dropTable('webhook_endpoints').execute();
}
