/**
 * Delivers what is in the `webhook_deliveries` outbox, in the background, at least once, on the
 * shared outbox worker (storage/outbox/outbox-worker.ts): what is the webhooks module's is here.
 *
 * Deliveries go out on a lane per endpoint (`DELIVERY_QUEUE`): never two attempts to one endpoint
 * at once, and every other endpoint's due delivery started at once, whatever one endpoint's attempt
 * is doing. A receiver that never answers holds its own lane (one attempt, until WEBHOOK_TIMEOUT_MS
 * cuts it) and its own backlog waits behind it; nobody else's does. Each attempt is signed with the
 * endpoint's secret(s) and POSTed (sender.ts), and its outcome recorded: delivered (2xx); or
 * retried with exponential backoff and jitter (30 s, 1 min, 2 min, … doubling up to 6 h, less up to
 * 20 % at random) until RETRY_WINDOW (3 days) after the first attempt, with one last attempt at the
 * end of the window; then failed.
 *
 * A claim is two leases (`lane_locked_until` on the endpoint, `locked_until` on the delivery, both
 * named by one token), three times WEBHOOK_TIMEOUT_MS: several instances never deliver the same
 * attempt, nor two attempts to one endpoint, at once; an instance that dies mid-delivery leaves
 * leases that run out, after which another instance (or this one, restarted) delivers again. The
 * `webhook-id` stays the same, so receivers dedupe.
 *
 * Every attempt also tells its endpoint's health: a delivered one clears `failing_since`, a failed
 * one sets it if unset. When an attempt fails and the endpoint has been failing (no delivery
 * succeeding) for WEBHOOK_DISABLE_AFTER, `onEndpointFailing` disables it.
 */
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { createOutboxWorker, type OutboxAttempt, type OutboxWorker } from '../storage/outbox/outbox-worker.ts';
import * as store from './webhooks.store.ts';
import type { Sender, SendOutcome } from '../http/outbound/sender.ts';
import { signatureHeader, webhookTimestamp } from './signing.ts';
import { SEND_TIMEOUT_MS } from '../http/outbound/sender.ts';

/** Attempts go on for this long after the first one. */
export const RETRY_WINDOW_MS = 3 * 86_400_000;
/** A lease outlives the longest possible attempt (its timeout) by a wide margin. */
export const leaseMs = (timeoutMs: number) => 3 * timeoutMs;

export interface DeliveryRunResult {
  delivered: number;
  retried: number;
  failed: number;
}

/** The shared worker's, with its counts in the webhooks module's words. */
export interface DeliveryWorker extends Omit<OutboxWorker, 'runOnce'> {
  runOnce(): Promise<DeliveryRunResult>;
}

export interface DeliveryWorkerDeps {
  db: Db;
  isPostgres: boolean;
  sender: Sender;
  /** The secrets signing an attempt to this endpoint now (the current one first); throws when they cannot be opened. */
  secretsOf(endpoint: store.EndpointRow, now: number): string[];
  clock: Clock;
  logger: Logger;
  pollIntervalMs: number;
  retentionMs: number;
  disableAfterMs: number;
  /** The sender's timeout: leases are three times as long. */
  timeoutMs?: number;
  /** The endpoint has failed every attempt since `failingSince`, for WEBHOOK_DISABLE_AFTER or longer. */
  onEndpointFailing(endpoint: store.EndpointRow, failingSince: number): Promise<void>;
  random?: () => number;
  /** Names this worker's leases (tests: two workers on one database). */
  owner?: string;
}

/** What an attempt came to: sent (with the receiver's answer), or not attempted at all (why). */
type Note = { endpoint: store.EndpointRow; outcome: SendOutcome } | { notAttempted: 'ENDPOINT_DISABLED' | 'SECRET_UNREADABLE' };

/** The receiver's answer as the delivery records it. */
const answerOf = (outcome: Pick<SendOutcome, 'responseCode' | 'error' | 'snippet'>) => ({
  last_response_code: outcome.responseCode,
  last_error: outcome.error,
  last_response_snippet: outcome.snippet,
});

