import type { Kysely } from 'kysely';

/**
 * A pending second-factor challenge remembers how the sign-in that asked delivers its session
 * (`tokens`, or `cookies` for `POST /api/auth/signin`), so that `POST /api/auth/mfa/verify` sets the
 * browser's cookies exactly for a challenge a cookie-setting sign-in started. Challenges waiting
 * when this runs become `tokens`: answered as before, with the body and no cookies.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('mfa_challenges')
    .addColumn('delivery', 'varchar(16)', (column) => column.notNull().defaultTo('tokens'))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('mfa_challenges').dropColumn('delivery').execute();
}
