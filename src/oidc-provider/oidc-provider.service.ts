/**
 * The OpenID Provider as the rest of Gatehouse sees it: the provider instance of the current keys
 * (rebuilt when a rotation changes them: its state is all in storage, so nothing is lost), what
 * a user's connected apps are, and how a user's access given to apps ends.
 */
import { documentClientHost, documentClientName } from './cimd.ts';
import { createBackchannelLogout } from './backchannel-logout.ts';
import type { IncomingMessage } from 'node:http';
import type Provider from 'oidc-provider';
import type { Config } from '../config.ts';
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import type { SigningKeys } from '../sessions/signing-keys.ts';
import type { RequestAuth } from '../sessions/request-authentication.ts';
import type { SessionService } from '../sessions/session.service.ts';
import type { UserService } from '../users/user.service.ts';
import type { OidcClientsService } from '../oidc-clients/clients.service.ts';
import { clientSecretMatches } from '../oidc-clients/client-credentials.ts';
import { SYSTEM_SOURCE, type AuditService, type AuditSource } from '../audit/audit.service.ts';
import { createAdapterFactory } from './oidc.adapter.ts';
import { CLOCK_TOLERANCE_SECONDS, type OidcProviderConfig } from './oidc-provider.config.ts';
import { createPeriodicJob } from '../lib/periodic-job.ts';
import { deleteOidcPayloadsByAccountId, deleteOidcPayloadsByGrantId, destroyOidcPayload, listGrantsByAccount } from './oidc.store.ts';
import { findConsent, forgetConsent, rememberConsent, type Consent } from './consents.store.ts';
import { forgetAppUse, recordAppUse } from './app-uses.store.ts';
import { listConnectedApps, type ConnectedApp, type ExchangeRecord } from './connected-apps.ts';
import { createProviderPages, type OidcPageRenderer, type ProviderPageLanguage } from './provider-pages.ts';

/** What the bridge knows of a request before the provider runs (keyed by the Node request). */
interface RequestState {
  auth: RequestAuth | null;
  /** The Gatehouse sign-out an RP-initiated logout started; the bridge waits for it. */
  signingOut?: Promise<unknown>;
  /** The back-channel logout link an authorization records; the bridge waits for it. */
  linking?: Promise<unknown>;
  /** The client's last use (and the person's, connected apps) being recorded; the bridge waits for it. */
  recordingUse?: Promise<unknown>;
}

export type OidcProviderService = ReturnType<typeof createOidcProviderService>;

/** A client as the consent page and the dashboard show it. */
export interface DescribedClient {
  clientId: string;
  name: string;
  isFirstParty: boolean;
  /** Set for a client named by its metadata document: the host that vouches for it. */
  host: string | null;
}

/** The person's token exchanges read for their connected apps, the most recent at most. */
const RECENT_EXCHANGES = 100;

/** Self-registered clients expired per run of the job at most (the next run goes on). */
const EXPIRY_BATCH = 500;

/**
 * The client a dynamic registration (RFC 7591) asked for, stored by the registry's rules (and, in
 * open mode, under its cap and what open mode refuses); refused with the provider's error.
 */
