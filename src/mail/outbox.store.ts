/**
 * Queries on the mail outbox. Functions take `db` so callers can pass a transaction. Claiming,
 * leasing, finishing, retrying and purging are the shared outbox's (storage/outbox/outbox.store.ts),
 * on the table `MAIL_QUEUE` names.
 */
import type { Db } from '../storage/database.ts';
import type { MailOutboxRow } from '../storage/schema.ts';
import type { OutboxQueue } from '../storage/outbox/outbox.store.ts';

/** The mail outbox as the shared outbox sees it: one lane (the one SMTP relay), `sent` when done. */
export const MAIL_QUEUE: OutboxQueue<MailOutboxRow> = { table: 'mail_outbox', doneStatus: 'sent', doneAtColumn: 'sent_at' };

export async function insertMessage(db: Db, row: MailOutboxRow): Promise<void> {
  await db.insertInto('mail_outbox').values(row).execute();
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
