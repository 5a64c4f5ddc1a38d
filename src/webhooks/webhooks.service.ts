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
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { randomId } from '../lib/random.ts';
import type { AuditEvent, AuditService, AuditSource } from '../audit/audit.service.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';
import type { MailService } from '../mail/mail.service.ts';
import type { UserService } from '../users/user.service.ts';
import { ADMIN_ROLE } from '../users/user.service.ts';
import { greetingName } from '../users/name.ts';
import { mailLocale } from '../users/locale.ts';
import type { KeysetPosition } from '../lib/keyset-cursor.ts';
import * as store from './webhooks.store.ts';
import {
  MAX_DESCRIPTION_LENGTH,
  MAX_EVENT_TYPES,
  SECRET_GRACE_MS,
  isPlausibleId,
  parseList,
  toDelivery,
  toEndpoint,
  type CreateEndpointResult,
  type EndpointInput,
  type EndpointProblem,
  type RedeliverResult,
  type RotateSecretResult,
  type UpdateEndpointResult,
  type WebhookDelivery,
  type WebhookEndpoint,
} from './webhooks.model.ts';

export * from './webhooks.model.ts';
import { EVENT_SOURCES, sourcesFor, webhookBody, type WebhookEventType } from './events.ts';
import { checkWebhookUrl, hostOf, type TargetPolicy } from './target-rules.ts';
import { createSecretSeal, newWebhookSecret } from './signing.ts';
import { createSender, type Resolver } from './sender.ts';
import { createDeliveryWorker, type DeliveryRunResult } from './delivery-worker.ts';

/** An endpoint whose backlog is full is logged at most this often (each refused event is a row). */
const BACKLOG_FULL_LOG_INTERVAL_MS = 3_600_000;
const ADMIN_PAGE = '/admin/webhooks';

export type WebhooksService = ReturnType<typeof createWebhooksService>;

