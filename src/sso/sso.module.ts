/**
 * Enterprise single sign-on per organization: SAML 2.0 (Gatehouse as service provider, on
 * @node-saml/node-saml) and OpenID Connect (Gatehouse as relying party to the organization's own
 * provider, on openid-client) connections; attribute mapping, group → role rules, just-in-time
 * accounts and memberships; discovery by verified domain and enforcement. See docs/guides/sso.md.
 */
import { defineModule } from '../module.ts';
import * as tables from './migrations/20261129-sso-tables.ts';
import * as setupLinks from './migrations/20261130-sso-setup-links.ts';
import { SSO_ERRORS } from './sso.errors.ts';
import { ssoConfigSection } from './sso.config.ts';
import type { SsoService } from './sso.service.ts';
import { deferredService } from '../lib/deferred-service.ts';
import { ssoRoutes } from './sso.routes.ts';
import { ssoAdminRoutes } from './sso-admin.routes.ts';
import { ssoSetupRoutes } from './sso-setup.routes.ts';
import { ssoSetupPageRoutes } from './sso-setup-pages.routes.ts';
import { ssoSetupLinkAdminPageRoutes, ssoSetupLinkPageRoutes, ssoSetupLinkSections } from './sso-setup-links-pages.ts';
import { ssoPageRoutes, ssoPageSections } from './sso-pages.routes.ts';
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { ssoFactorKind } from './sso-factor.ts';
import { ssoEnforcementStep } from './sso-enforcement.ts';
import { SSO_COUNTED_EVENTS, SSO_COUNTERS } from './sso.metrics.ts';
import { cli } from './sso.cli.ts';
import { SCIM_BASE_PATH } from '../scim/scim.routes.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    sso: SsoService;
  }
}

const AUDIT_EVENTS = [
  'sso.connection_created',
  'sso.connection_updated',
  'sso.connection_deleted',
  'sso.signin_succeeded',
  'sso.signin_failed',
  'sso.identity_linked',
  'sso.setup_link_created',
  'sso.setup_link_revoked',
  'sso.setup_link_opened',
  'sso.setup_test_completed',
] as const;
type SsoAuditEvents = Record<(typeof AUDIT_EVENTS)[number], true>;
declare module '../audit/audit.service.ts' {
  interface AuditEventTypes extends SsoAuditEvents {}
}

export const ssoModule = defineModule({
  name: 'sso',
  openApiTags: [{ name: 'sso', description: 'Enterprise single sign-on: SAML and OpenID Connect connections per organization.' }],
  migrations: { '20261129-sso-tables': tables, '20261130-sso-setup-links': setupLinks },
  config: ssoConfigSection,
  cli,
  messages: readMessages(join(import.meta.dirname, 'messages')),
  errors: SSO_ERRORS,
  auditEvents: AUDIT_EVENTS,
  counters: SSO_COUNTERS,
  countedEvents: SSO_COUNTED_EVENTS,
  // The service (connections, the SAML and OIDC libraries' code, sign-in, setup links) is imported
  // at its first call (lib/deferred-service.ts). The sign-in page's section asks it whether any
  // connection exists, and the enforcement step asks it at every sign-in but an ADMIN's or SSO's
  // own (and through it the verified domains' service): an instance loads them when the first
  // sign-in page is shown, not at start.
  provide: ({ db, config, clock, services }) => {
    // Taken now, not in the loader: a service no module above provides stops the start (services.ts).
    // The verified-domains module's discovery: org-domains, above this one in the list.
    const { audit, users, organizations, signInPipeline: pipeline, orgDomains } = services;
    return {
      sso: deferredService(async () => (await import('./sso.service.ts')).createSsoService({
        db,
        clock,
        authUrl: config.authUrl,
        authSecret: config.authSecret,
        audit,
        users,
        organizations,
        pipeline,
        policy: { allowHttp: config.sso.allowHttp, allowPrivate: config.sso.allowPrivateTargets, allowPrivateSetting: 'SSO_ALLOW_PRIVATE_TARGETS' },
        allowHttp: config.sso.allowHttp,
        domains: () => orgDomains,
      })),
    };
  },
  firstFactors: ({ sso }) => [ssoFactorKind((id) => sso.connections.get(id))],
  signInSteps: ({ sso }) => [ssoEnforcementStep((email) => sso.isEnforcedFor(email))],
  userData: ({ sso }) => ({
    export: async (userId) => {
      const ssoIdentities = await sso.identitiesOf(userId);
      return ssoIdentities.length === 0 ? null : { ssoIdentities };
    },
  }),
  pageSections: ({ sso }) => [...ssoPageSections(sso), ...ssoSetupLinkSections(sso)],
  routes: [
    {
      scope: 'browser',
      register: (app, { services, csrf, config, clock }) => app.register(ssoRoutes, { sso: services.sso, sessions: services.sessions, csrf, config, clock, limits: services.limits }),
    },
    { scope: 'browser', register: (app, { services, config }) => app.register(ssoPageRoutes, { sso: services.sso, organizations: services.organizations, config }) },
    { scope: 'api', register: (app, { services, config }) => app.register(ssoAdminRoutes, { sso: services.sso, organizations: services.organizations, authUrl: config.authUrl }) },
    { scope: 'api', register: (app, { services }) => app.register(ssoSetupRoutes, { sso: services.sso }) },
    { scope: 'browser', register: (app, { services }) => app.register(ssoSetupLinkPageRoutes, { sso: services.sso }) },
    { scope: 'browser', register: (app, { services, adminNav }) => app.register(ssoSetupLinkAdminPageRoutes, { sso: services.sso, adminNav }) },
    {
      scope: 'browser',
      // The setup link's pages use the verified-domains and SCIM modules' services (both above this one).
      register: (app, { services, config, clock }) =>
        app.register(ssoSetupPageRoutes, {
          sso: services.sso,
          organizations: services.organizations,
          orgDomains: services.orgDomains,
          scimTokens: services.scimTokens,
          limiter: services.rateLimiters.create('sso-setup', config.sso.setupPerIp),
          config,
          clock,
          scimBasePath: SCIM_BASE_PATH,
        }),
    },
  ],
});
