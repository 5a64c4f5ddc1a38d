import type { Kysely } from 'kysely';

/**
 * Identities at OAuth / OpenID Connect providers linked to users. An identity is keyed by the
 * provider and the provider's own, stable user id (`sub`, GitHub's numeric id), never by e-mail:
 * addresses change hands and are not unique across providers. A user links at most one identity
 * per provider. `email` is the address the provider gave at the last sign-in, for display only.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('oauth_accounts')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('user_id', 'varchar(32)', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('provider', 'varchar(32)', (c) => c.notNull())
    .addColumn('provider_user_id', 'varchar(255)', (c) => c.notNull())
    .addColumn('email', 'varchar(320)')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_used_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('oauth_accounts_provider_identity_unique', ['provider', 'provider_user_id'])
    .addUniqueConstraint('oauth_accounts_user_provider_unique', ['user_id', 'provider'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('oauth_accounts').execute();
}
