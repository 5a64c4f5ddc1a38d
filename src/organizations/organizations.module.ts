/**
 * Organizations: people grouped with roles (OWNER, ADMIN, MEMBER, custom ones), invited by e-mail,
 * and the organization a session has made active, whose id, slug and the user's role every access
 * token of that session carries (`org`), for apps to authorize by (gatehouse-protect's
 * `organizationRoles` rule). Its API (`/api/organizations`), the dashboard's section, the
 * organization and invitation pages, the admin API and pages, and the `gatehouse orgs` commands
 * all use the `organizations` service. See docs/guides/organizations.md.
 */
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { defineModule } from '../module.ts';
import { cli } from './organizations.cli.ts';
import { createPeriodicJob } from '../lib/periodic-job.ts';
import { ORGANIZATIONS_ERRORS } from './organizations.errors.ts';
import { organizationsConfigSection } from './organizations.config.ts';
import * as tables from './migrations/20261127-organizations-tables.ts';
import * as search from './migrations/20261204-organizations-search.ts';
import { createOrganizationsService, type OrganizationsService } from './organizations.service.ts';
import { organizationRoutes } from './organizations.routes.ts';
import { adminOrganizationRoutes } from './organizations-admin.routes.ts';
import { organizationPageRoutes, organizationPageSections } from './organizations-pages.routes.ts';
import { ADMIN_ORGANIZATIONS_PAGE, adminOrganizationPageRoutes } from './organizations-admin-pages.routes.ts';
import { organizationsUserData } from './organizations.user-data.ts';
import { ORGANIZATIONS_PUBLIC_EVENTS } from './organizations.public-events.ts';
import { organizationsMail } from './organizations.mail.ts';
import { activeOrganizationClaim } from './organizations.store.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    organizations: OrganizationsService;
  }
}

/**
 * The audit events (domain events) this module records: ids, slugs and roles, never an invited
 * address or a token. A webhooks module maps them 1:1 to outbound webhook types: never rename one.
 */
const AUDIT_EVENTS = [
  'organization.created',
  'organization.updated',
  'organization.deleted',
  'organization.member.added',
  'organization.member.removed',
  'organization.member.updated',
  'organization.ownership_transferred',
  'organization.invitation.created',
  'organization.invitation.revoked',
  'organization.invitation.accepted',
  'organization.invitation.declined',
] as const;
type OrganizationsAuditEvents = Record<(typeof AUDIT_EVENTS)[number], true>;
declare module '../audit/audit.service.ts' {
  interface AuditEventTypes extends OrganizationsAuditEvents {}
}

export const organizationsModule = defineModule({
  name: 'organizations',
  cli,
  adminNav: [{ path: ADMIN_ORGANIZATIONS_PAGE, labelKey: 'organizations.adminNav', section: 'organizations', order: 30 }],
  openApiTags: [
    { name: 'organizations', description: "Organizations, their members, roles and invitations, and the session's active organization." },
  ],
  messages: readMessages(join(import.meta.dirname, 'messages')),
  mailTemplates: () => organizationsMail,
  config: organizationsConfigSection,
  migrations: { '20261127-organizations-tables': tables, '20261204-organizations-search': search },
  errors: ORGANIZATIONS_ERRORS,
  auditEvents: AUDIT_EVENTS,
  publicEvents: ORGANIZATIONS_PUBLIC_EVENTS,
  provide({ db, storage, clock, logger, config, services }) {
    const { audit, mail, rateLimiters, users } = services;
    return {
      organizations: createOrganizationsService({
        db,
        isPostgres: storage.dialect === 'postgres',
        clock,
        logger,
        audit,
        mail,
        users,
        config: config.organizations,
        invitationLimiters: {
          perOrganization: rateLimiters.create('organization-invitations', config.organizations.invitationsPerOrganization),
          perInviter: rateLimiters.create('organization-invitations-inviter', config.organizations.invitationsPerInviter),
          perAddress: rateLimiters.create('organization-invitations-address', config.organizations.invitationsPerAddress),
        },
      }),
    };
  },
  // Invitations nobody answered are deleted once expired.
  jobs: ({ organizations }, { logger }) => [
    createPeriodicJob({ name: 'organization-invitation-cleanup', intervalMs: 3_600_000, firstDelayMs: 60_000, logger, run: async () => void (await organizations.purgeExpiredInvitations()) }),
  ],
  // `org: {id, slug, roles}` while the session has an active organization the user is a member of.
  tokenClaims: () => activeOrganizationClaim,
  pageSections: ({ organizations, users }) => organizationPageSections({ organizations, users }),
  // Memberships and invitations; the only OWNER of an organization with other members hands it over before deleting their account.
  userData: ({ organizations, users }) => organizationsUserData({ organizations, users }),
  routes: [
    {
      scope: 'api',
      register: async (app, { services, config, clock }) => {
        await app.register(organizationRoutes, { organizations: services.organizations, users: services.users, sessions: services.sessions, config, clock });
        await app.register(adminOrganizationRoutes, { organizations: services.organizations });
      },
    },
    {
      scope: 'browser',
      register: async (app, { services, config, clock, adminNav, pageSections }) => {
        await app.register(organizationPageRoutes, { organizations: services.organizations, users: services.users, sessions: services.sessions, config, clock, sections: pageSections('organization') });
        await app.register(adminOrganizationPageRoutes, { organizations: services.organizations, adminNav, sections: pageSections('admin-organization') });
      },
    },
  ],
});
