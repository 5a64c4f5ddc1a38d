/**
 * Ending sessions: signing out, ending one or all of a user's sessions, and the session a refresh
 * token belongs to; each in one transaction with its revocation-list entry and its audit event.
 * Part of the session service (session.service.ts), which also ends sessions on refresh-token reuse.
 */
import type { SessionStrategy } from './sessions.config.ts';
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import { SYSTEM_SOURCE, type AuditEventInput, type AuditService, type AuditSource } from '../audit/audit.service.ts';
import { CLOCK_TOLERANCE_SECONDS } from './access-token.ts';
import type { RevocationList } from './revocation-list.ts';
import * as store from './session.store.ts';

export interface SessionEndingDeps {
  db: Db;
  revocations: RevocationList;
  audit: AuditService;
  clock: Clock;
  strategy: SessionStrategy;
  accessTokenTtlSeconds: number;
  /** The session row a refresh token belongs to, when the token is one we issued for it. */
  findSessionOfRefreshToken(refreshToken: string): Promise<{ row: { id: string; user_id: string } } | null>;
  /** Announces, in the ending's transaction, that sessions of `userId` ended (SESSION_CHECK_CACHE: every instance forgets them). */
  announce(within: Db, userId: string): Promise<void>;
  /** Told of the sessions that just ended (before the jwt strategy's in-memory list learns of them). */
  onEnded(sessionIds: readonly string[]): void;
}

export function createSessionEnding(deps: SessionEndingDeps) {
  const { db, revocations, audit, clock, strategy, accessTokenTtlSeconds } = deps;
  /** How long after `exp` a token may still be accepted (clock tolerance), plus a margin. */
  const acceptedPastExpiryMs = (CLOCK_TOLERANCE_SECONDS + 1) * 1000;

  /**
   * Revokes in storage and on the revocation list, in one transaction. The list entry outlives
   * every access token issued before now (including the verifier's clock tolerance). Only the jwt
   * strategy reads the list, but both write it: switching strategies at a restart must not bring
   * a signed-out session's long-lived token back to life. The audit event that `describe` makes
   * of the ended ids (null: none) is written in the same transaction.
   *
   * With `within` (a caller's transaction), all of it is written there instead. This instance's
   * in-memory list learns of the ending at once, before the caller commits: should the caller roll
   * back, those sessions are refused here until their tokens expire, which errs on the safe side.
   */
  async function revoke(
    filter: { userId: string; sessionId?: string; exceptSessionId?: string },
    describe: (endedIds: string[]) => AuditEventInput | null,
    within?: Db,
  ): Promise<string[]> {
    const now = clock();
    const listedUntil = now + accessTokenTtlSeconds * 1000 + acceptedPastExpiryMs;
    const write = async (trx: Db) => {
      const changed = await store.revokeSessions(trx, filter, now);
      if (changed.length > 0) await deps.announce(trx, filter.userId);
      for (const id of changed) await revocations.add(trx, id, listedUntil);
      const event = describe(changed);
      if (event !== null) await audit.record(event, { db: trx });
      return changed;
    };
    const ids = within === undefined ? await db.transaction().execute(write) : await write(within);
    deps.onEnded(ids);
    if (strategy === 'jwt') for (const id of ids) revocations.remember(id, listedUntil);
    return ids;
  }

  return {
    revoke,

    /** Ends the session a genuine refresh token belongs to (a browser signing in again, say). */
    async endSessionOfRefreshToken(refreshToken: string, source: AuditSource = SYSTEM_SOURCE): Promise<boolean> {
      const found = await deps.findSessionOfRefreshToken(refreshToken);
      if (found === null) return false;
      const { user_id: userId, id: sessionId } = found.row;
      const ended = await revoke({ userId, sessionId }, (ids) =>
        ids.length === 0 ? null : { type: 'session.ended', userId, source, reason: 'REPLACED', details: { sessionId } },
      );
      return ended.length > 0;
    },

    /** Signing out: ends the session the request was made with (audit event `signout`). */
    async signOut(userId: string, sessionId: string, source: AuditSource = SYSTEM_SOURCE): Promise<boolean> {
      const ended = await revoke({ userId, sessionId }, (ids) => (ids.length === 0 ? null : { type: 'signout', userId, source, details: { sessionId } }));
      return ended.length > 0;
    },

    /**
     * Ends one of the user's sessions, by the user or an admin (`source.actorUserId`; without a
     * source, by Gatehouse itself); false when it is not theirs or already ended.
     */
    async endSession(userId: string, sessionId: string, source: AuditSource = SYSTEM_SOURCE): Promise<boolean> {
      const ended = await revoke({ userId, sessionId }, (ids) => (ids.length === 0 ? null : { type: 'session.ended', userId, source, details: { sessionId } }));
      return ended.length > 0;
    },

    /**
     * Ends all of the user's sessions, or all but one; returns how many ended. `reason` says why
     * in the audit event (e.g. ACCOUNT_DISABLED), which is written when any session ended. With
     * `db` (a transaction), the ending commits or rolls back with the caller's change (a password reset).
     */
    async endAllSessions(userId: string, options: { source?: AuditSource; exceptSessionId?: string; reason?: string; db?: Db } = {}): Promise<number> {
      const { source = SYSTEM_SOURCE, reason, db: within, ...filter } = options;
      const describe = (ids: string[]): AuditEventInput | null =>
        ids.length === 0
          ? null
          : {
              type: 'user.sessions_ended',
              userId,
              source,
              reason: reason ?? null,
              details: { count: ids.length, ...(filter.exceptSessionId !== undefined && { keptSessionId: filter.exceptSessionId }) },
            };
      const ended = await revoke({ userId, ...filter }, describe, within);
      return ended.length;
    },
  };
}
