/**
 * The TOTP secret at rest. Unlike a password or a token, the server needs the secret itself to
 * compute codes, so it cannot store a hash: it stores the secret encrypted with AES-256-GCM under a
 * key derived from AUTH_SECRET, so that a copy of the database alone yields no secret.
 *
 * A box is `v1.<iv>.<ciphertext>.<tag>`, each part base64url: a random 96-bit IV (GCM's native
 * size; random IVs stay safe far beyond the number of secrets one key will ever seal) and the full
 * 128-bit tag. The associated data names the format and the user, so a box copied into another
 * user's row, or read as another format, fails authentication instead of lending its secret.
 *
 * Opening a box that does not authenticate throws `SecretBoxError` rather than returning null: it
 * means a changed AUTH_SECRET or a tampered row, never a user's mistake, and a null could too
 * easily be read by a caller as "no TOTP enrolled" and let a sign-in through without its factor.
 */
import { createCipheriv, createDecipheriv, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';

const CIPHER = 'aes-256-gcm';
const VERSION = 'v1';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** Bound into every box of this format; the user id follows it (see `associatedData`). */
const AAD_CONTEXT = 'gatehouse mfa totp-secret v1';
const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** A box that cannot be opened: malformed, of an unknown version, or failing authentication. */
export class SecretBoxError extends Error {
  override name = 'SecretBoxError';
}

/** Encrypts `plaintext` for the user `userId` under a 32-byte key. */
export function sealSecret(plaintext: string, key: Buffer | KeyObject, userId: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(CIPHER, keyObjectOf(key), iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(associatedData(userId));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [VERSION, iv, ciphertext, cipher.getAuthTag()].map(encodePart).join('.');
}

/** The plaintext sealed for `userId` under `key`; throws `SecretBoxError` when it cannot be had. */
export function openSecret(box: string, key: Buffer | KeyObject, userId: string): string {
  const secretKey = keyObjectOf(key);
  const { iv, ciphertext, tag } = parseBox(box);
  // authTagLength pins the tag to 16 bytes: GCM would otherwise verify a truncated tag.
  const decipher = createDecipheriv(CIPHER, secretKey, iv, { authTagLength: TAG_BYTES });
  decipher.setAAD(associatedData(userId));
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(ciphertext), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretBoxError('The sealed secret does not authenticate (another key or user, or altered)');
  }
}

/**
 * The key as a KeyObject. Callers on a request's path hold one (`deriveSecretKey`): given a Buffer,
 * Node 24's ciphers first check whether it is a CryptoKey, which costs about 25 µs a box (28 µs
 * against 3–5 µs, measured).
 */
function keyObjectOf(key: Buffer | KeyObject): KeyObject {
  const secretKey = Buffer.isBuffer(key) ? createSecretKey(key) : key;
  if (secretKey.type !== 'secret' || secretKey.symmetricKeySize !== KEY_BYTES) throw new RangeError(`A secret box key must be ${KEY_BYTES} bytes`);
  return secretKey;
}

/** The context and the user id, separated by a NUL that neither contains, so no two pairs collide. */
function associatedData(userId: string): Buffer {
  if (userId.length === 0 || userId.includes('\0')) throw new RangeError('A secret box needs a user id');
  return Buffer.from(`${AAD_CONTEXT}\0${userId}`, 'utf8');
}

function parseBox(box: string): { iv: Buffer; ciphertext: Buffer; tag: Buffer } {
  const parts = box.split('.');
  if (parts.length !== 4) throw new SecretBoxError('A sealed secret has four parts');
  const [version, iv, ciphertext, tag] = parts as [string, string, string, string];
  if (version !== VERSION) throw new SecretBoxError(`Unknown sealed secret version "${version.slice(0, 8)}"`);
  const decoded = { iv: decodePart(iv), ciphertext: decodePart(ciphertext), tag: decodePart(tag) };
  if (decoded.iv.length !== IV_BYTES || decoded.tag.length !== TAG_BYTES) {
    throw new SecretBoxError('A sealed secret has a wrong IV or tag length');
  }
  return decoded;
}

function encodePart(part: string | Buffer): string {
  return typeof part === 'string' ? part : part.toString('base64url');
}

/** Strict: Buffer.from skips characters outside the alphabet, which would accept altered boxes. */
function decodePart(part: string): Buffer {
  const bytes = BASE64URL.test(part) ? Buffer.from(part, 'base64url') : null;
  if (bytes === null || bytes.toString('base64url') !== part) {
    throw new SecretBoxError('A sealed secret is not base64url');
  }
  return bytes;
}
