/**
 * The registry of the OAuth 2.0 / OpenID Connect clients that Gatehouse, as an OpenID Provider,
 * signs people in for: its table, service (`oidcClients`), admin API (`/api/admin/clients`), admin
 * pages (`/admin/clients`) and domain events. The `gatehouse clients …` commands use the same
 * service (clients.cli.ts).
 */
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { defineModule } from '../module.ts';
import { cli } from './clients.cli.ts';
import { OIDC_CLIENTS_ERRORS } from './oidc-clients.errors.ts';
import * as registry from './migrations/20261124-oidc-clients-registry.ts';
import * as backchannelLogout from './migrations/20261129-oidc-clients-backchannel-logout.ts';
import * as originLastUse from './migrations/20261130-oidc-clients-origin-last-use.ts';
import * as tokenExchange from './migrations/20261130-oidc-clients-token-exchange.ts';
import * as dpopBoundTokens from './migrations/20261130-oidc-clients-dpop-bound-tokens.ts';
import * as jwksUri from './migrations/20261201-oidc-clients-jwks-uri.ts';
import type { OidcClientsService } from './clients.service.ts';
import { deferredService } from '../lib/deferred-service.ts';
import { clientRoutes } from './clients.routes.ts';
import { CLIENTS_PAGE, clientPageRoutes } from './clients-pages.routes.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    oidcClients: OidcClientsService;
  }
}

/** The audit events (domain events) this module records: never with a secret. */
const AUDIT_EVENTS = ['oidc_client.created', 'oidc_client.updated', 'oidc_client.secret_rotated', 'oidc_client.deleted', 'oidc_client.expired', 'oidc_client.token_exchanged'] as const;
type OidcClientsAuditEvents = Record<(typeof AUDIT_EVENTS)[number], true>;
declare module '../audit/audit.service.ts' {
  interface AuditEventTypes extends OidcClientsAuditEvents {}
}

export const oidcClientsModule = defineModule({
  name: 'oidc-clients',
  cli,
  adminNav: [{ path: CLIENTS_PAGE, labelKey: 'oidc-clients.adminNav', section: 'clients', order: 20 }],
  // The texts of the /admin/clients pages.
  messages: readMessages(join(import.meta.dirname, 'messages')),
  migrations: { '20261124-oidc-clients-registry': registry, '20261129-oidc-clients-backchannel-logout': backchannelLogout, '20261130-oidc-clients-origin-last-use': originLastUse, '20261130-oidc-clients-token-exchange': tokenExchange, '20261130-oidc-clients-dpop-bound-tokens': dpopBoundTokens, '20261201-oidc-clients-jwks-uri': jwksUri },
  errors: OIDC_CLIENTS_ERRORS,
  auditEvents: AUDIT_EVENTS,
  // The registry's code is imported at its first call (lib/deferred-service.ts).
  provide: ({ db, clock, services: { audit }, storage }) => ({
    oidcClients: deferredService(async () => (await import('./clients.service.ts')).createOidcClientsService({ db, clock, audit, isPostgres: storage.dialect === 'postgres' })),
  }),
  routes: [
    { scope: 'api', register: (app, { services }) => app.register(clientRoutes, { oidcClients: services.oidcClients }) },
    { scope: 'browser', register: (app, { services, adminNav }) => app.register(clientPageRoutes, { oidcClients: services.oidcClients, adminNav }) },
  ],
});
