/**
 * Sessions: every sign-in writes a row (who, when, until when, from where) and gets an access
 * token plus a refresh token. Two strategies decide how an access token is checked:
 * - `database`: the row is read on every request, so sign-out, expiry and a disabled user take
 *   effect at once; roles are read fresh.
 * - `jwt`: the token alone is trusted until it expires (short-lived), except for sessions on the
 *   revocation list, which every instance mirrors in memory.
 * Both rotate refresh tokens and detect the reuse of a rotated one.
 */
import type { Config, SessionStrategy } from '../config.ts';
import type { Db } from '../storage/database.ts';
import type { SessionRow } from '../storage/schema.ts';
import type { Clock } from '../lib/clock.ts';
import { randomId, randomSecret, sha256Base64url } from '../lib/random.ts';
import type { UserService } from '../users/user.service.ts';
import { createAccessTokenVerifier, signAccessToken } from './access-token.ts';
import { deriveSuccessorKey, deriveSuccessorSecret, digestsEqual, formatRefreshToken, parseRefreshToken } from './refresh-token.ts';
import type { RevocationList } from './revocation-list.ts';
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

/** Who a valid access token speaks for. */
export interface AuthContext {
  userId: string;
  sessionId: string;
  roles: readonly string[];
  /** Epoch ms: when the presented access token expires. */
  accessTokenExpiresAt: number;
}

export interface SessionView {
  user: { id: string; email: string; name: string; roles: string[] };
  session: { id: string; expiresAt: number };
}

export interface SessionSummary {
  id: string;
  createdAt: number;
  lastSeenAt: number;
  expiresAt: number;
  ip: string | null;
  userAgent: string | null;
}

export type RefreshResult =
  | { ok: true; session: StartedSession }
  | { ok: false; reason: 'INVALID_TOKEN' | 'TOKEN_REUSED' };

export interface ClientInfo {
  ip: string | null;
  userAgent: string | null;
}

export type SessionService = ReturnType<typeof createSessionService>;

export interface SessionServiceDeps {
  db: Db;
  keys: SigningKeys;
  users: UserService;
  revocations: RevocationList;
  clock: Clock;
  strategy: SessionStrategy;
  authSecret: string;
  tokens: Config['tokens'];
  sessions: Config['sessions'];
}

