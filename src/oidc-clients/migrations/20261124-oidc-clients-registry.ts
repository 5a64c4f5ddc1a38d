import type { Kysely } from 'kysely';

/**
 * The OAuth / OpenID Connect clients the OpenID Provider serves (`oidc_clients`), one row each:
 * - `id` is the `client_id`: 128 random bits, base64url;
 * - `secret_hash` is the SHA-256 (hex) of the client secret, null for a public client; the secret
 *   itself (256 random bits, shown once) is never stored, so a fast hash is enough;
 * - `redirect_uris`, `post_logout_redirect_uris`, `grant_types`: JSON arrays of strings, kept
 *   exactly as registered (the provider matches redirect URIs exactly);
 * - `public`, `first_party`: 0 or 1;
 * - times are epoch milliseconds; `secret_rotated_at` is null until the secret is first rotated.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('oidc_clients')
    .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('name', 'varchar(100)', (c) => c.notNull())
    .addColumn('secret_hash', 'varchar(64)')
    .addColumn('redirect_uris', 'text', (c) => c.notNull())
    .addColumn('post_logout_redirect_uris', 'text', (c) => c.notNull())
    .addColumn('grant_types', 'text', (c) => c.notNull())
    .addColumn('public', 'integer', (c) => c.notNull())
    .addColumn('first_party', 'integer', (c) => c.notNull())
    .addColumn('id_token_signed_response_alg', 'varchar(16)', (c) => c.notNull().defaultTo('EdDSA'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('secret_rotated_at', 'bigint')
    .execute();
  await db.schema.createIndex('oidc_clients_created_at_idx').on('oidc_clients').column('created_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('oidc_clients').execute();
}
