/**
 * A connection's secrets at rest (the SP's private keys, the OIDC client secret), sealed with the
 * secret box the MFA module uses for TOTP secrets (AES-256-GCM, mfa/secret-box.ts) under a key of
 * their own derived from AUTH_SECRET, the connection's id bound in: a copy of the database alone
 * yields none of them, and a box moved to another connection does not open.
 */
import { deriveKey } from '../lib/derive-key.ts';
import { openSecret, sealSecret } from '../mfa/secret-box.ts';

export interface ConnectionSecrets {
  spSigningKey?: string;
  spEncryptionKey?: string;
  clientSecret?: string;
}

export function createSecretSeal(authSecret: string) {
  const key = deriveKey(authSecret, 'gatehouse sso connection secrets v1');
  return {
    seal(secrets: ConnectionSecrets, connectionId: string): string {
      return sealSecret(JSON.stringify(secrets), key, connectionId);
    },
    /** Throws SecretBoxError when the box does not open (a changed AUTH_SECRET, a tampered row). */
    open(box: string | null, connectionId: string): ConnectionSecrets {
      return box === null ? {} : (JSON.parse(openSecret(box, key, connectionId)) as ConnectionSecrets);
    },
  };
}

export type SecretSeal = ReturnType<typeof createSecretSeal>;
