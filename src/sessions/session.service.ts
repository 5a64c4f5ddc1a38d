/**
 * Sessions: every sign-in writes a row (who, when, until when, from where) and gets an access
 * token plus a refresh token. Two strategies decide how an access token is checked:
 * - `database`: the row is read on every request, so sign-out, expiry and a disabled user take
 *   effect at once; roles are read fresh.
 * - `jwt`: the token alone is trusted until it expires (short-lived), except for sessions on the
 *   revocation list, which every instance mirrors in memory.
 * Both rotate refresh tokens and detect the reuse of a rotated one. Ending sessions (sign-out,
 * one or all of a user's, a refresh token's) is in session-ending.ts.
 */
import type { Config } from '../config.ts';
import type { SessionStrategy } from './sessions.config.ts';
import type { Db } from '../storage/database.ts';
import type { SessionRow } from '../storage/schema.ts';
import type { Clock } from '../lib/clock.ts';
import { randomId, randomSecret } from '../lib/random.ts';
import type { UserService } from '../users/user.service.ts';
import type { AuditService } from '../audit/audit.service.ts';
import { createAccessTokenVerifier, signAccessToken } from './access-token.ts';
import type { TokenClaimsRead } from './session-claims.ts';
import type { SessionChange, SessionCheckCache } from './session-check-cache.ts';
import { deriveRefreshTokenKey, isGenuineRefreshToken, makeRefreshToken, parseRefreshToken } from './refresh-token.ts';
import type { RevocationList } from './revocation-list.ts';
import type { SigningKeys } from './signing-keys.ts';
import * as store from './session.store.ts';
import { authenticationOf, toAmr, toSessionView, truncate } from './session-views.ts';
import { createSessionEnding } from './session-ending.ts';

const MAX_USER_AGENT_LENGTH = 512;

export type { AuthContext, ClientInfo, RefreshResult, SessionProfileView, SessionSummary, SessionView, StartedSession } from './session.types.ts';
import type { AuthContext, ClientInfo, RefreshResult, SessionProfileView, SessionSummary, SessionView, StartedSession } from './session.types.ts';

const UNKNOWN_CLIENT: ClientInfo = { ip: null, userAgent: null };

/** How long the jwt strategy's session endpoint may show a remembered e-mail, name and expiry. */
export const PROFILE_TTL_MS = 5_000;
const MAX_PROFILES = 10_000;

interface SessionProfile extends SessionProfileView {
  /** Epoch ms: read again after this. */
  until: number;
}

export type SessionService = ReturnType<typeof createSessionService>;

export interface SessionServiceDeps {
  db: Db;
  /** PostgreSQL: a new session's insert locks its user's row (see `insertSessionIfCurrent`). */
  isPostgres: boolean;
  keys: SigningKeys;
  users: UserService;
  revocations: RevocationList;
  audit: AuditService;
  clock: Clock;
  strategy: SessionStrategy;
  authSecret: string;
  tokens: Config['tokens'];
  sessions: Config['sessions'];
  /**
   * The modules' token claims (session-claims.ts), folded into the session reads once every module
   * is built (the modules declaring them are built after sessions).
   */
  claims?: () => readonly TokenClaimsRead<object>[];
  /**
   * SESSION_CHECK_CACHE: the database strategy's kept check reads, and how a change is announced
   * to every instance (session-check-cache.ts); absent, every check reads storage.
   */
  checkCache?: { cache: SessionCheckCache; announce(db: Db, change: SessionChange): Promise<void> };
}