export function createDeliveryWorker(deps: DeliveryWorkerDeps): DeliveryWorker {
  const { db, sender, clock, logger, disableAfterMs } = deps;
  const notAttempted = (why: 'ENDPOINT_DISABLED' | 'SECRET_UNREADABLE'): OutboxAttempt<store.DeliveryRow, Note> => ({
    outcome: 'fail',
    set: answerOf({ responseCode: null, error: why, snippet: null }),
    note: { notAttempted: why },
  });

  const worker = createOutboxWorker<store.DeliveryRow, Note>({
    db,
    isPostgres: deps.isPostgres,
    queue: store.DELIVERY_QUEUE,
    retry: { firstDelayMs: 30_000, maxDelayMs: 6 * 3_600_000, jitter: 0.2, maxAgeMs: RETRY_WINDOW_MS, firstAttemptAt: (row) => row.first_attempt_at },
    clock,
    logger,
    pollIntervalMs: deps.pollIntervalMs,
    retentionMs: deps.retentionMs,
    leaseMs: leaseMs(deps.timeoutMs ?? SEND_TIMEOUT_MS),
    messages: { purged: 'purged old webhook deliveries', storageFailed: 'webhook delivery: the database failed; will try again', stopping: 'webhook worker stopping' },
    ...(deps.owner !== undefined && { owner: deps.owner }),
    ...(deps.random !== undefined && { random: deps.random }),
    handler: {
      async attempt(row, { startedAt: now, signal }) {
        // The claim's lease token: every write about this attempt names it.
        const owner = row.locked_by!;
        const endpoint = await store.findEndpoint(db, row.endpoint_id);
        if (endpoint === undefined || endpoint.disabled_at !== null) return notAttempted('ENDPOINT_DISABLED');
        let secrets: string[];
        try {
          secrets = deps.secretsOf(endpoint, now);
        } catch {
          return notAttempted('SECRET_UNREADABLE');
        }
        await store.markAttempted(db, row.id, owner, now);
        const outcome = await sender({
          url: endpoint.url,
          headers: {
            'webhook-id': row.message_id,
            'webhook-timestamp': webhookTimestamp(now),
            'webhook-signature': signatureHeader(secrets, row.message_id, now, row.payload),
          },
          body: row.payload,
          signal,
        });
        if (outcome.delivered) return { outcome: 'done', set: { ...answerOf(outcome), last_error: null }, note: { endpoint, outcome } };
        return { outcome: 'retry', set: answerOf(outcome), note: { endpoint, outcome } };
      },

      async settled(row, { verdict, note, isRecorded, startedAt, doneAt, retryInMs }) {
        const facts = { deliveryId: row.id, endpointId: row.endpoint_id, eventType: row.event_type, attempts: row.attempts };
        if ('notAttempted' in note) {
          if (note.notAttempted === 'SECRET_UNREADABLE') logger.error(facts, 'webhook not sent: the endpoint secret cannot be opened with this AUTH_SECRET');
          return;
        }
        const { endpoint, outcome } = note;
        if (verdict === 'done') {
          await store.markEndpointHealthy(db, endpoint.id);
          if (!isRecorded) logger.warn(facts, 'webhook delivered after its lease ran out; another instance may deliver it again');
          return;
        }
        const answer = { ...facts, error: outcome.error, responseCode: outcome.responseCode };
        if (verdict === 'failed') logger.warn(answer, 'webhook failed: no delivery within the retry window');
        else logger.info({ ...answer, retryInMs }, 'webhook not delivered; will retry');
        await store.markEndpointFailing(db, endpoint.id, startedAt);
        const failingSince = (await store.findEndpoint(db, endpoint.id))?.failing_since ?? null;
        if (failingSince !== null && doneAt - failingSince >= disableAfterMs) {
          try {
            await deps.onEndpointFailing(endpoint, failingSince);
          } catch (error) {
            logger.error({ err: error, endpointId: endpoint.id }, 'failing webhook endpoint not disabled; will try again at its next failure');
          }
        }
      },
    },
  });

  return {
    ...worker,
    async runOnce() {
      const { done, retried, failed } = await worker.runOnce();
      return { delivered: done, retried, failed };
    },
  };
}
