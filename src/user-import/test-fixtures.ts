/**
 * Hashes as each source system makes them, made by the libraries those systems use (for the tests):
 * bcryptjs for bcrypt (Auth0, Clerk, Supabase), firebase-scrypt with a project's published
 * parameters (firebase/scrypt's README), Node's crypto for PBKDF2 (Keycloak) and scrypt (Better
 * Auth), @node-rs/argon2 for argon2i/d/id. Each in the generic format's self-describing string.
 */
import { createHash, pbkdf2Sync, randomBytes, scryptSync } from 'node:crypto';
import bcrypt from 'bcryptjs';
import { hash as argon2Hash } from '@node-rs/argon2';
import { FirebaseScrypt } from 'firebase-scrypt';

/** The parameters and sample user of firebase/scrypt's README. */
export const FIREBASE_PROJECT = {
  signerKey: 'jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==',
  saltSeparator: 'Bw==',
  rounds: 8,
  memCost: 14,
};
export const FIREBASE_SAMPLE = { password: 'user1password', salt: '42xEC+ixf3L2lw==', hash: 'lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ==' };

const b64 = (buffer: Buffer) => buffer.toString('base64').replace(/=+$/, '');

export async function firebaseHash(password: string, salt = randomBytes(12).toString('base64')): Promise<{ hash: string; salt: string }> {
  const scrypt = new FirebaseScrypt(FIREBASE_PROJECT);
  return { hash: await scrypt.hash(password, salt), salt };
}

export function firebasePhc(hash: string, salt: string): string {
  const p = FIREBASE_PROJECT;
  return `$firebase-scrypt$ln=${p.memCost},r=${p.rounds}$${p.saltSeparator.replace(/=+$/, '')}$${p.signerKey.replace(/=+$/, '')}$${salt.replace(/=+$/, '')}$${hash.replace(/=+$/, '')}`;
}

/** Keycloak's PBKDF2 credential parts (its default: pbkdf2-sha512, 210,000 iterations, 16-byte salt, 64-byte hash). */
export function keycloakPbkdf2(password: string, algorithm: 'sha256' | 'sha512' = 'sha512', iterations = 210_000) {
  const salt = randomBytes(16);
  const value = pbkdf2Sync(password, salt, iterations, algorithm === 'sha512' ? 64 : 32, algorithm);
  return { secretData: JSON.stringify({ value: value.toString('base64'), salt: salt.toString('base64'), additionalParameters: {} }), credentialData: JSON.stringify({ hashIterations: iterations, algorithm: `pbkdf2-${algorithm}`, additionalParameters: {} }) };
}

/** Better Auth's scrypt (N=16384, r=16, p=1, 64 bytes; the salt is the hex string itself), as `salt:key` hex. */
export function betterAuthHash(password: string): string {
  const salt = randomBytes(16).toString('hex');
  const key = scryptSync(password.normalize('NFKC'), salt, 64, { N: 16384, r: 16, p: 1, maxmem: 128 * 16384 * 16 * 2 });
  return `${salt}:${key.toString('hex')}`;
}

/** One hash of `password` of every kind, by kind. */
export async function everyKind(password: string): Promise<Record<string, string>> {
  const salt = randomBytes(16);
  const fb = await firebaseHash(password);
  const [baSalt, baKey] = betterAuthHash(password).split(':') as [string, string];
  return {
    bcrypt: await bcrypt.hash(password, 10),
    argon2i: await argon2Hash(password, { algorithm: 1 }),
    argon2d: await argon2Hash(password, { algorithm: 0 }),
    argon2id: await argon2Hash(password, { algorithm: 2, memoryCost: 4096, timeCost: 3 }),
    scrypt: `$scrypt$ln=14,r=16,p=1$${b64(Buffer.from(baSalt))}$${b64(Buffer.from(baKey, 'hex'))}`,
    'pbkdf2-sha1': `$pbkdf2-sha1$i=10000$${b64(salt)}$${b64(pbkdf2Sync(password, salt, 10_000, 20, 'sha1'))}`,
    'pbkdf2-sha256': `$pbkdf2-sha256$i=27500$${b64(salt)}$${b64(pbkdf2Sync(password, salt, 27_500, 32, 'sha256'))}`,
    'pbkdf2-sha512': `$pbkdf2-sha512$i=210000$${b64(salt)}$${b64(pbkdf2Sync(password, salt, 210_000, 64, 'sha512'))}`,
    sha256: `$sha256$s=before$${b64(salt)}$${b64(createHash('sha256').update(Buffer.concat([salt, Buffer.from(password)])).digest())}`,
    sha512: `$sha512$s=after$${b64(salt)}$${b64(createHash('sha512').update(Buffer.concat([Buffer.from(password), salt])).digest())}`,
    'firebase-scrypt': firebasePhc(fb.hash, fb.salt),
  };
}
