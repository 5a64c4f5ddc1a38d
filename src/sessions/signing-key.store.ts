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
