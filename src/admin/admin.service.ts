/**
 * What administrators do to accounts: find, inspect, create, change roles, disable and enable,
 * end sessions, read the audit log. Used by the admin API and the `gatehouse users` commands;
 * every change is recorded with who made it (`AuditSource`). Outcomes are return values.
 */
import { ADMIN_ROLE, type User, type UserChange, type UserService } from '../users/user.service.ts';
import type { SessionService, SessionSummary } from '../sessions/session.service.ts';
import type { CredentialsService } from '../credentials/credentials.service.ts';
import type { PasswordRejection } from '../credentials/password-policy.ts';
import type { AuditEventInput, AuditService, AuditSource } from '../audit/audit.service.ts';
import type { Db } from '../storage/database.ts';
import { countOutboxItems } from '../storage/outbox/outbox.store.ts';

/** The most rows the overview counts per outbox and status: past it, "at least". */
export const BACKLOG_COUNT_CAP = 10_000;

export type AdminCreateUserResult =
  | { ok: true; user: User }
  | { ok: false; reason: 'EMAIL_TAKEN' | 'INVALID_ROLE' }
  | { ok: false; reason: 'WEAK_PASSWORD'; rejection: PasswordRejection }
  /** Too many refused passwords from this administrator's client. */
  | { ok: false; reason: 'RATE_LIMITED'; retryAfterSeconds: number };

export type AdminUpdateUserResult =
  | { ok: true; user: User; sessionsEnded: number }
  | { ok: false; reason: 'NOT_FOUND' | 'INVALID_ROLE' }
  /** An admin may not disable themself or take away their own ADMIN role: nobody might be left to undo it. */
  | { ok: false; reason: 'SELF_LOCKOUT' }
  /**
   * The acting admin was no longer an enabled ADMIN when the change was to be made: a change that
   * came first (another admin's, at the same moment) took their role or disabled them.
   */
  | { ok: false; reason: 'FORBIDDEN' };

export interface AdminUserChanges {
  name?: string;
  /** The complete new set of roles. */
  roles?: readonly string[];
  disabled?: boolean;
}

/**
 * Every member is an asynchronous method: the module builds the service at its first call
 * (admin.module.ts). What the pages read synchronously of the audit log (its event types, their
 * owners, the condition "signed in since") they take from the audit service itself.
 */
export type AdminService = ReturnType<typeof createAdminService>;

