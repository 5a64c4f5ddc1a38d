import { createHash, randomBytes } from 'node:crypto';

/**
 * A random, non-sequential identifier: 128 bits, base64url (22 characters), never starting with
 * `-` (a command line would read such an id as an option: `gatehouse webhooks show -x…`). Drawn
 * again in that case, so every id is uniform over those that do not.
 */
export function randomId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

/** A bearer secret: 256 bits by default, base64url. Store only `sha256Base64url` of it. */
export function randomSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

export function sha256Base64url(value: string): string {
  return createHash('sha256').update(value).digest('base64url');
}
