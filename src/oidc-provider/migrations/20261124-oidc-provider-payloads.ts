import type { Kysely } from 'kysely';

/**
 * What oidc-provider keeps between requests (sessions, grants, interactions, codes, opaque tokens,
 * replay markers…), one table for every model, as its adapter contract expects (oidc.adapter.ts).
 * - `payload` is the model's JSON as the provider handed it over; the provider adds properties
 *   between versions, so it stays opaque here. The columns beside it are copies of the few
 *   properties the adapter looks rows up by (`grantId`, `userCode`, `uid`, `accountId`).
 * - `expires_at` (epoch ms; null: never) is checked on every read, so an expired row is gone for
 *   the provider at once; housekeeping deletes it later, in batches (hence its index).
 * - `consumed_at` is kept beside the payload rather than written into it: marking a code or a
 *   refresh token used is then one UPDATE, without reading and rewriting the JSON.
 * - No foreign key to `users`: `account_id` is whatever the provider was given as the account,
 *   and rows of an account are deleted by the adapter's callers, not by a cascade.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('oidc_payloads')
    .addColumn('model', 'varchar(32)', (c) => c.notNull())
    .addColumn('id', 'varchar(255)', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('grant_id', 'varchar(255)')
    .addColumn('user_code', 'varchar(255)')
    .addColumn('uid', 'varchar(255)')
    .addColumn('account_id', 'varchar(255)')
    .addColumn('expires_at', 'bigint')
    .addColumn('consumed_at', 'bigint')
    .addPrimaryKeyConstraint('oidc_payloads_pk', ['model', 'id'])
    .execute();
  await db.schema.createIndex('oidc_payloads_grant_id_idx').on('oidc_payloads').column('grant_id').execute();
  await db.schema.createIndex('oidc_payloads_user_code_idx').on('oidc_payloads').columns(['model', 'user_code']).execute();
  await db.schema.createIndex('oidc_payloads_uid_idx').on('oidc_payloads').columns(['model', 'uid']).execute();
  await db.schema.createIndex('oidc_payloads_account_id_idx').on('oidc_payloads').column('account_id').execute();
  await db.schema.createIndex('oidc_payloads_expires_at_idx').on('oidc_payloads').column('expires_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // The indexes go with the table.
  await db.schema.dropTable('oidc_payloads').execute();
}