export function createSessionService(deps: SessionServiceDeps) {
  const { db, keys, users, revocations, clock, strategy, tokens, sessions: limits } = deps;
  const successorKey = deriveSuccessorKey(deps.authSecret);
  const verifyAccessToken = createAccessTokenVerifier({ keys, issuer: tokens.issuer, audience: tokens.audience, clock });
  const idleMs = limits.idleTimeoutSeconds * 1000;
  // Access tokens never outlive their session.
  const accessTokenTtlSeconds = Math.min(tokens.accessTokenTtlSeconds, limits.maxAgeSeconds);

  function isExpired(row: Pick<SessionRow, 'expires_at' | 'last_seen_at'>, now: number): boolean {
    return row.expires_at <= now || row.last_seen_at + idleMs <= now;
  }

  async function issueAccessToken(userId: string, sessionId: string, roles: readonly string[], now: number) {
    return signAccessToken(
      { userId, sessionId, roles },
      { key: keys.current(), issuer: tokens.issuer, audience: tokens.audience, issuedAtMs: now, ttlSeconds: accessTokenTtlSeconds },
    );
  }

  /** Revokes in storage and in the revocation list, atomically; the mirror learns after commit. */
  async function revoke(filter: { userId: string; sessionId?: string; exceptSessionId?: string }): Promise<string[]> {
    const now = clock();
    // Every access token issued before now expires by then: the list entry is useless after.
    const listedUntil = now + accessTokenTtlSeconds * 1000;
    const ids = await db.transaction().execute(async (trx) => {
      const changed = await store.revokeSessions(trx, filter, now);
      for (const id of changed) await revocations.add(trx, id, listedUntil);
      return changed;
    });
    for (const id of ids) revocations.remember(id, listedUntil);
    return ids;
  }

  return {
    async startSession(input: { userId: string; roles: readonly string[] } & ClientInfo): Promise<StartedSession> {
      const now = clock();
      const sessionId = randomId();
      const secret = randomSecret();
      const sessionExpiresAt = now + limits.maxAgeSeconds * 1000;
      await store.insertSession(db, {
        id: sessionId,
        user_id: input.userId,
        refresh_token_hash: sha256Base64url(secret),
        previous_refresh_token_hash: null,
        refresh_rotated_at: null,
        created_at: now,
        expires_at: sessionExpiresAt,
        last_seen_at: now,
        revoked_at: null,
        ip: input.ip,
        user_agent: input.userAgent?.slice(0, MAX_USER_AGENT_LENGTH) ?? null,
      });
      const { token, expiresAt } = await issueAccessToken(input.userId, sessionId, input.roles, now);
      return {
        sessionId,
        accessToken: token,
        accessTokenExpiresAt: expiresAt,
        refreshToken: formatRefreshToken(sessionId, secret),
        sessionExpiresAt,
      };
    },

    /** Checks an access token by the configured strategy; null when it does not grant access. */
    async authenticate(token: string): Promise<AuthContext | null> {
      const claims = await verifyAccessToken(token);
      if (claims === null) return null;
      const base = { userId: claims.userId, sessionId: claims.sessionId, accessTokenExpiresAt: claims.expiresAt };
      if (strategy === 'jwt') {
        return revocations.isRevoked(claims.sessionId) ? null : { ...base, roles: claims.roles };
      }

      const now = clock();
      const row = await store.findSessionWithUserState(db, claims.sessionId);
      if (row === undefined || row.user_id !== claims.userId || row.revoked_at !== null || row.disabled_at !== null || isExpired(row, now)) {
        return null;
      }
      const touchMs = limits.touchIntervalSeconds * 1000;
      if (row.last_seen_at + touchMs <= now) await store.touchSession(db, claims.sessionId, now, now - touchMs);
      const user = await users.findUserById(claims.userId);
      return user === null ? null : { ...base, roles: user.roles };
    },

    /** The user and session behind an authenticated request, as `GET /api/auth/session` shows them. */
    async describeSession(auth: AuthContext): Promise<SessionView | null> {
      const [user, row] = await Promise.all([users.findUserById(auth.userId), store.findSessionById(db, auth.sessionId)]);
      if (user === null || row === undefined) return null;
      return {
        user: { id: user.id, email: user.email, name: user.name, roles: strategy === 'jwt' ? [...auth.roles] : user.roles },
        session: { id: row.id, expiresAt: row.expires_at },
      };
    },

    /**
     * Exchanges a refresh token for a new access token and the next refresh token. The presented
     * one dies; presenting it again after the grace period ends the session (`TOKEN_REUSED`).
     */
    async refresh(refreshToken: string): Promise<RefreshResult> {
      const parsed = parseRefreshToken(refreshToken);
      if (parsed === null) return { ok: false, reason: 'INVALID_TOKEN' };
      const { sessionId, secret } = parsed;
      const now = clock();
      const row = await store.findSessionById(db, sessionId);
      if (row === undefined) return { ok: false, reason: 'INVALID_TOKEN' };

      const presentedHash = sha256Base64url(secret);
      const isCurrent = digestsEqual(row.refresh_token_hash, presentedHash);
      const isPrevious = digestsEqual(row.previous_refresh_token_hash, presentedHash);
      // A secret that was never issued for this session proves nothing: refuse without revoking,
      // or anyone who learns a session id (it is in every access token) could end that session.
      if (!isCurrent && !isPrevious) return { ok: false, reason: 'INVALID_TOKEN' };
      if (row.revoked_at !== null || isExpired(row, now)) return { ok: false, reason: 'INVALID_TOKEN' };

      const successor = deriveSuccessorSecret(successorKey, sessionId, secret);
      const successorHash = sha256Base64url(successor);
      const rotated = isCurrent && (await store.rotateRefreshTokenHash(db, sessionId, presentedHash, successorHash, now));
      if (!rotated) {
        // The previous token (or the current one, rotated a moment ago by a concurrent request):
        // honoured within the grace period when it leads to the current token; otherwise reuse.
        const latest = isCurrent ? await store.findSessionById(db, sessionId) : row;
        const withinGrace =
          latest !== undefined &&
          latest.revoked_at === null &&
          latest.refresh_rotated_at !== null &&
          now - latest.refresh_rotated_at <= limits.refreshReuseGraceSeconds * 1000 &&
          digestsEqual(latest.refresh_token_hash, successorHash);
        if (!withinGrace) {
          await revoke({ userId: row.user_id, sessionId });
          return { ok: false, reason: 'TOKEN_REUSED' };
        }
      }

      const user = await users.findUserById(row.user_id);
      if (user === null || user.disabledAt !== null) {
        await revoke({ userId: row.user_id, sessionId });
        return { ok: false, reason: 'INVALID_TOKEN' };
      }
      const { token, expiresAt } = await issueAccessToken(user.id, sessionId, user.roles, now);
      return {
        ok: true,
        session: {
          sessionId,
          accessToken: token,
          accessTokenExpiresAt: expiresAt,
          refreshToken: formatRefreshToken(sessionId, successor),
          sessionExpiresAt: row.expires_at,
        },
      };
    },

    /** The session a refresh token names, if the token is genuine; used to sign out by cookie. */
    async findSessionByRefreshToken(refreshToken: string): Promise<{ sessionId: string; userId: string } | null> {
      const parsed = parseRefreshToken(refreshToken);
      if (parsed === null) return null;
      const row = await store.findSessionById(db, parsed.sessionId);
      if (row === undefined) return null;
      const hash = sha256Base64url(parsed.secret);
      const genuine = digestsEqual(row.refresh_token_hash, hash) || digestsEqual(row.previous_refresh_token_hash, hash);
      return genuine ? { sessionId: row.id, userId: row.user_id } : null;
    },

    async listSessions(userId: string): Promise<SessionSummary[]> {
      const now = clock();
      const rows = await store.findActiveSessionsByUser(db, userId, now, now - idleMs);
      return rows.map((row) => ({
        id: row.id,
        createdAt: row.created_at,
        lastSeenAt: row.last_seen_at,
        expiresAt: row.expires_at,
        ip: row.ip,
        userAgent: row.user_agent,
      }));
    },

    /** Ends one of the user's sessions; false when it is not theirs or already ended. */
    async endSession(userId: string, sessionId: string): Promise<boolean> {
      return (await revoke({ userId, sessionId })).length > 0;
    },

    /** Ends all of the user's sessions, or all but one; returns how many ended. */
    async endAllSessions(userId: string, options: { exceptSessionId?: string } = {}): Promise<number> {
      return (await revoke({ userId, ...options })).length;
    },
  };
}
