/**
 * The webhooks service's registry of endpoints: register, list, show, change, disable, enable,
 * rotate the secret, delete; each change audited (`webhook.*`) in its transaction, with the
 * endpoint's id and host only. A secret is in the answer of `create` and `rotateSecret` only.
 * Part of the webhooks service (webhooks.service.ts).
 */
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import { randomId } from '../lib/random.ts';
import type { AuditService, AuditSource } from '../audit/audit.service.ts';
import * as store from './webhooks.store.ts';
import {
  MAX_DESCRIPTION_LENGTH,
  MAX_EVENT_TYPES,
  SECRET_GRACE_MS,
  isPlausibleId,
  toEndpoint,
  type CreateEndpointResult,
  type EndpointInput,
  type EndpointProblem,
  type RotateSecretResult,
  type UpdateEndpointResult,
  type WebhookEndpoint,
} from './webhooks.model.ts';
import type { WebhookEventType } from './events.ts';
import { checkWebhookUrl, hostOf, type TargetPolicy } from '../http/outbound/target-rules.ts';
import { newWebhookSecret, tryOpen, type SecretSeal } from './signing.ts';

/** The endpoint's row, when `id` could be one and it exists. */
export async function findEndpointRow(db: Db, id: string): Promise<store.EndpointRow | undefined> {
  return isPlausibleId(id) ? store.findEndpoint(db, id) : undefined;
}

/** What an audit event or a log line tells of an endpoint: its id and host, never its URL's path or a secret. */
export const endpointFacts = (row: Pick<store.EndpointRow, 'id' | 'url'>) => ({ endpointId: row.id, host: hostOf(row.url) });

