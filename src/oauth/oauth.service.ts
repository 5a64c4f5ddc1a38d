/**
 * Sign-in with a provider, and the identities users link to their accounts. An identity is the
 * pair (provider, provider's user id); an e-mail address never identifies anyone by itself. What
 * a provider says about an address counts only when the provider says it has verified it:
 * - a known identity signs its user in;
 * - an unknown one whose verified address belongs to a user whose address is verified too is
 *   linked to that user (both sides proved control of the address); otherwise the person must
 *   sign in the way they did before and link the provider from the dashboard
 *   (`OAuthAccountNotLinked`), so nobody can take over an account by registering its address at
 *   some provider;
 * - an unknown one with a new verified address creates a user, unless sign-up is off.
 * Outcomes are return values (their `reason` is the error page's code); routes map them.
 */
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { randomId } from '../lib/random.ts';
import type { User, UserService } from '../users/user.service.ts';
import type { SessionService, StartedSession } from '../sessions/session.service.ts';
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import type { OAuthProviderConfig } from './oauth.config.ts';
import { createOAuthProviders, type OAuthProvider, type ProviderFailure, type ProviderIdentity } from './oauth-providers.ts';
import { createFlowCookieSeal, type OAuthFlow } from './oauth-flow-cookie.ts';
import * as store from './oauth-account.store.ts';
import type { SignInChallenge, SignInPipeline } from '../signin/signin-pipeline.ts';
import type { MailService } from '../mail/mail.service.ts';
import type { ActionTokens } from '../tokens/action-tokens.ts';
import { PROVIDER_FACTOR, providerFactor } from './provider-factor.ts';

/**
 * How long a password reset's review link (its mail and its confirmation page) can remove the
 * providers that were linked when the password was reset: as long as a reset mail may sit unread.
 */
export const LINK_REVIEW_TTL_SECONDS = 7 * 86_400;
/** The page of that review link (`?token=`). */
export const LINK_REVIEW_PAGE = '/auth/linked-accounts';
const LINK_REVIEW_PURPOSE = 'linked_accounts_review';

export type OAuthSignInFailure = 'AccountNotFound' | 'OAuthAccountNotLinked' | 'AccountDisabled' | 'EmailNotVerified' | 'OAuthEmailUnverified';

export type OAuthSignInResult =
  | { ok: true; user: User; session: StartedSession; isNewUser: boolean }
  /** A step of the sign-in pipeline asks for more (see signin/signin-pipeline.ts). */
  | { ok: false; reason: 'CHALLENGE'; challenge: SignInChallenge }
  | { ok: false; reason: OAuthSignInFailure };

export type LinkResult = { ok: true } | { ok: false; reason: 'IdentityInUse' | 'ProviderAlreadyLinked' | 'EmailNotVerified' };

export type UnlinkResult = { ok: true } | { ok: false; reason: 'NOT_FOUND' | 'LAST_SIGN_IN_METHOD' };

/** The providers a review link may remove (those linked when it was issued), or why it cannot. */
export type LinkReview = { ok: true; userId: string; accounts: LinkedAccount[] } | { ok: false; reason: 'INVALID_TOKEN' | 'TOKEN_EXPIRED' };

/** The review a password reset hands its mail and its confirmation page; null when nothing is linked. */
export interface IssuedLinkReview {
  /** The secret of the review link: send it, never store or log it. */
  token: string;
  /** The configured names of the linked providers, in link order. */
  providerNames: string[];
}

export type StartResult = { ok: true; authorizationUrl: URL; flow: OAuthFlow } | { ok: false; reason: 'NOT_FOUND' | 'ProviderUnreachable' };

export type CallbackResult =
  | { ok: true; identity: ProviderIdentity }
  | { ok: false; reason: ProviderFailure };

export interface ProviderSummary {
  id: string;
  name: string;
  type: 'oauth' | 'oidc';
  signinUrl: string;
  callbackUrl: string;
}

export interface LinkedAccount {
  provider: string;
  providerName: string;
  email: string | null;
  createdAt: number;
  lastUsedAt: number;
}

export type OAuthService = ReturnType<typeof createOAuthService>;

