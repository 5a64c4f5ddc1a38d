import type { Kysely } from 'kysely';

/**
 * The admin audit log filtered by an address reads the events of its account or those that name
 * the address (failed sign-ins, `user_id = ? or email = ?`): the account's side has
 * `(user_id, created_at)`, and this index serves the address's side, so neither is a scan of the
 * log.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('audit_events_email_created_at_idx').on('audit_events').columns(['email', 'created_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('audit_events_email_created_at_idx').execute();
}
