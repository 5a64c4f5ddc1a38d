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
import { createScimTokensService, type ScimTokensService } from './scim-tokens.service.ts';
import { createScimUsersService } from './scim-users.service.ts';
import { createScimGroupsService } from './scim-groups.service.ts';
import { createMembershipSync } from './scim-membership.ts';
import { scimRoutes } from './scim.routes.ts';
import { scimManagementRoutes } from './scim-tokens.routes.ts';
import { SCIM_PUBLIC_EVENTS } from './scim.public-events.ts';
import { listUsersOfAccount } from './scim.store.ts';
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
  provide({ db, clock, services }) {
    const { audit, users, sessions, organizations } = services;
    const membership = createMembershipSync({ db, audit, users, sessions, organizations });
    return {
      scimTokens: createScimTokensService({ db, clock, audit }),
      scim: {
        users: createScimUsersService({ db, clock, audit, users, organizations, membership }),
        groups: createScimGroupsService({ db, clock, audit, membership }),
      },
    };
  },
  // What the directory sent about the person, in each organization (no token, nothing secret).
  userData: (_services, { db }) => ({
    export: async (userId) => {
      const rows = await listUsersOfAccount(db, userId);
      return rows.length === 0 ? null : { scimUsers: rows.map((row) => ({ organizationId: row.organization_id, id: row.id, userName: row.user_name, externalId: row.external_id, active: row.active === 1 })) };
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
