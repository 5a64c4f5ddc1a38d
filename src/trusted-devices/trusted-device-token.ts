/**
 * The trusted-device cookie's value: a JWS (HS256, with `jose`) under a key derived from
 * AUTH_SECRET for this use only, whose subject is the user and whose `jti` is a 256-bit random
 * secret; the server keeps only the secret's SHA-256 (with the user, so a value of one user never
 * finds another's device). The signature rejects altered or foreign values before any query; the
 * stored hash is what makes a value revocable. It expires with the device.
 */
import { SignJWT, jwtVerify } from 'jose';
import { deriveKey } from '../lib/derive-key.ts';

const MAX_VALUE_LENGTH = 1024;
const ALGORITHM = 'HS256';

export interface DeviceTokenCodec {
  seal(claims: { userId: string; secret: string; expiresAt: number }, nowMs: number): Promise<string>;
  /** The user and secret of a value we signed that has not expired; null for anything else. */
  open(value: string | undefined, nowMs: number): Promise<{ userId: string; secret: string } | null>;
}

export function createDeviceTokenCodec(authSecret: string): DeviceTokenCodec {
  const key = new Uint8Array(deriveKey(authSecret, 'gatehouse trusted device v1'));
  return {
    async seal({ userId, secret, expiresAt }, nowMs) {
      return new SignJWT({})
        .setProtectedHeader({ alg: ALGORITHM, typ: 'gatehouse-trusted-device' })
        .setSubject(userId)
        .setJti(secret)
        .setIssuedAt(Math.floor(nowMs / 1000))
        .setExpirationTime(Math.floor(expiresAt / 1000))
        .sign(key);
    },
    async open(value, nowMs) {
      if (value === undefined || value.length === 0 || value.length > MAX_VALUE_LENGTH) return null;
      try {
        const { payload } = await jwtVerify(value, key, { algorithms: [ALGORITHM], typ: 'gatehouse-trusted-device', currentDate: new Date(nowMs) });
        if (typeof payload.sub !== 'string' || typeof payload.jti !== 'string') return null;
        return { userId: payload.sub, secret: payload.jti };
      } catch {
        return null;
      }
    },
  };
}
