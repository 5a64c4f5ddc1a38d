import type { Kysely } from 'kysely';

/**
 * Second factors and the sign-ins waiting for one.
 * - `mfa_totp`: one authenticator app per user. The secret is sealed (AES-256-GCM under a key
 *   derived from AUTH_SECRET, bound to the user id: see secret-box.ts), never stored in clear.
 *   `pending_box` holds the secret a setup showed until a code from it enables it;
 *   `last_used_step` is the time step of the last accepted code, so a code works once.
 * - `mfa_recovery_codes`: the current set, as keyed hashes (recovery-codes.ts); spent ones keep
 *   their row with `used_at` so the count left is one query.
 * - `mfa_challenges`: a sign-in whose first factor succeeded and that waits for a second one. The
 *   id is the SHA-256 of the `mfaToken` handed to the client (the token itself is never stored);
 *   a password sign-in keeps a SHA-256 of the hash it verified, so the session is started only
 *   while that password is still the account's.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('mfa_totp')
    .addColumn('user_id', 'varchar(32)', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
    .addColumn('secret_box', 'varchar(255)')
    .addColumn('enabled_at', 'bigint')
    .addColumn('last_used_step', 'bigint')
    .addColumn('pending_box', 'varchar(255)')
    .addColumn('pending_expires_at', 'bigint')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('mfa_recovery_codes')
    .addColumn('user_id', 'varchar(32)', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('code_hash', 'varchar(64)', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .addPrimaryKeyConstraint('mfa_recovery_codes_pk', ['user_id', 'code_hash'])
    .execute();

  await db.schema
    .createTable('mfa_challenges')
    .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('user_id', 'varchar(32)', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('factor', 'varchar(16)', (c) => c.notNull())
    .addColumn('provider', 'varchar(32)')
    .addColumn('password_fingerprint', 'varchar(64)')
    .addColumn('failed_attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('mfa_challenges_expires_at_idx').on('mfa_challenges').column('expires_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('mfa_challenges').execute();
  await db.schema.dropTable('mfa_recovery_codes').execute();
  await db.schema.dropTable('mfa_totp').execute();
}
