/**
 * The shape of an API key, which secret scanners match (docs/guides/api-keys.md):
 *
 *   gatehouse_pk_<48 base62 characters>   a personal key
 *   gatehouse_ok_<48 base62 characters>   an organization key
 *
 * The 48 characters are the key's id (12: what it is looked up by, not secret, shown in lists),
 * its secret (30: 178 random bits) and a checksum (6: CRC-32 of everything before it, base62,
 * zero-padded), so a scanner (or Gatehouse, before any lookup) tells a key from a random string
 * of the same shape. Regex: `\bgatehouse_(?:pk|ok)_[0-9A-Za-z]{48}\b`. Gatehouse keeps only the
 * SHA-256 of the whole key; access tokens (JWTs) begin `eyJ`, so neither is taken for the other.
 */
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';

export const API_KEY_KINDS = ['personal', 'organization'] as const;
export type ApiKeyKind = (typeof API_KEY_KINDS)[number];

export const KEY_PREFIXES: Readonly<Record<ApiKeyKind, string>> = { personal: 'gatehouse_pk_', organization: 'gatehouse_ok_' };
const ID_LENGTH = 12;
const SECRET_LENGTH = 30;
const CHECKSUM_LENGTH = 6;
const BODY_LENGTH = ID_LENGTH + SECRET_LENGTH + CHECKSUM_LENGTH;
/** What secret scanners match (documented): either prefix, then the 48 base62 characters. */
export const API_KEY_PATTERN = /^gatehouse_(pk|ok)_([0-9A-Za-z]{48})$/;
export const API_KEY_SCANNER_REGEX = String.raw`\bgatehouse_(?:pk|ok)_[0-9A-Za-z]{48}\b`;

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `length` uniformly random base62 characters (rejection sampling: no modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

function base62Fixed(value: number, length: number): string {
  let out = '';
  for (let rest = value; out.length < length; rest = Math.floor(rest / 62)) out = BASE62[rest % 62] + out;
  return out;
}

export function checksumOf(text: string): string {
  return base62Fixed(crc32(text) >>> 0, CHECKSUM_LENGTH);
}

/** A new key of `kind`: the whole key (shown once) and its id. */
export function newApiKey(kind: ApiKeyKind): { key: string; id: string } {
  const id = randomBase62(ID_LENGTH);
  const withoutChecksum = `${KEY_PREFIXES[kind]}${id}${randomBase62(SECRET_LENGTH)}`;
  return { key: `${withoutChecksum}${checksumOf(withoutChecksum)}`, id };
}

/** Whether a Bearer token has a key's prefix (cheap, synchronous: every Bearer request asks). */
export function looksLikeApiKey(token: string): boolean {
  return token.startsWith('gatehouse_pk_') || token.startsWith('gatehouse_ok_');
}

/** The key's kind and id when it has a key's shape and its checksum holds; null otherwise. */
export function parseApiKey(token: string): { kind: ApiKeyKind; id: string } | null {
  if (token.length !== KEY_PREFIXES.personal.length + BODY_LENGTH) return null;
  const match = API_KEY_PATTERN.exec(token);
  if (match === null) return null;
  const body = match[2]!;
  if (checksumOf(token.slice(0, -CHECKSUM_LENGTH)) !== body.slice(-CHECKSUM_LENGTH)) return null;
  return { kind: match[1] === 'pk' ? 'personal' : 'organization', id: body.slice(0, ID_LENGTH) };
}

/** What is stored of a key: SHA-256 of the whole key, hex. */
export function hashApiKey(key: string): string {
  return hash('sha256', key, 'hex');
}

/**
 * A stored hash as the bytes `apiKeyMatchesDigest` compares (null when it is not one: nothing
 * matches it). Its own 32 bytes: a `Buffer.from` of a short string is a slice of Node's shared
 * buffer pool (64 KiB on Node 24), which a kept digest would hold on to whole.
 */
export function storedDigestOf(storedHash: string): Uint8Array | null {
  return /^[0-9a-f]{64}$/.test(storedHash) ? new Uint8Array(Buffer.from(storedHash, 'hex')) : null;
}

/** Whether `key` is the one a stored hash was made from, given that hash's bytes (`storedDigestOf`); constant time. */
export function apiKeyMatchesDigest(key: string, digest: Uint8Array | null): boolean {
  return digest !== null && timingSafeEqual(hash('sha256', key, 'buffer'), digest);
}

/** What lists show of a key: its prefix and id, never its secret (`gatehouse_pk_AbC123xyz789…`). */
export function keyHint(kind: ApiKeyKind, id: string): string {
  return `${KEY_PREFIXES[kind]}${id}…`;
}
