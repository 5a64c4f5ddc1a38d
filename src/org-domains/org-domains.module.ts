/**
 * Organization domains: an organization claims an e-mail domain and proves it holds it, by a DNS
 * TXT record (`_gatehouse-challenge.<domain>`, asked of the system's resolver or DOMAINS_DNS_SERVER)
 * or a well-known file (`/.well-known/gatehouse-domain-verification`, fetched under the outbound
 * rules). A domain is verified by one organization at most. Its service answers discovery for the
 * modules below it (`orgDomains.findVerified(domain)`, `orgDomains.findVerifiedForEmail(email)`:
 * enterprise sign-in finds an address's organization this way). Managed by the organization's
 * OWNERs and ADMINs on its page and over its API, by administrators over the admin API, and with
 * `gatehouse domains`; every change is audited and public (webhooks). See
 * docs/guides/organization-domains.md.
 */
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { defineModule } from '../module.ts';
import * as table from './migrations/20261202-org-domains-table.ts';
import { orgDomainsConfigSection } from './org-domains.config.ts';
import { ORG_DOMAINS_ERRORS } from './org-domains.errors.ts';
import type { OrgDomainsService } from './org-domains.service.ts';
import { deferredService } from '../lib/deferred-service.ts';
import { orgDomainRoutes } from './org-domains.routes.ts';
import { orgDomainPageRoutes, orgDomainPageSections } from './org-domains-pages.ts';
import { ORG_DOMAINS_PUBLIC_EVENTS } from './org-domains.public-events.ts';
import { cli } from './org-domains.cli.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    orgDomains: OrgDomainsService;
  }
}

const AUDIT_EVENTS = ['org_domain.added', 'org_domain.verified', 'org_domain.verification_failed', 'org_domain.removed'] as const;
type OrgDomainsAuditEvents = Record<(typeof AUDIT_EVENTS)[number], true>;
declare module '../audit/audit.service.ts' {
  interface AuditEventTypes extends OrgDomainsAuditEvents {}
}

export const orgDomainsModule = defineModule({
  name: 'org-domains',
  cli,
  config: orgDomainsConfigSection,
  messages: readMessages(join(import.meta.dirname, 'messages')),
  migrations: { '20261202-org-domains-table': table },
  errors: ORG_DOMAINS_ERRORS,
  auditEvents: AUDIT_EVENTS,
  publicEvents: ORG_DOMAINS_PUBLIC_EVENTS,
  // The service, its store and the domain checks are imported at its first call (lib/deferred-service.ts):
  // enterprise sign-in's discovery (the SSO module's enforcement step asks it at every sign-in but
  // an ADMIN's or SSO's own) and the domain pages are what reach it.
  provide({ db, clock, config, services }) {
    const { audit, organizations, rateLimiters } = services;
    return {
      orgDomains: deferredService(async () => {
        const [{ createOrgDomainsService }, { createDomainChecker }] = await Promise.all([import('./org-domains.service.ts'), import('./domain-checks.ts')]);
        return createOrgDomainsService({ db, clock, audit, organizations, rateLimiters, checker: createDomainChecker(config.orgDomains), config: config.orgDomains });
      }),
    };
  },
  pageSections: (services) => orgDomainPageSections(services),
  routes: [
    { scope: 'api', register: async (app, { services }) => void (await app.register(orgDomainRoutes, { orgDomains: services.orgDomains })) },
    { scope: 'browser', register: async (app, { services }) => void (await app.register(orgDomainPageRoutes, { orgDomains: services.orgDomains })) },
  ],
});
