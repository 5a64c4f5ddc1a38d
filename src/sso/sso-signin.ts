/**
 * Signing in with an identity an organization's IdP asserted (SAML or OIDC, already checked), through
 * the sign-in pipeline (account checks, second factor, session, audit):
 * - a subject seen before on this connection is its account;
 * - else an account with the address is linked only when the address is verified on both sides:
 *   the account's (`emailVerifiedAt`) and the IdP's (see below); otherwise refused
 *   (SSO_ACCOUNT_NOT_LINKED), never linked silently;
 * - else the account is made just in time, only for an address the IdP vouches for (below), verified.
 * The IdP's address counts as verified when the IdP asserts it (SAML: every asserted address; OIDC:
 * `email_verified: true`) AND its domain is a verified domain of the connection's organization: an
 * organization's IdP vouches for its own domains only.
 * Then the organization membership: added with the mapped role (group rules, else the connection's
 * default), or brought to it on later sign-ins (never an OWNER's, never to OWNER).
 */
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import type { User, UserService } from '../users/user.service.ts';
import type { SignInPipeline, SignInChallenge } from '../signin/signin-pipeline.ts';
import type { StartedSession } from '../sessions/session.service.ts';
import type { OrganizationsService } from '../organizations/organizations.service.ts';
import { OPERATOR } from '../organizations/organizations.model.ts';
import { MAX_EMAIL_LENGTH, normaliseEmail } from '../users/email.ts';
import { toValidName } from '../users/name.ts';
import * as store from './sso.store.ts';
import { ssoFactor } from './sso-factor.ts';
import { roleFor, type AssertedIdentity, type Connection } from './sso.model.ts';

/** What the verified-domains module answers (`orgDomains.findVerifiedForEmail`, the org-domains module). */
export interface VerifiedDomainLookup {
  findVerifiedForEmail(email: string): Promise<{ organizationId: string; domain: string; verifiedAt: number } | null>;
}

export type SsoFailure = 'SSO_ACCOUNT_NOT_LINKED' | 'SSO_EMAIL_MISSING' | 'SSO_INVALID_IDENTITY' | 'SSO_DOMAIN_NOT_VERIFIED';
export type SsoSignInResult =
  | { ok: true; user: User; session: StartedSession }
  | { ok: false; reason: string }
  | { ok: false; reason: 'CHALLENGE'; challenge: SignInChallenge };