async function registerClient(clients: OidcClientsService, settings: OidcProviderConfig, clientId: string, metadata: Record<string, unknown>): Promise<void> {
  const strings = (value: unknown): string[] | undefined => (Array.isArray(value) && value.every((item) => typeof item === 'string') ? value : undefined);
  // The registry keeps a client's keys by their URL only (rotation is the client's to do there).
  const keysRefusal = metadata.jwks !== undefined ? 'jwks by value is not kept: publish the keys and register their jwks_uri' : metadata.token_endpoint_auth_method === 'private_key_jwt' && typeof metadata.jwks_uri !== 'string' ? 'private_key_jwt needs a jwks_uri' : null;
  if (keysRefusal !== null) {
    const { errors } = await import('oidc-provider');
    throw new errors.InvalidClientMetadata(keysRefusal);
  }
  const isOpen = settings.registrationMode === 'open';
  const result = await clients.createRegistered(
    {
      name: typeof metadata.client_name === 'string' && metadata.client_name.trim() !== '' ? metadata.client_name : 'Unnamed app',
      redirectUris: strings(metadata.redirect_uris) ?? [],
      postLogoutRedirectUris: strings(metadata.post_logout_redirect_uris) ?? [],
      grantTypes: strings(metadata.grant_types) ?? ['authorization_code'],
      isPublic: metadata.token_endpoint_auth_method === 'none',
      ...(typeof metadata.id_token_signed_response_alg === 'string' && { idTokenSignedResponseAlg: metadata.id_token_signed_response_alg }),
      ...(typeof metadata.backchannel_logout_uri === 'string' && { backchannelLogoutUri: metadata.backchannel_logout_uri }),
      ...(metadata.dpop_bound_access_tokens === true && { dpopBoundAccessTokens: true }),
      ...(metadata.token_endpoint_auth_method === 'private_key_jwt' && typeof metadata.jwks_uri === 'string' && { jwksUri: metadata.jwks_uri }),
    },
    { clientId, clientSecret: typeof metadata.client_secret === 'string' ? metadata.client_secret : undefined },
    { ...SYSTEM_SOURCE, via: 'registration' },
    isOpen ? { maxClients: settings.registrationMaxClients } : undefined,
  );
  if (result.ok) return;
  // Loaded already: only the provider calls this.
  const { errors } = await import('oidc-provider');
  if (result.reason === 'REGISTRATION_FULL') {
    // RFC 7591 §3.2.2's shape; 403: the request is fine, the server will not take more now (it
    // will once unused registrations expire). Nothing else waits on this.
    const full = new errors.AccessDenied('registration is closed for now: this server keeps no more self-registered clients; try again later or ask its operator');
    Object.assign(full, { status: 403, statusCode: 403 });
    throw full;
  }
  const description = result.problems.map((problem) => `${problem.field}: ${problem.message}`).join('; ');
  const isAboutUris = result.problems.some((problem) => /^(redirectUris|postLogoutRedirectUris)\b/.test(problem.field));
  throw isAboutUris ? new errors.InvalidRedirectUri(description) : new errors.InvalidClientMetadata(description);
}