export function createWebhooksService(deps: {
  db: Db;
  isPostgres: boolean;
  clock: Clock;
  logger: Logger;
  audit: AuditService;
  mail: MailService;
  users: UserService;
  authSecret: string;
  policy: TargetPolicy;
  /** Every audit event type the modules declare: what the table may be fed from. */
  declaredAuditTypes: readonly string[];
  pollIntervalMs: number;
  retentionMs: number;
  disableAfterMs: number;
  /** Per attempt; default 10 s. */
  timeoutMs?: number;
  /** With this many deliveries pending for an endpoint, its next events are recorded failed (BACKLOG_FULL). */
  maxPendingPerEndpoint: number;
  random?: () => number;
  resolve?: Resolver;
}) {
  const { db, clock, logger, audit, mail, users, policy } = deps;
  const seal = createSecretSeal(deps.authSecret);
  const { auditTypes, webhookTypes } = sourcesFor(deps.declaredAuditTypes);
  const available = new Set<string>(webhookTypes);

  /** The secret sealed in `sealed`, or null when it does not open (sealed under another AUTH_SECRET). */
  function tryOpen(endpointId: string, sealed: string): string | null {
    try {
      return seal.open(endpointId, sealed);
    } catch {
      return null;
    }
  }

  /**
   * The current secret (throws when it cannot be opened), then the previous one while it still
   * signs. A previous secret that does not open is left out: after AUTH_SECRET changed, rotating
   * is the way back, and the unreadable secret it replaced must not fail its deliveries for 24 h.
   */
  function secretsOf(endpoint: store.EndpointRow, now: number): string[] {
    const secrets = [seal.open(endpoint.id, endpoint.secret_sealed)];
    if (endpoint.previous_secret_sealed !== null && endpoint.previous_secret_expires_at !== null && endpoint.previous_secret_expires_at > now) {
      const previous = tryOpen(endpoint.id, endpoint.previous_secret_sealed);
      if (previous !== null) secrets.push(previous);
    }
    return secrets;
  }

  const worker = createDeliveryWorker({
    db,
    isPostgres: deps.isPostgres,
    sender: createSender({ policy, ...(deps.timeoutMs !== undefined && { timeoutMs: deps.timeoutMs }), ...(deps.resolve !== undefined && { resolve: deps.resolve }) }),
    ...(deps.timeoutMs !== undefined && { timeoutMs: deps.timeoutMs }),
    secretsOf,
    clock,
    logger,
    pollIntervalMs: deps.pollIntervalMs,
    retentionMs: deps.retentionMs,
    disableAfterMs: deps.disableAfterMs,
    onEndpointFailing: autoDisable,
    ...(deps.random !== undefined && { random: deps.random }),
  });

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

  async function findRow(id: string, on: Db = db): Promise<store.EndpointRow | undefined> {
    return isPlausibleId(id) ? store.findEndpoint(on, id) : undefined;
  }

  const facts = (row: Pick<store.EndpointRow, 'id' | 'url'>) => ({ endpointId: row.id, host: hostOf(row.url) });

  /** Every enabled administrator (a rare walk: only when an endpoint is disabled for failing). */
  async function enabledAdmins() {
    const admins = [];
    let before: KeysetPosition | undefined;
    do {
      const page = await users.listUsers({ limit: 200, ...(before !== undefined && { before }) });
      admins.push(...page.users.filter((user) => user.disabledAt === null && user.roles.includes(ADMIN_ROLE)));
      before = page.next ?? undefined;
    } while (before !== undefined);
    return admins;
  }

  /** Disables an endpoint that kept failing, records why, and tells every enabled administrator. */
  async function autoDisable(endpoint: store.EndpointRow, failingSince: number): Promise<void> {
    const admins = await enabledAdmins();
    const isDisabled = await db.transaction().execute(async (trx) => {
      if (!(await store.disableEndpoint(trx, endpoint.id, 'FAILING', clock()))) return false;
      await store.failPendingDeliveries(trx, endpoint.id, 'ENDPOINT_DISABLED');
      await audit.record(
        { type: 'webhook.endpoint_auto_disabled', source: SYSTEM_SOURCE, reason: 'FAILING', details: { ...facts(endpoint), failingSince: new Date(failingSince).toISOString() } },
        { db: trx },
      );
      for (const admin of admins) {
        await mail.enqueue(trx, {
          to: admin.email,
          template: 'webhook-endpoint-disabled',
          // Each administrator in their own language (English for one with none stored).
          locale: mailLocale(admin),
          data: { name: greetingName(admin), endpointId: endpoint.id, host: hostOf(endpoint.url), failingSinceAt: failingSince, adminUrl: mail.link(`${ADMIN_PAGE}/${encodeURIComponent(endpoint.id)}` as `/${string}`) },
        });
      }
      return true;
    });
    if (isDisabled) {
      mail.wake();
      logger.warn({ ...facts(endpoint), failingSince, adminsTold: admins.length }, 'webhook endpoint disabled: every delivery failed for WEBHOOK_DISABLE_AFTER');
    }
  }

  const backlogFullLoggedAt = new Map<string, number>();

  /**
   * Writes one delivery per enabled endpoint that wants this event, in the event's transaction.
   * A failing endpoint (its last attempt failed and none has succeeded since) that already has
   * WEBHOOK_MAX_PENDING_PER_ENDPOINT deliveries pending gets it as a failed delivery
   * (`BACKLOG_FULL`): never sent, but on record in its deliveries, and redeliverable. So a dead
   * receiver's backlog stays bounded until it is disabled, while a healthy one's burst is never
   * refused (its lane drains it). Transactions committing at the same moment may each see room for
   * one more, so the backlog can pass the cap by as many.
   */
  async function enqueueFor(event: AuditEvent, trx: Db): Promise<number> {
    const source = EVENT_SOURCES[event.type];
    if (source === undefined) return 0;
    const endpoints = (await store.listEnabledEndpoints(trx)).filter((endpoint) => parseList(endpoint.event_types).includes(source.type));
    if (endpoints.length === 0) return 0;
    const payload = webhookBody(source.type, event.createdAt, source.data(event));
    const now = clock();
    const failing = endpoints.filter((endpoint) => endpoint.failing_since !== null).map((endpoint) => endpoint.id);
    const pending = await store.countPending(trx, failing);
    const isFull = (endpointId: string) => (pending.get(endpointId) ?? 0) >= deps.maxPendingPerEndpoint;
    await store.insertDeliveries(
      trx,
      endpoints.map((endpoint) => ({
        id: randomId(),
        endpoint_id: endpoint.id,
        // Stable for the event: the same on every attempt and on every endpoint.
        message_id: `msg_${event.id}`,
        event_type: source.type,
        event_id: event.id,
        payload,
        status: isFull(endpoint.id) ? ('failed' as const) : ('pending' as const),
        attempts: 0,
        next_attempt_at: now,
        first_attempt_at: null,
        last_attempt_at: null,
        locked_until: null,
        locked_by: null,
        last_response_code: null,
        last_error: isFull(endpoint.id) ? 'BACKLOG_FULL' : null,
        last_response_snippet: null,
        redelivery_of: null,
        created_at: now,
        delivered_at: null,
      })),
    );
    for (const endpoint of endpoints.filter((candidate) => isFull(candidate.id))) {
      if (now - (backlogFullLoggedAt.get(endpoint.id) ?? -Infinity) < BACKLOG_FULL_LOG_INTERVAL_MS) continue;
      backlogFullLoggedAt.set(endpoint.id, now);
      logger.warn(
        { endpointId: endpoint.id, pending: pending.get(endpoint.id), maxPending: deps.maxPendingPerEndpoint },
        'webhook endpoint backlog full: new events are recorded as failed (BACKLOG_FULL) until it catches up',
      );
    }
    if (endpoints.some((endpoint) => !isFull(endpoint.id))) worker.wakeAfter(trx);
    return endpoints.length;
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
        await audit.record({ type: enabled ? 'webhook.endpoint_enabled' : 'webhook.endpoint_disabled', source, details: facts(row) }, { db: trx });
      }
      const after = await store.findEndpoint(trx, id);
      return after === undefined ? null : toEndpoint(after);
    });
  }

  return {
    /** The audit event types the module subscribes to (those of the table some module declares). */
    subscribedAuditTypes: auditTypes,
    /** The webhook event types an endpoint may ask for. */
    eventTypes: webhookTypes as readonly WebhookEventType[],

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
        await audit.record({ type: 'webhook.endpoint_created', source, details: { ...facts(row), eventTypes: checked.eventTypes } }, { db: trx });
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
        await audit.record({ type: 'webhook.endpoint_updated', source, details: { ...facts({ id, url: set.url ?? row.url }), fields } }, { db: trx });
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
        const isReadable = tryOpen(id, row.secret_sealed) !== null;
        const previousExpiresAt = isReadable ? now + SECRET_GRACE_MS : null;
        const sealed = { sealed: seal.seal(id, secret), previousSealed: isReadable ? row.secret_sealed : null, previousExpiresAt };
        if (!(await store.replaceSecret(trx, id, sealed, now))) return { ok: false, reason: 'NOT_FOUND' };
        await audit.record(
          { type: 'webhook.endpoint_secret_rotated', source, details: { ...facts(row), previousSecretExpiresAt: previousExpiresAt === null ? null : new Date(previousExpiresAt).toISOString() } },
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
        await audit.record({ type: 'webhook.endpoint_deleted', source, details: facts(row) }, { db: trx });
        return true;
      });
    },

    /** An endpoint's deliveries, newest first; null when there is no such endpoint. */
    async listDeliveries(endpointId: string, limit = 50): Promise<WebhookDelivery[] | null> {
      if ((await findRow(endpointId)) === undefined) return null;
      return (await store.listDeliveries(db, endpointId, Math.max(1, Math.min(limit, 500)))).map(toDelivery);
    },

    async showDelivery(id: string): Promise<WebhookDelivery | null> {
      const row = isPlausibleId(id) ? await store.findDelivery(db, id) : undefined;
      return row === undefined ? null : toDelivery(row);
    },

    /**
     * A new delivery of the same payload with the same `webhook-id` (a receiver that did process
     * it dedupes it), attempted at once; refused while the original is pending or the endpoint
     * disabled.
     */
    async redeliver(deliveryId: string, source: AuditSource): Promise<RedeliverResult> {
      const result = await db.transaction().execute(async (trx): Promise<RedeliverResult> => {
        const original = isPlausibleId(deliveryId) ? await store.findDelivery(trx, deliveryId) : undefined;
        if (original === undefined) return { ok: false, reason: 'NOT_FOUND' };
        if (original.status === 'pending') return { ok: false, reason: 'PENDING' };
        const endpoint = await store.findEndpoint(trx, original.endpoint_id);
        if (endpoint === undefined) return { ok: false, reason: 'NOT_FOUND' };
        if (endpoint.disabled_at !== null) return { ok: false, reason: 'ENDPOINT_DISABLED' };
        const now = clock();
        const row: store.DeliveryRow = {
          ...original,
          id: randomId(),
          status: 'pending',
          attempts: 0,
          next_attempt_at: now,
          first_attempt_at: null,
          last_attempt_at: null,
          locked_until: null,
          locked_by: null,
          last_response_code: null,
          last_error: null,
          last_response_snippet: null,
          redelivery_of: original.id,
          created_at: now,
          delivered_at: null,
        };
        await store.insertDeliveries(trx, [row]);
        await audit.record({ type: 'webhook.delivery_redelivered', source, details: { ...facts(endpoint), deliveryId: row.id, redeliveryOf: original.id, eventType: original.event_type } }, { db: trx });
        return { ok: true, delivery: toDelivery(row) };
      });
      if (result.ok) worker.wake();
      return result;
    },

    enqueueFor,
    start: () => worker.start(),
    stop: () => worker.stop(),
    wake: () => worker.wake(),
    /** One worker run now (tests; the worker runs by itself once started). */
    runOnce: (): Promise<DeliveryRunResult> => worker.runOnce(),
  };
}
