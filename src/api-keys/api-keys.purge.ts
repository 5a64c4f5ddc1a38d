/**
 * The keys' housekeeping statement, in a file of its own: the purge job runs an hour apart from
 * the start on, and asking the service for it would load the keys' code (deferred to a key's first
 * use, api-keys.module.ts) on every instance, keys used or not.
 */
import type { Db } from '../storage/database.ts';

/** Keys revoked or expired this long ago are deleted (their history stays in the audit log). */
export const PURGE_AFTER_MS = 30 * 86_400_000;

/** Deletes keys revoked or expired before `before` (the audit log keeps their history). */
export async function purgeEndedBefore(db: Db, before: number): Promise<void> {
  await db.deleteFrom('api_keys').where((eb) => eb.or([eb('revoked_at', '<', before), eb('expires_at', '<', before)])).execute();
}
