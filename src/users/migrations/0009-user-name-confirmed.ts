import { sql, type Kysely } from 'kysely';

/**
 * `users.name_confirmed_at`: when the name became one a mail may greet the user by (set by an
 * administrator, the CLI or a provider that verified the address, or accepted by the owner
 * following the verification link); null while it is only what a self-service sign-up typed,
 * possibly by someone who does not own the address. Existing accounts are judged by what was
 * known: a verified address counts as a confirmed name, as mails have treated it until now.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('users').addColumn('name_confirmed_at', 'bigint').execute();
  await sql`update users set name_confirmed_at = email_verified_at where email_verified_at is not null`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('users').dropColumn('name_confirmed_at').execute();
}
