/**
 * Delivers what is in the `webhook_deliveries` outbox, in the background, at least once.
 *
 * Deliveries go out on fair lanes (fair-lanes.ts): one lane per endpoint with something due, never
 * two attempts to one endpoint at once, and every other endpoint's due delivery started at once,
 * whatever one endpoint's attempt is doing. A receiver that never answers holds its own lane (one
 * attempt, until WEBHOOK_TIMEOUT_MS cuts it) and its own backlog waits behind it; nobody else's
 * does. New deliveries (`wake()`) and due retries (the poll) are claimed even while attempts are in
 * flight. Each attempt is signed with the endpoint's secret(s) and POSTed (sender.ts), and its
 * outcome recorded: delivered (2xx); or retried with exponential backoff and jitter (30 s, 1 min,
 * 2 min, … doubling up to 6 h, less up to 20 % at random) until RETRY_WINDOW (3 days) after the
 * first attempt, with one last attempt at the end of the window; then failed.
 *
 * A claim is two leases (`lane_locked_until` on the endpoint, `locked_until` on the delivery, both
 * named by one token), each taken with one conditional UPDATE (FOR UPDATE SKIP LOCKED on
 * PostgreSQL): several instances never deliver the same attempt, nor two attempts to one endpoint,
 * at once; an instance that dies mid-delivery leaves leases that run out, after which another
 * instance (or this one, restarted) delivers again. The `webhook-id` stays the same, so receivers
 * dedupe.
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
import { createFairLanes } from './fair-lanes.ts';

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
  /** Claim now (a delivery was just written), even while attempts are in flight. */
  wake(): void;
  /** Stops the timer and waits for the attempts in progress (cut off after a few seconds). */
  stop(): Promise<void>;
  /**
   * Claims everything claimable now and waits until nothing is in flight and nothing more is
   * claimable: what was attempted meanwhile (tests; concurrent calls share it). Rejects with the
   * first storage error met, once the attempts in flight have ended.
   */
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

export function createDeliveryWorker(deps: DeliveryWorkerDeps): DeliveryWorker {
  const { db, isPostgres, sender, clock, logger, pollIntervalMs, retentionMs, disableAfterMs } = deps;
  const random = deps.random ?? Math.random;
  const owner = deps.owner ?? randomId();
  const lease = leaseMs(deps.timeoutMs ?? SEND_TIMEOUT_MS);
  const stopping = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<DeliveryRunResult> | undefined;
  /** What runOnce() reports: the attempts that ended, and the first error, while it runs. */
  let tally: { result: DeliveryRunResult; error?: unknown } | undefined;
  let isStarted = false;
  let isStopped = false;
  let purging: Promise<void> | undefined;
  let nextPurgeAt = 0;

  const lanes = createFairLanes<store.DeliveryRow>({
    // Each claim under a lease token of its own (the owner, then a random part): a lane whose lease
    // ran out, and whose rows another lane or instance took over, changes nothing with its writes.
    claim(busyEndpointIds) {
      const now = clock();
      const token = `${owner.slice(0, 9)}:${randomId()}`;
      return store.claimNextDue(db, { now, owner: token, lockedUntil: now + lease, isPostgres, excludeEndpointIds: busyEndpointIds });
    },
    keyOf: (row) => row.endpoint_id,
    async work(row) {
      try {
        const verdict = await attempt(row);
        if (tally !== undefined) tally.result[verdict] += 1;
      } finally {
        await store.releaseLane(db, row.endpoint_id, row.locked_by!);
      }
    },
    onError(error) {
      if (tally !== undefined) tally.error ??= error;
      // A claimed delivery whose outcome could not be written is claimed again once its lease runs out.
      logger.error({ err: error }, 'webhook delivery: the database failed; will try again');
    },
  });

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

  /** Deletes what is past WEBHOOK_RETENTION, at most once an hour; a call during a purge shares it. */
  function purgeIfDue(): Promise<void> {
    const now = clock();
    if (purging !== undefined || now < nextPurgeAt) return purging ?? Promise.resolve();
    nextPurgeAt = now + PURGE_INTERVAL_MS;
    purging = (async () => {
      let deleted = 0;
      for (let batch = 0; batch < 10 && !isStopped; batch++) {
        const count = await store.deleteFinishedBefore(db, now - retentionMs, PURGE_BATCH_SIZE);
        deleted += count;
        if (count < PURGE_BATCH_SIZE) break;
      }
      if (deleted > 0) logger.info({ deleted }, 'purged old webhook deliveries');
    })().finally(() => {
      purging = undefined;
    });
    return purging;
  }

  async function run(): Promise<DeliveryRunResult> {
    const current: NonNullable<typeof tally> = { result: { delivered: 0, retried: 0, failed: 0 } };
    tally = current;
    try {
      await purgeIfDue();
      lanes.fill();
      await lanes.settled();
    } finally {
      tally = undefined;
    }
    if (current.error !== undefined) throw current.error;
    return current.result;
  }

  function runOnce(): Promise<DeliveryRunResult> {
    running ??= run().finally(() => {
      running = undefined;
    });
    return running;
  }

  /** The poll: due retries, and leases that ran out, are claimed at least this often. */
  function tick(): void {
    if (isStopped) return;
    timer = setTimeout(tick, pollIntervalMs);
    timer.unref();
    purgeIfDue().catch((error: unknown) => logger.error({ err: error }, 'webhook deliveries not purged; will try again'));
    lanes.fill();
  }

  return {
    start() {
      if (isStarted || isStopped) return;
      isStarted = true;
      tick();
    },
    wake() {
      if (isStarted && !isStopped) lanes.fill();
    },
    async stop() {
      isStopped = true;
      clearTimeout(timer);
      const grace = setTimeout(() => stopping.abort(new Error('webhook worker stopping')), STOP_GRACE_MS);
      grace.unref();
      await Promise.allSettled([lanes.close(), running, purging]);
      clearTimeout(grace);
    },
    runOnce,
  };
}
