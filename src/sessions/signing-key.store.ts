/** Queries on signing keys. */
import type { Db } from '../storage/database.ts';
import type { SigningKeyRow } from '../storage/schema.ts';

export async function insertSigningKey(db: Db, row: SigningKeyRow): Promise<void> {
  await db.insertInto('signing_keys').values(row).execute();
}

/** Keys not retired, or retired after `retiredAfter` (their tokens may still be valid). */
export async function findPublishableKeys(db: Db, retiredAfter: number): Promise<SigningKeyRow[]> {
  return db
    .selectFrom('signing_keys')
    .selectAll()
    .where((eb) => eb.or([eb('retired_at', 'is', null), eb('retired_at', '>', retiredAfter)]))
    .orderBy('created_at', 'desc')
    .orderBy('kid')
    .execute();
}

/** Sets `retired_at` on every key not retired yet (a rotation retires them at `retireAt`). */
export async function retireKeysInService(db: Db, retireAt: number): Promise<void> {
  await db.updateTable('signing_keys').set({ retired_at: retireAt }).where('retired_at', 'is', null).execute();
}

/** Every key, newest first (for operators). */
export async function listSigningKeys(db: Db): Promise<SigningKeyRow[]> {
  return db.selectFrom('signing_keys').selectAll().orderBy('created_at', 'desc').orderBy('kid').execute();
}
