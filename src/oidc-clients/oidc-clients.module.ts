/**
 * The registry of the OAuth 2.0 / OpenID Connect clients that Gatehouse, as an OpenID Provider,
 * signs people in for: its table, service (`oidcClients`), admin API (`/api/admin/clients`), admin
 * pages (`/admin/clients`) and domain events. The `gatehouse clients …` commands use the same
 * service (clients.cli.ts).
 */
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { defineModule, type AccessPolicy, type BuiltServices } from '../module.ts';
import { isUnder } from '../../packages/protect/src/rules.ts';
import { OIDC_CLIENTS_ERRORS } from './oidc-clients.errors.ts';
import * as registry from './migrations/20261124-oidc-clients-registry.ts';
import { createOidcClientsService, type OidcClientsService } from './clients.service.ts';
import { clientRoutes, CLIENTS_API } from './clients.routes.ts';
import { clientPageRoutes, CLIENTS_PAGE } from './clients-pages.routes.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    oidcClients: OidcClientsService;
  }
}

/** The audit events (domain events) this module records: never with a secret. */
const AUDIT_EVENTS = ['oidc_client.created', 'oidc_client.updated', 'oidc_client.secret_rotated', 'oidc_client.deleted'] as const;
type OidcClientsAuditEvents = Record<(typeof AUDIT_EVENTS)[number], true>;
declare module '../audit/audit.service.ts' {
  interface AuditEventTypes extends OidcClientsAuditEvents {}
}

/**
 * Changing the registry is as sensitive as an administrator's change to a user: an admin who has
 * a second factor must have used it in this session within REAUTH_WINDOW (403 REAUTH_REQUIRED;
 * `POST /api/auth/mfa/step-up`), as the mfa module's step-up policy asks for `/admin/users`.
 */
export function createClientsStepUpPolicy(services: BuiltServices): AccessPolicy {
  const { mfa, config, clock } = services;
  const sensitive = [
    { methods: ['POST', 'PATCH', 'DELETE'], prefix: CLIENTS_API },
    { methods: ['POST'], prefix: CLIENTS_PAGE },
  ] as const;
  return {
    name: 'oidc-clients-step-up',
    isActive: true,
    exemptPrefixes: [],
    onlyPrefixes: sensitive.map((rule) => rule.prefix),
    async check(auth, { path, literalPath, method }) {
      const isSensitive = sensitive.some((rule) => (rule.methods as readonly string[]).includes(method) && (isUnder(path, rule.prefix) || isUnder(literalPath, rule.prefix)));
      if (!isSensitive) return null;
      const isFresh = auth.amr.includes('mfa') && auth.authTime >= clock() - config.mfa.reauthWindowSeconds * 1000;
      if (isFresh) return null;
      // Only a user who has a second factor can be asked for one.
      return (await mfa.methodsOf(auth.userId)).length === 0 ? null : { code: 'REAUTH_REQUIRED' };
    },
  };
}

export const oidcClientsModule = defineModule({
  name: 'oidc-clients',
  // The texts of the /admin/clients pages.
  messages: readMessages(join(import.meta.dirname, 'messages')),
  migrations: { '20261124-oidc-clients-registry': registry },
  errors: OIDC_CLIENTS_ERRORS,
  auditEvents: AUDIT_EVENTS,
  provide: ({ db, clock, services }) => ({ oidcClients: createOidcClientsService({ db, clock, audit: services.audit }) }),
  accessPolicies: (services) => [createClientsStepUpPolicy(services)],
  routes: [
    { scope: 'api', register: (app, { services, authenticate }) => app.register(clientRoutes, { oidcClients: services.oidcClients, authenticate }) },
    { scope: 'browser', register: (app, { services, authenticate, csrf }) => app.register(clientPageRoutes, { oidcClients: services.oidcClients, authenticate, csrf }) },
  ],
});
