/** The `email_signin_requests` table (migrations/20261201-email-signin-requests.ts). */
import type { Selectable } from 'kysely';
import type { Db } from '../storage/database.ts';

export type RequestPurpose = 'signin' | 'signup' | 'none';

export interface EmailSignInRequestsTable {
  id: string;
  purpose: RequestPurpose;
  user_id: string | null;
  email: string | null;
  email_hash: string;
  link_hash: string;
  code_hash: string;
  browser_hash: string | null;
  callback_url: string | null;
  failed_attempts: number;
  created_at: number;
  expires_at: number;
  used_at: number | null;
  voided_at: number | null;
}

declare module '../storage/schema.ts' {
  interface Database {
    email_signin_requests: EmailSignInRequestsTable;
  }
}

export type EmailSignInRequest = Selectable<EmailSignInRequestsTable>;

/** Inserts `row`, after retiring every live request for the same address: only the newest works. */
export async function insertRequest(db: Db, row: EmailSignInRequest): Promise<void> {
  await db
    .updateTable('email_signin_requests')
    .set({ voided_at: row.created_at })
    .where('email_hash', '=', row.email_hash)
    .where('used_at', 'is', null)
    .where('voided_at', 'is', null)
    .execute();
  await db.insertInto('email_signin_requests').values(row).execute();
}

export async function findById(db: Db, id: string): Promise<EmailSignInRequest | undefined> {
  return db.selectFrom('email_signin_requests').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findByLinkHash(db: Db, linkHash: string): Promise<EmailSignInRequest | undefined> {
  return db.selectFrom('email_signin_requests').selectAll().where('link_hash', '=', linkHash).executeTakeFirst();
}

/**
 * One of the request's tries at a code, taken before the code is checked (parallel guesses count
 * at once): the tries taken now, this one included; null when none is left.
 */
export async function reserveAttempt(db: Db, id: string, maxAttempts: number, now: number): Promise<number | null> {
  const row = await db
    .updateTable('email_signin_requests')
    .set((eb) => ({ failed_attempts: eb('failed_attempts', '+', 1) }))
    .where('id', '=', id)
    .where('failed_attempts', '<', maxAttempts)
    .where('used_at', 'is', null)
    .where('voided_at', 'is', null)
    .where('expires_at', '>', now)
    .returning('failed_attempts')
    .executeTakeFirst();
  return row === undefined ? null : Number(row.failed_attempts);
}

/** Spends the request: true for the one caller of all those racing that gets to use it. */
export async function markUsed(db: Db, id: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('email_signin_requests')
    .set({ used_at: now })
    .where('id', '=', id)
    .where('used_at', 'is', null)
    .where('voided_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Voids a live request (too many wrong codes); true when this call did. */
export async function markVoided(db: Db, id: string, now: number): Promise<boolean> {
  const result = await db.updateTable('email_signin_requests').set({ voided_at: now }).where('id', '=', id).where('used_at', 'is', null).where('voided_at', 'is', null).executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Deletes requests that expired before `before`. */
export async function deleteExpiredBefore(db: Db, before: number): Promise<void> {
  await db.deleteFrom('email_signin_requests').where('expires_at', '<', before).execute();
}
