/**
 * Delivers what is in the `webhook_deliveries` outbox, in the background, at least once.
 *
 * Each run claims due deliveries (a few lanes at once, so one slow receiver does not hold up the
 * others), signs each attempt with the endpoint's secret(s) and POSTs it (sender.ts), and records
 * the outcome: delivered (2xx); or retried with exponential backoff and jitter (30 s, 1 min,
 * 2 min, … doubling up to 6 h, less up to 20 % at random) until RETRY_WINDOW (3 days) after the
 * first attempt, with one last attempt at the end of the window; then failed.
 *
 * A claim is a lease (`locked_until`, `locked_by`) taken with one conditional UPDATE (FOR UPDATE
 * SKIP LOCKED on PostgreSQL): several instances never deliver the same attempt at once, and an
 * instance that dies mid-delivery leaves a lease that runs out, after which another instance (or
 * this one, restarted) delivers again. The `webhook-id` stays the same, so receivers dedupe.
 *
 * Every attempt also tells its endpoint's health: a delivered one clears `failing_since`, a failed
 * one sets it if unset. When an attempt fails and the endpoint has been failing (no delivery
 * succeeding) for WEBHOOK_DISABLE_AFTER, `onEndpointFailing` disables it.
 */
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { randomId } from '../lib/random.ts';
import * as store from './webhooks.store.ts';
import type { Sender } from './sender.ts';
import { signatureHeader, webhookTimestamp } from './signing.ts';
import { SEND_TIMEOUT_MS } from './sender.ts';

const FIRST_RETRY_DELAY_MS = 30_000;
const MAX_RETRY_DELAY_MS = 6 * 3_600_000;
const RETRY_JITTER = 0.2;
/** Attempts go on for this long after the first one. */
export const RETRY_WINDOW_MS = 3 * 86_400_000;
/** A lease outlives the longest possible attempt (its timeout) by a wide margin. */
export const leaseMs = (timeoutMs: number) => 3 * timeoutMs;
const STOP_GRACE_MS = 5_000;
const PURGE_INTERVAL_MS = 3_600_000;
const PURGE_BATCH_SIZE = 1_000;
const DEFAULT_LANES = 4;
const DEFAULT_MAX_PER_RUN = 50;

/** The wait before attempt `attempts + 1`. `random` returns [0, 1). */
export function retryDelayMs(attempts: number, random: () => number = Math.random): number {
  const nominal = Math.min(MAX_RETRY_DELAY_MS, FIRST_RETRY_DELAY_MS * 2 ** Math.min(30, Math.max(0, attempts - 1)));
  return Math.round(nominal * (1 - RETRY_JITTER * random()));
}

export interface DeliveryRunResult {
  delivered: number;
  retried: number;
  failed: number;
}

export interface DeliveryWorker {
  start(): void;
  /** Run soon (a delivery was just written); a run in progress is followed by another. */
  wake(): void;
  /** Stops the timer and waits for the attempts in progress (cut off after a few seconds). */
  stop(): Promise<void>;
  /** One run now; concurrent calls share it. */
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
  lanes?: number;
  maxPerRun?: number;
  /** Names this worker's leases (tests: two workers on one database). */
  owner?: string;
}

