/** The operators' area: the admin API and the /admin pages. */
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { defineModule } from '../module.ts';
import { ADMIN_ERRORS } from './admin.errors.ts';
import type { AdminService } from './admin.service.ts';
import { deferredService } from '../lib/deferred-service.ts';
import { adminRoutes } from './admin.routes.ts';
import { ADMIN_PAGE, adminPageRoutes } from './admin-pages.routes.ts';
import { ADMIN_ROLE } from '../users/user.service.ts';
import { ADMIN_OVERVIEW_PAGE } from './admin-overview.routes.ts';
import { PROVIDER_NAMES } from '../oauth/oauth.config.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    admin: AdminService;
  }
}

export const adminModule = defineModule({
  name: 'admin',
  // The admin area's own links; the other modules' pages for administrators declare theirs (admin-area.ts).
  adminNav: [
    { path: ADMIN_OVERVIEW_PAGE, labelKey: 'admin.nav.overview', section: 'overview', order: 5 },
    { path: ADMIN_PAGE, labelKey: 'admin.nav.users', section: 'users', order: 10 },
    { path: '/admin/events', labelKey: 'admin.nav.events', section: 'events', order: 90 },
  ],
  // The way in from the dashboard's header, for administrators.
  pageLinks: () => [{ place: 'dashboard.header', order: 10, href: ADMIN_PAGE, message: 'admin.links.dashboard', shownWhen: ({ roles }) => roles.includes(ADMIN_ROLE) }],
  openApiTags: [
    { name: 'admin', description: 'Administration (role ADMIN): users, roles, sessions, the audit log, OAuth clients, organizations and webhooks.' },
  ],
  // The /admin pages' texts, and the admin area's header shared with the clients' and webhooks' pages.
  messages: readMessages(join(import.meta.dirname, 'messages')),
  errors: ADMIN_ERRORS,
  // The service's code is imported at its first call (lib/deferred-service.ts): only administrators' requests and the command line reach it.
  provide: ({ services, db, modules }) => {
    const has = (name: string) => modules.some((module) => module.name === name);
    const { users, sessions, credentials, audit } = services;
    // The outboxes whose module is in the list (as the metrics module measures them).
    const outboxes = [...(has('mail') ? [{ queue: 'mail' as const, table: 'mail_outbox' }] : []), ...(has('webhooks') ? [{ queue: 'webhooks' as const, table: 'webhook_deliveries' }] : [])];
    return {
      admin: deferredService(async () => (await import('./admin.service.ts')).createAdminService({ users, sessions, credentials, audit, db, outboxes })),
    };
  },
  routes: [
    // What the routes read of the audit log as they are registered or draw a page (its event types, say) comes from the audit service itself.
    { scope: 'api', register: (app, { services }) => app.register(adminRoutes, { admin: services.admin, audit: services.audit }) },
    {
      scope: 'browser',
      register: (app, { services, config, pageSections, adminNav, clock }) =>
        app.register(adminPageRoutes, {
          admin: services.admin,
          audit: services.audit,
          config,
          sections: pageSections('admin-user'),
          places: services.places,
          adminNav,
          users: services.users,
          clock,
          secondFactor: 'mfa' in services ? (isPresent: boolean) => services.mfa.secondFactorCondition(isPresent).condition : null,
          memberOf: 'organizations' in services ? (organizationId: string) => services.organizations.memberCondition(organizationId) : null,
          organizations: 'organizations' in services ? { suggested: () => services.organizations.list({ limit: 200 }), find: (idOrSlug: string) => services.organizations.find(idOrSlug) } : null,
          refusals: 'metrics' in services && services.metrics !== null ? () => services.metrics!.refusalsByLimiter() : null,
          // As the sign-in page names them; a provider since switched off by its usual name.
          providerNames: new Map([...Object.entries(PROVIDER_NAMES), ...(config.oauth?.providers ?? []).map((provider) => [provider.id, provider.name] as const)]),
          passwordReset: 'passwordReset' in services ? services.passwordReset : null,
          accountDeletion: 'accountDeletion' in services ? services.accountDeletion : null,
        }),
    },
  ],
});
