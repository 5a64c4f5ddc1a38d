import type { Kysely } from 'kysely';

/**
 * Token exchange (RFC 8693): `exchange_resources`, the APIs (resource indicators) a client may
 * exchange a person's access token for, as a JSON array of strings. Empty (every client before
 * this migration): the client may not exchange at all.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('oidc_clients').addColumn('exchange_resources', 'text', (c) => c.notNull().defaultTo('[]')).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('oidc_clients').dropColumn('exchange_resources').execute();
}
