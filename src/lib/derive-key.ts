import { hkdfSync } from 'node:crypto';

/**
 * A 256-bit key for one purpose, derived from AUTH_SECRET with HKDF-SHA256. Each purpose gets its
 * own `info`, so a key leaked from one use (cookie signing, say) says nothing about another.
 */
export function deriveKey(authSecret: string, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', authSecret, 'gatehouse', purpose, 32));
}
