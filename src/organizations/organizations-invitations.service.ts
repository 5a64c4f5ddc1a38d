/**
 * Organization invitations: an OWNER or ADMIN invites an address with a role (a single-use link,
 * mailed through the outbox), lists and revokes the pending ones; the invitee previews, accepts
 * or declines; expired ones are purged. The organizations service hands these methods out as its
 * own (callers see one `organizations` service); this part needs from it the organization's lock
 * (`withOrganization`) and the member lookup (`get`).
 *
 * Events name the organization, the invitation (by its id) and the role, never the invited
 * address nor a token; only the token's hash is stored.
 *
 * Every invitation mail is counted against three budgets: the organization's, the inviter's (over
 * all their organizations) and the invited address's (from everyone). They are counters of the
 * `rateLimiters` service (storage or Redis, shared by every instance, surviving restarts) rather
 * than rows counted in storage: invitations are deleted when replaced, answered or revoked, so
 * their rows say nothing of the mails already sent.
 */
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import { randomId, randomSecret, sha256Base64url } from '../lib/random.ts';
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import type { MailService } from '../mail/mail.service.ts';
import { accountKey, type Limiter } from '../http/rate-limit.ts';
import type { User, UserService } from '../users/user.service.ts';
import { mailLocale } from '../users/locale.ts';
import { normaliseEmail } from '../users/email.ts';
import type { OrganizationsConfig } from './organizations.config.ts';
import * as store from './organizations.store.ts';
import {
  ADMIN,
  INVITATION_PAGE,
  OPERATOR,
  OWNER,
  TOKEN_PATTERN,
  eventDetails,
  isOperator,
  isPlausibleId,
  isValidOrganizationRole,
  toInvitation,
  toOrganization,
  type AcceptResult,
  type Actor,
  type Invitation,
  type InvitationLinkResult,
  type InvitationPreview,
  type InvitationRef,
  type Invitee,
  type InviteResult,
  type Organization,
  type Refused,
  type WithOrganization,
} from './organizations.model.ts';

export type OrganizationInvitationsService = ReturnType<typeof createOrganizationInvitationsService>;

/** The budgets every invitation mail is counted against. */
export interface InvitationLimiters {
  /** Per organization (RATE_LIMIT_ORGANIZATION_INVITATIONS), keyed by its id. */
  perOrganization: Limiter;
  /** Per inviting user, over all their organizations (RATE_LIMIT_ORGANIZATION_INVITATIONS_PER_INVITER), keyed by their id. */
  perInviter: Limiter;
  /** Per invited address (RATE_LIMIT_ORGANIZATION_INVITATIONS_PER_ADDRESS), keyed by a hash of its normal form. */
  perAddress: Limiter;
}

/** One budget an invitation is counted against, and the refusal once it is used up. */
interface Budget {
  limiter: Limiter;
  key: string;
  refusal: 'RATE_LIMITED' | 'INVITATION_LIMIT_REACHED';
}

type Spent = { ok: true; giveBack(): Promise<void> } | { ok: false; reason: Budget['refusal']; retryAfterSeconds: number };

/**
 * Counts one invitation against each budget in turn. At the first that is used up, what was
 * counted is given back (a refused invitation spends nobody's budget) and its refusal returned;
 * otherwise `giveBack` undoes the count when no mail goes out after all.
 */
async function spendBudgets(budgets: Budget[]): Promise<Spent> {
  const spent: Budget[] = [];
  const giveBack = async () => void (await Promise.all(spent.map(({ limiter, key }) => limiter.refund(key))));
  try {
    for (const budget of budgets) {
      const wait = await budget.limiter.consume(budget.key);
      if (wait !== null) {
        await giveBack();
        return { ok: false, reason: budget.refusal, retryAfterSeconds: wait };
      }
      spent.push(budget);
    }
  } catch (error) {
    await giveBack().catch(() => {});
    throw error;
  }
  return { ok: true, giveBack };
}

