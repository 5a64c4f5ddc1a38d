/**
 * Queries on the mail outbox. Functions take `db` so callers can pass a transaction. A worker
 * claims a row with one conditional UPDATE that re-checks every condition on the row itself, so
 * of two workers racing for the same row exactly one gets it, on SQLite and on PostgreSQL.
 */
import type { Db } from '../storage/database.ts';
import type { MailOutboxRow } from '../storage/schema.ts';

export async function insertMessage(db: Db, row: MailOutboxRow): Promise<void> {
  await db.insertInto('mail_outbox').values(row).execute();
}

/**
 * Takes the oldest due pending message for `owner` until `lockedUntil` and counts the attempt;
 * null when nothing is due. A row whose holder died becomes claimable when its lock runs out.
 */
export async function claimNextDue(
  db: Db,
  options: { now: number; owner: string; lockedUntil: number; isPostgres: boolean },
): Promise<MailOutboxRow | null> {
  const { now, owner, lockedUntil } = options;
  let due = db
    .selectFrom('mail_outbox')
    .select('id')
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', now)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', now)]))
    .orderBy('next_attempt_at')
    .orderBy('id')
    .limit(1);
  // PostgreSQL: skip a row another worker is claiming instead of waiting for its transaction.
  if (options.isPostgres) due = due.forUpdate().skipLocked();
  const row = await db
    .updateTable('mail_outbox')
    .set((eb) => ({ locked_until: lockedUntil, locked_by: owner, attempts: eb('attempts', '+', 1) }))
    // `=` and not `in`: PostgreSQL then runs the locking sub-select once (an InitPlan); under `in`
    // it may re-run it for every outer row of a semi-join and match nothing, or more than one row.
    .where('id', '=', due)
    // Re-checked on the row as it is when the UPDATE takes it, whatever the sub-select saw.
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', now)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<', now)]))
    .returningAll()
    .executeTakeFirst();
  return row ?? null;
}

/** Only the holder's update counts: a worker whose lock ran out and was taken over changes nothing. */
export async function markSent(
  db: Db,
  id: string,
  owner: string,
  outcome: { sentAt: number; deliveredVia: 'smtp' | 'dev-outbox'; keepPayload: boolean },
): Promise<boolean> {
  const result = await db
    .updateTable('mail_outbox')
    .set({
      status: 'sent',
      sent_at: outcome.sentAt,
      delivered_via: outcome.deliveredVia,
      locked_until: null,
      locked_by: null,
      last_error: null,
      ...(outcome.keepPayload ? {} : { payload: null }),
    })
    .where('id', '=', id)
    .where('locked_by', '=', owner)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function scheduleRetry(db: Db, id: string, owner: string, retry: { nextAttemptAt: number; lastError: string }): Promise<boolean> {
  const result = await db
    .updateTable('mail_outbox')
    .set({ next_attempt_at: retry.nextAttemptAt, last_error: retry.lastError, locked_until: null, locked_by: null })
    .where('id', '=', id)
    .where('locked_by', '=', owner)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export async function markFailed(db: Db, id: string, owner: string, lastError: string): Promise<boolean> {
  const result = await db
    .updateTable('mail_outbox')
    .set({ status: 'failed', last_error: lastError, locked_until: null, locked_by: null })
    .where('id', '=', id)
    .where('locked_by', '=', owner)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Deletes at most `batchSize` of the oldest sent or failed messages created before `cutoff`. */
export async function deleteFinishedBefore(db: Db, cutoff: number, batchSize: number): Promise<number> {
  const result = await db
    .deleteFrom('mail_outbox')
    .where(
      'id',
      'in',
      db
        .selectFrom('mail_outbox')
        .select('id')
        .where('status', 'in', ['sent', 'failed'])
        .where('created_at', '<', cutoff)
        .orderBy('created_at')
        .limit(batchSize),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Newest first. */
export async function findRecent(db: Db, limit: number): Promise<MailOutboxRow[]> {
  return db.selectFrom('mail_outbox').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
}

/** Deletes every message to `address`, whatever its state; returns how many. */
export async function deleteMessagesTo(db: Db, address: string): Promise<number> {
  const result = await db.deleteFrom('mail_outbox').where('to_address', '=', address).executeTakeFirst();
  return Number(result.numDeletedRows);
}
