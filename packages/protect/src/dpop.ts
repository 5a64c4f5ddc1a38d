/**
 * DPoP (RFC 9449) at the resource server: a token bound to a key (its `cnf.jkt`) counts only when
 * presented as `Authorization: DPoP <token>` with a fresh proof of that key in the `DPoP` header:
 * a JWT of `typ` `dpop+jwt`, signed by the public key in its own header (an asymmetric algorithm),
 * for this request's method (`htm`) and URL (`htu`, without query and fragment), made just now
 * (`iat`), never seen before (`jti`), and naming the token (`ath`, its SHA-256). A bound token sent
 * as a Bearer token, or a proof that fails any of these, is no credential: a stolen token is of no
 * use without the key. jose verifies the signature and computes the thumbprint.
 */
import { base64url, calculateJwkThumbprint, EmbeddedJWK, jwtVerify } from 'jose';
import { CLOCK_TOLERANCE_SECONDS } from './contract.ts';

export interface DpopOptions {
  /** This app's public origin, what clients put in `htu` (`https://api.example.com`). Default: the origin of the resource or of `audience`. */
  origin?: string;
  /** How old a proof may be, seconds. Default 60. */
  maxAgeSeconds?: number;
}

/** The algorithms a proof may use (what Gatehouse's OpenID Provider accepts for DPoP, and more). */
export const DPOP_ALGORITHMS = ['ES256', 'ES384', 'EdDSA', 'Ed25519', 'PS256', 'RS256'] as const;

/** `Authorization: DPoP <token>`: the token, undefined for another scheme, null when malformed. */
export function readDpopToken(header: string | null | undefined): string | null | undefined {
  if (header === undefined || header === null || !/^DPoP[ ]/i.test(header)) return undefined;
  const match = /^DPoP[ ]+([A-Za-z0-9._~+/-]+=*)\s*$/i.exec(header);
  return match ? match[1]! : null;
}

/** Proofs seen within their window, so that each is accepted once (per process; the window is short). */
const MAX_REMEMBERED_PROOFS = 100_000;

export interface DpopVerifier {
  /** Whether `proof` proves possession of the key `jkt` for this request and token. */
  verify(input: { proof: string | null | undefined; jkt: string; token: string; method: string; rawPath: string }): Promise<boolean>;
}

export function createDpopVerifier(options: DpopOptions, fallbackOrigin: string | null): DpopVerifier {
  const origin = options.origin === undefined ? fallbackOrigin : new URL(options.origin).origin;
  const maxAgeSeconds = options.maxAgeSeconds ?? 60;
  const seen = new Map<string, number>();

  function remember(key: string, untilMs: number): boolean {
    const now = Date.now();
    if ((seen.get(key) ?? 0) > now) return false;
    if (seen.size >= MAX_REMEMBERED_PROOFS) {
      for (const [old, until] of seen) if (until <= now) seen.delete(old);
      // Still full of live proofs: refuse rather than forget one that could then be replayed.
      if (seen.size >= MAX_REMEMBERED_PROOFS) return false;
    }
    seen.set(key, untilMs);
    return true;
  }

  return {
    async verify({ proof, jkt, token, method, rawPath }) {
      // Without a known origin, `htu` cannot be checked: a bound token is then refused.
      if (typeof proof !== 'string' || proof.length > 8_192 || origin === null) return false;
      let verified;
      try {
        verified = await jwtVerify(proof, EmbeddedJWK, { typ: 'dpop+jwt', algorithms: [...DPOP_ALGORITHMS] });
      } catch {
        return false;
      }
      const { payload, protectedHeader } = verified;
      const now = Math.floor(Date.now() / 1000);
      const { htm, htu, iat, jti, ath } = payload as Record<string, unknown>;
      if (typeof iat !== 'number' || iat > now + CLOCK_TOLERANCE_SECONDS || iat < now - maxAgeSeconds - CLOCK_TOLERANCE_SECONDS) return false;
      if (typeof jti !== 'string' || jti === '' || jti.length > 256) return false;
      if (htm !== method.toUpperCase()) return false;
      if (typeof htu !== 'string' || !sameTarget(htu, `${origin}${rawPath.split('?')[0]}`)) return false;
      if (ath !== base64url.encode(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(token))))) return false;
      if ((await calculateJwkThumbprint(protectedHeader.jwk!, 'sha256')) !== jkt) return false;
      return remember(`${jkt}:${jti}`, (iat + maxAgeSeconds + 2 * CLOCK_TOLERANCE_SECONDS) * 1000);
    },
  };
}

/** RFC 9449 §4.3: `htu` and the request's URL, each without query and fragment, compared after normalisation. */
function sameTarget(htu: string, expected: string): boolean {
  try {
    const a = new URL(htu);
    const b = new URL(expected);
    return a.origin === b.origin && a.pathname === b.pathname;
  } catch {
    return false;
  }
}
