import type { Kysely } from 'kysely';

/**
 * `users.locale`: the language the account's mails are written in (a tag of i18n/locales.ts
 * LOCALES, e.g. `de`, `pt-BR`), set at sign-up from the browser's language, when the signed-in user
 * chooses one on a page (`?lang=`), and at the first sign-in of an account that has none. Null
 * until then: mails fall back to the language of the request that causes them, else English.
 *
 * Safe on a live database: a nullable column without a default is a change to the catalog only,
 * on PostgreSQL (no table rewrite, a brief ACCESS EXCLUSIVE lock) as on SQLite, and code from
 * before it neither reads nor writes the column.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('users').addColumn('locale', 'varchar(16)').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('users').dropColumn('locale').execute();
}
