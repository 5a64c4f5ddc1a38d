/**
 * The app's own session cookie in sign-in mode (sign-in.ts): its contents encrypted and
 * authenticated with AES-256-GCM as a JWE (`dir`, jose), under a key derived with HKDF from the
 * app's secret (several secrets: the first seals, every one opens, for rotation). `HttpOnly`,
 * `SameSite=Lax`, `Path=/`, and on https `Secure` with the `__Host-` prefix, which pins it to this
 * exact origin. A value longer than one cookie holds is split into numbered chunks (`name.0`,
 * `name.1`…); writing clears the chunks the request had beyond those written.
 */
import { EncryptJWT, jwtDecrypt, type JWTPayload } from 'jose';

/** Browsers keep at least 4096 bytes per cookie, name and attributes included. */
const CHUNK_SIZE = 3800;
const MAX_CHUNKS = 8;

export interface CookieSealer {
  /** The cookie's contents sealed, expiring at `expiresAt` (epoch seconds). */
  seal(payload: JWTPayload, expiresAt: number): Promise<string>;
  /** The contents, or null for a value not sealed by one of our secrets, tampered with or expired. */
  open(value: string, purpose: string): Promise<JWTPayload | null>;
}

/** Derives one AES-256-GCM key per secret and purpose (HKDF-SHA-256), so a session cookie never opens as a sign-in transaction. */
async function deriveKey(secret: string, purpose: string): Promise<Uint8Array> {
  const material = await crypto.subtle.importKey('raw', new TextEncoder().encode(secret), 'HKDF', false, ['deriveBits']);
  const bits = await crypto.subtle.deriveBits(
    { name: 'HKDF', hash: 'SHA-256', salt: new TextEncoder().encode('gatehouse-protect sign-in v1'), info: new TextEncoder().encode(purpose) },
    material,
    256,
  );
  return new Uint8Array(bits);
}

export function createSealer(secrets: readonly string[], purpose: string): CookieSealer {
  for (const secret of secrets) {
    if (typeof secret !== 'string' || secret.length < 32) throw new TypeError('gatehouse-protect: each sign-in secret must be a string of 32 characters or more (e.g. `openssl rand -base64 32`)');
  }
  if (secrets.length === 0) throw new TypeError('gatehouse-protect: the sign-in mode needs a secret');
  const keys = Promise.all(secrets.map((secret) => deriveKey(secret, purpose)));
  return {
    async seal(payload, expiresAt) {
      const [key] = await keys;
      return new EncryptJWT(payload).setProtectedHeader({ alg: 'dir', enc: 'A256GCM' }).setIssuedAt().setExpirationTime(expiresAt).encrypt(key!);
    },
    async open(value) {
      for (const key of await keys) {
        try {
          const { payload } = await jwtDecrypt(value, key, { contentEncryptionAlgorithms: ['A256GCM'], keyManagementAlgorithms: ['dir'] });
          return payload;
        } catch {
          // Another key, a tampered value or an expired one: try the next key, else none.
        }
      }
      return null;
    },
  };
}

export interface CookieOptions {
  /** Seconds; absent: a browser-session cookie. */
  maxAgeSeconds?: number;
  secure: boolean;
}

export function serializeCookie(name: string, value: string, options: CookieOptions): string {
  const parts = [`${name}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Lax'];
  if (options.secure) parts.push('Secure');
  if (options.maxAgeSeconds !== undefined) parts.push(`Max-Age=${Math.max(0, Math.floor(options.maxAgeSeconds))}`);
  return parts.join('; ');
}

export function parseCookieHeader(header: string | null | undefined): Map<string, string> {
  const cookies = new Map<string, string>();
  for (const part of (header ?? '').split(';')) {
    const separator = part.indexOf('=');
    if (separator === -1) continue;
    const name = part.slice(0, separator).trim();
    if (name !== '' && !cookies.has(name)) cookies.set(name, part.slice(separator + 1).trim());
  }
  return cookies;
}

/** The value of a possibly chunked cookie, or undefined. */
export function readChunked(cookies: ReadonlyMap<string, string>, name: string): string | undefined {
  const whole = cookies.get(name);
  if (whole !== undefined) return whole;
  let value = '';
  for (let index = 0; index < MAX_CHUNKS; index++) {
    const chunk = cookies.get(`${name}.${index}`);
    if (chunk === undefined) break;
    value += chunk;
  }
  return value === '' ? undefined : value;
}

/** Set-Cookie headers writing `value` (chunked when long), and clearing what the request had that is not written. */
export function writeChunked(name: string, value: string, options: CookieOptions, present: ReadonlyMap<string, string>): string[] {
  const chunks: Array<[string, string]> = [];
  if (value.length <= CHUNK_SIZE) chunks.push([name, value]);
  else {
    const count = Math.ceil(value.length / CHUNK_SIZE);
    if (count > MAX_CHUNKS) throw new Error('gatehouse-protect: the session is too large for its cookies');
    for (let index = 0; index < count; index++) chunks.push([`${name}.${index}`, value.slice(index * CHUNK_SIZE, (index + 1) * CHUNK_SIZE)]);
  }
  const written = new Set(chunks.map(([chunkName]) => chunkName));
  return [...chunks.map(([chunkName, chunk]) => serializeCookie(chunkName, chunk, options)), ...clearChunked(name, options, present).filter((header) => !written.has(header.slice(0, header.indexOf('='))))];
}

/** Set-Cookie headers removing every part of the cookie the request had. */
export function clearChunked(name: string, options: CookieOptions, present: ReadonlyMap<string, string>): string[] {
  const names = [name, ...Array.from({ length: MAX_CHUNKS }, (_, index) => `${name}.${index}`)].filter((candidate) => present.has(candidate));
  return names.map((candidate) => serializeCookie(candidate, '', { ...options, maxAgeSeconds: 0 }));
}
