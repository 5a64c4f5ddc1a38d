import type { Kysely } from 'kysely';

/**
 * A client's back-channel logout URI (OpenID Back-Channel Logout 1.0): where Gatehouse posts a
 * logout token when a person signed in to it signs out. Null for a client that registered none.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('oidc_clients').addColumn('backchannel_logout_uri', 'varchar(2048)').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('oidc_clients').dropColumn('backchannel_logout_uri').execute();
}