const EMAIL_SHAPE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function createSsoSignIn(deps: {
  db: Db;
  clock: Clock;
  users: UserService;
  audit: AuditService;
  organizations: OrganizationsService;
  pipeline: SignInPipeline;
  domains: () => VerifiedDomainLookup | null;
}) {
  const { db, clock, users, audit, organizations } = deps;

  async function failed(connection: Connection, reason: string, source: AuditSource, userId: string | null = null) {
    await audit.record({ type: 'sso.signin_failed', userId, source, reason, details: { connectionId: connection.id, organizationId: connection.organizationId, protocol: connection.protocol } });
    return { ok: false as const, reason };
  }

  /** The IdP's address is verified for this organization (see the file's comment). */
  async function vouchedFor(connection: Connection, email: string | null, asserted: boolean): Promise<boolean> {
    if (email === null || !asserted) return false;
    const found = await deps.domains()?.findVerifiedForEmail(email);
    return found !== null && found !== undefined && found.organizationId === connection.organizationId;
  }

  async function accountFor(connection: Connection, identity: AssertedIdentity, emailVerified: boolean, source: AuditSource, isRetry = false): Promise<{ user: User; isNew: boolean } | SsoFailure> {
    const now = clock();
    const known = await store.findIdentity(db, connection.id, identity.subject);
    if (known !== undefined) {
      const user = await users.findUserById(known.user_id);
      if (user !== null) {
        await store.touchIdentity(db, connection.id, identity.subject, now);
        return { user, isNew: false };
      }
    }
    if (identity.email === null) return 'SSO_EMAIL_MISSING';
    const existing = await users.findUserByEmail(identity.email);
    if (existing !== null) {
      if (!emailVerified || existing.emailVerifiedAt === null) return 'SSO_ACCOUNT_NOT_LINKED';
      try {
        await db.transaction().execute(async (trx) => {
          await store.insertIdentity(trx, { connection_id: connection.id, subject: identity.subject, user_id: existing.id, created_at: now, last_used_at: now });
          await audit.record({ type: 'sso.identity_linked', userId: existing.id, source, details: { connectionId: connection.id, organizationId: connection.organizationId } }, { db: trx });
        });
      } catch (error) {
        if (isRetry) throw error;
        return accountFor(connection, identity, emailVerified, source, true);
      }
      return { user: existing, isNew: false };
    }
    // A new account (and a membership) only for an address the organization's IdP vouches for: a
    // provider that serves other people too (a multi-tenant issuer) makes nobody a member.
    if (!emailVerified) return 'SSO_DOMAIN_NOT_VERIFIED';
    const name = toValidName(identity.name ?? '') ?? toValidName(identity.email.split('@')[0] ?? '') ?? 'SSO user';
    const created = await users.createUser(
      { email: identity.email, name, passwordHash: null, emailVerified: true },
      {
        onCreated: async (trx, user) => {
          await audit.record({ type: 'user.created', userId: user.id, source, details: { via: 'sso', connectionId: connection.id } }, { db: trx });
          await store.insertIdentity(trx, { connection_id: connection.id, subject: identity.subject, user_id: user.id, created_at: now, last_used_at: now });
        },
      },
    );
    if (!created.ok) {
      if (isRetry) return 'SSO_ACCOUNT_NOT_LINKED';
      return accountFor(connection, identity, emailVerified, source, true);
    }
    return { user: created.user, isNew: true };
  }

  /** The member's role as the IdP's groups say; an OWNER stays one. */
  async function syncMembership(connection: Connection, user: User, groups: readonly string[], source: AuditSource): Promise<void> {
    const role = roleFor(connection, groups);
    const membership = await organizations.get(connection.organizationId, { userId: user.id });
    if (membership === null) {
      await organizations.addMember(connection.organizationId, user.id, role, source);
    } else if (membership.role !== role && membership.role !== 'OWNER') {
      await organizations.setRole(connection.organizationId, OPERATOR, user.id, role, source);
    }
  }

  return {
    async signIn(connection: Connection, asserted: AssertedIdentity, source: AuditSource): Promise<SsoSignInResult> {
      const email = asserted.email === null ? null : normaliseEmail(asserted.email);
      if (asserted.subject.length === 0 || asserted.subject.length > 512) return failed(connection, 'SSO_INVALID_IDENTITY', source);
      if (email !== null && (email.length > MAX_EMAIL_LENGTH || !EMAIL_SHAPE.test(email))) return failed(connection, 'SSO_INVALID_IDENTITY', source);
      const identity = { ...asserted, email };
      const emailVerified = await vouchedFor(connection, email, asserted.emailAsserted);
      const account = await accountFor(connection, identity, emailVerified, source);
      if (typeof account === 'string') return failed(connection, account, source);
      const { user } = account;
      if (user.disabledAt === null) await syncMembership(connection, user, identity.groups, source);
      const outcome = await deps.pipeline.complete({ user, factor: ssoFactor(connection, emailVerified), source, delivery: 'cookies' });
      if (!outcome.ok) {
        if ('challenge' in outcome) return { ok: false, reason: 'CHALLENGE', challenge: outcome.challenge };
        return failed(connection, outcome.refusal, source, user.id);
      }
      await audit.record({ type: 'sso.signin_succeeded', userId: user.id, source, details: { connectionId: connection.id, organizationId: connection.organizationId, protocol: connection.protocol, jit: account.isNew } });
      return { ok: true, user: outcome.user, session: outcome.session };
    },

    /** Records a refusal before any account was found (a bad assertion, say). */
    refuse: failed,
  };
}

export type SsoSignIn = ReturnType<typeof createSsoSignIn>;
