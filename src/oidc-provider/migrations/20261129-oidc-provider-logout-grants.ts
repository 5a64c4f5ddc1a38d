import type { Kysely } from 'kysely';

/**
 * The grant an app got with each back-channel logout link: when the Gatehouse session ends, the
 * grant ends with it (its refresh token stops working), so an app that lost what its logout token
 * told it (a restart with a memory store, another instance) still loses the session at its next
 * refresh. Null for links made before this column.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('oidc_logout_links').addColumn('grant_id', 'varchar(128)').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('oidc_logout_links').dropColumn('grant_id').execute();
}
