import type { Kysely } from 'kysely';

/**
 * A client that authenticates with its own keys (`private_key_jwt`, RFC 7523) instead of a
 * secret: the URL of its public keys (its JWKS), which it may also sign request objects with
 * (JAR, RFC 9101). Null (every client before this migration): a secret, or none for a public client.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('oidc_clients').addColumn('jwks_uri', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('oidc_clients').dropColumn('jwks_uri').execute();
}
