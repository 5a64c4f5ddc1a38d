/**
 * API keys: personal keys (acting as their owner, narrowed to the roles and scopes chosen) and
 * organization keys (acting for an organization with one role; they outlive their creator), sent
 * as `Authorization: Bearer gatehouse_pk_…` / `gatehouse_ok_…`. Shown once, stored as SHA-256,
 * revocable at once, each with a name, an expiry, a rate limit and its last use. Gatehouse resolves
 * personal keys through the credential-resolver slot (organization keys act for no person, so its
 * own API refuses them); downstream apps check either kind by introspection (gatehouse-protect's
 * `apiKeys` option). Keys cannot manage keys, pages, passwords, factors or anything asking for a
 * step-up, and hold ADMIN only through the explicit `admin` scope. Managed from the dashboard, the
 * organization page, the admin user page, the admin API and `gatehouse api-keys`. Every creation,
 * failed use and revocation is audited and public (webhooks); every authentication with a key is
 * counted in the metrics, by outcome (api-keys.metrics.ts). See docs/guides/api-keys.md.
 */
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { defineModule } from '../module.ts';
import { createPeriodicJob } from '../lib/periodic-job.ts';
import * as table from './migrations/20261201-api-keys-table.ts';
import { apiKeysConfigSection } from './api-keys.config.ts';
import { API_KEYS_ERRORS } from './api-keys.errors.ts';
import type { ApiKeysService } from './api-keys.service.ts';
import type { ApiKeyUse } from './api-key-use.ts';
import { deferredService } from '../lib/deferred-service.ts';
import { looksLikeApiKey } from './key-format.ts';
import { PURGE_AFTER_MS, purgeEndedBefore } from './api-keys.purge.ts';
import { guardKeyRequests } from './api-key-guard.ts';
import { apiKeyRoutes } from './api-keys.routes.ts';
import { introspectionRoutes } from './introspection.routes.ts';
import { apiKeyPageRoutes, apiKeyPageSections } from './api-keys-pages.ts';
import { API_KEYS_PUBLIC_EVENTS } from './api-keys.public-events.ts';
import { cli } from './api-keys.cli.ts';
import { API_KEYS_COUNTED_EVENTS, API_KEYS_COUNTERS, keyUseCounter } from './api-keys.metrics.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    apiKeys: ApiKeysService;
    apiKeyUse: ApiKeyUse;
  }
}

const AUDIT_EVENTS = ['api_key.created', 'api_key.revoked', 'api_key.use_failed'] as const;
type ApiKeysAuditEvents = Record<(typeof AUDIT_EVENTS)[number], true>;
declare module '../audit/audit.service.ts' {
  interface AuditEventTypes extends ApiKeysAuditEvents {}
}

export const apiKeysModule = defineModule({
  name: 'api-keys',
  cli,
  config: apiKeysConfigSection,
  messages: readMessages(join(import.meta.dirname, 'messages')),
  migrations: { '20261201-api-keys-table': table },
  errors: API_KEYS_ERRORS,
  auditEvents: AUDIT_EVENTS,
  publicEvents: API_KEYS_PUBLIC_EVENTS,
  // Every authentication with a key, counted by the module as it happens; keys made and revoked, from their events.
  counters: API_KEYS_COUNTERS,
  countedEvents: API_KEYS_COUNTED_EVENTS,
  openApiTags: [{ name: 'api-keys', description: 'API keys: personal and organization keys, and their introspection for downstream apps.' }],
  // The keys' code (service, uses, store, rate leases) is imported at its first call (lib/deferred-service.ts):
  // a key's first use, page or command. Telling a key's shape (`looksLikeApiKey`) needs none of it.
  provide({ db, clock, logger, config, services }) {
    const { audit, users, organizations, rateLimiters } = services;
    // The metrics module is listed before this one (null when metrics are off, absent from a list without it).
    const count = keyUseCounter((services as Partial<typeof services>).metrics);
    return {
      apiKeys: deferredService(async () => (await import('./api-keys.service.ts')).createApiKeysService({ db, clock, audit, users, organizations, config: config.apiKeys })),
      apiKeyUse: deferredService(async () => (await import('./api-key-use.ts')).createApiKeyUse({ db, clock, logger, audit, users, organizations, rateLimiters, config: config.apiKeys, count })),
    };
  },
  // Keys revoked or expired a month ago are deleted (their history stays in the audit log).
  // Its statement is the module's, not the service's (api-keys.purge.ts): the job loads none of the keys' code.
  jobs: (_services, { db, clock, logger }) => [createPeriodicJob({ name: 'api-key-purge', intervalMs: 3_600_000, firstDelayMs: 120_000, logger, run: () => purgeEndedBefore(db, clock() - PURGE_AFTER_MS) })],
  credentialResolvers: ({ apiKeyUse }) => [{ name: 'api-key', recognises: looksLikeApiKey, resolve: (token) => apiKeyUse.resolve(token) }],
  pageSections: (services) => apiKeyPageSections(services),
  // A person's keys go with their account (on cascade); the export lists them, never a secret or hash.
  userData: ({ apiKeys }) => ({
    async export(userId) {
      const keys = (await apiKeys.list({ userId }, 'operator')) ?? [];
      return keys.length === 0 ? null : { apiKeys: keys.map(({ id, name, kind, scopes, roles, status, createdAt, expiresAt, revokedAt, lastUsedAt }) => ({ id, name, kind, scopes, roles, status, createdAt, expiresAt, revokedAt, lastUsedAt })) };
    },
  }),
  routes: [
    {
      scope: 'api',
      register: async (app, { services }) => {
        // At the top level, not in a plugin of its own: what a key may do is judged on every route, the browser scope's too.
        guardKeyRequests(app, services.apiKeyUse);
        await app.register(apiKeyRoutes, { apiKeys: services.apiKeys });
      },
    },
    {
      scope: 'browser',
      register: async (app, { services }) => {
        await app.register(introspectionRoutes, { use: services.apiKeyUse, oidcClients: services.oidcClients });
        await app.register(apiKeyPageRoutes, { apiKeys: services.apiKeys, users: services.users, organizations: services.organizations });
      },
    },
  ],
});
