/**
 * The metrics module's reads, at scrape time only: the backlog of an outbox (mail, webhooks). One
 * bounded statement per outbox, on the index both outboxes have for their workers' claim
 * (`status, next_attempt_at`): at most `cap` pending rows are read, soonest due first.
 */
import { sql } from 'kysely';
import type { Db } from '../storage/database.ts';

/** The outboxes whose backlog is measured: both have `status`, `next_attempt_at` and `created_at`, indexed alike. */
export type OutboxTable = 'mail_outbox' | 'webhook_deliveries';

export interface OutboxBacklog {
  /** Pending rows, counted up to `cap`. */
  readonly pending: number;
  /** When the oldest of them was written (epoch ms); null when none is pending. */
  readonly oldestCreatedAt: number | null;
}

/**
 * Pending rows of `table`, up to `cap`, and the creation time of the oldest among them. Below `cap`
 * both are exact; at `cap` the count says "at least" and the oldest is that of the `cap` soonest due
 * (the oldest message is nearly always among them: it has waited longest).
 */
export async function readOutboxBacklog(db: Db, table: OutboxTable, cap: number): Promise<OutboxBacklog> {
  const { rows } = await sql<{ pending: number | string; oldest: number | string | null }>`
    select count(*) as pending, min(created_at) as oldest
    from (select created_at from ${sql.table(table)} where status = 'pending' order by next_attempt_at limit ${cap}) as backlog
  `.execute(db);
  const row = rows[0];
  return { pending: Number(row?.pending ?? 0), oldestCreatedAt: row?.oldest === null || row?.oldest === undefined ? null : Number(row.oldest) };
}
