import type { Kysely } from 'kysely';

/**
 * What a user allowed an app (a client that is not first-party) on the consent page: the scopes
 * (space-separated, OIDC scopes and API scopes alike) and the APIs (resource indicators, JSON).
 * The next authorization request that asks for no more is granted without asking again, even
 * after the provider session it was given in has ended. Deleted when the user disconnects the app
 * on the dashboard (with the app's grants and tokens) or when the user is deleted.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('oidc_consents')
    .addColumn('user_id', 'varchar(32)', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('client_id', 'varchar(255)', (c) => c.notNull())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('resources', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('oidc_consents_pk', ['user_id', 'client_id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('oidc_consents').execute();
}
