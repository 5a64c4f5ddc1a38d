/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com), made by the `standardwebhooks`
 * library: `webhook-signature: v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`,
 * several space-separated while a rotated-out secret is still in its grace period. Secrets are
 * `whsec_` + base64 of 32 random bytes, and are kept sealed at rest: AES-256-GCM under a key derived
 * from AUTH_SECRET for this purpose only (mfa/secret-box.ts's box), bound to the endpoint's id, so a
 * database dump alone yields no secret and a box copied to another endpoint does not open.
 */
import { randomBytes } from 'node:crypto';
import type { Webhook } from 'standardwebhooks';
import { onFirstUse } from '../lib/on-first-use.ts';

/** The signing library, loaded by the first delivery (or signature check), not at start. */
const standardWebhooks = onFirstUse<{ Webhook: typeof Webhook }>(import.meta.url, 'standardwebhooks');
import { deriveKey } from '../lib/derive-key.ts';
import { openSecret, sealSecret } from '../mfa/secret-box.ts';

export const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;

/** A new signing secret: `whsec_` + base64 of 256 random bits. */
export function newWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`;
}

/** The `webhook-timestamp` header for a time: whole seconds since the epoch. */
export function webhookTimestamp(epochMs: number): string {
  return String(Math.floor(epochMs / 1000));
}

/** The `webhook-signature` header: one `v1,<signature>` per secret, space-separated, the current one first. */
export function signatureHeader(secrets: readonly string[], messageId: string, epochMs: number, body: string): string {
  // The library signs the whole seconds of the time it is given, as webhookTimestamp writes them.
  const at = new Date(Math.floor(epochMs / 1000) * 1000);
  return secrets.map((secret) => new (standardWebhooks().Webhook)(secret).sign(messageId, at, body)).join(' ');
}

export interface SecretSeal {
  seal(endpointId: string, secret: string): string;
  /** Throws (SecretBoxError) when the box was not sealed for this endpoint with this AUTH_SECRET. */
  open(endpointId: string, sealed: string): string;
}

export function createSecretSeal(authSecret: string): SecretSeal {
  const key = deriveKey(authSecret, 'gatehouse webhooks signing-secret v1');
  const bound = (endpointId: string) => `webhook-endpoint:${endpointId}`;
  return {
    seal: (endpointId, secret) => sealSecret(secret, key, bound(endpointId)),
    open: (endpointId, sealed) => openSecret(sealed, key, bound(endpointId)),
  };
}

/** The secret sealed in `sealed`, or null when it does not open (sealed under another AUTH_SECRET). */
export function tryOpen(seal: SecretSeal, endpointId: string, sealed: string): string | null {
  try {
    return seal.open(endpointId, sealed);
  } catch {
    return null;
  }
}
