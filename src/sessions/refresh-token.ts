/**
 * Refresh tokens are `<session id>.<secret>`: the id finds the row, the secret proves possession
 * and is stored only as a SHA-256. Rotation derives the next secret from the current one with an
 * HMAC under a key only the server has, so two tabs that refresh with the same token at once both
 * receive the same successor instead of tripping reuse detection.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { deriveKey } from '../lib/derive-key.ts';

const REFRESH_TOKEN_PATTERN = /^([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/;
const SUCCESSOR_KEY_INFO = 'gatehouse refresh-token successor v1';

export function formatRefreshToken(sessionId: string, secret: string): string {
  return `${sessionId}.${secret}`;
}

export function parseRefreshToken(token: unknown): { sessionId: string; secret: string } | null {
  if (typeof token !== 'string' || token.length > 100) return null;
  const match = REFRESH_TOKEN_PATTERN.exec(token);
  return match ? { sessionId: match[1]!, secret: match[2]! } : null;
}

export function deriveSuccessorKey(authSecret: string): Buffer {
  return deriveKey(authSecret, SUCCESSOR_KEY_INFO);
}

export function deriveSuccessorSecret(key: Buffer, sessionId: string, secret: string): string {
  return createHmac('sha256', key).update(`${sessionId}.${secret}`).digest('base64url');
}

/** Constant-time comparison of two base64url digests. */
export function digestsEqual(a: string | null, b: string): boolean {
  if (a === null || a.length !== b.length) return false;
  return timingSafeEqual(Buffer.from(a), Buffer.from(b));
}