export function createSessionService(deps: SessionServiceDeps) {
  const { db, isPostgres, keys, users, revocations, audit, clock, strategy, tokens, sessions: limits } = deps;
  const refreshKey = deriveRefreshTokenKey(deps.authSecret);
  const verifyAccessToken = createAccessTokenVerifier({ keys, issuer: tokens.issuer, audience: tokens.audience, clock });
  const idleMs = limits.idleTimeoutSeconds * 1000;
  const accessTokenTtlSeconds = tokens.accessTokenTtlSeconds;

  let reads: store.SessionReads | undefined;
  /** The session reads with every module's claims in them: composed at first use, when every module is built. */
  const sessionReads = (): store.SessionReads => (reads ??= store.createSessionReads(deps.claims?.() ?? [], isPostgres));

  function isExpired(row: Pick<SessionRow, 'expires_at' | 'last_seen_at'>, now: number): boolean {
    return row.expires_at <= now || row.last_seen_at + idleMs <= now;
  }

  const { checkCache } = deps;
  /** Tells every instance's cache (this one's at once) that `change` happened, in `within`'s transaction. */
  async function announce(change: SessionChange, within: Db = db): Promise<void> {
    if (checkCache === undefined) return;
    checkCache.cache.apply(change);
    await checkCache.announce(within, change);
  }

  /**
   * A session's check read: kept (SESSION_CHECK_CACHE) when fresh and still live, else read now
   * (one query) and kept unless a change was announced meanwhile. A kept read that says ended is
   * read again: another instance's use may have kept it alive.
   */
  async function readForCheck(sessionId: string, now: number): Promise<store.SessionCheckRow | undefined> {
    if (checkCache === undefined) return sessionReads().findSessionForCheck(db, sessionId);
    const kept = checkCache.cache.get(sessionId, now);
    if (kept !== undefined && kept.revoked_at === null && !isExpired(kept, now)) return kept;
    const epoch = checkCache.cache.epoch();
    const row = await sessionReads().findSessionForCheck(db, sessionId);
    if (row !== undefined) checkCache.cache.set(sessionId, row, epoch, now);
    return row;
  }

  /**
   * The session with its user's profile and roles, when it belongs to `userId` and is live (and, in
   * the database strategy, its user enabled: the jwt strategy learns of that at the next refresh).
   * One query, which reads every module's claims too.
   */
  async function findLiveSession(
    sessionId: string,
    userId: string,
    now: number,
    options: { isUserChecked: boolean; mayBeKept?: boolean } = { isUserChecked: strategy === 'database' },
  ): Promise<store.SessionCheckRow | null> {
    const row = options.mayBeKept === true ? await readForCheck(sessionId, now) : await sessionReads().findSessionForCheck(db, sessionId);
    if (row === undefined || row.user_id !== userId || row.revoked_at !== null || isExpired(row, now)) return null;
    return options.isUserChecked && row.disabled_at !== null ? null : row;
  }

  /** jwt strategy: what the session endpoint shows beyond the token, by session id (see describeSession). */
  const profiles = new Map<string, SessionProfile>();

  /**
   * Signs an access token that never outlives its session, with every module's claims: `claims`
   * when the caller read them with the session already, else read now (one query, none when no
   * module declares any).
   */
  async function issueAccessToken(
    userId: string,
    sessionId: string,
    roles: readonly string[],
    authentication: { amr: readonly string[]; authTime: number },
    now: number,
    sessionExpiresAt: number,
    claims?: Readonly<Record<string, unknown>>,
  ) {
    const ttlSeconds = Math.max(1, Math.min(accessTokenTtlSeconds, Math.floor((sessionExpiresAt - now) / 1000)));
    const subject = { userId, sessionId, roles, ...authentication };
    const extraClaims = claims ?? (await sessionReads().findSessionClaims(db, sessionId));
    return signAccessToken(subject, { key: keys.current(), issuer: tokens.issuer, audience: tokens.audience, issuedAtMs: now, ttlSeconds, extraClaims });
  }

  /** The session row a refresh token belongs to, when the token is one we issued for it. */
  async function findSessionOfRefreshToken(refreshToken: string) {
    const parsed = parseRefreshToken(refreshToken);
    if (parsed === null) return null;
    const row = await store.findSessionById(db, parsed.sessionId);
    if (row === undefined || !isGenuineRefreshToken(refreshKey, parsed, row.refresh_seed)) return null;
    return { parsed, row };
  }

  const { revoke, ...endings } = createSessionEnding({
    db,
    revocations,
    audit,
    clock,
    strategy,
    accessTokenTtlSeconds,
    findSessionOfRefreshToken,
    announce: (within, userId) => announce({ user: userId }, within),
    onEnded: (ids) => {
      for (const id of ids) profiles.delete(id);
    },
  });

  return {
    /**
     * Starts a session for a sign-in that has just verified the account; null, and nothing
     * written, when the account is no longer as the sign-in found it: disabled meanwhile, or (with
     * `verifiedPasswordHash`, the hash the password was checked against) its password changed,
     * reset or locked. A sign-in racing such a change cannot outlive the change's "every session
     * ended".
     */
    async startSession(
      input: {
        userId: string;
        roles: readonly string[];
        verifiedPasswordHash: string | null;
        /** How the user proved who they are (RFC 8176 values): the session's `amr`. */
        amr: readonly string[];
        /** Epoch ms: the session ends then, or at SESSION_MAX_AGE if sooner (an administrator's impersonation: its time limit). */
        expiresAt?: number;
        /**
         * Records the start (the audit event `signin.success`, which webhooks subscribe to) in the
         * transaction that writes the session: a crash can never leave a session whose event is lost.
         */
        onStarted?: (db: Db, sessionId: string) => Promise<void>;
      } & ClientInfo,
    ): Promise<StartedSession | null> {
      const now = clock();
      const sessionId = randomId();
      const seed = randomSecret();
      const sessionExpiresAt = Math.min(now + limits.maxAgeSeconds * 1000, input.expiresAt ?? Number.POSITIVE_INFINITY);
      const insert = (target: Db) => store.insertSessionIfCurrent(
        target,
        isPostgres,
        {
          id: sessionId,
          user_id: input.userId,
          refresh_seed: seed,
          created_at: now,
          expires_at: sessionExpiresAt,
          ip: input.ip,
          user_agent: input.userAgent === null ? null : truncate(input.userAgent, MAX_USER_AGENT_LENGTH),
          amr: input.amr.join(','),
        },
        input.verifiedPasswordHash,
      );
      const { onStarted } = input;
      const isWritten =
        onStarted === undefined
          ? await insert(db)
          : await db.transaction().execute(async (trx) => {
              const written = await insert(trx);
              if (written) await onStarted(trx, sessionId);
              return written;
            });
      if (!isWritten) return null;
      const { token, expiresAt } = await issueAccessToken(input.userId, sessionId, input.roles, { amr: input.amr, authTime: now }, now, sessionExpiresAt);
      return {
        sessionId,
        accessToken: token,
        accessTokenExpiresAt: expiresAt,
        refreshToken: makeRefreshToken(refreshKey, sessionId, seed, 0),
        sessionExpiresAt,
      };
    },

    /**
     * A step-up: the user proved themselves again in this session with `amr` (a second factor,
     * say). The session's methods become those it had plus these, its `auth_time` now; returns a
     * new access token carrying them (the jwt strategy has no other way to learn them), or null
     * when the session has ended.
     */
    async reauthenticate(auth: AuthContext, amr: readonly string[]): Promise<{ accessToken: string; accessTokenExpiresAt: number } | null> {
      const now = clock();
      const row = await findLiveSession(auth.sessionId, auth.userId, now, { isUserChecked: true });
      if (row === null) return null;
      const methods = [...new Set([...toAmr(row.amr), ...amr])];
      if (!(await store.recordReauthentication(db, auth.sessionId, methods.join(','), now))) return null;
      await announce({ session: auth.sessionId });
      const { token, expiresAt } = await issueAccessToken(auth.userId, auth.sessionId, row.roles, { amr: methods, authTime: Math.floor(now / 1000) * 1000 }, now, row.expires_at, row.moduleClaims);
      return { accessToken: token, accessTokenExpiresAt: expiresAt };
    },

    /** Checks an access token by the configured strategy; null when it does not grant access. */
    async authenticate(token: string): Promise<AuthContext | null> {
      const claims = await verifyAccessToken(token);
      if (claims === null) return null;
      const base = { userId: claims.userId, sessionId: claims.sessionId, amr: claims.amr, authTime: claims.authTime, accessTokenExpiresAt: claims.expiresAt };
      if (strategy === 'jwt') {
        return revocations.isRevoked(claims.sessionId) ? null : { ...base, roles: claims.roles, moduleClaims: claims.moduleClaims };
      }

      const now = clock();
      const row = await findLiveSession(claims.sessionId, claims.userId, now, { isUserChecked: true, mayBeKept: true });
      if (row === null) return null;
      const touchMs = limits.touchIntervalSeconds * 1000;
      if (row.last_seen_at + touchMs <= now) {
        await store.touchSession(db, claims.sessionId, now, now - touchMs);
        checkCache?.cache.touch(claims.sessionId, now);
      }
      // The stored proof, not the token's: a step-up since the token was issued counts at once.
      return { ...base, ...authenticationOf(row), roles: row.roles, profile: { email: row.email, name: row.name, expiresAt: row.expires_at }, moduleClaims: row.moduleClaims };
    },

    /**
     * `auth` with the roles its user holds now, for decisions that grant a role's powers (the
     * admin area): null when the session has ended or the user is disabled. The database strategy
     * read them with the check already; the jwt strategy's token may list a role taken away since
     * it was issued, so its session and user are read here (one query; on SQLite kept while
     * nothing was committed since: SESSION_CHECK_CACHE).
     */
    async withCurrentRoles<A extends AuthContext>(auth: A): Promise<A | null> {
      if (strategy === 'database' && auth.profile !== undefined) return auth;
      const row = await findLiveSession(auth.sessionId, auth.userId, clock(), { isUserChecked: true, mayBeKept: true });
      // And how and when the user last proved themselves, as stored: a step-up counts at once.
      return row && { ...auth, ...authenticationOf(row), roles: row.roles, profile: { email: row.email, name: row.name, expiresAt: row.expires_at } };
    },

    /**
     * The user and session behind an authenticated request, as `GET /api/auth/session` shows them.
     * The database strategy reads them fresh (with the check itself: `auth.profile`, `auth.moduleClaims`). The jwt strategy takes the roles from the token and
     * remembers the rest (e-mail, name, session expiry) for PROFILE_TTL_MS per session: revocation
     * is still checked on every request (by `authenticate`), but a renamed user may see the old
     * name for that long.
     */
    async describeSession(auth: AuthContext): Promise<SessionView | null> {
      const now = clock();
      if (strategy === 'database') {
        if (auth.profile !== undefined && auth.moduleClaims !== undefined) return toSessionView(auth, auth.roles, auth.profile, auth.moduleClaims);
        const row = await findLiveSession(auth.sessionId, auth.userId, now, { isUserChecked: true, mayBeKept: true });
        return row && toSessionView(auth, row.roles, { email: row.email, name: row.name, expiresAt: row.expires_at }, row.moduleClaims);
      }
      let profile = profiles.get(auth.sessionId);
      if (profile === undefined || profile.until <= now) {
        const row = await findLiveSession(auth.sessionId, auth.userId, now);
        if (row === null) {
          profiles.delete(auth.sessionId);
          return null;
        }
        profile = { email: row.email, name: row.name, expiresAt: row.expires_at, until: now + PROFILE_TTL_MS };
        if (profiles.size >= MAX_PROFILES) profiles.delete(profiles.keys().next().value!);
        profiles.set(auth.sessionId, profile);
      }
      return profile.expiresAt <= now ? null : toSessionView(auth, auth.roles, profile, auth.moduleClaims ?? {});
    },

    /**
     * A new access token for a live session, with what it holds now (roles, how and when the
     * user proved themselves, every module's claims): after a change a token must carry at once
     * (an organization made active, say), since the jwt strategy learns nothing else until the
     * next refresh. Null when the session has ended or its user is disabled.
     */
    async reissueAccessToken(auth: Pick<AuthContext, 'userId' | 'sessionId'>): Promise<{ accessToken: string; accessTokenExpiresAt: number } | null> {
      const now = clock();
      // What a reissue is for: the session's claims changed (an organization made active).
      await announce({ session: auth.sessionId });
      const row = await findLiveSession(auth.sessionId, auth.userId, now, { isUserChecked: true });
      if (row === null) return null;
      const { token, expiresAt } = await issueAccessToken(auth.userId, auth.sessionId, row.roles, authenticationOf(row), now, row.expires_at, row.moduleClaims);
      return { accessToken: token, accessTokenExpiresAt: expiresAt };
    },

    /**
     * Exchanges a refresh token for a new access token and the next refresh token. The presented
     * one is spent: presenting it again within the grace period (concurrent tabs) returns the same
     * successor; later, or any older generation at any time, ends the session (`TOKEN_REUSED`).
     * `client` is who presented it, for the audit log.
     */
    async refresh(refreshToken: string, client: ClientInfo = UNKNOWN_CLIENT): Promise<RefreshResult> {
      const found = await findSessionOfRefreshToken(refreshToken);
      // A token we never issued proves nothing: refuse without revoking, or anyone who learns a
      // session id (it is in every access token) could end that session.
      if (found === null) return { ok: false, reason: 'INVALID_TOKEN' };
      const { parsed, row } = found;
      const now = clock();
      if (row.revoked_at !== null || isExpired(row, now) || parsed.generation > row.refresh_generation) {
        return { ok: false, reason: 'INVALID_TOKEN' };
      }

      let next = parsed.generation + 1;
      const advanced = parsed.generation === row.refresh_generation && (await store.advanceRefreshGeneration(db, row.id, parsed.generation, now));
      if (!advanced) {
        // Spent already (maybe a moment ago by a concurrent request): read the latest state.
        const latest = await store.findSessionById(db, row.id);
        if (latest === undefined || latest.revoked_at !== null) return { ok: false, reason: 'INVALID_TOKEN' };
        const isJustSpent =
          latest.refresh_generation === parsed.generation + 1 &&
          latest.refresh_rotated_at !== null &&
          now - latest.refresh_rotated_at <= limits.refreshReuseGraceSeconds * 1000;
        if (!isJustSpent) {
          await revoke({ userId: row.user_id, sessionId: row.id }, () => ({
            type: 'refresh.reuse_detected',
            userId: row.user_id,
            source: { actorUserId: null, ...client },
            reason: 'TOKEN_REUSED',
            details: { sessionId: row.id },
          }));
          return { ok: false, reason: 'TOKEN_REUSED' };
        }
        next = latest.refresh_generation;
      }

      const user = await users.findUserById(row.user_id);
      if (user === null || user.disabledAt !== null) {
        await revoke({ userId: row.user_id, sessionId: row.id }, (ended) =>
          ended.length === 0 || user === null
            ? null
            : { type: 'session.ended', userId: row.user_id, source: { actorUserId: null, ...client }, reason: 'ACCOUNT_DISABLED', details: { sessionId: row.id } },
        );
        return { ok: false, reason: 'INVALID_TOKEN' };
      }
      const { token, expiresAt } = await issueAccessToken(user.id, row.id, user.roles, authenticationOf(row), now, row.expires_at);
      return {
        ok: true,
        session: {
          sessionId: row.id,
          accessToken: token,
          accessTokenExpiresAt: expiresAt,
          refreshToken: makeRefreshToken(refreshKey, row.id, row.refresh_seed, next),
          sessionExpiresAt: row.expires_at,
        },
      };
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

    /** Signing out, ending one or all of a user's sessions, ending a refresh token's (session-ending.ts). */
    ...endings,
  };
}
