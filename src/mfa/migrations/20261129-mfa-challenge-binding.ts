import { sql, type Kysely } from 'kysely';

/**
 * A pending second-factor challenge names its first factor by the kind a module registered and
 * keeps that kind's binding (what it checks again when the challenge is met), in place of columns
 * for the two kinds there were: `factor` 'password' | 'provider', `provider`, `password_fingerprint`.
 * Challenges waiting when this runs carry over and still finish: a password's fingerprint (a
 * SHA-256 of the verified hash) is its binding, and a provider's sign-in is of the kind `oauth`,
 * bound to its provider. Code from before it writes the columns dropped here: an instance still
 * running it answers second-factor sign-ins with errors until it is replaced.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('mfa_challenges').addColumn('binding', 'varchar(255)').execute();
  await sql`update mfa_challenges set binding = password_fingerprint where factor = 'password'`.execute(db);
  await sql`update mfa_challenges set factor = 'oauth', binding = provider where factor = 'provider'`.execute(db);
  await db.schema.alterTable('mfa_challenges').dropColumn('provider').execute();
  await db.schema.alterTable('mfa_challenges').dropColumn('password_fingerprint').execute();
}

/** Back to the two kinds; a challenge of any other kind cannot be told there, and is dropped. */
export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('mfa_challenges').addColumn('provider', 'varchar(32)').execute();
  await db.schema.alterTable('mfa_challenges').addColumn('password_fingerprint', 'varchar(64)').execute();
  await sql`delete from mfa_challenges where factor not in ('password', 'oauth')`.execute(db);
  await sql`update mfa_challenges set password_fingerprint = binding where factor = 'password'`.execute(db);
  await sql`update mfa_challenges set factor = 'provider', provider = binding where factor = 'oauth'`.execute(db);
  await db.schema.alterTable('mfa_challenges').dropColumn('binding').execute();
}
