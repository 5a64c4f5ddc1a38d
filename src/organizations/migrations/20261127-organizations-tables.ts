import type { Kysely } from 'kysely';

/**
 * Organizations, their members, the invitations waiting for an answer, and each session's active
 * organization. Ids are `randomId()` (22 characters); times are epoch milliseconds (BIGINT).
 * - `organizations`: `slug` is unique (the index decides between two concurrent creations);
 * - `organization_members`: one row, one role per member (`OWNER`, `ADMIN`, `MEMBER` or a custom
 *   UPPER_SNAKE role); gone with the organization or the user;
 * - `organization_invitations`: `token_hash` is the SHA-256 (base64url) of the link's token, which
 *   is only ever in the mail; `email` is the invited address (normalised); a row is deleted when
 *   accepted, declined or revoked, and purged once expired;
 * - `organization_sessions`: the organization a session has made active (its access tokens carry
 *   the `org` claim); gone with the session or the organization.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('organizations')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('slug', 'varchar(64)', (c) => c.notNull())
    .addColumn('name', 'varchar(200)', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('organizations_slug_idx').on('organizations').column('slug').unique().execute();
  await db.schema.createIndex('organizations_created_at_idx').on('organizations').column('created_at').execute();

  await db.schema
    .createTable('organization_members')
    .addColumn('organization_id', 'varchar(32)', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('user_id', 'varchar(32)', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('role', 'varchar(64)', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('organization_members_pkey', ['organization_id', 'user_id'])
    .execute();
  await db.schema.createIndex('organization_members_user_id_idx').on('organization_members').column('user_id').execute();

  await db.schema
    .createTable('organization_invitations')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('organization_id', 'varchar(32)', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('email', 'varchar(320)', (c) => c.notNull())
    .addColumn('role', 'varchar(64)', (c) => c.notNull())
    .addColumn('token_hash', 'varchar(64)', (c) => c.notNull())
    .addColumn('invited_by', 'varchar(32)', (c) => c.references('users.id').onDelete('set null'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('organization_invitations_token_hash_idx').on('organization_invitations').column('token_hash').unique().execute();
  await db.schema.createIndex('organization_invitations_org_email_idx').on('organization_invitations').columns(['organization_id', 'email']).execute();
  await db.schema.createIndex('organization_invitations_email_idx').on('organization_invitations').column('email').execute();
  await db.schema.createIndex('organization_invitations_expires_at_idx').on('organization_invitations').column('expires_at').execute();

  await db.schema
    .createTable('organization_sessions')
    .addColumn('session_id', 'varchar(32)', (c) => c.primaryKey().references('sessions.id').onDelete('cascade'))
    .addColumn('organization_id', 'varchar(32)', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('organization_sessions_organization_id_idx').on('organization_sessions').column('organization_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('organization_sessions').execute();
  await db.schema.dropTable('organization_invitations').execute();
  await db.schema.dropTable('organization_members').execute();
  await db.schema.dropTable('organizations').execute();
}
