/**
 * Access tokens: JWTs (RFC 9068 profile, `typ: at+jwt`) signed with the current key. Claims are
 * identifiers and roles only: no e-mail or other personal data, since tokens are readable by anyone
 * who holds them.
 */
import { SignJWT, decodeProtectedHeader, jwtVerify } from 'jose';
import { randomId } from '../lib/random.ts';
import type { Clock } from '../lib/clock.ts';
import { SIGNING_ALGORITHM, type SigningKey, type SigningKeys } from './signing-keys.ts';

export const ACCESS_TOKEN_TYPE = 'at+jwt';
/** Our tokens are well under 1 KiB; anything far larger is refused before any parsing. */
const MAX_TOKEN_LENGTH = 4096;
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
/** Header parameters that point at keys elsewhere: a token carrying one is refused outright. */
const FORBIDDEN_HEADERS = ['jku', 'x5u', 'jwk', 'x5c', 'x5t', 'x5t#S256'] as const;
// Shared with gatehouse-protect, which must accept exactly what the service accepts.
export { CLOCK_TOLERANCE_SECONDS } from '../../packages/protect/src/contract.ts';
import { CLOCK_TOLERANCE_SECONDS } from '../../packages/protect/src/contract.ts';

export interface AccessTokenClaims {
  userId: string;
  sessionId: string;
  roles: readonly string[];
  /** `amr` (RFC 8176): how the user proved who they are in this session; empty when not known. */
  amr: readonly string[];
  /** `auth_time`, in epoch ms (whole seconds in the token): when they last did. */
  authTime: number;
}

/** Claims every token carries, which no module may set (modules' claims: session-claims.ts). */
export const RESERVED_CLAIMS: ReadonlySet<string> = new Set(['iss', 'sub', 'aud', 'exp', 'nbf', 'iat', 'jti', 'sid', 'roles', 'amr', 'auth_time', 'typ', 'kid', 'alg']);


export interface VerifiedAccessToken extends AccessTokenClaims {
  /** Epoch ms. */
  expiresAt: number;
  /** The claims modules added (session-claims.ts): every claim that is not reserved. */
  moduleClaims: Readonly<Record<string, unknown>>;
}

/** The claims of a verified payload that modules set: all but the reserved ones. */
function moduleClaimsOf(payload: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>> {
  return Object.freeze(Object.fromEntries(Object.entries(payload).filter(([name]) => !RESERVED_CLAIMS.has(name))));
}

export async function signAccessToken(
  claims: AccessTokenClaims,
  options: { key: SigningKey; issuer: string; audience: string; issuedAtMs: number; ttlSeconds: number; extraClaims?: Readonly<Record<string, unknown>> },
): Promise<{ token: string; expiresAt: number }> {
  const issuedAt = Math.floor(options.issuedAtMs / 1000);
  const expiresAtSeconds = issuedAt + options.ttlSeconds;
  const extra = options.extraClaims ?? {};
  const reserved = Object.keys(extra).filter((name) => RESERVED_CLAIMS.has(name));
  if (reserved.length > 0) throw new Error(`a module may not set the access token claim(s) ${reserved.join(', ')}`);
  const token = await new SignJWT({ ...extra, sid: claims.sessionId, roles: [...claims.roles], amr: [...claims.amr], auth_time: Math.floor(claims.authTime / 1000) })
    .setProtectedHeader({ alg: SIGNING_ALGORITHM, kid: options.key.kid, typ: ACCESS_TOKEN_TYPE })
    .setIssuer(options.issuer)
    .setAudience(options.audience)
    .setSubject(claims.userId)
    .setJti(randomId())
    .setIssuedAt(issuedAt)
    .setExpirationTime(expiresAtSeconds)
    .sign(options.key.privateKey);
  return { token, expiresAt: expiresAtSeconds * 1000 };
}

export type AccessTokenVerifier = (token: string) => Promise<VerifiedAccessToken | null>;

/**
 * Verifies our access tokens: EdDSA only, a key from our own set chosen by `kid` (never fetched,
 * never taken from the token), `typ`, `iss`, `aud`, `exp`, `nbf`. Any failure is `null`, never a
 * throw. Verified tokens are remembered (bounded, until they expire) so a hot path does not repeat
 * the signature check; revocation is checked by the caller on every use, cached or not.
 */
export function createAccessTokenVerifier(options: {
  keys: SigningKeys;
  issuer: string;
  audience: string;
  clock: Clock;
  maxCachedTokens?: number;
}): AccessTokenVerifier {
  const { keys, issuer, audience, clock } = options;
  const maxCachedTokens = options.maxCachedTokens ?? 10_000;
  const cache = new Map<string, VerifiedAccessToken>();

  return async (token) => {
    if (typeof token !== 'string' || token.length > MAX_TOKEN_LENGTH) return null;
    const now = clock();
    // Only verified tokens are remembered, so a hit needs no shape check.
    const cached = cache.get(token);
    if (cached !== undefined) {
      // The same leeway as the signature check below, or answers would flip between the two.
      if (cached.expiresAt + CLOCK_TOLERANCE_SECONDS * 1000 > now) return cached;
      cache.delete(token);
      return null;
    }
    if (!COMPACT_JWS.test(token)) return null;

    let header;
    try {
      header = decodeProtectedHeader(token);
    } catch {
      return null;
    }
    if (header.alg !== SIGNING_ALGORITHM || header.typ !== ACCESS_TOKEN_TYPE || typeof header.kid !== 'string') return null;
    if (FORBIDDEN_HEADERS.some((name) => name in header)) return null;
    let key = keys.verificationKey(header.kid);
    if (key === undefined) {
      // Another instance may have created or rotated a key since we loaded ours.
      await keys.reloadForUnknownKid();
      key = keys.verificationKey(header.kid);
      if (key === undefined) return null;
    }

    let payload;
    try {
      ({ payload } = await jwtVerify(token, key, {
        algorithms: [SIGNING_ALGORITHM],
        typ: ACCESS_TOKEN_TYPE,
        issuer,
        audience,
        currentDate: new Date(now),
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        requiredClaims: ['sub', 'sid', 'jti', 'iat', 'exp'],
      }));
    } catch {
      return null;
    }
    const { sub, sid, roles, exp, iat } = payload;
    if (typeof sub !== 'string' || typeof sid !== 'string' || typeof exp !== 'number') return null;
    if (!Array.isArray(roles) || !roles.every((role) => typeof role === 'string')) return null;
    // Tokens issued before `amr` and `auth_time` were: no method known, proved when issued.
    const amr = payload.amr ?? [];
    const authTime = payload.auth_time ?? iat;
    if (!Array.isArray(amr) || !amr.every((method) => typeof method === 'string') || typeof authTime !== 'number') return null;

    const verified: VerifiedAccessToken = {
      userId: sub,
      sessionId: sid,
      roles: Object.freeze([...roles]),
      amr: Object.freeze([...amr]),
      authTime: authTime * 1000,
      expiresAt: exp * 1000,
      moduleClaims: moduleClaimsOf(payload),
    };
    if (cache.size >= maxCachedTokens) cache.delete(cache.keys().next().value!);
    cache.set(token, Object.freeze(verified));
    return verified;
  };
}
