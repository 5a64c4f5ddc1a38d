/**
 * Queries on second factors and pending challenges. Functions take `db` so callers can pass a
 * transaction. Every "use once" rule (a TOTP step, a recovery code, a challenge) is one
 * conditional write whose row count says whether this caller won: two requests racing with the
 * same code cannot both succeed.
 */
import type { Selectable } from 'kysely';
import type { Db } from '../storage/database.ts';

export interface MfaTotpTable {
  user_id: string;
  /** The enabled secret, sealed (secret-box.ts); null while only a setup is pending. */
  secret_box: string | null;
  enabled_at: number | null;
  /** The time step of the last accepted code. */
  last_used_step: number | null;
  pending_box: string | null;
  pending_expires_at: number | null;
  updated_at: number;
}

export interface MfaRecoveryCodesTable {
  user_id: string;
  code_hash: string;
  created_at: number;
  used_at: number | null;
}

export interface MfaChallengesTable {
  /** SHA-256 of the mfaToken, base64url. (`failed_attempts` counts the codes tried, each taken before it is checked.) */
  id: string;
  user_id: string;
  /** The first factor's registered kind (`password`, `oauth`), which resumes the sign-in. */
  factor: string;
  /** What that kind checks again when the challenge is met (signin/first-factor.ts); null for nothing. */
  binding: string | null;
  /** How the sign-in that asked delivers its session (signin-pipeline.ts): `tokens` or `cookies`, which its answer at /api/auth/mfa/verify sets too. */
  delivery: string;
  failed_attempts: number;
  created_at: number;
  expires_at: number;
}

declare module '../storage/schema.ts' {
  interface Database {
    mfa_totp: MfaTotpTable;
    mfa_recovery_codes: MfaRecoveryCodesTable;
    mfa_challenges: MfaChallengesTable;
  }
}

export type TotpRow = Selectable<MfaTotpTable>;
export type ChallengeRow = Selectable<MfaChallengesTable>;

export async function findTotp(db: Db, userId: string): Promise<TotpRow | undefined> {
  return db.selectFrom('mfa_totp').selectAll().where('user_id', '=', userId).executeTakeFirst();
}

/** A new pending secret (replacing one pending before); an enabled secret is left as it is. */
export async function savePendingTotp(db: Db, userId: string, pendingBox: string, expiresAt: number, now: number): Promise<void> {
  await db
    .insertInto('mfa_totp')
    .values({ user_id: userId, secret_box: null, enabled_at: null, last_used_step: null, pending_box: pendingBox, pending_expires_at: expiresAt, updated_at: now })
    .onConflict((conflict) => conflict.column('user_id').doUpdateSet({ pending_box: pendingBox, pending_expires_at: expiresAt, updated_at: now }))
    .execute();
}

/** Makes the pending secret `pendingBox` the enabled one; false when another request changed it first. */
export async function enablePendingTotp(db: Db, userId: string, pendingBox: string, step: number, now: number): Promise<boolean> {
  const result = await db
    .updateTable('mfa_totp')
    .set({ secret_box: pendingBox, enabled_at: now, last_used_step: step, pending_box: null, pending_expires_at: null, updated_at: now })
    .where('user_id', '=', userId)
    .where('pending_box', '=', pendingBox)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Records `step` as used; false when it (or a later one) already was, or TOTP is no longer on. */
export async function acceptTotpStep(db: Db, userId: string, secretBox: string, step: number, now: number): Promise<boolean> {
  const result = await db
    .updateTable('mfa_totp')
    .set({ last_used_step: step, updated_at: now })
    .where('user_id', '=', userId)
    .where('secret_box', '=', secretBox)
    .where((eb) => eb.or([eb('last_used_step', 'is', null), eb('last_used_step', '<', step)]))
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** True when an enabled secret was removed. */
export async function deleteTotp(db: Db, userId: string): Promise<boolean> {
  const result = await db.deleteFrom('mfa_totp').where('user_id', '=', userId).where('secret_box', 'is not', null).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** Drops a pending setup (an enabled secret has none). */
export async function deleteTotpSetup(db: Db, userId: string): Promise<void> {
  await db.deleteFrom('mfa_totp').where('user_id', '=', userId).where('secret_box', 'is', null).execute();
}

export async function replaceRecoveryCodes(db: Db, userId: string, hashes: readonly string[], now: number): Promise<void> {
  await db.deleteFrom('mfa_recovery_codes').where('user_id', '=', userId).execute();
  await db
    .insertInto('mfa_recovery_codes')
    .values(hashes.map((code_hash) => ({ user_id: userId, code_hash, created_at: now, used_at: null })))
    .execute();
}

/** True when the code was unused and is now spent. */
export async function spendRecoveryCode(db: Db, userId: string, hash: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('mfa_recovery_codes')
    .set({ used_at: now })
    .where('user_id', '=', userId)
    .where('code_hash', '=', hash)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function countRecoveryCodesLeft(db: Db, userId: string): Promise<number> {
  const row = await db
    .selectFrom('mfa_recovery_codes')
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .where('user_id', '=', userId)
    .where('used_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

export async function deleteRecoveryCodes(db: Db, userId: string): Promise<void> {
  await db.deleteFrom('mfa_recovery_codes').where('user_id', '=', userId).execute();
}

export async function insertChallenge(db: Db, row: ChallengeRow): Promise<void> {
  await db.insertInto('mfa_challenges').values(row).execute();
}

export async function findChallenge(db: Db, id: string): Promise<ChallengeRow | undefined> {
  return db.selectFrom('mfa_challenges').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * Takes one of the challenge's tries before a code is checked (so parallel guesses cannot all be
 * checked before any is counted): false when it is spent, expired or out of tries.
 */
export async function reserveChallengeAttempt(db: Db, id: string, maxAttempts: number, now: number): Promise<boolean> {
  const result = await db
    .updateTable('mfa_challenges')
    .set((eb) => ({ failed_attempts: eb('failed_attempts', '+', 1) }))
    .where('id', '=', id)
    .where('failed_attempts', '<', maxAttempts)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** True for the one caller that spends it. */
export async function deleteChallenge(db: Db, id: string): Promise<boolean> {
  const result = await db.deleteFrom('mfa_challenges').where('id', '=', id).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

export async function deleteUserChallenges(db: Db, userId: string): Promise<void> {
  await db.deleteFrom('mfa_challenges').where('user_id', '=', userId).execute();
}

export async function deleteExpiredChallenges(db: Db, now: number): Promise<number> {
  const result = await db.deleteFrom('mfa_challenges').where('expires_at', '<=', now).executeTakeFirst();
  return Number(result.numDeletedRows);
}
