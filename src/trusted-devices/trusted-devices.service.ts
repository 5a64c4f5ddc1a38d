/**
 * Trusted devices: browsers on which a user chose, after a second factor, not to be asked for it
 * again for MFA_TRUSTED_DEVICE_DAYS. A device is a row (the SHA-256 of a random secret, the user,
 * when, from where, with which browser) and a cookie holding the secret in a value signed for that
 * user (trusted-device-token.ts). It waives the second factor of that user's sign-ins from that
 * browser only (another user's sign-in there is asked as usual) while it lives and until it is
 * forgotten: by the user (the dashboard, the API), or with every change that calls for the factor
 * again (a new or reset password, a factor added, removed or reset, new recovery codes, "sign out
 * everywhere", a disabled account: the module's subscriptions, in the change's transaction).
 * Trusting and forgetting are audited (`trusted_device.added`, `trusted_device.forgotten`), never
 * with the secret.
 */
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import type { User } from '../users/user.service.ts';
import { randomId, randomSecret, sha256Base64url } from '../lib/random.ts';
import type { TrustedDevicesConfig } from './trusted-devices.config.ts';
import type { DeviceTokenCodec } from './trusted-device-token.ts';
import * as store from './trusted-devices.store.ts';

const DAY_MS = 86_400_000;
const MAX_USER_AGENT_LENGTH = 512;

export interface TrustedDevice {
  readonly id: string;
  /** The User-Agent header it was trusted with (to name the browser), or null. */
  readonly userAgent: string | null;
  readonly createdIp: string | null;
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly lastUsedAt: number | null;
}

const toDevice = (row: store.TrustedDeviceRow): TrustedDevice => ({
  id: row.id,
  userAgent: row.user_agent,
  createdIp: row.created_ip,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  lastUsedAt: row.last_used_at,
});

export type TrustedDevicesService = ReturnType<typeof createTrustedDevicesService>;

export function createTrustedDevicesService(deps: {
  db: Db;
  clock: Clock;
  audit: AuditService;
  codec: DeviceTokenCodec;
  config: TrustedDevicesConfig;
  /** MFA_REQUIRED_ROLES: their holders trust no browser unless MFA_TRUSTED_DEVICES_FOR_REQUIRED_ROLES. */
  requiredRoles: readonly string[];
}) {
  const { db, clock, audit, codec, config } = deps;
  const required = new Set(deps.requiredRoles);

  async function forgetAllIn(trx: Db, userId: string, source: AuditSource | undefined, cause: string): Promise<number> {
    const count = await store.deleteUserDevices(trx, userId);
    if (count > 0) await audit.record({ type: 'trusted_device.forgotten', userId, ...(source !== undefined && { source }), details: { count, cause } }, { db: trx });
    return count;
  }

  return {
    /** The device's lifetime, in seconds (the cookie's Max-Age). */
    lifetimeSeconds: config.days * 86_400,

    /** Whether `user` may trust a browser (the feature on, and no MFA_REQUIRED_ROLES unless allowed for them). */
    isAllowedFor(user: Pick<User, 'roles' | 'disabledAt'>): boolean {
      if (!config.enabled || user.disabledAt !== null) return false;
      return config.forRequiredRoles || !user.roles.some((role) => required.has(role));
    },

    /**
     * Trusts the browser of `source` for `user`: the cookie's value for it. `previous`, the value the
     * browser carried (a device of the same user it replaces), is forgotten with it.
     */
    async trust(user: User, source: AuditSource, previous?: string): Promise<{ value: string; device: TrustedDevice }> {
      const now = clock();
      const secret = randomSecret();
      const row: store.TrustedDeviceRow = {
        id: randomId(),
        user_id: user.id,
        token_hash: sha256Base64url(secret),
        user_agent: source.userAgent === null ? null : source.userAgent.slice(0, MAX_USER_AGENT_LENGTH),
        created_ip: source.ip === null ? null : source.ip.slice(0, 64),
        created_at: now,
        expires_at: now + config.days * DAY_MS,
        last_used_at: null,
      };
      const replaced = await codec.open(previous, now);
      await db.transaction().execute(async (trx) => {
        if (replaced !== null && replaced.userId === user.id) {
          const old = await store.findLiveDevice(trx, user.id, sha256Base64url(replaced.secret), now);
          if (old !== undefined && (await store.deleteDevice(trx, user.id, old.id))) {
            await audit.record({ type: 'trusted_device.forgotten', userId: user.id, source, details: { deviceId: old.id, count: 1, cause: 'REPLACED' } }, { db: trx });
          }
        }
        await store.insertDevice(trx, row);
        await audit.record({ type: 'trusted_device.added', userId: user.id, source, details: { deviceId: row.id, days: config.days } }, { db: trx });
      });
      return { value: await codec.seal({ userId: user.id, secret, expiresAt: row.expires_at }, now), device: toDevice(row) };
    },

    /** The device `value` names, when it is a live one of `user` and the user may use one: marked used. Null otherwise. */
    async recognise(user: User, value: string | undefined): Promise<TrustedDevice | null> {
      if (value === undefined || !this.isAllowedFor(user)) return null;
      const now = clock();
      const opened = await codec.open(value, now);
      // Bound to its user: a value another user's sign-in left in this browser waives nothing here.
      if (opened === null || opened.userId !== user.id) return null;
      const row = await store.findLiveDevice(db, user.id, sha256Base64url(opened.secret), now);
      if (row === undefined) return null;
      await store.markUsed(db, row.id, now);
      return toDevice({ ...row, last_used_at: now });
    },

    /** The user's live devices, the most recently trusted first. */
    async list(userId: string): Promise<TrustedDevice[]> {
      return (await store.listLiveDevices(db, userId, clock())).map(toDevice);
    },

    /** Forgets one device of the user's; false when they have no such device. */
    async forget(userId: string, deviceId: string, source: AuditSource): Promise<boolean> {
      return db.transaction().execute(async (trx) => {
        if (!(await store.deleteDevice(trx, userId, deviceId))) return false;
        await audit.record({ type: 'trusted_device.forgotten', userId, source, details: { deviceId, count: 1, cause: 'FORGOTTEN' } }, { db: trx });
        return true;
      });
    },

    /** Forgets every device of the user's: how many there were. */
    async forgetAll(userId: string, source: AuditSource): Promise<number> {
      return db.transaction().execute((trx) => forgetAllIn(trx, userId, source, 'FORGOTTEN'));
    },

    /** Forgets every device of the user's in the transaction of a change that calls for the second factor again (`cause`: its event's type). */
    async revokeAll(trx: Db, userId: string, cause: string): Promise<number> {
      return forgetAllIn(trx, userId, undefined, cause);
    },

    /** Deletes the expired devices (the module's job). */
    async deleteExpired(): Promise<number> {
      return store.deleteExpired(db, clock());
    },
  };
}
