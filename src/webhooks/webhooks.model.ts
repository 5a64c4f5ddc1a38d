/**
 * What the webhooks module deals in: the endpoints and deliveries its service hands out, the
 * outcomes it answers with, and the mapping from its rows. No I/O (see webhooks.service.ts).
 */
import type * as store from './webhooks.store.ts';
import type { WebhookEventType } from './events.ts';

/** After a rotation the previous secret keeps signing for this long. */
export const SECRET_GRACE_MS = 24 * 3_600_000;
export const MAX_DESCRIPTION_LENGTH = 200;
export const MAX_EVENT_TYPES = 50;

export interface WebhookEndpoint {
  id: string;
  url: string;
  description: string;
  eventTypes: string[];
  isEnabled: boolean;
  disabledAt: number | null;
  /** `ADMIN` (an administrator disabled it) or `FAILING` (Gatehouse did, after WEBHOOK_DISABLE_AFTER of failures). */
  disabledReason: 'ADMIN' | 'FAILING' | null;
  /** The first failed attempt since the last delivered one; null while healthy. */
  failingSince: number | null;
  createdAt: number;
  updatedAt: number;
  secretRotatedAt: number | null;
  /** While set and in the future, the previous secret signs too. */
  previousSecretExpiresAt: number | null;
}

export interface WebhookDelivery {
  id: string;
  endpointId: string;
  /** The `webhook-id` header, the same on every attempt (and on a redelivery). */
  webhookId: string;
  eventType: string;
  status: store.DeliveryStatus;
  attempts: number;
  lastResponseCode: number | null;
  lastError: string | null;
  lastResponseSnippet: string | null;
  /** When pending: the next attempt. */
  nextAttemptAt: number | null;
  firstAttemptAt: number | null;
  lastAttemptAt: number | null;
  deliveredAt: number | null;
  createdAt: number;
  redeliveryOf: string | null;
  /** The body sent: `{type, timestamp, data}`. */
  payload: unknown;
}

export interface EndpointInput {
  url: string;
  eventTypes: readonly string[];
  description?: string;
}

export interface EndpointProblem {
  field: 'url' | 'eventTypes' | 'description';
  reason: 'URL_INVALID' | 'URL_NOT_ALLOWED' | 'EVENT_UNKNOWN' | 'INVALID';
  message: string;
}

export type CreateEndpointResult = { ok: true; endpoint: WebhookEndpoint; secret: string } | { ok: false; reason: 'INVALID'; problems: EndpointProblem[] };
export type UpdateEndpointResult = { ok: true; endpoint: WebhookEndpoint } | { ok: false; reason: 'NOT_FOUND' } | { ok: false; reason: 'INVALID'; problems: EndpointProblem[] };
export type RotateSecretResult = { ok: true; endpoint: WebhookEndpoint; secret: string } | { ok: false; reason: 'NOT_FOUND' };
export type RedeliverResult = { ok: true; delivery: WebhookDelivery } | { ok: false; reason: 'NOT_FOUND' | 'PENDING' | 'ENDPOINT_DISABLED' };

export function parseList(json: string): string[] {
  try {
    const value: unknown = JSON.parse(json);
    return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
  } catch {
    return [];
  }
}

export function toEndpoint(row: store.EndpointRow): WebhookEndpoint {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    eventTypes: parseList(row.event_types),
    isEnabled: row.disabled_at === null,
    disabledAt: row.disabled_at,
    disabledReason: row.disabled_reason === 'ADMIN' || row.disabled_reason === 'FAILING' ? row.disabled_reason : row.disabled_at === null ? null : 'ADMIN',
    failingSince: row.failing_since,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    secretRotatedAt: row.secret_rotated_at,
    previousSecretExpiresAt: row.previous_secret_sealed === null ? null : row.previous_secret_expires_at,
  };
}

export function toDelivery(row: store.DeliveryRow): WebhookDelivery {
  let payload: unknown = null;
  try {
    payload = JSON.parse(row.payload);
  } catch {
    // Ours, always JSON; never fail a listing over it.
  }
  return {
    id: row.id,
    endpointId: row.endpoint_id,
    webhookId: row.message_id,
    eventType: row.event_type,
    status: row.status,
    attempts: row.attempts,
    lastResponseCode: row.last_response_code,
    lastError: row.last_error,
    lastResponseSnippet: row.last_response_snippet,
    nextAttemptAt: row.status === 'pending' ? row.next_attempt_at : null,
    firstAttemptAt: row.first_attempt_at,
    lastAttemptAt: row.last_attempt_at,
    deliveredAt: row.delivered_at,
    createdAt: row.created_at,
    redeliveryOf: row.redelivery_of,
    payload,
  };
}

/** Ids are ours and short: a longer one names nothing (and is never looked up). */
export const isPlausibleId = (id: string) => typeof id === 'string' && id.length > 0 && id.length <= 64;
