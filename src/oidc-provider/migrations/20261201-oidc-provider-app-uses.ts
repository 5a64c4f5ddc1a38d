import type { Kysely } from 'kysely';

/**
 * When each person last let each app in: the newest code or token the provider issued to the app
 * for them (a code at authorization, tokens at the token endpoint, a refresh included), in epoch
 * ms. Shown on the dashboard's and the admin's "Connected apps" (the client's own `last_used_at`
 * is across every person, and to the hour). Deleted with the person, or when they disconnect the app.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('oidc_app_uses')
    .addColumn('user_id', 'varchar(32)', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('client_id', 'varchar(255)', (c) => c.notNull())
    .addColumn('last_used_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('oidc_app_uses_pk', ['user_id', 'client_id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('oidc_app_uses').execute();
}
