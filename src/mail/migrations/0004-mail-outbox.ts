import type { Kysely } from 'kysely';

/**
 * The mail outbox: a feature writes the message in its own transaction (so a reset token and its
 * mail commit together), and a background worker sends it. `payload` holds the rendered message
 * sealed under a key derived from AUTH_SECRET (it can carry a reset link, which is a secret); it
 * is cleared once SMTP has accepted the message. Workers claim a row by setting `locked_until` /
 * `locked_by` in one conditional UPDATE, so two instances never send the same message in normal
 * operation. Times are epoch milliseconds.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('mail_outbox')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('to_address', 'varchar(320)', (c) => c.notNull())
    .addColumn('template', 'varchar(64)', (c) => c.notNull())
    .addColumn('payload', 'text')
    // pending | sent | failed
    .addColumn('status', 'varchar(16)', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    .addColumn('locked_until', 'bigint')
    .addColumn('locked_by', 'varchar(32)')
    .addColumn('last_error', 'varchar(300)')
    // smtp | dev-outbox: where a sent message went.
    .addColumn('delivered_via', 'varchar(16)')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('sent_at', 'bigint')
    .execute();
  // The worker's claim: the due pending rows, oldest first.
  await db.schema.createIndex('mail_outbox_status_next_attempt_at_idx').on('mail_outbox').columns(['status', 'next_attempt_at']).execute();
  // The retention purge deletes the oldest finished rows by time.
  await db.schema.createIndex('mail_outbox_created_at_idx').on('mail_outbox').column('created_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('mail_outbox').execute();
}
