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

export type OAuthSignInFailure = 'AccountNotFound' | 'OAuthAccountNotLinked' | 'AccountDisabled' | 'EmailNotVerified' | 'OAuthEmailUnverified';

export type OAuthSignInResult =
  | { ok: true; user: User; session: StartedSession; isNewUser: boolean }
  /** A step of the sign-in pipeline asks for more (see signin/signin-pipeline.ts). */
  | { ok: false; reason: 'CHALLENGE'; challenge: SignInChallenge }
  | { ok: false; reason: OAuthSignInFailure };

export type LinkResult = { ok: true } | { ok: false; reason: 'IdentityInUse' | 'ProviderAlreadyLinked' | 'EmailNotVerified' };

export type UnlinkResult = { ok: true } | { ok: false; reason: 'NOT_FOUND' | 'LAST_SIGN_IN_METHOD' };

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
  clock: Clock;
  logger: Logger;
  allowSignup: boolean;
  /** Where every provider sign-in ends: the account checks, the registered steps, the session. */
  pipeline: SignInPipeline;
  /** For tests: providers other than the configured ones. */
  providerOverrides?: Map<string, OAuthProvider>;
}) {
  const { db, users, sessions, audit, clock, logger, authUrl, pipeline } = deps;
  const providers = deps.providerOverrides ?? createOAuthProviders(deps.providers, authUrl, clock);
  const flowSeal = createFlowCookieSeal(deps.authSecret);

  function providerName(id: string): string {
    return providers.get(id)?.name ?? id;
  }

  /** Every sign-in of a user found (or just created) by their identity ends in the sign-in pipeline. */
  async function completeSignIn(user: User, identity: ProviderIdentity, source: AuditSource, isNewUser: boolean): Promise<OAuthSignInResult> {
    const provesEmail = identity.isEmailVerified && identity.email === user.email;
    const outcome = await pipeline.complete({ user, factor: { kind: 'provider', provider: identity.provider, provesEmail, isNewUser }, source });
    if (outcome.ok) return { ...outcome, isNewUser };
    if ('challenge' in outcome) return { ok: false, reason: 'CHALLENGE', challenge: outcome.challenge };
    // CREDENTIALS_CHANGED: disabled while the provider was answering, the same as a disabled account.
    return { ok: false, reason: outcome.refusal === 'EMAIL_NOT_VERIFIED' ? 'EmailNotVerified' : 'AccountDisabled' };
  }

  async function refuse(reason: OAuthSignInFailure, identity: ProviderIdentity, source: AuditSource, userId: string | null): Promise<OAuthSignInResult> {
    await audit.record({ type: 'signin.failure', userId, source, reason: toAuditReason(reason), details: { provider: identity.provider } });
    return { ok: false, reason };
  }

  async function linkWithin(trx: Db, userId: string, identity: ProviderIdentity, source: AuditSource, how: 'AUTOMATIC' | 'BY_USER' | 'SIGNUP'): Promise<void> {
    const now = clock();
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
        await db.transaction().execute((trx) => linkWithin(trx, existing.id, identity, source, 'AUTOMATIC'));
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
          await linkWithin(trx, user.id, identity, source, 'SIGNUP');
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
        await db.transaction().execute((trx) => linkWithin(trx, userId, identity, source, 'BY_USER'));
      } catch (error) {
        const now = await store.findByIdentity(db, identity.provider, identity.providerUserId);
        if (now === undefined) throw error;
        return now.user_id === userId ? { ok: true } : { ok: false, reason: 'IdentityInUse' };
      }
      return { ok: true };
    },

    /**
     * Unlinks the user's identity at `provider`, unless it is their last way to sign in (no
     * password, no other identity). The user row is written first, so two concurrent unlinks of
     * one user run one after the other and cannot each leave the other as the last.
     */
    async unlinkIdentity(userId: string, provider: string, source: AuditSource): Promise<UnlinkResult> {
      return db.transaction().execute(async (trx): Promise<UnlinkResult> => {
        const credentials = await users.lockUser(trx, userId);
        if (credentials === null) return { ok: false, reason: 'NOT_FOUND' };
        const accounts = await store.findByUserId(trx, userId);
        if (!accounts.some((row) => row.provider === provider)) return { ok: false, reason: 'NOT_FOUND' };
        if (credentials.passwordHash === null && accounts.length === 1) return { ok: false, reason: 'LAST_SIGN_IN_METHOD' };
        await store.deleteAccount(trx, userId, provider);
        await audit.record({ type: 'oauth.unlinked', userId, source, details: { provider } }, { db: trx });
        return { ok: true };
      });
    },

    async listLinkedAccounts(userId: string): Promise<LinkedAccount[]> {
      const rows = await store.findByUserId(db, userId);
      return rows.map((row) => ({
        provider: row.provider,
        providerName: providerName(row.provider),
        email: row.email,
        createdAt: row.created_at,
        lastUsedAt: row.last_used_at,
      }));
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
