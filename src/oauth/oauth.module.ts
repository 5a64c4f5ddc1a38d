/** Sign-in with GitHub, Google and a generic OpenID Connect provider (a first factor), linking, and a reset's review of linked providers. */
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { oauthConfigSection } from './oauth.config.ts';
import { defineModule } from '../module.ts';
import { OAUTH_ERRORS } from './oauth.errors.ts';
import * as oauthAccounts from './migrations/0006-oauth-accounts.ts';
import { createOAuthService, type OAuthService } from './oauth.service.ts';
import { oauthRoutes } from './oauth.routes.ts';
import { linkReviewRoutes } from './link-review.routes.ts';
import { providerFactorKind } from './provider-factor.ts';
import { OAUTH_SECURITY_NOTICES } from './oauth.mail.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    oauth: OAuthService;
  }
}

/** The audit events (domain events) this module records. */
const AUDIT_EVENTS = ['oauth.linked', 'oauth.unlinked'] as const;
type OAuthAuditEvents = Record<(typeof AUDIT_EVENTS)[number], true>;
declare module '../audit/audit.service.ts' {
  interface AuditEventTypes extends OAuthAuditEvents {}
}

export const oauthModule = defineModule({
  name: 'oauth',
  openApiTags: [
    { name: 'oauth', description: 'Sign-in with GitHub, Google or an OpenID Connect provider, and linked accounts.' },
  ],
  migrations: { '0006-oauth-accounts': oauthAccounts },
  config: oauthConfigSection,
  messages: readMessages(join(import.meta.dirname, 'messages')),
  securityNotices: OAUTH_SECURITY_NOTICES,
  errors: OAUTH_ERRORS,
  auditEvents: AUDIT_EVENTS,
  provide: ({ db, config, clock, logger, services }) => ({
    oauth: createOAuthService({
      db,
      providers: config.oauth.providers,
      authUrl: config.authUrl,
      authSecret: config.authSecret,
      users: services.users,
      sessions: services.sessions,
      audit: services.audit,
      mail: services.mail,
      actionTokens: services.actionTokens,
      clock,
      logger,
      allowSignup: config.accounts.allowSignup,
      pipeline: services.signInPipeline,
    }),
  }),
  firstFactors: () => [providerFactorKind],
  // The providers' accounts linked to a user (their rows go with the user's, on cascade).
  userData: ({ oauth }) => ({ export: async (userId) => ({ linkedAccounts: await oauth.listLinkedAccounts(userId) }) }),
  routes: [
    {
      scope: 'browser',
      register: (app, { services, csrf, config, clock }) =>
        app.register(oauthRoutes, { oauth: services.oauth, sessions: services.sessions, csrf, config, clock, limits: services.limits }),
    },
    { scope: 'browser', register: (app, { services }) => app.register(linkReviewRoutes, { oauth: services.oauth, limits: services.limits }) },
  ],
});
