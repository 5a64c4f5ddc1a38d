/**
 * The webhook events: the public events the modules declare (`publicEvents`, audit/public-events.ts),
 * each made from one of their domain (audit) events with its payload's allow-list. This module
 * names none of them: it subscribes to the audit types the declarations are made from, offers
 * endpoints the public types (in their declared order), and sends each payload as it is built.
 */
import type { AuditEvent } from '../audit/audit.service.ts';
import type { PublicEventData, PublicEventType } from '../audit/public-events.ts';

/** A public event type's name (`user.created`): those the modules declare. */
export type WebhookEventType = string;

export type WebhookData = PublicEventData;

export interface EventSource {
  readonly type: WebhookEventType;
  readonly data: (event: AuditEvent) => WebhookData;
}

/**
 * What the declarations (modules.ts's `collectPublicEvents`, in their order) come to: the audit
 * types to subscribe to, the webhook types an endpoint may ask for, and what an audit event becomes.
 */
export function sourcesFor(publicEvents: readonly PublicEventType[]): {
  auditTypes: string[];
  webhookTypes: WebhookEventType[];
  /** The message key describing each type that has one (the first declaration's that gives one). */
  descriptions: ReadonlyMap<WebhookEventType, string>;
  sourceOf(auditType: string): EventSource | undefined;
} {
  const sources = new Map<string, EventSource>(publicEvents.map((event) => [event.from, { type: event.type, data: (audited) => event.payload(audited) }]));
  return {
    auditTypes: [...sources.keys()],
    webhookTypes: [...new Set(publicEvents.map((event) => event.type))],
    descriptions: new Map([...publicEvents].reverse().flatMap((event) => (event.description === undefined ? [] : [[event.type, event.description] as const]))),
    sourceOf: (auditType) => sources.get(auditType),
  };
}

/** The JSON body of a webhook (exactly the bytes that are signed and sent). */
export function webhookBody(type: WebhookEventType | string, epochMs: number, data: WebhookData): string {
  return JSON.stringify({ type, timestamp: new Date(epochMs).toISOString(), data });
}
