import type { Kysely } from 'kysely';

/**
 * `email_signin_requests`: one row per `POST /api/auth/email/start`, whether or not the address has
 * an account (so that every request costs the same and has a `requestId`).
 * - `id`: the request id handed to the client (128 bits): a code is tried against it only.
 * - `purpose`: `signin` (an account: its `user_id`), `signup` (no account while ALLOW_SIGNUP: the
 *   address in `email`, to create on first use), `none` (nothing was sent: never signs in).
 * - `email_hash`: SHA-256 of the normalised address (the rate limits' key; older requests for the
 *   same address are retired by a new one).
 * - `link_hash`: SHA-256 of the link's 256-bit token; `code_hash`: HMAC-SHA256 of the code bound to
 *   the request id, under a key derived from AUTH_SECRET (a 6-digit code's plain SHA-256 would be
 *   reversed in a second from a copy of the table). Neither secret is stored.
 * - `browser_hash`: SHA-256 of the browser-binding secret in the cookie the start set.
 * - `failed_attempts` counts wrong codes; `used_at` is set by the one use that wins; `voided_at`
 *   by too many wrong codes or a newer request. Deleted an hour after they expire. Epoch ms.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('email_signin_requests')
    .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
    .addColumn('purpose', 'varchar(16)', (c) => c.notNull())
    .addColumn('user_id', 'varchar(32)', (c) => c.references('users.id').onDelete('cascade'))
    .addColumn('email', 'varchar(320)')
    .addColumn('email_hash', 'varchar(64)', (c) => c.notNull())
    .addColumn('link_hash', 'varchar(64)', (c) => c.notNull().unique())
    .addColumn('code_hash', 'varchar(64)', (c) => c.notNull())
    .addColumn('browser_hash', 'varchar(64)')
    .addColumn('callback_url', 'varchar(2048)')
    .addColumn('failed_attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .addColumn('voided_at', 'bigint')
    .execute();
  await db.schema.createIndex('email_signin_requests_email_hash_idx').on('email_signin_requests').column('email_hash').execute();
  await db.schema.createIndex('email_signin_requests_expires_at_idx').on('email_signin_requests').column('expires_at').execute();
  await db.schema.createIndex('email_signin_requests_user_id_idx').on('email_signin_requests').column('user_id').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('email_signin_requests').execute();
}
