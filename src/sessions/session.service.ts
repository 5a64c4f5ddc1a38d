/**
 * Sessions: every sign-in writes one row (who, when, until when, from where) and gets an access
 * token plus a refresh token. The refresh token is `<session id>.<256-bit secret>`; only the
 * secret's SHA-256 is stored.
 */
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import { randomId, randomSecret, sha256Base64url } from '../lib/random.ts';
import { signAccessToken } from './access-token.ts';
import type { SigningKeys } from './signing-keys.ts';
import * as store from './session.store.ts';

const MAX_USER_AGENT_LENGTH = 512;

export interface StartedSession {
  sessionId: string;
  accessToken: string;
  /** Epoch ms. */
  accessTokenExpiresAt: number;
  refreshToken: string;
  /** Epoch ms: the absolute end of the session. */
  sessionExpiresAt: number;
}

export interface SessionServiceOptions {
  issuer: string;
  audience: string;
  accessTokenTtlSeconds: number;
  sessionMaxAgeSeconds: number;
}

export type SessionService = ReturnType<typeof createSessionService>;

export function createSessionService(deps: { db: Db; keys: SigningKeys; clock: Clock; options: SessionServiceOptions }) {
  const { db, keys, clock, options } = deps;

  return {
    async startSession(input: { userId: string; roles: readonly string[]; ip: string | null; userAgent: string | null }): Promise<StartedSession> {
      const now = clock();
      const sessionId = randomId();
      const secret = randomSecret();
      const sessionExpiresAt = now + options.sessionMaxAgeSeconds * 1000;
      await store.insertSession(db, {
        id: sessionId,
        user_id: input.userId,
        refresh_token_hash: sha256Base64url(secret),
        created_at: now,
        expires_at: sessionExpiresAt,
        last_seen_at: now,
        revoked_at: null,
        ip: input.ip,
        user_agent: input.userAgent?.slice(0, MAX_USER_AGENT_LENGTH) ?? null,
      });
      // The token never outlives its session.
      const ttlSeconds = Math.min(options.accessTokenTtlSeconds, options.sessionMaxAgeSeconds);
      const { token, expiresAt } = await signAccessToken(
        { userId: input.userId, sessionId, roles: input.roles },
        { key: keys.current(), issuer: options.issuer, audience: options.audience, issuedAtMs: now, ttlSeconds },
      );
      return { sessionId, accessToken: token, accessTokenExpiresAt: expiresAt, refreshToken: `${sessionId}.${secret}`, sessionExpiresAt };
    },
  };
}
