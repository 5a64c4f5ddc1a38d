/**
 * Administrators acting as a user (audited impersonation). Starting one makes a new Gatehouse
 * session of the user that ends at the chosen time limit (at most an hour); its access tokens carry
 * `act: {sub: <administrator>}` (the module's token claims), as RFC 8693 tokens do. The start is
 * recorded in the session's own transaction (`impersonation.started`); the end (`impersonation.ended`,
 * STOPPED or EXPIRED) exactly once, with the mail that tells the user an administrator acted as
 * them, when and why, in the same transaction. An expired one is found by the module's job.
 */
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import type { MailService } from '../mail/mail.service.ts';
import type { SessionService, StartedSession, ClientInfo } from '../sessions/session.service.ts';
import { ADMIN_ROLE, type UserService } from '../users/user.service.ts';
import { greetingName } from '../users/name.ts';
import { mailLocale } from '../users/locale.ts';
import * as store from './impersonation.store.ts';
import type { ImpersonationRow } from './impersonation.store.ts';
import { HUB_PAGES } from '../http/hub-pages.ts';

/** The time limits an administrator chooses from, in minutes. */
export const IMPERSONATION_MINUTES = [5, 15, 30, 60] as const;
export const MAX_REASON_LENGTH = 500;
const KEEP_ENDED_MS = 24 * 3_600_000;

export type ImpersonationService = ReturnType<typeof createImpersonationService>;

export interface Impersonation {
  readonly sessionId: string;
  readonly userId: string;
  readonly adminId: string;
  readonly reason: string;
  readonly startedAt: number;
  readonly endsAt: number;
}

export type StartResult =
  | { ok: true; session: StartedSession; impersonation: Impersonation }
  | { ok: false; code: 'IMPERSONATION_USER_NOT_FOUND' | 'IMPERSONATION_NOT_ALLOWED' | 'IMPERSONATION_SECOND_FACTOR_REQUIRED' };

interface Deps {
  db: Db;
  clock: Clock;
  audit: AuditService;
  mail: MailService;
  users: UserService;
  sessions: SessionService;
}

const toImpersonation = (row: ImpersonationRow): Impersonation => ({
  sessionId: row.session_id,
  userId: row.user_id,
  adminId: row.admin_id,
  reason: row.reason,
  startedAt: row.started_at,
  endsAt: row.ends_at,
});

export function createImpersonationService(deps: Deps) {
  const { db, clock, audit, mail, users, sessions } = deps;

  /** Records the end once (the event and the user's mail, together); false when it was recorded already. */
  async function recordEnd(row: ImpersonationRow, reason: 'STOPPED' | 'EXPIRED', source: AuditSource): Promise<boolean> {
    const now = clock();
    const endedAt = Math.min(now, row.ends_at);
    const user = await users.findUserById(row.user_id);
    const isRecorded = await db.transaction().execute(async (trx) => {
      if (!(await store.markEnded(trx, row.session_id, endedAt))) return false;
      await audit.record(
        { type: 'impersonation.ended', userId: row.user_id, source, reason, details: { adminId: row.admin_id, sessionId: row.session_id, startedAt: row.started_at, endedAt } },
        { db: trx },
      );
      if (user !== null) {
        await mail.enqueue(trx, {
          to: user.email,
          template: 'impersonation-ended',
          locale: mailLocale(user),
          // Where to look at what happened: the dashboard's sessions and connected apps.
          data: { name: greetingName(user), reason: row.reason, startedAt: row.started_at, endedAt, dashboardUrl: mail.link(HUB_PAGES.dashboard) },
        });
      }
      return true;
    });
    if (isRecorded) mail.wake();
    return isRecorded;
  }

  return {
    /**
     * `admin` (signed in with a second factor: `amr` holds `mfa`) starts acting as `userId` for
     * `minutes`: a new session of the user, written with the impersonation and its event in one
     * transaction. Never an ADMIN, a disabled account or oneself.
     */
    async start(input: { admin: { userId: string; amr: readonly string[] }; userId: string; reason: string; minutes: number; source: AuditSource } & ClientInfo): Promise<StartResult> {
      if (!input.admin.amr.includes('mfa')) return { ok: false, code: 'IMPERSONATION_SECOND_FACTOR_REQUIRED' };
      if (!(IMPERSONATION_MINUTES as readonly number[]).includes(input.minutes)) throw new TypeError('impersonation: a time limit not offered');
      const user = await users.findUserById(input.userId);
      if (user === null) return { ok: false, code: 'IMPERSONATION_USER_NOT_FOUND' };
      if (user.id === input.admin.userId || user.disabledAt !== null || user.roles.includes(ADMIN_ROLE)) return { ok: false, code: 'IMPERSONATION_NOT_ALLOWED' };
      const now = clock();
      const reason = input.reason.slice(0, MAX_REASON_LENGTH);
      const endsAt = now + input.minutes * 60_000;
      let impersonation: Impersonation | undefined;
      const session = await sessions.startSession({
        userId: user.id,
        roles: user.roles,
        verifiedPasswordHash: null,
        // Nobody proved to be the user: no method (a route asking for a recent second factor of a user who has one refuses it).
        amr: [],
        expiresAt: endsAt,
        ip: input.ip,
        userAgent: input.userAgent,
        onStarted: async (trx, sessionId) => {
          const row = { session_id: sessionId, user_id: user.id, admin_id: input.admin.userId, reason, started_at: now, ends_at: endsAt, ended_at: null };
          await store.insertImpersonation(trx, row);
          impersonation = toImpersonation(row);
          await audit.record(
            { type: 'impersonation.started', userId: user.id, source: input.source, details: { adminId: input.admin.userId, sessionId, reason, until: endsAt } },
            { db: trx },
          );
        },
      });
      // Null: the account was disabled meanwhile.
      if (session === null || impersonation === undefined) return { ok: false, code: 'IMPERSONATION_NOT_ALLOWED' };
      return { ok: true, session, impersonation };
    },

    /** The impersonation `sessionId` is, while it lasts; null for every other session. */
    async activeFor(sessionId: string): Promise<Impersonation | null> {
      const row = await store.findImpersonation(db, sessionId);
      return row === undefined || row.ended_at !== null || row.ends_at <= clock() ? null : toImpersonation(row);
    },

    /** "Stop": ends the session and records the end; false when `sessionId` is no impersonation still running. */
    async stop(sessionId: string, source: AuditSource): Promise<boolean> {
      const row = await store.findImpersonation(db, sessionId);
      if (row === undefined || row.ended_at !== null) return false;
      await sessions.endSession(row.user_id, row.session_id, source);
      return recordEnd(row, 'STOPPED', source);
    },

    /**
     * Records the end of every impersonation past its time limit (its session has expired with it);
     * how many. Rows of those that ended a day ago go: nothing reads them, the audit log keeps them.
     */
    async endExpired(limit = 100): Promise<number> {
      let count = 0;
      for (const row of await store.listExpired(db, clock(), limit)) {
        if (await recordEnd(row, 'EXPIRED', { actorUserId: null, ip: null, userAgent: null })) count++;
      }
      await store.deleteEndedBefore(db, clock() - KEEP_ENDED_MS);
      return count;
    },
  };
}
