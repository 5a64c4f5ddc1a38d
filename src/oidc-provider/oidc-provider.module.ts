/**
 * "Sign in with Gatehouse": an OpenID Provider and OAuth 2.1 authorization server for other apps,
 * on oidc-provider (see provider.ts for the configuration and oidc.routes.ts for how it is served).
 * Clients are registered by the oidc-clients module; this one issues their tokens.
 */
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { DEFAULT_BRAND } from '../web/brand.ts';
import { defineModule } from '../module.ts';
import type { AuditEventType } from '../audit/audit.service.ts';
import { createPeriodicJob } from '../lib/periodic-job.ts';
import { oidcProviderConfigSection } from './oidc-provider.config.ts';
import * as payloads from './migrations/20261124-oidc-provider-payloads.ts';
import * as consents from './migrations/20261124-oidc-provider-consents.ts';
import * as backchannelLogout from './migrations/20261129-oidc-provider-backchannel-logout.ts';
import * as logoutGrants from './migrations/20261129-oidc-provider-logout-grants.ts';
import { deleteExpiredOidcPayloads } from './oidc.store.ts';
import { createOidcProviderService, type OidcProviderService } from './oidc-provider.service.ts';
import { createOidcPageRenderer, providerPageLanguage } from './provider-pages.ts';
import { interactionRoutes, providerBridge } from './oidc.routes.ts';
import { adminConnectedAppRoutes } from './connected-apps.routes.ts';
import { connectedAppViews } from './connected-apps.ts';
import { interactionAskingApp } from './asking-app.ts';
import * as appUses from './migrations/20261201-oidc-provider-app-uses.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    oidcProvider: OidcProviderService;
  }
}

/** The domain events after which every app the user signed in to must have them sign in again. */
const ACCESS_ENDING_EVENTS = [
  // All of their sessions ended; the account disabled or deleted.
  'user.sessions_ended', 'user.disabled', 'user.deleted',
  // A new password, by a reset or a change (even one that ended no other session: whoever had the
  // old password may have signed out first, keeping only an app's refresh token).
  'password.reset', 'password.changed',
  // Second factors (the mfa and passkeys modules'): one added or removed, recovery codes renewed,
  // all reset by an administrator. A passkey renamed changes nothing.
  'mfa.totp_enabled', 'mfa.totp_disabled', 'mfa.recovery_codes_renewed', 'mfa.reset', 'passkey.added', 'passkey.removed',
] as const satisfies readonly AuditEventType[];

/** The audit events (domain events) this module records. */
const AUDIT_EVENTS = ['oidc_app.disconnected'] as const;
type OidcProviderAuditEvents = Record<(typeof AUDIT_EVENTS)[number], true>;
declare module '../audit/audit.service.ts' {
  interface AuditEventTypes extends OidcProviderAuditEvents {}
}

/** Rows deleted per housekeeping statement, and statements per run at most. */
const PURGE_BATCH = 1_000;
const PURGE_BATCHES_PER_RUN = 50;

