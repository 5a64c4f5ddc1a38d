/** The `trusted_devices` table (migrations/20261201-trusted-devices-table.ts). */
import type { Selectable } from 'kysely';
import type { Db } from '../storage/database.ts';

export interface TrustedDevicesTable {
  id: string;
  user_id: string;
  token_hash: string;
  user_agent: string | null;
  created_ip: string | null;
  created_at: number;
  expires_at: number;
  last_used_at: number | null;
}

declare module '../storage/schema.ts' {
  interface Database {
    trusted_devices: TrustedDevicesTable;
  }
}

export type TrustedDeviceRow = Selectable<TrustedDevicesTable>;

export async function insertDevice(db: Db, row: TrustedDeviceRow): Promise<void> {
  await db.insertInto('trusted_devices').values(row).execute();
}

/** The live device whose secret hashes to `tokenHash`, for `userId` only. */
export async function findLiveDevice(db: Db, userId: string, tokenHash: string, now: number): Promise<TrustedDeviceRow | undefined> {
  return db.selectFrom('trusted_devices').selectAll().where('token_hash', '=', tokenHash).where('user_id', '=', userId).where('expires_at', '>', now).executeTakeFirst();
}

export async function markUsed(db: Db, id: string, now: number): Promise<void> {
  await db.updateTable('trusted_devices').set({ last_used_at: now }).where('id', '=', id).execute();
}

/** The user's live devices, the most recently trusted first. */
export async function listLiveDevices(db: Db, userId: string, now: number): Promise<TrustedDeviceRow[]> {
  return db.selectFrom('trusted_devices').selectAll().where('user_id', '=', userId).where('expires_at', '>', now).orderBy('created_at', 'desc').orderBy('id').limit(200).execute();
}

/** False when the user has no such device. */
export async function deleteDevice(db: Db, userId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom('trusted_devices').where('id', '=', id).where('user_id', '=', userId).executeTakeFirst();
  return (result.numDeletedRows ?? 0n) > 0n;
}

/** How many devices (live or not) the user had. */
export async function deleteUserDevices(db: Db, userId: string): Promise<number> {
  const result = await db.deleteFrom('trusted_devices').where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows ?? 0n);
}

export async function deleteExpired(db: Db, now: number): Promise<number> {
  const result = await db.deleteFrom('trusted_devices').where('expires_at', '<=', now).executeTakeFirst();
  return Number(result.numDeletedRows ?? 0n);
}
