import { createSecretKey, hkdfSync, type KeyObject } from 'node:crypto';

/**
 * A 256-bit key for one purpose, derived from AUTH_SECRET with HKDF-SHA256. Each purpose gets its
 * own `info`, so a key leaked from one use (cookie signing, say) says nothing about another.
 */
export function deriveKey(authSecret: string, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', authSecret, 'gatehouse', purpose, 32));
}

/**
 * The same key as a KeyObject, for HMACs and ciphers on a request's path. Given a Buffer, Node 24's
 * `createHmac` and `createCipheriv` first check whether it is a CryptoKey, and that check costs
 * 15–25 µs a call (an HMAC 17–19 µs against 3–4 µs with a KeyObject, an AES-GCM cipher 28 µs
 * against 3–5 µs, measured); the bytes, and so every MAC and box, are the same.
 */
export function deriveSecretKey(authSecret: string, purpose: string): KeyObject {
  return createSecretKey(deriveKey(authSecret, purpose));
}