export function createOAuthService(deps: {
  db: Db;
  providers: readonly OAuthProviderConfig[];
  authUrl: string;
  authSecret: string;
  users: UserService;
  sessions: SessionService;
  audit: AuditService;
  mail: MailService;
  actionTokens: ActionTokens;
  clock: Clock;
  logger: Logger;
  allowSignup: boolean;
  /** Where every provider sign-in ends: the account checks, the registered steps, the session. */
  pipeline: SignInPipeline;
  /** For tests: providers other than the configured ones. */
  providerOverrides?: Map<string, OAuthProvider>;
}) {
  const { db, users, sessions, audit, mail, actionTokens, clock, logger, authUrl, pipeline } = deps;
  const providers = deps.providerOverrides ?? createOAuthProviders(deps.providers, authUrl, clock);
  const flowSeal = createFlowCookieSeal(deps.authSecret);

  function providerName(id: string): string {
    return providers.get(id)?.name ?? id;
  }

  /** Every sign-in of a user found (or just created) by their identity ends in the sign-in pipeline. */
  async function completeSignIn(user: User, identity: ProviderIdentity, source: AuditSource, isNewUser: boolean): Promise<OAuthSignInResult> {
    const provesEmail = identity.isEmailVerified && identity.email === user.email;
    const outcome = await pipeline.complete({ user, factor: providerFactor(identity.provider, provesEmail), source });
    if (outcome.ok) return { ...outcome, isNewUser };
    if ('challenge' in outcome) return { ok: false, reason: 'CHALLENGE', challenge: outcome.challenge };
    // CREDENTIALS_CHANGED: disabled while the provider was answering, the same as a disabled account.
    return { ok: false, reason: outcome.refusal === 'EMAIL_NOT_VERIFIED' ? 'EmailNotVerified' : 'AccountDisabled' };
  }

  async function refuse(reason: OAuthSignInFailure, identity: ProviderIdentity, source: AuditSource, userId: string | null): Promise<OAuthSignInResult> {
    await audit.record({ type: 'signin.failure', userId, source, reason: toAuditReason(reason), details: { method: PROVIDER_FACTOR, provider: identity.provider } });
    return { ok: false, reason };
  }

  /** Links `identity` to `user`; the owner is mailed, but for the identity an account was just created with. */
  async function linkWithin(trx: Db, user: Pick<User, 'id'> | User, identity: ProviderIdentity, source: AuditSource, how: 'AUTOMATIC' | 'BY_USER' | 'SIGNUP'): Promise<void> {
    const now = clock();
    const userId = user.id;
    await store.insertAccount(trx, {
      id: randomId(),
      user_id: userId,
      provider: identity.provider,
      provider_user_id: identity.providerUserId,
      email: identity.email,
      created_at: now,
      last_used_at: now,
    });
    await audit.record({ type: 'oauth.linked', userId, source, reason: how, details: { provider: identity.provider } }, { db: trx });
    if (how !== 'SIGNUP' && 'email' in user) await mail.securityNotice(trx, { user, change: 'providerLinked', provider: providerName(identity.provider), source });
  }

  /** The review behind `token`: its user, and the providers linked no later than it was issued. */
  async function openReview(token: unknown): Promise<LinkReview> {
    const checked = await actionTokens.check(db, token, LINK_REVIEW_PURPOSE);
    if (!checked.ok) return checked;
    const issuedAt = checked.expiresAt - LINK_REVIEW_TTL_SECONDS * 1000;
    // A provider linked after the reset (by the owner, with the new password) is not the review's to remove.
    const rows = (await store.findByUserId(db, checked.userId)).filter((row) => row.created_at <= issuedAt);
    return { ok: true, userId: checked.userId, accounts: rows.map(toLinkedAccount) };
  }

  function toLinkedAccount(row: { provider: string; email: string | null; created_at: number; last_used_at: number }): LinkedAccount {
    return { provider: row.provider, providerName: providerName(row.provider), email: row.email, createdAt: row.created_at, lastUsedAt: row.last_used_at };
  }

  /** `onlyLinkedBy`: only an identity linked by then; `endSessions`: with every session of the account, in the same transaction. */
  async function unlink(userId: string, provider: string, source: AuditSource, options: { onlyLinkedBy?: number; endSessions?: boolean } = {}): Promise<UnlinkResult> {
    const user = await users.findUserById(userId);
    if (user === null) return { ok: false, reason: 'NOT_FOUND' };
    return db.transaction().execute(async (trx): Promise<UnlinkResult> => {
      const credentials = await users.lockUser(trx, userId);
      if (credentials === null) return { ok: false, reason: 'NOT_FOUND' };
      const accounts = await store.findByUserId(trx, userId);
      const account = accounts.find((row) => row.provider === provider);
      if (account === undefined || (options.onlyLinkedBy !== undefined && account.created_at > options.onlyLinkedBy)) return { ok: false, reason: 'NOT_FOUND' };
      if (credentials.passwordHash === null && accounts.length === 1) return { ok: false, reason: 'LAST_SIGN_IN_METHOD' };
      await store.deleteAccount(trx, userId, provider);
      await audit.record({ type: 'oauth.unlinked', userId, source, details: { provider } }, { db: trx });
      await mail.securityNotice(trx, { user, change: 'providerUnlinked', provider: providerName(provider), source });
      if (options.endSessions === true) await sessions.endAllSessions(userId, { db: trx, source, reason: 'PROVIDER_UNLINKED' });
      return { ok: true };
    });
  }

  async function signInOrCreate(identity: ProviderIdentity, source: AuditSource, isRetry: boolean): Promise<OAuthSignInResult> {
    const account = await store.findByIdentity(db, identity.provider, identity.providerUserId);
    if (account !== undefined) {
      const user = await users.findUserById(account.user_id);
      if (user !== null) {
        await store.touchAccount(db, account.id, identity.email, clock());
        return completeSignIn(user, identity, source, false);
      }
    }
    const existing = identity.email === null ? null : await users.findUserByEmail(identity.email);
    if (existing !== null) {
      // Linked automatically only when both sides have proved the address.
      if (!identity.isEmailVerified || existing.emailVerifiedAt === null) return refuse('OAuthAccountNotLinked', identity, source, existing.id);
      try {
        await db.transaction().execute((trx) => linkWithin(trx, existing, identity, source, 'AUTOMATIC'));
      } catch (error) {
        // The same identity linked meanwhile (two tabs), or this user already has another identity
        // at this provider: start over once, and let what is stored now decide.
        if (isRetry) throw error;
        if ((await store.findByUserId(db, existing.id)).some((row) => row.provider === identity.provider && row.provider_user_id !== identity.providerUserId)) {
          return refuse('OAuthAccountNotLinked', identity, source, existing.id);
        }
        return signInOrCreate(identity, source, true);
      }
      return completeSignIn(existing, identity, source, false);
    }

    if (!deps.allowSignup) return refuse('AccountNotFound', identity, source, null);
    // A new account needs an address the provider has verified: an unverified one may be someone else's.
    if (identity.email === null || !identity.isEmailVerified) return refuse('OAuthEmailUnverified', identity, source, null);
    const created = await users.createUser(
      { email: identity.email, name: identity.name ?? identity.email.split('@')[0]!, passwordHash: null, emailVerified: true },
      {
        onCreated: async (trx, user) => {
          await audit.record({ type: 'user.created', userId: user.id, source, details: { via: 'oauth', provider: identity.provider } }, { db: trx });
          await linkWithin(trx, { id: user.id }, identity, source, 'SIGNUP');
        },
      },
    );
    if (!created.ok) {
      // The address was taken meanwhile, or the identity created by a concurrent callback.
      if (isRetry) return refuse('OAuthAccountNotLinked', identity, source, null);
      return signInOrCreate(identity, source, true);
    }
    return completeSignIn(created.user, identity, source, true);
  }

  return {
    flowSeal,

    hasProvider(id: string): boolean {
      return providers.has(id);
    },

    /** For `GET /api/auth/providers` and the sign-in page, in configuration order. */
    listProviders(): ProviderSummary[] {
      return [...providers.values()].map((provider) => ({
        id: provider.id,
        name: provider.name,
        type: provider.type,
        signinUrl: `${authUrl}/api/auth/signin/${provider.id}`,
        callbackUrl: provider.callbackUrl,
      }));
    },

    /** Where "Sign in with …" forms end up: for the pages' CSP `form-action`. */
    formActionOrigins(): string[] {
      return [...new Set([...providers.values()].flatMap((provider) => provider.authorizationOrigins()))];
    },

    /** The provider's authorization URL, and the flow to keep in the browser until it returns. */
    async startAuthorization(providerId: string, options: { callbackUrl: string; linkUserId: string | null }): Promise<StartResult> {
      const provider = providers.get(providerId);
      if (provider === undefined) return { ok: false, reason: 'NOT_FOUND' };
      try {
        const request = await provider.startAuthorization();
        return {
          ok: true,
          authorizationUrl: request.authorizationUrl,
          flow: {
            provider: provider.id,
            state: request.state,
            codeVerifier: request.codeVerifier,
            nonce: request.nonce,
            callbackUrl: options.callbackUrl,
            linkUserId: options.linkUserId,
          },
        };
      } catch (error) {
        logger.warn({ provider: providerId, err: { name: (error as Error).name, message: (error as Error).message } }, 'oauth: provider unreachable');
        return { ok: false, reason: 'ProviderUnreachable' };
      }
    },

    /**
     * Checks a callback against the flow this browser started. A callback for another provider
     * than the flow's (a mix-up attack, or two tabs) is refused before anything is sent anywhere.
     */
    async completeAuthorization(providerId: string, flow: OAuthFlow | null, query: string): Promise<CallbackResult> {
      const provider = providers.get(providerId);
      if (provider === undefined || flow === null || flow.provider !== provider.id) return { ok: false, reason: 'OAuthCallback' };
      // The redirect_uri we registered, with the provider's answer: never the request's Host header.
      const currentUrl = new URL(`${provider.callbackUrl}?${query}`);
      const result = await provider.completeAuthorization(currentUrl, flow);
      if (!result.ok) {
        logger.warn({ provider: providerId, reason: result.reason, detail: result.detail }, 'oauth: callback refused');
        return { ok: false, reason: result.reason };
      }
      return result;
    },

    /** Signs in the user of a checked identity: found, linked by verified address, or created. */
    async signInWithIdentity(identity: ProviderIdentity, source: AuditSource): Promise<OAuthSignInResult> {
      return signInOrCreate(identity, source, false);
    },

    /** Links a checked identity to a signed-in user (who started the flow from their dashboard). */
    async linkIdentity(userId: string, identity: ProviderIdentity, source: AuditSource): Promise<LinkResult> {
      // Whoever created an account with an address they do not own could otherwise attach their
      // own provider to it, and keep a way in after the real owner takes it back by a reset.
      const user = await users.findUserById(userId);
      if (user === null || user.emailVerifiedAt === null) return { ok: false, reason: 'EmailNotVerified' };
      const account = await store.findByIdentity(db, identity.provider, identity.providerUserId);
      if (account !== undefined) {
        if (account.user_id !== userId) return { ok: false, reason: 'IdentityInUse' };
        await store.touchAccount(db, account.id, identity.email, clock());
        return { ok: true };
      }
      if ((await store.findByUserId(db, userId)).some((row) => row.provider === identity.provider)) return { ok: false, reason: 'ProviderAlreadyLinked' };
      try {
        await db.transaction().execute((trx) => linkWithin(trx, user, identity, source, 'BY_USER'));
      } catch (error) {
        const now = await store.findByIdentity(db, identity.provider, identity.providerUserId);
        if (now === undefined) throw error;
        return now.user_id === userId ? { ok: true } : { ok: false, reason: 'IdentityInUse' };
      }
      return { ok: true };
    },

    /**
     * Unlinks the user's identity at `provider`, unless it is their last way to sign in (no
     * password, no other identity); the owner is mailed. The user row is written first, so two
     * concurrent unlinks of one user run one after the other and cannot each leave the other as the last.
     */
    async unlinkIdentity(userId: string, provider: string, source: AuditSource): Promise<UnlinkResult> {
      return unlink(userId, provider, source);
    },

    /**
     * In a password reset's transaction: a review link for the providers linked now, so the owner
     * can remove one a thief linked (the reset ends the thief's sessions, not a provider's way
     * in). Null when none is linked. A newer reset's review replaces an older one.
     */
    async issueLinkReview(trx: Db, userId: string): Promise<IssuedLinkReview | null> {
      const rows = await store.findByUserId(trx, userId);
      if (rows.length === 0) {
        await actionTokens.retire(trx, userId, LINK_REVIEW_PURPOSE);
        return null;
      }
      const { token } = await actionTokens.issue(trx, { userId, purpose: LINK_REVIEW_PURPOSE, ttlSeconds: LINK_REVIEW_TTL_SECONDS });
      return { token, providerNames: rows.map((row) => providerName(row.provider)) };
    },

    /** What a review link shows: the providers it may still remove. */
    openLinkReview: openReview,

    /**
     * Removes one provider with a review link. It also ends every session of the account: one
     * signed in through that provider since the reset (the thief's) must not outlive its removal.
     */
    async unlinkWithReview(token: unknown, provider: string, source: Omit<AuditSource, 'actorUserId'>): Promise<UnlinkResult | { ok: false; reason: 'INVALID_TOKEN' | 'TOKEN_EXPIRED' }> {
      const checked = await actionTokens.check(db, token, LINK_REVIEW_PURPOSE);
      if (!checked.ok) return checked;
      const issuedAt = checked.expiresAt - LINK_REVIEW_TTL_SECONDS * 1000;
      const asOwner = { ...source, actorUserId: checked.userId };
      return unlink(checked.userId, provider, asOwner, { onlyLinkedBy: issuedAt, endSessions: true });
    },

    async listLinkedAccounts(userId: string): Promise<LinkedAccount[]> {
      return (await store.findByUserId(db, userId)).map(toLinkedAccount);
    },
  };
}

/** The audit log's UPPER_SNAKE reason for a refused provider sign-in. */
function toAuditReason(reason: OAuthSignInFailure): string {
  const reasons: Record<OAuthSignInFailure, string> = {
    AccountNotFound: 'SIGNUP_DISABLED',
    OAuthAccountNotLinked: 'ACCOUNT_NOT_LINKED',
    AccountDisabled: 'ACCOUNT_DISABLED',
    EmailNotVerified: 'EMAIL_NOT_VERIFIED',
    OAuthEmailUnverified: 'PROVIDER_EMAIL_UNVERIFIED',
  };
  return reasons[reason];
}
