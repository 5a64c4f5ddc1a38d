import type { Kysely } from 'kysely';

/**
 * Passkeys (WebAuthn credentials) and the ceremonies waiting for an answer.
 * - `passkeys`: one row per credential. `credential_id` and `public_key` (a COSE key) are base64url;
 *   `counter` is the authenticator's signature counter (0 for the many that keep none);
 *   `transports` a comma-separated list; `backed_up` (0/1) whether the key is synced (`swk`) or
 *   bound to one device (`hwk`). Nothing here is secret: the private key never leaves the authenticator.
 * - `passkey_challenges`: a challenge handed out by an options endpoint, kept as its SHA-256 only,
 *   for one `purpose`, bound to a user (and, for a step-up, a session; for a second factor, the
 *   SHA-256 of the `mfaToken`), living 5 minutes and deleted by the answer that uses it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('passkeys')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('user_id', 'varchar(32)', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('credential_id', 'varchar(1400)', (c) => c.notNull().unique())
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('counter', 'bigint', (c) => c.notNull())
    .addColumn('transports', 'varchar(255)')
    .addColumn('device_type', 'varchar(16)', (c) => c.notNull())
    .addColumn('backed_up', 'integer', (c) => c.notNull())
    .addColumn('aaguid', 'varchar(36)')
    .addColumn('name', 'varchar(64)', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_used_at', 'bigint')
    .execute();
  await db.schema.createIndex('passkeys_user_id_idx').on('passkeys').column('user_id').execute();

  await db.schema
    .createTable('passkey_challenges')
    .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
    .addColumn('purpose', 'varchar(16)', (c) => c.notNull())
    .addColumn('user_id', 'varchar(32)', (c) => c.references('users.id').onDelete('cascade'))
    .addColumn('bound_to', 'varchar(64)')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('passkey_challenges_expires_at_idx').on('passkey_challenges').column('expires_at').execute();
  await db.schema.createIndex('passkey_challenges_user_id_idx').on('passkey_challenges').column('user_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('passkey_challenges').execute();
  await db.schema.dropTable('passkeys').execute();
}
