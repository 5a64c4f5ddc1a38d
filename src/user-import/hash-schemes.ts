/**
 * The password hashes other systems made, as Gatehouse stores them until their owner's next
 * sign-in (then argon2id replaces them: credentials/password-hasher.ts). Each is a self-describing
 * string; the ones without a standard encoding get a PHC-style one here (docs/guides/moving-to-gatehouse.md):
 *
 *   bcrypt          $2a$ / $2b$ / $2y$ (bcryptjs: the password as typed, UTF-8, first 72 bytes)
 *   argon2i/d       $argon2i$v=19$m=…,t=…,p=…$salt$hash (@node-rs/argon2; argon2id is the core's)
 *   scrypt          $scrypt$ln=14,r=16,p=1$<salt>$<hash>          scrypt(password, salt) of the hash's length
 *   PBKDF2          $pbkdf2-sha1|sha256|sha512$i=210000$<salt>$<hash>
 *   salted SHA-2    $sha256|sha512$s=before|after$<salt>$<hash>  SHA(salt ‖ password) or SHA(password ‖ salt)
 *   Firebase        $firebase-scrypt$ln=14,r=8$<salt separator>$<signer key>$<salt>$<hash>
 *
 * <salt>, <hash>, the separator and the key are base64 (standard or URL alphabet, padding optional).
 * Every scheme's work is bounded (BOUNDS): a hash beyond them is refused at import (`checkImportedHash`)
 * and fails to verify, so an import cannot plant a hash that takes minutes or gigabytes to check.
 * The bounds admit every source's defaults (Keycloak PBKDF2-SHA512 210,000, Better Auth scrypt
 * N=16384 r=16, Firebase N=2^14 r=8, bcrypt cost up to 14).
 */
