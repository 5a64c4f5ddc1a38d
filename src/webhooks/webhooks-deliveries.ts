/**
 * The webhooks service's deliveries: the domain-event handler that writes one delivery per
 * matching enabled endpoint in the event's transaction (`enqueueFor`), the worker that sends them
 * (signed with the endpoint's secrets), an endpoint disabled when it kept failing (its
 * administrators told by mail), and the deliveries an administrator lists and redelivers.
 * Part of the webhooks service (webhooks.service.ts).
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
import { isPlausibleId, parseList, toDelivery, type RedeliverResult, type WebhookDelivery } from './webhooks.model.ts';
import { webhookBody, type EventSource } from './events.ts';
import { hostOf, type TargetPolicy } from '../http/outbound/target-rules.ts';
import { tryOpen, type SecretSeal } from './signing.ts';
import { createSender, type Resolver } from '../http/outbound/sender.ts';
import { createDeliveryWorker, type DeliveryRunResult } from './delivery-worker.ts';
import { endpointFacts as facts, findEndpointRow } from './webhooks-endpoints.ts';

/** An endpoint whose backlog is full is logged at most this often (each refused event is a row). */
const BACKLOG_FULL_LOG_INTERVAL_MS = 3_600_000;
const ADMIN_PAGE = '/admin/webhooks';

export interface WebhookDeliveriesDeps {
  db: Db;
  isPostgres: boolean;
  clock: Clock;
  logger: Logger;
  audit: AuditService;
  mail: MailService;
  users: UserService;
  policy: TargetPolicy;
  pollIntervalMs: number;
  retentionMs: number;
  disableAfterMs: number;
  /** Per attempt; default 10 s. */
  timeoutMs?: number;
  /** With this many deliveries pending for an endpoint, its next events are recorded failed (BACKLOG_FULL). */
  maxPendingPerEndpoint: number;
  random?: () => number;
  resolve?: Resolver;
}

/** The attempt columns of a delivery not attempted yet, due at `now` (a new event's, or a redelivery). */
function notYetAttempted(now: number) {
  return { attempts: 0, next_attempt_at: now, first_attempt_at: null, last_attempt_at: null, locked_until: null, locked_by: null, last_response_code: null } as const;
}

export function createWebhookDeliveries(deps: WebhookDeliveriesDeps & { seal: SecretSeal; sourceOf: (auditType: string) => EventSource | undefined }) {
  const { db, clock, logger, audit, mail, users, policy, seal } = deps;

  /**
   * The current secret (throws when it cannot be opened), then the previous one while it still
   * signs. A previous secret that does not open is left out: after AUTH_SECRET changed, rotating
   * is the way back, and the unreadable secret it replaced must not fail its deliveries for 24 h.
   */
  function secretsOf(endpoint: store.EndpointRow, now: number): string[] {
    const secrets = [seal.open(endpoint.id, endpoint.secret_sealed)];
    if (endpoint.previous_secret_sealed !== null && endpoint.previous_secret_expires_at !== null && endpoint.previous_secret_expires_at > now) {
      const previous = tryOpen(seal, endpoint.id, endpoint.previous_secret_sealed);
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
    const source = deps.sourceOf(event.type);
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
        ...notYetAttempted(now),
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

  return {
    /** An endpoint's deliveries, newest first; null when there is no such endpoint. */
    async listDeliveries(endpointId: string, limit = 50): Promise<WebhookDelivery[] | null> {
      if ((await findEndpointRow(db, endpointId)) === undefined) return null;
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
          ...notYetAttempted(now),
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