export function createAdminService(deps: {
  users: UserService;
  sessions: SessionService;
  credentials: CredentialsService;
  audit: AuditService;
  /** For the outboxes' backlogs (storage's outbox queries); without it, none are shown. */
  db?: Db;
  /** The outboxes of the modules in the list (mail, webhooks): their queue and table. */
  outboxes?: ReadonlyArray<{ queue: 'mail' | 'webhooks'; table: string }>;
}) {
  const { users, sessions, credentials, audit } = deps;

  /** The audit events an update made, to be written in its transaction. */
  function changeEvents({ before, after }: UserChange, source: AuditSource): AuditEventInput[] {
    const events: AuditEventInput[] = [];
    const base = { userId: after.id, source };
    if (before.name !== after.name) events.push({ type: 'user.updated', ...base, details: { fields: ['name'] } });
    if (before.roles.join(',') !== after.roles.join(',')) {
      events.push({ type: 'user.roles_changed', ...base, details: { before: before.roles, after: after.roles } });
    }
    if (before.disabledAt === null && after.disabledAt !== null) events.push({ type: 'user.disabled', ...base });
    if (before.disabledAt !== null && after.disabledAt === null) events.push({ type: 'user.enabled', ...base });
    return events;
  }

  return {
    listUsers: users.listUsers,

    /** The user and their active sessions; null when there is no such user. */
    async getUser(id: string): Promise<{ user: User; sessions: SessionSummary[] } | null> {
      const user = await users.findUserById(id);
      return user === null ? null : { user, sessions: await sessions.listSessions(id) };
    },

    /**
     * Creates a user. With a password it must pass the policy; without one the user signs in later
     * by a provider or a password reset. The administrator vouches for the address: it counts as
     * verified, as for `gatehouse users create`.
     */
    async createUser(input: { email: string; name: string; password?: string; roles?: readonly string[] }, source: AuditSource): Promise<AdminCreateUserResult> {
      const fields = { email: input.email, name: input.name, roles: input.roles ?? [], emailVerified: true };
      const result =
        input.password === undefined
          ? await users.createUser({ ...fields, passwordHash: null })
          : await credentials.createPasswordUser({ ...fields, password: input.password }, { client: { ip: source.ip } });
      if (result.ok) {
        await audit.record({
          type: 'user.created',
          userId: result.user.id,
          source,
          details: { roles: result.user.roles, signIn: input.password === undefined ? 'later' : 'password' },
        });
      }
      return result;
    },

    /**
     * Changes name, roles and the disabled state in one transaction, with their audit events.
     * Disabling also ends every session of the user at once (in the jwt strategy too, through the
     * revocation list); repeating it ends any session that appeared meanwhile.
     *
     * An acting admin (`source.actorUserId`; none at the command line) must still be an enabled
     * ADMIN when the change is made, not only when their request was let in: with SELF_LOCKOUT,
     * that keeps at least one enabled ADMIN (the actor) however many admins act at once.
     */
    async updateUser(id: string, changes: AdminUserChanges, source: AuditSource): Promise<AdminUpdateUserResult> {
      if (source.actorUserId === id && (changes.disabled === true || (changes.roles !== undefined && !changes.roles.includes(ADMIN_ROLE)))) {
        return { ok: false, reason: 'SELF_LOCKOUT' };
      }
      const result = await users.updateUser(id, changes, {
        onUpdated: async (db: Db, change) => {
          for (const event of changeEvents(change, source)) await audit.record(event, { db });
        },
        ...(source.actorUserId !== null && { actingAdminId: source.actorUserId }),
      });
      if (!result.ok) return result.reason === 'ACTOR_NOT_ADMIN' ? { ok: false, reason: 'FORBIDDEN' } : result;
      const sessionsEnded = result.user.disabledAt !== null && changes.disabled === true
        ? await sessions.endAllSessions(id, { source, reason: 'ACCOUNT_DISABLED' })
        : 0;
      return { ok: true, user: result.user, sessionsEnded };
    },

    /** Ends every session of the user; null when there is no such user. */
    async endAllSessions(userId: string, source: AuditSource): Promise<number | null> {
      if ((await users.findUserById(userId)) === null) return null;
      return sessions.endAllSessions(userId, { source });
    },

    /** Ends one session of the user; false when it is not an active session of theirs. */
    async endSession(userId: string, sessionId: string, source: AuditSource): Promise<boolean> {
      return sessions.endSession(userId, sessionId, source);
    },

    listEvents: audit.listEvents,
    /** Events of some types per UTC day since a moment (the overview's charts). */
    countEventsPerDay: audit.countEventsPerDay,
    /** Events of a type per UTC day, by fields of their details (sign-ins by method). */
    countEventsPerDayBy: audit.countEventsPerDayBy,
    /** Distinct accounts with an event of a type, per UTC day and in all (active users). */
    countDistinctUsersPerDay: audit.countDistinctUsersPerDay,

    /** Deliveries waiting and failed in each outbox, counted up to `BACKLOG_COUNT_CAP`. */
    async outboxBacklogs(): Promise<Array<{ queue: 'mail' | 'webhooks'; pending: number; failed: number }>> {
      const { db } = deps;
      if (db === undefined) return [];
      return Promise.all((deps.outboxes ?? []).map(async ({ queue, table }) => ({ queue, ...(await countOutboxItems(db, table, BACKLOG_COUNT_CAP)) })));
    },
  };
}
