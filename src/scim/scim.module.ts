/**
 * SCIM 2.0 provisioning (RFC 7643, RFC 7644), per organization: an organization's directory (Okta,
 * Microsoft Entra ID) creates, updates, deactivates and deletes its people and groups at
 * `/scim/v2`, authenticated by the organization's SCIM token. Users map to Gatehouse accounts and
 * memberships, groups to organization roles (by the organization's mappings); deprovisioning
 * removes the membership and ends the account's sessions. Tokens and mappings are managed by the
 * organization's OWNERs and ADMINs (`/api/organizations/:id/scim-tokens`, and the **SCIM
 * provisioning** section of the organization's page: scim-tokens-pages.ts), administrators
 * (`/api/admin/organizations/:id/scim-tokens`) and `gatehouse scim tokens`. See docs/guides/scim.md.
 */
import { join } from 'node:path';
import { defineModule } from '../module.ts';
import { readMessages } from '../i18n/catalog.ts';
import { cli } from './scim.cli.ts';
import { SCIM_ERRORS } from './scim.errors.ts';
import { scimConfigSection } from './scim.config.ts';
import * as tables from './migrations/20261129-scim-tables.ts';
import type { ScimTokensService } from './scim-tokens.service.ts';
import type { createScimUsersService } from './scim-users.service.ts';
import type { createScimGroupsService } from './scim-groups.service.ts';
import { deferredService } from '../lib/deferred-service.ts';
import { scimRoutes } from './scim.routes.ts';
import { scimManagementRoutes } from './scim-tokens.routes.ts';
import { SCIM_PUBLIC_EVENTS } from './scim.public-events.ts';
import { scimTokenPageRoutes, scimTokenSections } from './scim-tokens-pages.ts';

export interface ScimService {
  users: ReturnType<typeof createScimUsersService>;
  groups: ReturnType<typeof createScimGroupsService>;
}

declare module '../module.ts' {
  interface ServiceRegistry {
    scimTokens: ScimTokensService;
    scim: ScimService;
  }
}

/** The domain events this module records: ids and counts, never a token or an address. */
const AUDIT_EVENTS = [
  'scim.token_created',
  'scim.token_rotated',
  'scim.token_revoked',
  'scim.role_mappings_changed',
  'scim.user_provisioned',
  'scim.user_updated',
  'scim.user_deprovisioned',
  'scim.user_deleted',
  'scim.group_changed',
] as const;
type ScimAuditEvents = Record<(typeof AUDIT_EVENTS)[number], true>;
declare module '../audit/audit.service.ts' {
  interface AuditEventTypes extends ScimAuditEvents {}
}

export const scimModule = defineModule({
  name: 'scim',
  cli,
  config: scimConfigSection,
  messages: readMessages(join(import.meta.dirname, 'messages')),
  migrations: { '20261129-scim-tables': tables },
  errors: SCIM_ERRORS,
  auditEvents: AUDIT_EVENTS,
  publicEvents: SCIM_PUBLIC_EVENTS,
  openApiTags: [{ name: 'scim', description: "SCIM provisioning: an organization's SCIM tokens and its group → role mappings (the protocol itself is at /scim/v2)." }],
  // The services, the store and the protocol's parsing are imported at their first call
  // (lib/deferred-service.ts): a directory's request, a token's management, a data export.
  provide({ db, clock, services }) {
    const { audit, users, sessions, organizations } = services;
    return {
      scimTokens: deferredService(async () => (await import('./scim-tokens.service.ts')).createScimTokensService({ db, clock, audit })),
      scim: deferredService(async () => {
        const [{ createMembershipSync }, { createScimUsersService }, { createScimGroupsService }] = await Promise.all([import('./scim-membership.ts'), import('./scim-users.service.ts'), import('./scim-groups.service.ts')]);
        const membership = createMembershipSync({ db, audit, users, sessions, organizations });
        return {
          users: createScimUsersService({ db, clock, audit, users, organizations, membership }),
          groups: createScimGroupsService({ db, clock, audit, membership }),
        };
      }),
    };
  },
  // What the directory sent about the person, in each organization (no token, nothing secret).
  userData: ({ scim }) => ({
    export: async (userId) => {
      const scimUsers = await scim.users.ofAccount(userId);
      return scimUsers.length === 0 ? null : { scimUsers };
    },
  }),
  pageSections: (services) => scimTokenSections(services),
  routes: [
    { scope: 'browser', register: (app, { services, config }) => app.register(scimTokenPageRoutes, { scimTokens: services.scimTokens, organizations: services.organizations, authUrl: config.authUrl }) },
    {
      scope: 'api',
      register: async (app, { services, config }) => {
        const limiter = services.rateLimiters.create('scim-token', config.scim.requestsPerToken);
        await app.register(scimRoutes, { authUrl: config.authUrl, config: config.scim, tokens: services.scimTokens, users: services.scim.users, groups: services.scim.groups, limiter });
        await app.register(scimManagementRoutes, { tokens: services.scimTokens, organizations: services.organizations, authUrl: config.authUrl });
      },
    },
  ],
});
