/**
 * Access tokens: JWTs (RFC 9068 profile, `typ: at+jwt`) signed with the current key. Claims are
 * identifiers and roles only: no e-mail or other personal data, since tokens are readable by anyone
 * who holds them.
 */
import { SignJWT } from 'jose';
import { randomId } from '../lib/random.ts';
import { SIGNING_ALGORITHM, type SigningKey } from './signing-keys.ts';

export const ACCESS_TOKEN_TYPE = 'at+jwt';

export interface AccessTokenClaims {
  userId: string;
  sessionId: string;
  roles: readonly string[];
}

export async function signAccessToken(
  claims: AccessTokenClaims,
  options: { key: SigningKey; issuer: string; audience: string; issuedAtMs: number; ttlSeconds: number },
): Promise<{ token: string; expiresAt: number }> {
  const issuedAt = Math.floor(options.issuedAtMs / 1000);
  const expiresAtSeconds = issuedAt + options.ttlSeconds;
  const token = await new SignJWT({ sid: claims.sessionId, roles: [...claims.roles] })
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
