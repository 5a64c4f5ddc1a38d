import type { Kysely } from 'kysely';

/**
 * `api_keys`: personal keys (`user_id`: the owner, gone with the account) and organization keys
 * (`organization_id`: gone with the organization; `created_by` is kept for the record and set to
 * null when that account goes, the key surviving it). `id` is the lookup part of the key (not
 * secret); `secret_hash` the SHA-256 of the whole key. `scopes` and `roles` are JSON arrays;
 * `rate_limit` a per-key limit (`points/seconds`), null for RATE_LIMIT_API_KEY. Times are epoch ms.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('kind', 'varchar(16)', (c) => c.notNull())
    .addColumn('user_id', 'varchar(32)', (c) => c.references('users.id').onDelete('cascade'))
    .addColumn('organization_id', 'varchar(32)', (c) => c.references('organizations.id').onDelete('cascade'))
    .addColumn('created_by', 'varchar(32)', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('name', 'varchar(100)', (c) => c.notNull())
    .addColumn('secret_hash', 'varchar(64)', (c) => c.notNull())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('roles', 'text', (c) => c.notNull())
    .addColumn('rate_limit', 'varchar(32)')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('revoked_at', 'bigint')
    .addColumn('revoked_by', 'varchar(32)')
    .addColumn('last_used_at', 'bigint')
    .addColumn('last_used_ip', 'varchar(64)')
    .execute();
  await db.schema.createIndex('api_keys_user_id_idx').on('api_keys').column('user_id').execute();
  await db.schema.createIndex('api_keys_organization_id_idx').on('api_keys').column('organization_id').execute();
  await db.schema.createIndex('api_keys_created_by_idx').on('api_keys').column('created_by').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('api_keys').execute();
}