export function createDeliveryWorker(deps: DeliveryWorkerDeps): DeliveryWorker {
  const { db, isPostgres, sender, clock, logger, pollIntervalMs, retentionMs, disableAfterMs } = deps;
  const random = deps.random ?? Math.random;
  const lanes = deps.lanes ?? DEFAULT_LANES;
  const maxPerRun = deps.maxPerRun ?? DEFAULT_MAX_PER_RUN;
  const owner = deps.owner ?? randomId();
  const lease = leaseMs(deps.timeoutMs ?? SEND_TIMEOUT_MS);
  const stopping = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<DeliveryRunResult> | undefined;
  let isStarted = false;
  let isStopped = false;
  let isWakeRequested = false;
  let nextPurgeAt = 0;

  /**
   * The endpoints this worker is sending to now: a lane never claims a delivery of one of them, so
   * a slow or dead receiver holds at most one lane (per instance) and the others keep delivering.
   */
  const busyEndpoints = new Set<string>();
  let claiming: Promise<unknown> = Promise.resolve();

  /**
   * Claims the next due delivery of an endpoint no lane of this worker is sending to. Claims are
   * taken one at a time (the set is then exact), each under a lease token of its own (the owner,
   * then a random part): a lane whose lease ran out, and whose row another lane or instance took
   * over, changes nothing with its later writes.
   */
  function claimNext(): Promise<store.DeliveryRow | null> {
    const next = claiming.then(async () => {
      const now = clock();
      const token = `${owner.slice(0, 9)}:${randomId()}`;
      const row = await store.claimNextDue(db, { now, owner: token, lockedUntil: now + lease, isPostgres, excludeEndpointIds: [...busyEndpoints] });
      if (row !== null) busyEndpoints.add(row.endpoint_id);
      return row;
    });
    claiming = next.catch(() => {});
    return next;
  }

  async function run(): Promise<DeliveryRunResult> {
    const result: DeliveryRunResult = { delivered: 0, retried: 0, failed: 0 };
    await purgeIfDue();
    let claimed = 0;
    const lane = async () => {
      while (claimed < maxPerRun && !isStopped) {
        const row = await claimNext();
        if (row === null) return;
        claimed += 1;
        try {
          result[await attempt(row)] += 1;
        } finally {
          busyEndpoints.delete(row.endpoint_id);
        }
      }
    };
    // Every lane ends before the run does, even when one fails (a database error): a run that
    // ended early would let the next run, or stop(), overlap attempts still in progress.
    const lanesDone = await Promise.allSettled(Array.from({ length: lanes }, lane));
    const failure = lanesDone.find((outcome) => outcome.status === 'rejected');
    if (failure !== undefined) throw failure.reason;
    return result;
  }

  async function attempt(row: store.DeliveryRow): Promise<keyof DeliveryRunResult> {
    // The claim's lease token: every write about this attempt names it.
    const owner = row.locked_by!;
    const facts = { deliveryId: row.id, endpointId: row.endpoint_id, eventType: row.event_type, attempts: row.attempts };
    const endpoint = await store.findEndpoint(db, row.endpoint_id);
    if (endpoint === undefined || endpoint.disabled_at !== null) {
      await store.markFailed(db, row.id, owner, { responseCode: null, error: 'ENDPOINT_DISABLED', snippet: null });
      return 'failed';
    }
    const now = clock();
    let secrets: string[];
    try {
      secrets = deps.secretsOf(endpoint, now);
    } catch {
      await store.markFailed(db, row.id, owner, { responseCode: null, error: 'SECRET_UNREADABLE', snippet: null });
      logger.error(facts, 'webhook not sent: the endpoint secret cannot be opened with this AUTH_SECRET');
      return 'failed';
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
      signal: stopping.signal,
    });
    const recorded = { responseCode: outcome.responseCode, error: outcome.error, snippet: outcome.snippet };
    const doneAt = clock();

    if (outcome.delivered) {
      const isRecorded = await store.markDelivered(db, row.id, owner, doneAt, recorded);
      await store.markEndpointHealthy(db, endpoint.id);
      if (!isRecorded) logger.warn(facts, 'webhook delivered after its lease ran out; another instance may deliver it again');
      return 'delivered';
    }

    const firstAttemptAt = row.first_attempt_at ?? now;
    const giveUpAt = firstAttemptAt + RETRY_WINDOW_MS;
    let verdict: 'retried' | 'failed';
    if (doneAt >= giveUpAt) {
      await store.markFailed(db, row.id, owner, recorded);
      logger.warn({ ...facts, error: outcome.error, responseCode: outcome.responseCode }, 'webhook failed: no delivery within the retry window');
      verdict = 'failed';
    } else {
      const nextAttemptAt = Math.min(doneAt + retryDelayMs(row.attempts, random), giveUpAt);
      await store.scheduleRetry(db, row.id, owner, nextAttemptAt, recorded);
      logger.info({ ...facts, error: outcome.error, responseCode: outcome.responseCode, retryInMs: nextAttemptAt - doneAt }, 'webhook not delivered; will retry');
      verdict = 'retried';
    }
    await store.markEndpointFailing(db, endpoint.id, now);
    const failingSince = (await store.findEndpoint(db, endpoint.id))?.failing_since ?? null;
    if (failingSince !== null && doneAt - failingSince >= disableAfterMs) {
      try {
        await deps.onEndpointFailing(endpoint, failingSince);
      } catch (error) {
        logger.error({ err: error, endpointId: endpoint.id }, 'failing webhook endpoint not disabled; will try again at its next failure');
      }
    }
    return verdict;
  }

  async function purgeIfDue(): Promise<void> {
    const now = clock();
    if (now < nextPurgeAt) return;
    nextPurgeAt = now + PURGE_INTERVAL_MS;
    let deleted = 0;
    for (let batch = 0; batch < 10 && !isStopped; batch++) {
      const count = await store.deleteFinishedBefore(db, now - retentionMs, PURGE_BATCH_SIZE);
      deleted += count;
      if (count < PURGE_BATCH_SIZE) break;
    }
    if (deleted > 0) logger.info({ deleted }, 'purged old webhook deliveries');
  }

  function runOnce(): Promise<DeliveryRunResult> {
    running ??= run().finally(() => {
      running = undefined;
    });
    return running;
  }

  function schedule(delayMs: number): void {
    if (isStopped || !isStarted) return;
    clearTimeout(timer);
    timer = setTimeout(tick, delayMs);
    timer.unref();
  }

  function tick(): void {
    isWakeRequested = false;
    runOnce()
      .then((result) => {
        const isFull = result.delivered + result.retried + result.failed >= maxPerRun;
        schedule(isFull || isWakeRequested ? 0 : pollIntervalMs);
      })
      .catch((error: unknown) => {
        logger.error({ err: error }, 'webhook delivery run failed; will retry');
        schedule(pollIntervalMs);
      });
  }

  return {
    start() {
      if (isStarted || isStopped) return;
      isStarted = true;
      schedule(0);
    },
    wake() {
      if (running !== undefined) isWakeRequested = true;
      else schedule(0);
    },
    async stop() {
      isStopped = true;
      clearTimeout(timer);
      const grace = setTimeout(() => stopping.abort(new Error('webhook worker stopping')), STOP_GRACE_MS);
      grace.unref();
      await running?.catch(() => {});
      clearTimeout(grace);
    },
    runOnce,
  };
}
