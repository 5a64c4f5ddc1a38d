import type { Kysely } from 'kysely';

/**
 * How and when each session's user proved who they are, for the `amr` and `auth_time` claims
 * (RFC 8176, OpenID Connect) and for decisions that need a recent or a second factor:
 * - `amr`: the methods, `,`-separated (`pwd`, `fed`, `otp`, `hwk`, `swk`, `user`, `mfa`);
 * - `auth_time`: epoch ms of the last time they did (the sign-in, or a later step-up).
 * Sessions started before this migration have neither: read as "no method known" and "when the
 * session started", so nothing recent or multi-factor is assumed of them.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('sessions').addColumn('amr', 'varchar(64)').execute();
  await db.schema.alterTable('sessions').addColumn('auth_time', 'bigint').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('sessions').dropColumn('auth_time').execute();
  await db.schema.alterTable('sessions').dropColumn('amr').execute();
}
