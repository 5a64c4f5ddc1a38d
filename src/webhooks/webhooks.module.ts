/**
 * Outbound webhooks (Standard Webhooks): the `webhook_endpoints` and `webhook_deliveries` tables,
 * the `webhooks` service, a subscription to the domain events the modules make public (their
 * `publicEvents`, events.ts) that writes a delivery per matching enabled endpoint in the event's
 * transaction, the delivery worker (a job), the admin API (`/api/admin/webhooks`) and pages
 * (`/admin/webhooks`), for ADMIN (changes with a recent second factor), its config section
 * (WEBHOOK_*), error codes and the `webhook.*` events. The
 * `gatehouse webhooks …` commands use the same service (webhooks.cli.ts). docs/guides/webhooks.md.
 */
import { join } from 'node:path';
import { readMessages } from '../i18n/catalog.ts';
import { collectPublicEvents, defineModule } from '../module.ts';
import { cli } from './webhooks.cli.ts';
import { WEBHOOKS_ERRORS } from './webhooks.errors.ts';
import { webhooksConfigSection } from './webhooks.config.ts';
import * as endpointsAndDeliveries from './migrations/20261127-webhooks-endpoints-deliveries.ts';
import * as endpointLanes from './migrations/20261129-webhooks-endpoint-lanes.ts';
import { createWebhooksService, type WebhooksService } from './webhooks.service.ts';
import { webhookRoutes } from './webhooks.routes.ts';
import { WEBHOOKS_PAGE, webhookPageRoutes } from './webhooks-pages.routes.ts';
import type { AuditEventType } from '../audit/audit.service.ts';
import { webhooksMail } from './webhooks.mail.ts';

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

export const webhooksModule = defineModule({
  name: 'webhooks',
  cli,
  adminNav: [{ path: WEBHOOKS_PAGE, labelKey: 'webhooks.adminNav', section: 'webhooks', order: 40 }],
  // The texts of the /admin/webhooks pages.
  messages: readMessages(join(import.meta.dirname, 'messages')),
  mailTemplates: () => webhooksMail,
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
      policy: { allowHttp: config.webhooks.allowHttp, allowPrivate: config.webhooks.allowPrivateTargets, allowPrivateSetting: 'WEBHOOK_ALLOW_PRIVATE_TARGETS' },
      publicEvents: collectPublicEvents(modules),
      pollIntervalMs: config.webhooks.pollIntervalMs,
      retentionMs: config.webhooks.retentionSeconds * 1000,
      disableAfterMs: config.webhooks.disableAfterSeconds * 1000,
      timeoutMs: config.webhooks.timeoutMs,
      maxPendingPerEndpoint: config.webhooks.maxPendingPerEndpoint,
    }),
  }),
  jobs: ({ webhooks }) => [webhooks],
  // The audit types the modules' public events are made from (events.ts); this module names none.
  subscriptions: ({ webhooks }) => [
    {
      types: webhooks.subscribedAuditTypes as readonly AuditEventType[],
      async handle(event, db) {
        await webhooks.enqueueFor(event, db);
      },
    },
  ],
  routes: [
    { scope: 'api', register: (app, { services }) => app.register(webhookRoutes, { webhooks: services.webhooks }) },
    { scope: 'browser', register: (app, { services, adminNav }) => app.register(webhookPageRoutes, { webhooks: services.webhooks, adminNav }) },
  ],
});