export function createWebhookEndpoints(deps: { db: Db; clock: Clock; audit: AuditService; policy: TargetPolicy; seal: SecretSeal; webhookTypes: readonly WebhookEventType[] }) {
  const { db, clock, audit, policy, seal, webhookTypes } = deps;
  const available = new Set<string>(webhookTypes);
  const findRow = (id: string, on: Db = db) => findEndpointRow(on, id);

  /** The URL, event types and description as the rules see them; problems for each field. */
  function checkInput(input: Partial<EndpointInput>): { problems: EndpointProblem[]; url?: string; eventTypes?: string[]; description?: string } {
    const problems: EndpointProblem[] = [];
    const checked: { url?: string; eventTypes?: string[]; description?: string } = {};
    if (input.url !== undefined) {
      const url = checkWebhookUrl(input.url, policy);
      if (url.ok) checked.url = url.url;
      else problems.push({ field: 'url', reason: url.reason, message: url.message });
    }
    if (input.eventTypes !== undefined) {
      const types = [...new Set(input.eventTypes.map((type) => String(type).trim()))];
      const unknown = types.filter((type) => !available.has(type));
      if (types.length === 0) problems.push({ field: 'eventTypes', reason: 'INVALID', message: 'must name at least one event type' });
      else if (types.length > MAX_EVENT_TYPES) problems.push({ field: 'eventTypes', reason: 'INVALID', message: `must name at most ${MAX_EVENT_TYPES} event types` });
      else if (unknown.length > 0) {
        const shown = unknown.slice(0, 5).map((type) => `"${type.slice(0, 64)}"`).join(', ');
        problems.push({ field: 'eventTypes', reason: 'EVENT_UNKNOWN', message: `${shown} ${unknown.length === 1 ? 'is not an event type' : 'are not event types'} Gatehouse sends (see the list)` });
      } else checked.eventTypes = webhookTypes.filter((type) => types.includes(type));
    }
    if (input.description !== undefined) {
      const description = input.description.replace(/\s+/g, ' ').trim();
      if (description.length > MAX_DESCRIPTION_LENGTH) problems.push({ field: 'description', reason: 'INVALID', message: `must be at most ${MAX_DESCRIPTION_LENGTH} characters` });
      else if (/[\u0000-\u001f\u007f-\u009f]/.test(description)) problems.push({ field: 'description', reason: 'INVALID', message: 'must not contain control characters' });
      else checked.description = description;
    }
    return { problems, ...checked };
  }

  /** Disable or enable, audited; the endpoint as it is now, or null when there is none. */
  async function setEnabled(id: string, enabled: boolean, source: AuditSource): Promise<WebhookEndpoint | null> {
    return db.transaction().execute(async (trx) => {
      const row = await findRow(id, trx);
      if (row === undefined) return null;
      const now = clock();
      const changed = enabled ? await store.enableEndpoint(trx, id, now) : await store.disableEndpoint(trx, id, 'ADMIN', now);
      if (changed) {
        if (!enabled) await store.failPendingDeliveries(trx, id, 'ENDPOINT_DISABLED');
        await audit.record({ type: enabled ? 'webhook.endpoint_enabled' : 'webhook.endpoint_disabled', source, details: endpointFacts(row) }, { db: trx });
      }
      const after = await store.findEndpoint(trx, id);
      return after === undefined ? null : toEndpoint(after);
    });
  }

  return {
    /** Registers an endpoint; its secret is in the answer, this once. */
    async create(input: EndpointInput, source: AuditSource): Promise<CreateEndpointResult> {
      const checked = checkInput({ url: input.url, eventTypes: input.eventTypes, description: input.description ?? '' });
      if (checked.problems.length > 0) return { ok: false, reason: 'INVALID', problems: checked.problems };
      const id = randomId();
      const secret = newWebhookSecret();
      const now = clock();
      const row: store.EndpointRow = {
        id,
        url: checked.url!,
        description: checked.description ?? '',
        event_types: JSON.stringify(checked.eventTypes),
        secret_sealed: seal.seal(id, secret),
        previous_secret_sealed: null,
        previous_secret_expires_at: null,
        disabled_at: null,
        disabled_reason: null,
        failing_since: null,
        created_at: now,
        updated_at: now,
        secret_rotated_at: null,
        lane_locked_until: null,
        lane_locked_by: null,
      };
      await db.transaction().execute(async (trx) => {
        await store.insertEndpoint(trx, row);
        await audit.record({ type: 'webhook.endpoint_created', source, details: { ...endpointFacts(row), eventTypes: checked.eventTypes } }, { db: trx });
      });
      return { ok: true, endpoint: toEndpoint(row), secret };
    },

    /** Every endpoint, newest first (never a secret). */
    async list(): Promise<WebhookEndpoint[]> {
      return (await store.listEndpoints(db)).map(toEndpoint);
    },

    async show(id: string): Promise<WebhookEndpoint | null> {
      const row = await findRow(id);
      return row === undefined ? null : toEndpoint(row);
    },

    /** Changes the URL, the event types (replaced whole) or the description, under the same rules. */
    async update(id: string, changes: Partial<EndpointInput>, source: AuditSource): Promise<UpdateEndpointResult> {
      const checked = checkInput(changes);
      if (checked.problems.length > 0) return { ok: false, reason: 'INVALID', problems: checked.problems };
      return db.transaction().execute(async (trx): Promise<UpdateEndpointResult> => {
        const row = await findRow(id, trx);
        if (row === undefined) return { ok: false, reason: 'NOT_FOUND' };
        const set: Partial<Pick<store.EndpointRow, 'url' | 'description' | 'event_types'>> = {};
        if (checked.url !== undefined && checked.url !== row.url) set.url = checked.url;
        if (checked.description !== undefined && checked.description !== row.description) set.description = checked.description;
        if (checked.eventTypes !== undefined && JSON.stringify(checked.eventTypes) !== row.event_types) set.event_types = JSON.stringify(checked.eventTypes);
        const fields = Object.keys(set).map((key) => ({ url: 'url', description: 'description', event_types: 'eventTypes' })[key]!);
        if (fields.length === 0) return { ok: true, endpoint: toEndpoint(row) };
        const now = clock();
        await store.updateEndpoint(trx, id, set, now);
        await audit.record({ type: 'webhook.endpoint_updated', source, details: { ...endpointFacts({ id, url: set.url ?? row.url }), fields } }, { db: trx });
        return { ok: true, endpoint: toEndpoint({ ...row, ...set, updated_at: now }) };
      });
    },

    disable: (id: string, source: AuditSource) => setEnabled(id, false, source),
    enable: (id: string, source: AuditSource) => setEnabled(id, true, source),

    /** A new secret, returned this once; the previous one keeps signing for SECRET_GRACE_MS. */
    async rotateSecret(id: string, source: AuditSource): Promise<RotateSecretResult> {
      const secret = newWebhookSecret();
      return db.transaction().execute(async (trx): Promise<RotateSecretResult> => {
        const row = await findRow(id, trx);
        if (row === undefined) return { ok: false, reason: 'NOT_FOUND' };
        const now = clock();
        // The secret being replaced is kept sealed as is, never shown, and signs for the grace
        // period; unless it no longer opens (AUTH_SECRET changed): then it is dropped, and the
        // new secret signs alone.
        const isReadable = tryOpen(seal, id, row.secret_sealed) !== null;
        const previousExpiresAt = isReadable ? now + SECRET_GRACE_MS : null;
        const sealed = { sealed: seal.seal(id, secret), previousSealed: isReadable ? row.secret_sealed : null, previousExpiresAt };
        if (!(await store.replaceSecret(trx, id, sealed, now))) return { ok: false, reason: 'NOT_FOUND' };
        await audit.record(
          { type: 'webhook.endpoint_secret_rotated', source, details: { ...endpointFacts(row), previousSecretExpiresAt: previousExpiresAt === null ? null : new Date(previousExpiresAt).toISOString() } },
          { db: trx },
        );
        return {
          ok: true,
          endpoint: toEndpoint({ ...row, secret_sealed: sealed.sealed, previous_secret_sealed: sealed.previousSealed, previous_secret_expires_at: previousExpiresAt, secret_rotated_at: now, updated_at: now }),
          secret,
        };
      });
    },

    /** Deletes the endpoint and its deliveries; false when there was none. */
    async delete(id: string, source: AuditSource): Promise<boolean> {
      return db.transaction().execute(async (trx) => {
        const row = await findRow(id, trx);
        if (row === undefined || !(await store.deleteEndpoint(trx, id))) return false;
        await audit.record({ type: 'webhook.endpoint_deleted', source, details: endpointFacts(row) }, { db: trx });
        return true;
      });
    },
  };
}
