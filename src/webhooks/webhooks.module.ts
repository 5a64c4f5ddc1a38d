/**
 * Outbound webhooks (Standard Webhooks): the `webhook_endpoints` and `webhook_deliveries` tables,
 * the `webhooks` service, a subscription to the domain events of events.ts that writes a delivery
 * per matching enabled endpoint in the event's transaction, the delivery worker (a job), the admin
 * API (`/api/admin/webhooks`) and pages (`/admin/webhooks`), both behind the shared admin guards
 * and a step-up rule, its config section (WEBHOOK_*), error codes and the `webhook.*` events. The
 * `gatehouse webhooks …` commands use the same service (webhooks.cli.ts). docs/guides/webhooks.md.
 */
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { collectAuditEventTypes, defineModule, type AccessPolicy, type BuiltServices } from '../module.ts';
import { isUnder } from '../../packages/protect/src/rules.ts';
import { WEBHOOKS_ERRORS } from './webhooks.errors.ts';
import { webhooksConfigSection } from './webhooks.config.ts';
import * as endpointsAndDeliveries from './migrations/20261127-webhooks-endpoints-deliveries.ts';
import * as endpointLanes from './migrations/20261129-webhooks-endpoint-lanes.ts';
import { createWebhooksService, type WebhooksService } from './webhooks.service.ts';
import { webhookRoutes, WEBHOOKS_API } from './webhooks.routes.ts';
import { webhookPageRoutes, WEBHOOKS_PAGE } from './webhooks-pages.routes.ts';
import type { AuditEventType } from '../audit/audit.service.ts';

declare module '../module.ts' {
  interface ServiceRegistry {
    webhooks: WebhooksService;
  }
}

/** The audit events this module records: ids and hosts, never a secret or a full URL. */
const AUDIT_EVENTS = [
  'webhook.endpoint_created',
  'webhook.endpoint_updated',
  'webhook.endpoint_disabled',
  'webhook.endpoint_enabled',
  'webhook.endpoint_secret_rotated',
  'webhook.endpoint_deleted',
  'webhook.endpoint_auto_disabled',
  'webhook.delivery_redelivered',
] as const;
type WebhooksAuditEvents = Record<(typeof AUDIT_EVENTS)[number], true>;
declare module '../audit/audit.service.ts' {
  interface AuditEventTypes extends WebhooksAuditEvents {}
}

/**
 * Registering a receiver decides where account events go: as sensitive as the client registry. An
 * admin who has a second factor must have used it in this session within REAUTH_WINDOW before a
 * change (403 REAUTH_REQUIRED; `POST /api/auth/mfa/step-up`), as for `/api/admin/clients`.
 */
export function createWebhooksStepUpPolicy(services: BuiltServices): AccessPolicy {
  const { mfa, config, clock } = services;
  const sensitive = [
    { methods: ['POST', 'PATCH', 'DELETE'], prefix: WEBHOOKS_API },
    { methods: ['POST'], prefix: WEBHOOKS_PAGE },
  ] as const;
  return {
    name: 'webhooks-step-up',
    isActive: true,
    exemptPrefixes: [],
    onlyPrefixes: sensitive.map((rule) => rule.prefix),
    async check(auth, { path, literalPath, method }) {
      const isSensitive = sensitive.some((rule) => (rule.methods as readonly string[]).includes(method) && (isUnder(path, rule.prefix) || isUnder(literalPath, rule.prefix)));
      if (!isSensitive) return null;
      const isFresh = auth.amr.includes('mfa') && auth.authTime >= clock() - config.mfa.reauthWindowSeconds * 1000;
      if (isFresh) return null;
      return (await mfa.methodsOf(auth.userId)).length === 0 ? null : { code: 'REAUTH_REQUIRED' };
    },
  };
}

export const webhooksModule = defineModule({
  name: 'webhooks',
  // The texts of the /admin/webhooks pages.
  messages: readMessages(join(import.meta.dirname, 'messages')),
  config: webhooksConfigSection,
  migrations: { '20261127-webhooks-endpoints-deliveries': endpointsAndDeliveries, '20261129-webhooks-endpoint-lanes': endpointLanes },
  errors: WEBHOOKS_ERRORS,
  auditEvents: AUDIT_EVENTS,
  provide: ({ db, storage, config, clock, logger, services, modules }) => ({
    webhooks: createWebhooksService({
      db,
      isPostgres: storage.dialect === 'postgres',
      clock,
      logger,
      audit: services.audit,
      mail: services.mail,
      users: services.users,
      authSecret: config.authSecret,
      policy: { allowHttp: config.webhooks.allowHttp, allowPrivate: config.webhooks.allowPrivateTargets },
      declaredAuditTypes: collectAuditEventTypes(modules),
      pollIntervalMs: config.webhooks.pollIntervalMs,
      retentionMs: config.webhooks.retentionSeconds * 1000,
      disableAfterMs: config.webhooks.disableAfterSeconds * 1000,
      timeoutMs: config.webhooks.timeoutMs,
      maxPendingPerEndpoint: config.webhooks.maxPendingPerEndpoint,
    }),
  }),
  jobs: ({ webhooks }) => [webhooks],
  // Only the declared types of the table (events.ts): the others join once their module declares them.
  subscriptions: ({ webhooks }) => [
    {
      types: webhooks.subscribedAuditTypes as readonly AuditEventType[],
      async handle(event, db) {
        await webhooks.enqueueFor(event, db);
      },
    },
  ],
  accessPolicies: (services) => [createWebhooksStepUpPolicy(services)],
  routes: [
    { scope: 'api', register: (app, { services, authenticate }) => app.register(webhookRoutes, { webhooks: services.webhooks, authenticate }) },
    { scope: 'browser', register: (app, { services, authenticate, csrf }) => app.register(webhookPageRoutes, { webhooks: services.webhooks, authenticate, csrf }) },
  ],
});