export function createOrganizationInvitationsService(deps: {
  db: Db;
  clock: Clock;
  audit: AuditService;
  mail: MailService;
  /** The invitee's language, when the address has an account. */
  users: Pick<UserService, 'findLocaleByEmail'>;
  config: Pick<OrganizationsConfig, 'invitationTtlSeconds'>;
  invitationLimiters: InvitationLimiters;
  /** The organizations service's lock: runs a change when the actor may act on the organization. */
  withOrganization: WithOrganization;
  /** The organizations service's `get`: the organization and the actor's role in it. */
  get: (organizationId: string, actor: Actor) => Promise<{ organization: Organization; role: string | null } | null>;
}) {
  const { db, clock, audit, mail, users, config, invitationLimiters, withOrganization, get } = deps;
  const expiresInMinutes = Math.max(1, Math.floor(config.invitationTtlSeconds / 60));

  async function findInvitationRow(trx: Db, ref: InvitationRef): Promise<store.InvitationRow | undefined> {
    if ('token' in ref) return typeof ref.token === 'string' && TOKEN_PATTERN.test(ref.token) ? store.findInvitationByHash(trx, sha256Base64url(ref.token)) : undefined;
    return isPlausibleId(ref.invitationId) ? store.findInvitation(trx, ref.invitationId) : undefined;
  }

  /** Why this invitee may not answer this invitation, or null. By id, another's invitation is none. */
  function inviteeProblem(row: store.InvitationRow, ref: InvitationRef, invitee: Invitee): 'INVITATION_NOT_FOUND' | 'INVITATION_EMAIL_MISMATCH' | 'INVITATION_EMAIL_UNVERIFIED' | null {
    const matches = normaliseEmail(invitee.email) === row.email;
    if (!matches) return 'token' in ref ? 'INVITATION_EMAIL_MISMATCH' : 'INVITATION_NOT_FOUND';
    if (invitee.emailVerifiedAt === null) return 'INVITATION_EMAIL_UNVERIFIED';
    return null;
  }

  /** The invitation written and its mail queued, in one transaction holding the organization's lock (its budgets spent already). */
  async function sendInvitation(organizationId: string, actor: Actor, input: { email: string; role: string }, source: AuditSource): Promise<InviteResult> {
    const { email, role } = input;
    // The mail's language: the invitee's own when they have an account, else the inviter's (the
    // request's). Read before the transaction: on SQLite it holds the only connection.
    const locale = mailLocale({ locale: await users.findLocaleByEmail(email) }, source);
    return withOrganization(organizationId, actor, 'manager', async (trx, row, actorRole): Promise<InviteResult> => {
      if (role === OWNER && actorRole !== null && actorRole !== OWNER) return { ok: false, reason: 'ORGANIZATION_ROLE_REQUIRED' };
      if (await store.isMemberByEmail(trx, organizationId, email)) return { ok: false, reason: 'ALREADY_MEMBER' };
      const now = clock();
      const token = randomSecret(32);
      const invitation: store.InvitationRow = {
        id: randomId(),
        organization_id: organizationId,
        email,
        role,
        token_hash: sha256Base64url(token),
        invited_by: isOperator(actor) ? null : actor.userId,
        created_at: now,
        expires_at: now + config.invitationTtlSeconds * 1000,
      };
      for (const replacedId of await store.deleteInvitationsTo(trx, organizationId, email)) {
        await audit.record({ type: 'organization.invitation.revoked', source, reason: 'REPLACED', details: eventDetails(row, { invitationId: replacedId }) }, { db: trx });
      }
      await store.insertInvitation(trx, invitation);
      await mail.enqueue(trx, {
        to: email,
        template: 'organization-invitation',
        locale,
        data: { name: null, organizationName: row.name, role, acceptUrl: mail.link(INVITATION_PAGE, { token }), expiresInMinutes },
      });
      await audit.record({ type: 'organization.invitation.created', source, details: eventDetails(row, { invitationId: invitation.id, role }) }, { db: trx });
      return { ok: true, invitation: toInvitation(invitation) };
    });
  }

  const missing = (ref: InvitationRef) => ('token' in ref ? 'INVITATION_INVALID' : 'INVITATION_NOT_FOUND') as 'INVITATION_INVALID' | 'INVITATION_NOT_FOUND';

  return {
    /**
     * Invites an address with a role (OWNER or ADMIN; only an OWNER invites an OWNER): a link that
     * works once, for ORGANIZATION_INVITATION_TTL, mailed through the outbox in the transaction
     * that stores its hash. A new invitation to the same address replaces the pending one. The
     * answer does not depend on whether the address has an account; an address of a member is
     * refused (ALREADY_MEMBER: who may invite sees the members anyway). Counted per organization
     * (RATE_LIMITED), per inviter and per address (INVITATION_LIMIT_REACHED: one code for both);
     * the address's budget is keyed by its normal form whether or not it has an account, and an
     * invitation that mails nothing (refused, failed) is given back to all three.
     */
    async invite(organizationId: string, actor: Actor, input: { email: string; role: string }, source: AuditSource): Promise<InviteResult> {
      const email = normaliseEmail(input.email);
      const role = input.role;
      if (!isValidOrganizationRole(role)) return { ok: false, reason: 'INVALID_ROLE' };
      // Counted before the transaction (the counters may live in this same database, and SQLite
      // has one connection), and only for those who may invite: nobody else can spend the limit.
      const found = await get(organizationId, actor);
      if (found === null) return { ok: false, reason: 'ORGANIZATION_NOT_FOUND' };
      if (found.role !== null && found.role !== OWNER && found.role !== ADMIN) return { ok: false, reason: 'ORGANIZATION_ROLE_REQUIRED' };
      const budgets = await spendBudgets([
        { limiter: invitationLimiters.perOrganization, key: organizationId, refusal: 'RATE_LIMITED' },
        ...(isOperator(actor) ? [] : [{ limiter: invitationLimiters.perInviter, key: actor.userId, refusal: 'INVITATION_LIMIT_REACHED' as const }]),
        { limiter: invitationLimiters.perAddress, key: accountKey(email), refusal: 'INVITATION_LIMIT_REACHED' },
      ]);
      if (!budgets.ok) return budgets;
      let result: InviteResult | undefined;
      try {
        result = await sendInvitation(organizationId, actor, { email, role }, source);
      } finally {
        // A refund that fails keeps the count: a budget may come out short, never long.
        if (result?.ok !== true) await budgets.giveBack().catch(() => {});
      }
      if (result.ok) mail.wake();
      return result;
    },

    /** The organization's pending invitations, newest first (OWNER or ADMIN). */
    async listInvitations(organizationId: string, actor: Actor): Promise<Invitation[] | Refused> {
      return withOrganization(organizationId, actor, 'manager', async (trx) => (await store.listInvitations(trx, organizationId, clock())).map(toInvitation));
    },

    /** Ends a pending invitation (OWNER or ADMIN): its link stops working. */
    async revokeInvitation(organizationId: string, actor: Actor, invitationId: string, source: AuditSource): Promise<{ ok: true } | Refused | { ok: false; reason: 'INVITATION_NOT_FOUND' }> {
      return withOrganization(organizationId, actor, 'manager', async (trx, row) => {
        const invitation = isPlausibleId(invitationId) ? await store.findInvitation(trx, invitationId) : undefined;
        if (invitation === undefined || invitation.organization_id !== organizationId || !(await store.deleteInvitation(trx, invitationId))) return { ok: false as const, reason: 'INVITATION_NOT_FOUND' as const };
        await audit.record({ type: 'organization.invitation.revoked', source, details: eventDetails(row, { invitationId, role: invitation.role }) }, { db: trx });
        return { ok: true as const };
      });
    },

    /** What an invitation link offers (the organization's name, the role), without using it. */
    async previewInvitation(token: string): Promise<InvitationLinkResult<{ invitation: InvitationPreview }>> {
      const row = await findInvitationRow(db, { token });
      if (row === undefined) return { ok: false, reason: 'INVITATION_INVALID' };
      if (row.expires_at <= clock()) return { ok: false, reason: 'INVITATION_EXPIRED' };
      const organization = await store.findOrganization(db, row.organization_id);
      if (organization === undefined) return { ok: false, reason: 'INVITATION_INVALID' };
      return { ok: true, invitation: { id: row.id, organization: { id: organization.id, slug: organization.slug, name: organization.name }, email: row.email, role: row.role, expiresAt: row.expires_at } };
    },

    /** The pending invitations to the user's address, once it is verified (the dashboard lists them). */
    async invitationsFor(user: Pick<User, 'email' | 'emailVerifiedAt'>): Promise<Array<InvitationPreview>> {
      if (user.emailVerifiedAt === null) return [];
      const rows = await store.listInvitationsTo(db, normaliseEmail(user.email), clock());
      return rows.map((row) => ({ id: row.id, organization: { id: row.organization_id, slug: row.organization_slug, name: row.organization_name }, email: row.email, role: row.role, expiresAt: row.expires_at }));
    },

    /**
     * Accepts an invitation, once: by its link's token, or by its id. The signed-in user's address
     * must be the invited one, and verified. The user joins with the invited role.
     */
    async acceptInvitation(ref: InvitationRef, invitee: Invitee, source: AuditSource): Promise<AcceptResult> {
      const row = await findInvitationRow(db, ref);
      if (row === undefined) return { ok: false, reason: missing(ref) };
      if (row.expires_at <= clock()) return { ok: false, reason: 'INVITATION_EXPIRED' };
      const problem = inviteeProblem(row, ref, invitee);
      if (problem !== null) return { ok: false, reason: problem };
      const result = await withOrganization(row.organization_id, OPERATOR, 'member', async (trx, organization): Promise<AcceptResult> => {
        // Used, declined or revoked meanwhile: only one answer wins.
        if (!(await store.deleteInvitation(trx, row.id))) return { ok: false, reason: missing(ref) };
        const recorded = eventDetails(organization, { invitationId: row.id, role: row.role });
        if (await store.findMember(trx, row.organization_id, invitee.id)) {
          await audit.record({ type: 'organization.invitation.accepted', userId: invitee.id, source, reason: 'ALREADY_MEMBER', details: recorded }, { db: trx });
          return { ok: false, reason: 'ALREADY_MEMBER' };
        }
        const now = clock();
        await store.insertMember(trx, { organization_id: row.organization_id, user_id: invitee.id, role: row.role, created_at: now, updated_at: now });
        await audit.record({ type: 'organization.invitation.accepted', userId: invitee.id, source, details: recorded }, { db: trx });
        await audit.record({ type: 'organization.member.added', userId: invitee.id, source, details: recorded }, { db: trx });
        return { ok: true, organization: toOrganization(organization), role: row.role };
      });
      return result.ok || result.reason !== 'ORGANIZATION_NOT_FOUND' ? (result as AcceptResult) : { ok: false, reason: missing(ref) };
    },

    /**
     * Declines an invitation: by its link's token (whoever holds the link: the mail's reader), or
     * by its id (the signed-in invitee, address matching and verified). The link stops working.
     */
    async declineInvitation(ref: InvitationRef, invitee: Invitee | null, source: AuditSource): Promise<{ ok: true } | { ok: false; reason: 'INVITATION_INVALID' | 'INVITATION_EXPIRED' | 'INVITATION_NOT_FOUND' | 'INVITATION_EMAIL_MISMATCH' | 'INVITATION_EMAIL_UNVERIFIED' }> {
      return db.transaction().execute(async (trx) => {
        const row = await findInvitationRow(trx, ref);
        if (row === undefined) return { ok: false as const, reason: missing(ref) };
        if (row.expires_at <= clock()) return { ok: false as const, reason: 'INVITATION_EXPIRED' as const };
        if ('invitationId' in ref) {
          const problem = invitee === null ? 'INVITATION_NOT_FOUND' : inviteeProblem(row, ref, invitee);
          if (problem !== null) return { ok: false as const, reason: problem };
        }
        if (!(await store.deleteInvitation(trx, row.id))) return { ok: false as const, reason: missing(ref) };
        const organization = await store.findOrganization(trx, row.organization_id);
        await audit.record(
          { type: 'organization.invitation.declined', userId: invitee?.id ?? null, source, details: { organizationId: row.organization_id, slug: organization?.slug ?? null, invitationId: row.id, role: row.role } },
          { db: trx },
        );
        return { ok: true as const };
      });
    },

    /** Deletes expired invitations, at most `limit` per call (the cleanup job). */
    purgeExpiredInvitations(limit = 1_000): Promise<number> {
      return store.deleteExpiredInvitations(db, clock(), limit);
    },
  };
}
