import type { Kysely } from 'kysely';

/**
 * SCIM provisioning, per organization. Ids are `randomId()`; times epoch milliseconds (BIGINT).
 * - `scim_tokens`: the bearer tokens a directory authenticates with; `token_hash` is the SHA-256
 *   (base64url) of the token, which is shown once; a revoked or rotated token keeps its row
 *   (`revoked_at`) for the list and the audit trail; gone with the organization.
 * - `scim_users`: the SCIM User resources of an organization, each bound to one Gatehouse account
 *   (`user_id`): the directory's attributes (`user_name_key` is the lower-cased userName, unique
 *   per organization; `attributes` the JSON of what else it sent: enterprise extension, title…),
 *   `active`, and `owned` (1 when the account was created by provisioning, 0 when an existing
 *   member's account was linked) and `suspended` (1 while deprovisioning keeps an owned account
 *   disabled). Gone with the organization or the account.
 * - `scim_groups`, `scim_group_members`: the organization's SCIM Groups and their members.
 * - `scim_role_mappings`: which group (by its lower-cased displayName) gives which organization role.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('scim_tokens')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('organization_id', 'varchar(32)', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('name', 'varchar(200)')
    .addColumn('token_hash', 'varchar(64)', (c) => c.notNull())
    .addColumn('created_by', 'varchar(32)', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_used_at', 'bigint')
    .addColumn('revoked_at', 'bigint')
    .execute();
  await db.schema.createIndex('scim_tokens_token_hash_idx').on('scim_tokens').column('token_hash').unique().execute();
  await db.schema.createIndex('scim_tokens_organization_id_idx').on('scim_tokens').column('organization_id').execute();

  await db.schema
    .createTable('scim_users')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('organization_id', 'varchar(32)', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('user_id', 'varchar(32)', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('user_name', 'varchar(320)', (c) => c.notNull())
    .addColumn('user_name_key', 'varchar(320)', (c) => c.notNull())
    .addColumn('external_id', 'varchar(256)')
    .addColumn('display_name', 'varchar(200)')
    .addColumn('given_name', 'varchar(200)')
    .addColumn('family_name', 'varchar(200)')
    .addColumn('email', 'varchar(320)', (c) => c.notNull())
    .addColumn('active', 'integer', (c) => c.notNull())
    .addColumn('owned', 'integer', (c) => c.notNull())
    .addColumn('suspended', 'integer', (c) => c.notNull())
    .addColumn('attributes', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('scim_users_org_user_name_idx').on('scim_users').columns(['organization_id', 'user_name_key']).unique().execute();
  await db.schema.createIndex('scim_users_org_user_idx').on('scim_users').columns(['organization_id', 'user_id']).unique().execute();
  await db.schema.createIndex('scim_users_user_id_idx').on('scim_users').column('user_id').execute();

  await db.schema
    .createTable('scim_groups')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('organization_id', 'varchar(32)', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('display_name', 'varchar(256)', (c) => c.notNull())
    .addColumn('display_name_key', 'varchar(256)', (c) => c.notNull())
    .addColumn('external_id', 'varchar(256)')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('scim_groups_org_name_idx').on('scim_groups').columns(['organization_id', 'display_name_key']).unique().execute();

  await db.schema
    .createTable('scim_group_members')
    .addColumn('group_id', 'varchar(32)', (c) => c.notNull().references('scim_groups.id').onDelete('cascade'))
    .addColumn('scim_user_id', 'varchar(32)', (c) => c.notNull().references('scim_users.id').onDelete('cascade'))
    .addPrimaryKeyConstraint('scim_group_members_pkey', ['group_id', 'scim_user_id'])
    .execute();
  await db.schema.createIndex('scim_group_members_user_idx').on('scim_group_members').column('scim_user_id').execute();

  await db.schema
    .createTable('scim_role_mappings')
    .addColumn('organization_id', 'varchar(32)', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('group_name_key', 'varchar(256)', (c) => c.notNull())
    .addColumn('group_name', 'varchar(256)', (c) => c.notNull())
    .addColumn('role', 'varchar(64)', (c) => c.notNull())
    .addPrimaryKeyConstraint('scim_role_mappings_pkey', ['organization_id', 'group_name_key'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('scim_role_mappings').execute();
  await db.schema.dropTable('scim_group_members').execute();
  await db.schema.dropTable('scim_groups').execute();
  await db.schema.dropTable('scim_users').execute();
  await db.schema.dropTable('scim_tokens').execute();
}
