/**
 * Outbound webhooks: the registry of endpoints (register, list, show, change, disable, enable,
 * rotate the secret, delete), their deliveries (list, redeliver), the domain-event handler that
 * writes one delivery per matching enabled endpoint in the event's transaction, and the worker.
 *
 * A secret (`whsec_…`) is returned by `create` and `rotateSecret` only, this once; it is stored
 * sealed (signing.ts), never logged, never in an audit event. After a rotation the previous secret
 * signs too (a second signature) for SECRET_GRACE_MS (24 h), so receivers can switch without
 * losing a webhook. Every change is audited (`webhook.*`) in the transaction of the change, with
 * the endpoint's id and host only.
 *
 * Expected outcomes are values: `{ ok: false, … }` or null; only the HTTP boundary (and the CLI)
 * turn them into errors.
 */
export * from './webhooks.model.ts';
import { sourcesFor, type WebhookEventType } from './events.ts';
import type { PublicEventType } from '../audit/public-events.ts';
import { createSecretSeal } from './signing.ts';
import { createWebhookEndpoints } from './webhooks-endpoints.ts';
import { createWebhookDeliveries, type WebhookDeliveriesDeps } from './webhooks-deliveries.ts';

export type WebhooksService = ReturnType<typeof createWebhooksService>;

export interface WebhooksServiceDeps extends WebhookDeliveriesDeps {
  authSecret: string;
  /** Every public event the modules declare (module.ts's `collectPublicEvents`), in their order. */
  publicEvents: readonly PublicEventType[];
}

/** The endpoint registry (webhooks-endpoints.ts) and the deliveries with their worker (webhooks-deliveries.ts), as one service. */
export function createWebhooksService(deps: WebhooksServiceDeps) {
  const seal = createSecretSeal(deps.authSecret);
  const { auditTypes, webhookTypes, descriptions, sourceOf } = sourcesFor(deps.publicEvents);
  return {
    /** The audit event types the module subscribes to (those the public events are made from). */
    subscribedAuditTypes: auditTypes,
    /** The webhook event types an endpoint may ask for. */
    eventTypes: webhookTypes as readonly WebhookEventType[],
    /** The message key describing each event type, from the module that declares it (those that give one). */
    eventDescriptions: descriptions,
    ...createWebhookEndpoints({ ...deps, seal, webhookTypes }),
    ...createWebhookDeliveries({ ...deps, seal, sourceOf }),
  };
}