export const oidcProviderModule = defineModule({
  name: 'oidc-provider',
  messages: readMessages(join(import.meta.dirname, 'messages')),
  config: oidcProviderConfigSection,
  migrations: { '20261124-oidc-provider-payloads': payloads, '20261124-oidc-provider-consents': consents, '20261129-oidc-provider-backchannel-logout': backchannelLogout, '20261129-oidc-provider-logout-grants': logoutGrants, '20261201-oidc-provider-app-uses': appUses },
  auditEvents: AUDIT_EVENTS,
  provide({ db, clock, config, services, logger, storage }) {
    const pages = createOidcPageRenderer();
    return {
      oidcProvider: createOidcProviderService({
        db,
        clock,
        config,
        keys: services.keys,
        users: services.users,
        sessions: services.sessions,
        clients: services.oidcClients,
        audit: services.audit,
        pages,
        // Its own pages (logout, device, errors) answer in the request's language, in the deployment's brand.
        pageLanguage: providerPageLanguage(services.translations, services.brand?.page ?? DEFAULT_BRAND),
        logger,
        isPostgres: storage.dialect === 'postgres',
      }),
    };
  },
  // Expired codes, tokens, sessions and interactions are deleted in batches now and then (reads
  // already ignore them).
  jobs: ({ oidcProvider }, { db, clock, logger }) => [
    // Logout tokens owed to apps (backchannel-logout.ts).
    oidcProvider.backchannel.worker,
    // Self-registered clients nobody used (open registration).
    oidcProvider.registrationExpiry,
    createPeriodicJob({
      name: 'oidc-provider-purge',
      intervalMs: 10 * 60_000,
      firstDelayMs: 60_000,
      logger,
      run: async () => {
        let deleted = 0;
        for (let batch = 0; batch < PURGE_BATCHES_PER_RUN; batch += 1) {
          const count = await deleteExpiredOidcPayloads(db, clock(), PURGE_BATCH);
          deleted += count;
          if (count < PURGE_BATCH) break;
        }
        for (let batch = 0; batch < PURGE_BATCHES_PER_RUN; batch += 1) {
          const count = await oidcProvider.backchannel.purgeLinks(PURGE_BATCH);
          deleted += count;
          if (count < PURGE_BATCH) break;
        }
        return deleted;
      },
    }),
  ],
  // What the user's apps hold (grants, refresh tokens, provider sessions) ends with the change
  // that calls for it, in its transaction.
  subscriptions: ({ oidcProvider }) => [
    {
      types: ACCESS_ENDING_EVENTS,
      async handle(event, db) {
        if (event.userId === null) return;
        // The apps signed in from the sessions that ended hear of it (back-channel logout), then their grants end.
        const kept = event.type === 'user.sessions_ended' ? event.details?.keptSessionId : undefined;
        await oidcProvider.backchannel.ended(db, { userId: event.userId, ...(typeof kept === 'string' && { keptSessionId: kept }) });
        await oidcProvider.endAccess(event.userId, db);
      },
    },
    {
      // One session ended (signed out, replaced, ended from another, its refresh token reused): the
      // apps signed in from it hear of it, and their grants from it end.
      types: ['signout', 'session.ended', 'refresh.reuse_detected'] as const satisfies readonly AuditEventType[],
      async handle(event, db) {
        const sessionId = event.details?.sessionId;
        if (typeof sessionId === 'string') await oidcProvider.backchannel.ended(db, { sessionId });
      },
    },
  ],
  // The apps a user allowed (their consents go with the user's row; the grants end by the subscription to `user.deleted` above).
  userData: ({ oidcProvider }) => ({ export: async (userId) => ({ connectedApps: await oidcProvider.connectedApps(userId) }) }),
  // "To continue to <app>" on the sign-in pages an authorization request sends people to.
  askingApps: ({ oidcProvider }) => [interactionAskingApp(oidcProvider)],
  // The person's apps on their dashboard; an administrator sees the same on the user's page, and may revoke one.
  pageSections: ({ oidcProvider }) => {
    const pages = createOidcPageRenderer();
    return [
      {
        page: 'dashboard',
        group: 'apps',
        async render({ userId, page }) {
          if (userId === null) return null;
          const apps = connectedAppViews(await oidcProvider.connectedApps(userId), page.i18n);
          return pages.html(page, 'oidc-connected-apps', { title: '', apps });
        },
      },
      {
        page: 'admin-user',
        async render({ userId, page }) {
          if (userId === null) return null;
          const apps = connectedAppViews(await oidcProvider.connectedApps(userId), page.i18n);
          return pages.html(page, 'oidc-connected-apps-admin', { title: '', userId, apps });
        },
      },
    ];
  },
  routes: [
    {
      scope: 'api',
      register: (app, { services, config }) => app.register(providerBridge, { oidc: services.oidcProvider, config, rateLimiters: services.rateLimiters }),
    },
    {
      scope: 'browser',
      register: (app, { services, config, clock }) =>
        app.register(interactionRoutes, {
          oidc: services.oidcProvider,
          clients: services.oidcClients,
          users: services.users,
          config,
          clock,
          pages: createOidcPageRenderer(),
        }),
    },
    { scope: 'browser', register: (app, { services }) => app.register(adminConnectedAppRoutes, { oidc: services.oidcProvider, users: services.users }) },
  ],
});
