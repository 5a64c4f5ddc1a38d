import type { Kysely } from 'kysely';

/** The admin user list pages newest first by (created_at, id): an index serves it without a sort. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.createIndex('users_created_at_id_idx').on('users').columns(['created_at', 'id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('users_created_at_id_idx').execute();
}
