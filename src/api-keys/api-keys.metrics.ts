/**
 * What API keys count (metrics/counted-events.ts): every authentication with a key, by where it was
 * presented and its outcome, counted by the module itself (a use is too frequent to be a domain
 * event: accepted uses are not audited, failed ones at most once a minute per key and reason); and
 * keys created and revoked, counted from their domain events. Labels never carry a key's id or
 * owner (the label rules): per key, the audit log has every creation, revocation and failed use.
 */
import type { CountedEvent, CounterDefinition } from '../metrics/counted-events.ts';
import type { MetricsService } from '../metrics/metrics.service.ts';
import type { UseFailure } from './api-key-use.ts';

/** Where a key was presented: Gatehouse's own API (a Bearer key), or a downstream app's introspection. */
export type ApiKeyVia = 'api' | 'introspection';

/**
 * An authentication's outcome: `accepted`, or why refused: `unknown` (no such key, or a wrong
 * secret), `expired`, `revoked`, `rate_limited` (its own limit), `scope` (a write without the
 * `write` scope), `not_allowed` (a page, or a route that asks for a step-up), `owner_disabled`,
 * `organization_key` (presented to Gatehouse's API, which acts for people only).
 */
export const API_KEY_OUTCOMES = ['accepted', 'unknown', 'expired', 'revoked', 'rate_limited', 'scope', 'not_allowed', 'owner_disabled', 'organization_key'] as const;
export type ApiKeyOutcome = (typeof API_KEY_OUTCOMES)[number];

const OUTCOME_OF_FAILURE: Record<UseFailure, ApiKeyOutcome> = {
  UNKNOWN_SECRET: 'unknown',
  EXPIRED: 'expired',
  REVOKED: 'revoked',
  RATE_LIMITED: 'rate_limited',
  SCOPE_REQUIRED: 'scope',
  NOT_ALLOWED: 'not_allowed',
  OWNER_DISABLED: 'owner_disabled',
  ORGANIZATION_KEY: 'organization_key',
};

/** The outcome a refused use counts as. */
export const outcomeOfFailure = (failure: UseFailure): ApiKeyOutcome => OUTCOME_OF_FAILURE[failure];

export const API_KEYS_COUNTERS: readonly CounterDefinition[] = [
  {
    metric: 'apiKeyAuthentications',
    name: 'api_key_authentications_total',
    help: "API key authentications, by where the key was presented (api: Gatehouse's own API; introspection: a downstream app asking) and outcome (`accepted`, or why it was refused).",
    labels: { via: ['api', 'introspection'], outcome: API_KEY_OUTCOMES },
  },
  {
    metric: 'apiKeyChanges',
    name: 'api_key_changes_total',
    help: 'API keys created and revoked, by event (created, revoked) and kind (personal, organization).',
    labels: { event: ['created', 'revoked'], kind: ['personal', 'organization', 'unknown'] },
  },
];

export const API_KEYS_COUNTED_EVENTS: readonly CountedEvent[] = [
  {
    from: ['api_key.created', 'api_key.revoked'],
    count(event) {
      const kind = event.details?.['kind'] === 'personal' || event.details?.['kind'] === 'organization' ? (event.details['kind'] as string) : 'unknown';
      return [{ metric: 'apiKeyChanges', labels: { event: event.type === 'api_key.created' ? 'created' : 'revoked', kind }, by: 1 }];
    },
  },
];

/** Counts one authentication (nothing when metrics are off). */
export type CountKeyUse = (via: ApiKeyVia, outcome: ApiKeyOutcome) => void;

export function keyUseCounter(metrics: MetricsService | null | undefined): CountKeyUse {
  if (metrics === null || metrics === undefined) return () => {};
  return (via, outcome) => metrics.count({ metric: 'apiKeyAuthentications', labels: { via, outcome }, by: 1 });
}
