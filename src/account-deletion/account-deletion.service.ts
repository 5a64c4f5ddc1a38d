/**
 * Deleting an account, by its owner or an administrator, in one transaction: every session ended
 * (on the revocation list too, so no access token outlives it), what the apps signed in through
 * Gatehouse hold ended (the OpenID Provider's grants, by its subscription to `user.deleted`), the
 * organization memberships removed (an organization's only OWNER with other members must hand it
 * over first), the mails to the address forgotten, the personal data in the audit history erased,
 * the user row deleted (identities, factors, passkeys, tokens and consents go with it, on
 * cascade), and `user.deleted` recorded: the webhooks hear of it in the same transaction.
 */
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import type { MailService } from '../mail/mail.service.ts';
import type { SessionService } from '../sessions/session.service.ts';
import type { Db } from '../storage/database.ts';
import type { UserService } from '../users/user.service.ts';

/** What account deletion needs of the organizations module (absent: nobody belongs to any). */
export interface OrganizationMemberships {
  /** The organizations where the user is the only OWNER and others are members. */
  ownershipBlockers(userId: string, db?: Db): Promise<ReadonlyArray<{ id: string; slug: string; name: string }>>;
  /**
   * Removes the user from every organization (deleting those where they were alone), in `db`,
   * with the organizations locked; refuses, writing nothing, where they are the only OWNER and
   * others are members.
   */
  removeUser(userId: string, db: Db, source: AuditSource): Promise<{ ok: true } | { ok: false; organizations: ReadonlyArray<{ id: string; slug: string; name: string }> }>;
}

export type AccountDeletionResult =
  | { ok: true }
  | { ok: false; reason: 'NOT_FOUND' | 'FORBIDDEN' | 'LAST_ADMIN' }
  | { ok: false; reason: 'ORGANIZATION_OWNERSHIP_TRANSFER_REQUIRED'; organizations: ReadonlyArray<{ id: string; slug: string; name: string }> };

export type AccountDeletionService = ReturnType<typeof createAccountDeletionService>;

export function createAccountDeletionService(deps: {
  users: UserService;
  sessions: SessionService;
  audit: AuditService;
  mail: MailService;
  /** Read when deleting: the organizations module is listed after this one's dependencies. */
  organizations: () => OrganizationMemberships | null;
}) {
  const { users, sessions, audit, mail } = deps;

  async function deleteAccount(userId: string, options: { source: AuditSource; by: 'self' | 'admin' | 'cli' }): Promise<AccountDeletionResult> {
    const organizations = deps.organizations();
    let blockers: ReadonlyArray<{ id: string; slug: string; name: string }> = [];
    // The one owning an account: the event about its deletion keeps no trace of their network or browser.
    const source: AuditSource = options.by === 'self' ? { ...options.source, ip: null, userAgent: null } : options.source;
    const result = await users.deleteUser(userId, {
      ...(options.by === 'admin' && options.source.actorUserId !== null && { actingAdminId: options.source.actorUserId }),
      // First, with the organizations locked: a refusal here writes nothing.
      async check(trx) {
        if (organizations === null) return null;
        const removed = await organizations.removeUser(userId, trx, source);
        if (removed.ok) return null;
        blockers = removed.organizations;
        return 'ORGANIZATION_OWNERSHIP_TRANSFER_REQUIRED';
      },
      async onDeleting(trx, user) {
        await sessions.endAllSessions(userId, { source, reason: 'ACCOUNT_DELETED', db: trx });
        await mail.forgetRecipient(trx, user.email);
        await audit.erasePersonalData(userId, user.email, { db: trx });
      },
      async onDeleted(trx) {
        await audit.record({ type: 'user.deleted', userId, source, reason: options.by.toUpperCase(), details: { by: options.by } }, { db: trx });
      },
    });
    if (result.ok) return { ok: true };
    switch (result.reason) {
      case 'NOT_FOUND':
      case 'LAST_ADMIN':
        return { ok: false, reason: result.reason };
      case 'ACTOR_NOT_ADMIN':
        return { ok: false, reason: 'FORBIDDEN' };
      case 'REFUSED':
        return { ok: false, reason: 'ORGANIZATION_OWNERSHIP_TRANSFER_REQUIRED', organizations: blockers };
    }
  }

  return {
    /** The signed-in user deletes their own account (its routes require a recent sign-in and, for an account that has one, a recent second factor). */
    deleteOwnAccount: (userId: string, source: AuditSource) => deleteAccount(userId, { source, by: 'self' }),
    /** An administrator (or the command line: no actor) deletes someone's account. */
    deleteUser: (userId: string, source: AuditSource) => deleteAccount(userId, { source, by: source.via === 'cli' ? 'cli' : 'admin' }),
    /** What would stop the user deleting their account now (the page lists it before they try; the deletion checks again, under lock). */
    async blockers(userId: string) {
      return (await deps.organizations()?.ownershipBlockers(userId)) ?? [];
    },
  };
}
