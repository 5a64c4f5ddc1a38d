/**
 * Recovery codes: ten single-use codes shown once at enrolment, for a user who lost the device.
 * Each is 10 characters of Crockford's base32 alphabet (no i, l, o or u, so nothing reads as
 * another character), 50 bits from node:crypto, shown as `xxxxx-xxxxx`.
 *
 * Storage keeps only `hashRecoveryCode` of each, a keyed HMAC-SHA256 rather than argon2. A slow hash
 * is for passwords, which people choose from a small space that an attacker with the hashes can
 * walk offline; slowness is what makes each guess costly. These codes are random: 2^50 of them
 * per code, so an offline search is already out of reach, and the HMAC key, derived from
 * AUTH_SECRET and never stored, means a copy of the database alone allows no search at all.
 * Online, guesses meet the sign-in throttle long before 50 bits matter. A fast hash also lets the
 * store find a code by an indexed equality on its hash, with no per-code salt to try one by one.
 */
import { createHmac, randomBytes } from 'node:crypto';

export const RECOVERY_CODE_COUNT = 10;
/** Crockford's base32 alphabet, lower case: 32 symbols, 5 bits each. */
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const CODE_LENGTH = 10;
const GROUP_LENGTH = 5;
/** Crockford's reading rules: letters a person may type for the digits they look like. */
const LOOK_ALIKES: Readonly<Record<string, string>> = { o: '0', i: '1', l: '1' };
/** What people put between groups or around a code: spaces, dashes of any kind. */
const SEPARATORS = /[\s\-\u2010-\u2015\u2212]/g;
const MAX_INPUT_LENGTH = 64;
/** HMAC-SHA256 keys shorter than this would be weaker than the codes they protect. */
const MIN_KEY_BYTES = 32;

/** A source of random bytes; node:crypto's unless a test needs to see what becomes of them. */
export type RandomBytes = (size: number) => Uint8Array;

/** A new set of recovery codes, each `xxxxx-xxxxx`, all different. */
export function generateRecoveryCodes(random: RandomBytes = randomBytes): string[] {
  const codes = new Set<string>();
  // Two equal codes in one set (one chance in about 2^44) would leave the user nine; draw again.
  while (codes.size < RECOVERY_CODE_COUNT) codes.add(generateRecoveryCode(random));
  return [...codes];
}

/**
 * The canonical form (`xxxxx-xxxxx`, lower case) of what a user typed, or null if it cannot be a
 * recovery code. Case, spaces and dashes anywhere do not matter, nor do o/i/l typed for 0/1.
 */
export function normalise(input: unknown): string | null {
  if (typeof input !== 'string' || input.length > MAX_INPUT_LENGTH) return null;
  const compact = [...input.replace(SEPARATORS, '').toLowerCase()].map((char) => LOOK_ALIKES[char] ?? char).join('');
  if (compact.length !== CODE_LENGTH || ![...compact].every((char) => ALPHABET.includes(char))) return null;
  return format(compact);
}

/**
 * What storage keeps of a code: HMAC-SHA256 under `key` of its canonical form, base64url. The key
 * is a purpose-bound 32-byte key (`deriveKey(AUTH_SECRET, …)`). Throws on input that is not a
 * recovery code: callers `normalise` user input first and treat null as a wrong code.
 */
export function hashRecoveryCode(code: string, key: Buffer): string {
  if (key.length < MIN_KEY_BYTES) throw new RangeError(`A recovery code key must be at least ${MIN_KEY_BYTES} bytes`);
  const canonical = normalise(code);
  if (canonical === null) throw new RangeError('Not a recovery code');
  return createHmac('sha256', key).update(canonical).digest('base64url');
}

function generateRecoveryCode(random: RandomBytes): string {
  // One byte per character, of which the low 5 bits are kept: 256 is a multiple of 32, so each
  // symbol is equally likely (no modulo bias), and the 10 bytes give 10 x 5 = 50 bits.
  const bytes = random(CODE_LENGTH);
  if (bytes.length !== CODE_LENGTH) throw new RangeError('The random source returned too few bytes');
  return format(Array.from(bytes, (byte) => ALPHABET[byte & 0x1f]).join(''));
}

function format(compact: string): string {
  return `${compact.slice(0, GROUP_LENGTH)}-${compact.slice(GROUP_LENGTH)}`;
}
