/**
 * Queries on passkeys and the challenges of their ceremonies. Functions take `db` so callers can
 * pass a transaction. Every "use once" rule is one conditional write whose row count says whether
 * this caller won: a challenge is spent by deleting it, a signature counter moves only forwards.
 */
import type { Selectable } from 'kysely';
import type { Db } from '../storage/database.ts';

export interface PasskeysTable {
  id: string;
  user_id: string;
  /** base64url, as WebAuthn's `id`. */
  credential_id: string;
  /** The COSE public key, base64url. */
  public_key: string;
  counter: number;
  /** Comma-separated (`internal,hybrid`); null when the authenticator named none. */
  transports: string | null;
  device_type: 'singleDevice' | 'multiDevice';
  /** 1: synced (`swk`); 0: bound to one device (`hwk`). */
  backed_up: number;
  aaguid: string | null;
  name: string;
  created_at: number;
  last_used_at: number | null;
}

export type ChallengePurpose = 'register' | 'authenticate' | 'second-factor' | 'step-up';

export interface PasskeyChallengesTable {
  /** SHA-256 of the challenge, base64url. */
  id: string;
  purpose: ChallengePurpose;
  user_id: string | null;
  /** A step-up's session id; a second factor's SHA-256 of the mfaToken. */
  bound_to: string | null;
  created_at: number;
  expires_at: number;
}

declare module '../storage/schema.ts' {
  interface Database {
    passkeys: PasskeysTable;
    passkey_challenges: PasskeyChallengesTable;
  }
}

export type PasskeyRow = Selectable<PasskeysTable>;
export type ChallengeRow = Selectable<PasskeyChallengesTable>;

/** False when the credential is registered already (to this user or another). */
export async function insertPasskey(db: Db, row: PasskeyRow): Promise<boolean> {
  const result = await db
    .insertInto('passkeys')
    .values(row)
    .onConflict((conflict) => conflict.column('credential_id').doNothing())
    .executeTakeFirst();
  return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
}

export async function listPasskeys(db: Db, userId: string): Promise<PasskeyRow[]> {
  return db.selectFrom('passkeys').selectAll().where('user_id', '=', userId).orderBy('created_at').orderBy('id').execute();
}

export async function countPasskeys(db: Db, userId: string): Promise<number> {
  const row = await db
    .selectFrom('passkeys')
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .where('user_id', '=', userId)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

export async function findByCredentialId(db: Db, credentialId: string): Promise<PasskeyRow | undefined> {
  return db.selectFrom('passkeys').selectAll().where('credential_id', '=', credentialId).executeTakeFirst();
}

export async function findPasskey(db: Db, userId: string, id: string): Promise<PasskeyRow | undefined> {
  return db.selectFrom('passkeys').selectAll().where('user_id', '=', userId).where('id', '=', id).executeTakeFirst();
}

/**
 * Records a verified use: the new counter, the backup state, the time. False when the counter did
 * not move forwards from what is stored now (another request used that counter first, or it went
 * backwards meanwhile), or the passkey was removed; a counter of 0 on both sides means the
 * authenticator keeps none.
 */
export async function recordUse(db: Db, id: string, use: { counter: number; backedUp: boolean; deviceType: PasskeyRow['device_type']; now: number }): Promise<boolean> {
  const result = await db
    .updateTable('passkeys')
    .set({ counter: use.counter, backed_up: use.backedUp ? 1 : 0, device_type: use.deviceType, last_used_at: use.now })
    .where('id', '=', id)
    .where((eb) => (use.counter === 0 ? eb('counter', '=', 0) : eb('counter', '<', use.counter)))
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function renamePasskey(db: Db, userId: string, id: string, name: string): Promise<boolean> {
  const result = await db.updateTable('passkeys').set({ name }).where('user_id', '=', userId).where('id', '=', id).executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function deletePasskey(db: Db, userId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom('passkeys').where('user_id', '=', userId).where('id', '=', id).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** How many were removed. */
export async function deleteUserPasskeys(db: Db, userId: string): Promise<number> {
  const result = await db.deleteFrom('passkeys').where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * A new challenge. One waits per user and purpose (and binding) at a time: asking again replaces
 * the one before, so a signed-in user cannot pile them up.
 */
export async function insertChallenge(db: Db, row: ChallengeRow): Promise<void> {
  await db.transaction().execute(async (trx) => {
    if (row.user_id !== null) {
      await trx
        .deleteFrom('passkey_challenges')
        .where('user_id', '=', row.user_id)
        .where('purpose', '=', row.purpose)
        .where((eb) => (row.bound_to === null ? eb('bound_to', 'is', null) : eb('bound_to', '=', row.bound_to)))
        .execute();
    }
    await trx.insertInto('passkey_challenges').values(row).execute();
  });
}

/**
 * Spends the live challenge `id` if it was made for `purpose`, `userId` (null: none) and
 * `boundTo`; true when this caller spent it.
 */
export async function spendChallenge(db: Db, spend: { id: string; purpose: ChallengePurpose; userId: string | null; boundTo: string | null; now: number }): Promise<boolean> {
  const result = await db
    .deleteFrom('passkey_challenges')
    .where('id', '=', spend.id)
    .where('purpose', '=', spend.purpose)
    .where((eb) => (spend.userId === null ? eb('user_id', 'is', null) : eb('user_id', '=', spend.userId)))
    .where((eb) => (spend.boundTo === null ? eb('bound_to', 'is', null) : eb('bound_to', '=', spend.boundTo)))
    .where('expires_at', '>', spend.now)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

export async function deleteExpiredChallenges(db: Db, now: number): Promise<number> {
  const result = await db.deleteFrom('passkey_challenges').where('expires_at', '<=', now).executeTakeFirst();
  return Number(result.numDeletedRows);
}
