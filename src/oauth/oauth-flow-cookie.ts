/**
 * The state of one authorization in progress, kept in the browser that started it (RFC 9700
 * §4.7.1: `state`, the PKCE verifier and the OIDC `nonce` are bound to that user agent). The cookie
 * is a JWE (`dir`, A256GCM, with `jose`) under a key derived from AUTH_SECRET: the browser can
 * neither read the PKCE verifier nor change what it asks for (another provider, another user to
 * link to, another callback), and it expires on its own. It lives 10 minutes and is cleared by the
 * callback, whatever the outcome, so a callback cannot be replayed with it.
 */
import { EncryptJWT, jwtDecrypt } from 'jose';
import { deriveKey } from '../lib/derive-key.ts';

export const FLOW_TTL_SECONDS = 10 * 60;

export interface OAuthFlow {
  /** The provider the authorization was sent to; a callback for another one is refused (mix-up). */
  provider: string;
  state: string;
  codeVerifier: string;
  /** OpenID Connect only. */
  nonce: string | null;
  /** Where to go afterwards: a path of ours or a TRUSTED_ORIGINS URL, already checked (and checked again at the callback). */
  callbackUrl: string;
  /** Set when a signed-in user links the identity to their account instead of signing in. */
  linkUserId: string | null;
}

export interface FlowCookieSeal {
  seal(flow: OAuthFlow, nowMs: number): Promise<string>;
  /** The flow, or null when the value is missing, altered, expired or not ours. */
  open(value: string | undefined, nowMs: number): Promise<OAuthFlow | null>;
}

const MAX_COOKIE_LENGTH = 4096;

export function createFlowCookieSeal(authSecret: string): FlowCookieSeal {
  const key = new Uint8Array(deriveKey(authSecret, 'gatehouse oauth flow cookie v1'));
  return {
    async seal(flow, nowMs) {
      const nowSeconds = Math.floor(nowMs / 1000);
      return new EncryptJWT({ ...flow })
        .setProtectedHeader({ alg: 'dir', enc: 'A256GCM' })
        .setIssuedAt(nowSeconds)
        .setExpirationTime(nowSeconds + FLOW_TTL_SECONDS)
        .encrypt(key);
    },
    async open(value, nowMs) {
      if (value === undefined || value.length === 0 || value.length > MAX_COOKIE_LENGTH) return null;
      try {
        const { payload } = await jwtDecrypt(value, key, {
          currentDate: new Date(nowMs),
          keyManagementAlgorithms: ['dir'],
          contentEncryptionAlgorithms: ['A256GCM'],
        });
        return toFlow(payload);
      } catch {
        return null;
      }
    },
  };
}

function toFlow(payload: Record<string, unknown>): OAuthFlow | null {
  const { provider, state, codeVerifier, nonce, callbackUrl, linkUserId } = payload;
  if (typeof provider !== 'string' || typeof state !== 'string' || typeof codeVerifier !== 'string' || typeof callbackUrl !== 'string') return null;
  if (nonce !== null && typeof nonce !== 'string') return null;
  if (linkUserId !== null && typeof linkUserId !== 'string') return null;
  return { provider, state, codeVerifier, nonce, callbackUrl, linkUserId };
}
