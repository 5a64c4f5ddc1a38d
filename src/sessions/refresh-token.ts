/**
 * Refresh tokens are `<session id>.<generation>.<mac>`, where the MAC is an HMAC-SHA256 of the
 * session id, a random per-session seed and the generation, under a key derived from AUTH_SECRET.
 * Storage keeps the seed and the live generation, never a token: a database leak alone cannot
 * make one, and AUTH_SECRET alone cannot either.
 *
 * Because every generation's token can be recomputed, the server recognises any token it ever
 * issued for a session: a spent one (an older generation) coming back is proof that a copy is in
 * someone else's hands, however many rotations ago it was spent; a token with a wrong MAC proves
 * nothing and changes nothing. Two tabs refreshing with the same token get the same successor.
 */
import { createHmac, timingSafeEqual, type KeyObject } from 'node:crypto';
import { deriveSecretKey } from '../lib/derive-key.ts';

const REFRESH_TOKEN_PATTERN = /^([A-Za-z0-9_-]{22})\.(0|[1-9]\d{0,8})\.([A-Za-z0-9_-]{43})$/;
const MAC_KEY_INFO = 'gatehouse refresh-token mac v1';

export interface ParsedRefreshToken {
  sessionId: string;
  generation: number;
  mac: string;
}

export function deriveRefreshTokenKey(authSecret: string): KeyObject {
  return deriveSecretKey(authSecret, MAC_KEY_INFO);
}

export function makeRefreshToken(key: KeyObject, sessionId: string, seed: string, generation: number): string {
  return `${sessionId}.${generation}.${mac(key, sessionId, seed, generation)}`;
}

export function parseRefreshToken(token: unknown): ParsedRefreshToken | null {
  if (typeof token !== 'string' || token.length > 100) return null;
  const match = REFRESH_TOKEN_PATTERN.exec(token);
  return match ? { sessionId: match[1]!, generation: Number(match[2]), mac: match[3]! } : null;
}

/** True when the token was issued by us for this session and seed (compared in constant time). */
export function isGenuineRefreshToken(key: KeyObject, token: ParsedRefreshToken, seed: string): boolean {
  const expected = Buffer.from(mac(key, token.sessionId, seed, token.generation));
  const presented = Buffer.from(token.mac);
  return expected.length === presented.length && timingSafeEqual(expected, presented);
}

function mac(key: KeyObject, sessionId: string, seed: string, generation: number): string {
  return createHmac('sha256', key).update(`${sessionId}.${seed}.${generation}`).digest('base64url');
}