import { createCipheriv, createHash, pbkdf2, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { verify as argon2Verify } from '@node-rs/argon2';
import { SCHEME_PATTERNS, type SchemeName } from './foreign-hash-schemes.ts';

// What the password check registers (the names and patterns, without this file's code), from here too.
export { FOREIGN_HASH_SCHEMES } from './foreign-hash-schemes.ts';

const pbkdf2Async = promisify(pbkdf2);
const scryptAsync = promisify(scrypt) as (password: Buffer | string, salt: Buffer, keylen: number, options: { N: number; r: number; p: number; maxmem: number }) => Promise<Buffer>;

export const BOUNDS = {
  bcryptCost: { min: 4, max: 14 },
  pbkdf2Iterations: { min: 1, max: 1_300_000 },
  /** scrypt's memory is 128·N·r bytes. */
  scryptMemoryBytes: 128 * 1024 * 1024,
  scryptParallelism: 4,
  argon2MemoryKib: 256 * 1024,
  argon2Iterations: 16,
  argon2Parallelism: 16,
  /** Salts and hashes, decoded. */
  maxBytes: 256,
} as const;

const decode = (text: string): Buffer => Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
const sizeOk = (...buffers: Buffer[]) => buffers.every((buffer) => buffer.length > 0 && buffer.length <= BOUNDS.maxBytes);

function equal(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

interface ParsedScheme<P> {
  /** Its hashes are those its pattern (foreign-hash-schemes.ts `SCHEME_PATTERNS`) recognises. */
  name: SchemeName;
  /** The parameters of a hash this scheme recognises, or a reason it is refused. */
  parse(match: RegExpExecArray): P | { refused: string };
  verify(parameters: P, password: string): Promise<boolean>;
}

const bcryptScheme: ParsedScheme<{ hash: string }> = {
  name: 'bcrypt',
  parse: (match) => {
    const cost = Number(match[1]);
    return cost < BOUNDS.bcryptCost.min || cost > BOUNDS.bcryptCost.max ? { refused: 'HASH_COST_TOO_HIGH' } : { hash: match[0] };
  },
  // bcryptjs compares the whole result in constant time.
  // Loaded at the first bcrypt hash verified, not at start (idle memory is a budget: perf/analysis.md).
  verify: async ({ hash }, password) => (await import('bcryptjs')).default.compare(password, hash),
};

const argon2Scheme: ParsedScheme<{ hash: string }> = {
  name: 'argon2',
  parse: (match) => {
    const [m, t, p] = [Number(match[2]), Number(match[3]), Number(match[4])];
    if (m > BOUNDS.argon2MemoryKib || t > BOUNDS.argon2Iterations || p > BOUNDS.argon2Parallelism) return { refused: 'HASH_COST_TOO_HIGH' };
    return m < 8 || t < 1 || p < 1 ? { refused: 'MALFORMED_HASH' } : { hash: match[0] };
  },
  // argon2 compares in constant time inside the library.
  verify: ({ hash }, password) => argon2Verify(hash, password),
};

const scryptScheme: ParsedScheme<{ N: number; r: number; p: number; salt: Buffer; hash: Buffer }> = {
  name: 'scrypt',
  parse: (match) => {
    const [ln, r, p] = [Number(match[1]), Number(match[2]), Number(match[3])];
    const [salt, hash] = [decode(match[4]!), decode(match[5]!)];
    if (ln < 1 || r < 1 || p < 1 || !sizeOk(salt, hash)) return { refused: 'MALFORMED_HASH' };
    if (128 * 2 ** ln * r > BOUNDS.scryptMemoryBytes || p > BOUNDS.scryptParallelism) return { refused: 'HASH_COST_TOO_HIGH' };
    return { N: 2 ** ln, r, p, salt, hash };
  },
  verify: async ({ N, r, p, salt, hash }, password) => equal(await scryptAsync(password.normalize('NFKC'), salt, hash.length, { N, r, p, maxmem: 2 * BOUNDS.scryptMemoryBytes }), hash),
};

const pbkdf2Scheme: ParsedScheme<{ digest: string; iterations: number; salt: Buffer; hash: Buffer }> = {
  name: 'pbkdf2',
  parse: (match) => {
    const iterations = Number(match[2]);
    const [salt, hash] = [decode(match[3]!), decode(match[4]!)];
    if (iterations < BOUNDS.pbkdf2Iterations.min || !sizeOk(salt, hash)) return { refused: 'MALFORMED_HASH' };
    if (iterations > BOUNDS.pbkdf2Iterations.max) return { refused: 'HASH_COST_TOO_HIGH' };
    return { digest: match[1]!, iterations, salt, hash };
  },
  verify: async ({ digest, iterations, salt, hash }, password) => equal(await pbkdf2Async(password, salt, iterations, hash.length, digest), hash),
};

const saltedShaScheme: ParsedScheme<{ digest: string; before: boolean; salt: Buffer; hash: Buffer }> = {
  name: 'salted-sha',
  parse: (match) => {
    const [salt, hash] = [decode(match[3]!), decode(match[4]!)];
    const length = match[1] === 'sha256' ? 32 : 64;
    return hash.length !== length || salt.length > BOUNDS.maxBytes ? { refused: 'MALFORMED_HASH' } : { digest: match[1]!, before: match[2] === 'before', salt, hash };
  },
  verify: async ({ digest, before, salt, hash }, password) => {
    const typed = Buffer.from(password, 'utf8');
    const computed = createHash(digest).update(before ? Buffer.concat([salt, typed]) : Buffer.concat([typed, salt])).digest();
    return equal(computed, hash);
  },
};

/**
 * Firebase's modified scrypt: key = scrypt(password, salt ‖ separator, N=2^ln, r, p=1, 32 bytes);
 * the hash is the project's signer key encrypted with AES-256-CTR under that key (IV zero).
 * (Node's crypto, as firebase/scrypt's reference does; the tests check it against `firebase-scrypt`.)
 */
const firebaseScheme: ParsedScheme<{ N: number; r: number; separator: Buffer; signerKey: Buffer; salt: Buffer; hash: Buffer }> = {
  name: 'firebase-scrypt',
  parse: (match) => {
    const [ln, r] = [Number(match[1]), Number(match[2])];
    const [separator, signerKey, salt, hash] = [decode(match[3]!), decode(match[4]!), decode(match[5]!), decode(match[6]!)];
    if (ln < 1 || r < 1 || !sizeOk(separator, signerKey, salt, hash)) return { refused: 'MALFORMED_HASH' };
    if (128 * 2 ** ln * r > BOUNDS.scryptMemoryBytes) return { refused: 'HASH_COST_TOO_HIGH' };
    return { N: 2 ** ln, r, separator, signerKey, salt, hash };
  },
  verify: async ({ N, r, separator, signerKey, salt, hash }, password) => {
    const key = await scryptAsync(password, Buffer.concat([salt, separator]), 32, { N, r, p: 1, maxmem: 2 * BOUNDS.scryptMemoryBytes });
    const cipher = createCipheriv('aes-256-ctr', key, Buffer.alloc(16, 0));
    const computed = Buffer.concat([cipher.update(signerKey), cipher.final()]);
    return equal(computed.subarray(0, hash.length), hash);
  },
};

const SCHEMES: ReadonlyArray<ParsedScheme<never>> = [bcryptScheme, argon2Scheme, scryptScheme, pbkdf2Scheme, saltedShaScheme, firebaseScheme] as unknown as ReadonlyArray<ParsedScheme<never>>;

/** What an imported hash is: its kind (for reports), or why it is refused (`MALFORMED_HASH`, `HASH_COST_TOO_HIGH`). */
export type HashCheck = { ok: true; kind: string } | { ok: false; reason: 'MALFORMED_HASH' | 'HASH_COST_TOO_HIGH' };

/** Judges an imported hash as verification will: shape, then bounds. */
export function checkImportedHash(passwordHash: string): HashCheck {
  if (passwordHash.length > 2_000) return { ok: false, reason: 'MALFORMED_HASH' };
  for (const scheme of SCHEMES) {
    const match = SCHEME_PATTERNS[scheme.name].exec(passwordHash);
    if (match === null) continue;
    const parsed = scheme.parse(match) as object;
    if ('refused' in parsed) return { ok: false, reason: parsed.refused as 'MALFORMED_HASH' | 'HASH_COST_TOO_HIGH' };
    return { ok: true, kind: kindOf(passwordHash) };
  }
  return { ok: false, reason: 'MALFORMED_HASH' };
}

/** The kind of a stored hash as `gatehouse import hashes` counts it (`argon2id`, `bcrypt`, `pbkdf2-sha256`…). */
export function kindOf(passwordHash: string): string {
  const bcryptMatch = /^\$2[aby]\$/.test(passwordHash);
  if (bcryptMatch) return 'bcrypt';
  const prefix = /^\$([a-z0-9-]+)\$/.exec(passwordHash)?.[1];
  return prefix ?? 'unknown';
}

/**
 * Whether `password` is the one `passwordHash` was made from, by the scheme `name` (the password
 * check's `verify` of foreign-hash-schemes.ts): false for a hash of another scheme, out of bounds
 * or malformed, without work, and for any failure of the scheme's code.
 */
export async function verifyForeignHash(name: SchemeName, passwordHash: string, password: string): Promise<boolean> {
  const scheme = SCHEMES.find((candidate) => candidate.name === name);
  const match = scheme === undefined ? null : SCHEME_PATTERNS[scheme.name].exec(passwordHash);
  if (scheme === undefined || match === null) return false;
  const parsed = scheme.parse(match) as object;
  if ('refused' in parsed) return false;
  try {
    return await scheme.verify(parsed as never, password);
  } catch {
    return false;
  }
}