export function createOidcProviderService(deps: {
  db: Db;
  clock: Clock;
  config: Config;
  keys: SigningKeys;
  users: UserService;
  sessions: SessionService;
  clients: OidcClientsService;
  audit: AuditService;
  pages: OidcPageRenderer;
  /** The language and brand of a page the provider renders itself, from its request. */
  pageLanguage: ProviderPageLanguage;
  logger: Logger;
  isPostgres: boolean;
}) {
  const { db, clock, config, keys, sessions, clients, audit, logger } = deps;
  const requests = new WeakMap<IncomingMessage, RequestState>();
  const backchannel = createBackchannelLogout({
    db,
    isPostgres: deps.isPostgres,
    clock,
    logger,
    policy: { allowHttp: config.oidcProvider.outbound.allowHttp, allowPrivate: config.oidcProvider.outbound.allowPrivateTargets, allowPrivateSetting: 'OIDC_PROVIDER_ALLOW_PRIVATE_TARGETS' },
    // A link lives as long as the app's refresh token could.
    linkTtlMs: config.oidcProvider.refreshTokenTtlSeconds * 1000,
    provider: async () => (await current()).provider,
    backchannelUri: async (clientId) => (await clients.show(clientId))?.backchannelLogoutUri ?? null,
  });
  const adapter = createAdapterFactory({
    db,
    clock,
    clockToleranceSeconds: CLOCK_TOLERANCE_SECONDS,
    clients: {
      find: (clientId) => clients.providerMetadata(clientId),
      register: (clientId, metadata) => registerClient(clients, config.oidcProvider, clientId, metadata),
    },
  });
  const providerPages = createProviderPages(deps.pages, deps.pageLanguage);

  /** The person's recent token exchanges (audited by the registry, token-exchange.ts), newest first. */
  async function recentExchanges(userId: string): Promise<ExchangeRecord[]> {
    const { events } = await audit.listEvents({ userId, type: 'oidc_client.token_exchanged', limit: RECENT_EXCHANGES });
    const strings = (value: unknown): string[] | null => (Array.isArray(value) && value.every((item) => typeof item === 'string') ? value : null);
    return events.flatMap(({ details, createdAt }) => {
      const { clientId, subjectClientId, toAudience } = details ?? {};
      const priorActors = strings(details?.priorActors);
      return typeof clientId === 'string' && typeof subjectClientId === 'string' && typeof toAudience === 'string' && priorActors !== null ? [{ clientId, subjectClientId, toAudience, priorActors, at: createdAt }] : [];
    });
  }
  type Built = { provider: Provider; handler: ReturnType<Provider['callback']> };
  let built: Promise<Built> | undefined;
  let builtFor: string | undefined;

  /**
   * oidc-provider (and Koa under it: some 45 MB of resident memory) is loaded when the first
   * request reaches the provider, not at start: an instance no app signs in through never pays it.
   */
  async function build(): Promise<Built> {
    const { createProvider } = await import('./provider.ts');
    const provider = createProvider({
      config,
      keys,
      adapter,
      users: deps.users,
      pages: providerPages,
      logger,
      gatehouseSession: (req) => requests.get(req)?.auth,
      clientSecretMatches,
      exchange: clients,
      onLogout(req) {
        const state = requests.get(req);
        if (state?.auth) state.signingOut = sessions.signOut(state.auth.userId, state.auth.sessionId);
      },
      // The client's last use (the registry's, throttled) and, for a person, theirs (connected apps).
      onClientUsed(req, clientId, accountId) {
        const recording = Promise.all([
          clients.recordUse(clientId).catch((error: unknown) => {
            logger.error({ err: error, clientId }, 'the last use of a client was not recorded');
          }),
          accountId === null
            ? undefined
            : recordAppUse(db, accountId, clientId, clock()).catch((error: unknown) => {
                logger.error({ err: error, clientId }, "a person's last use of an app was not recorded");
              }),
        ]);
        const state = requests.get(req);
        if (state !== undefined) state.recordingUse = recording;
      },
      onAuthorized(req, authorized) {
        const auth = requests.get(req)?.auth;
        if (auth === null || auth === undefined || auth.userId !== authorized.accountId) return;
        const linking = backchannel.link({ sessionId: auth.sessionId, ...authorized }).catch((error: unknown) => {
          logger.error({ err: error, clientId: authorized.clientId }, 'back-channel logout link not recorded; that app will not hear of this sign-out');
        });
        const state = requests.get(req);
        if (state !== undefined) state.linking = linking;
      },
    });
    // Before the provider answers: an RP-initiated logout's sign-out has ended the Gatehouse
    // session; an authorization's link for back-channel logout is stored.
    provider.use(async (ctx, next) => {
      await next();
      await requests.get(ctx.req)?.signingOut;
      await requests.get(ctx.req)?.linking;
      await requests.get(ctx.req)?.recordingUse;
    });
    return { provider, handler: provider.callback() };
  }

  /** The provider for the keys loaded now (made again after a rotation); a failed build is tried again next time. */
  function current(): Promise<Built> {
    const version = keys.version();
    if (built === undefined || builtFor !== version) {
      builtFor = version;
      const building = build();
      built = building;
      building.catch(() => {
        if (built === building) built = undefined;
      });
    }
    return built;
  }

  /**
   * Clients that registered themselves in open mode and that no person let in (no code or token
   * issued) within OIDC_PROVIDER_REGISTRATION_UNUSED_TTL are deleted, audited `oidc_client.expired`.
   */
  const registrationExpiry = createPeriodicJob({
    name: 'oidc-registration-expiry',
    intervalMs: 15 * 60_000,
    firstDelayMs: 60_000,
    logger,
    run: async () => {
      const createdBefore = clock() - config.oidcProvider.registrationUnusedTtlSeconds * 1000;
      let expired = 0;
      for (;;) {
        const count = await clients.expireUnused(createdBefore, EXPIRY_BATCH);
        expired += count;
        if (count < EXPIRY_BATCH || registrationExpiry.isStopped) break;
      }
      if (expired > 0) logger.info({ expired }, 'self-registered clients never used expired');
      return expired;
    },
  });

  return {
    /** Deletes self-registered clients never used within their time (a module job; `runOnce` in tests). */
    registrationExpiry,

    /** Logout tokens to the apps a person signed in to, when their Gatehouse session ends (backchannel-logout.ts). */
    backchannel,

    /** The provider for the keys loaded now. */
    provider: async (): Promise<Provider> => (await current()).provider,

    /** Hands a request to the provider with the Gatehouse session it carries (null: none). */
    async handle(req: IncomingMessage, res: import('node:http').ServerResponse, auth: RequestAuth | null): Promise<void> {
      const state: RequestState = { auth };
      requests.set(req, state);
      await (await current()).handler(req, res);
    },

    async findConsent(userId: string, clientId: string): Promise<Consent | undefined> {
      return findConsent(db, userId, clientId);
    },

    async rememberConsent(userId: string, consent: Consent): Promise<void> {
      await rememberConsent(db, userId, consent, clock());
    },

    /**
     * A client as people are shown it: a registered one by its registration; one named by its
     * metadata document (an https client_id, cimd.ts) by the document's `client_name` and, always,
     * its host, never first-party. Null for an unknown client or a document that cannot be had now.
     */
    async describeClient(clientId: string): Promise<DescribedClient | null> {
      const registered = await clients.show(clientId);
      if (registered !== null) return { clientId, name: registered.name, isFirstParty: registered.isFirstParty, host: null };
      const host = documentClientHost(clientId);
      if (host === null || !config.oidcProvider.cimd.enabled) return null;
      const found = await (await current()).provider.Client.find(clientId).catch(() => undefined);
      if (found === undefined) return null;
      const name = documentClientName(found.clientName) ?? host;
      return { clientId, name, isFirstParty: false, host };
    },

    /** The apps the user gave access to (a live grant or a remembered consent), as connected-apps.ts tells them. */
    async connectedApps(userId: string): Promise<ConnectedApp[]> {
      return listConnectedApps({ db, clients, now: clock(), recentExchanges }, userId);
    },

    /**
     * Disconnects an app: its remembered consent, its grants and every token and code issued under
     * them (refresh tokens included), and its recorded last use; audited `oidc_app.disconnected`
     * with `source` (the person, or the administrator who did it). False when nothing was there.
     */
    async disconnect(userId: string, clientId: string, source: AuditSource): Promise<boolean> {
      let found = false;
      await db.transaction().execute(async (trx) => {
        found = await forgetConsent(trx, userId, clientId);
        for (const row of await listGrantsByAccount(trx, userId)) {
          const grant = JSON.parse(row.payload) as { clientId?: string };
          if (grant.clientId !== clientId) continue;
          found = true;
          await deleteOidcPayloadsByGrantId(trx, row.id);
          await destroyOidcPayload(trx, 'Grant', row.id);
        }
        await forgetAppUse(trx, userId, clientId);
        if (found) await audit.record({ type: 'oidc_app.disconnected', userId, source, details: { clientId } }, { db: trx });
      });
      if (found) logger.info({ userId, clientId, by: source.actorUserId === userId ? 'user' : 'admin' }, 'app disconnected');
      return found;
    },

    /** Ends everything the user's apps hold (provider sessions, grants, codes, tokens), in `within` (an event's transaction). */
    async endAccess(userId: string, within: Db = db): Promise<number> {
      return deleteOidcPayloadsByAccountId(within, userId);
    },
  };
}
