import type { Kysely } from 'kysely';

/** Lets housekeeping find idle and revoked sessions without scanning the table. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('sessions_last_seen_at_idx').on('sessions').column('last_seen_at').execute();
  await db.schema.createIndex('sessions_revoked_at_idx').on('sessions').column('revoked_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('sessions_revoked_at_idx').execute();
  await db.schema.dropIndex('sessions_last_seen_at_idx').execute();
}
