/** A client's id and secret: how they are made, what the registry keeps of a secret, and how a presented one is checked. */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A new client_id: 128 random bits, base64url (22 characters). */
export function newClientId(): string {
  return randomBytes(16).toString('base64url');
}

/** A new client secret: 256 random bits, base64url (43 characters). */
export function newClientSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** What the registry stores of a secret (and gives the provider as `client_secret`): SHA-256, hex. */
export function hashClientSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** Whether `secret` is the one `hash` was made from; constant time in the secret. */
export function clientSecretMatches(secret: string, hash: string): boolean {
  if (!SHA256_HEX.test(hash)) return false;
  return timingSafeEqual(Buffer.from(hashClientSecret(secret), 'hex'), Buffer.from(hash, 'hex'));
}
