/**
 * Sends what is in the outbox, in the background. Each run claims due messages one at a time (at
 * most `maxPerRun`), hands each to the transport, and records the outcome: sent; or retried later
 * with exponential backoff and jitter; or, after `maxAttempts` tries or a permanent refusal,
 * failed, with an error log naming the message id and template (never its content). All state is
 * in the table, so a restart loses nothing and any instance can carry on where another stopped.
 *
 * A claimed row is held for `lockMs`; a send is cut off well before that, so two instances never
 * send the same message in normal operation. If an instance dies mid-send, the lock runs out and
 * another instance sends the message again: at least once, never silently dropped.
 */
import type { Db } from '../storage/database.ts';
import type { MailOutboxRow } from '../storage/schema.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { randomId } from '../lib/random.ts';
import * as store from './outbox.store.ts';
import type { PayloadSeal } from './payload-seal.ts';
import { describeSendError, MailSendError, type MailTransport, type SendFailure } from './transports.ts';

const FIRST_RETRY_DELAY_MS = 5_000;
const MAX_RETRY_DELAY_MS = 15 * 60_000;
/** Up to this share of a retry delay is taken off at random, so instances and messages spread out. */
const RETRY_JITTER = 0.2;
/** One send may take this long in all (connect, TLS, auth, data) before it is abandoned. */
const SEND_TIMEOUT_MS = 60_000;
/** A claim outlives the longest possible send by a wide margin. */
const LOCK_MS = 3 * SEND_TIMEOUT_MS;
/** `stop()` lets a send in progress finish for this long before cutting it off. */
const STOP_GRACE_MS = 5_000;
const PURGE_INTERVAL_MS = 3_600_000;
const PURGE_BATCH_SIZE = 1_000;

/**
 * The wait before try `attempts + 1`: 5 s, 10 s, 20 s, … doubling up to 15 min, less up to 20 %
 * at random. `random` returns [0, 1).
 */
export function retryDelayMs(attempts: number, random: () => number = Math.random): number {
  const nominal = Math.min(MAX_RETRY_DELAY_MS, FIRST_RETRY_DELAY_MS * 2 ** Math.max(0, attempts - 1));
  return Math.round(nominal * (1 - RETRY_JITTER * random()));
}

export interface OutboxRunResult {
  sent: number;
  retried: number;
  failed: number;
}

export interface OutboxWorker {
  start(): void;
  /** Run soon (a message was just enqueued); a run in progress is followed by another. */
  wake(): void;
  /** Stops the timer and waits for the send in progress (cut off after a few seconds). */
  stop(): Promise<void>;
  /** One run now; concurrent calls share it. */
  runOnce(): Promise<OutboxRunResult>;
}

export function createOutboxWorker(deps: {
  db: Db;
  isPostgres: boolean;
  transport: MailTransport;
  seal: PayloadSeal;
  clock: Clock;
  logger: Logger;
  maxAttempts: number;
  pollIntervalMs: number;
  retentionMs: number;
  maxPerRun?: number;
  random?: () => number;
}): OutboxWorker {
  const { db, isPostgres, transport, seal, clock, logger, maxAttempts, pollIntervalMs, retentionMs } = deps;
  const maxPerRun = deps.maxPerRun ?? 20;
  const random = deps.random ?? Math.random;
  /** Names this instance's claims. */
  const owner = randomId();
  const stopping = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<OutboxRunResult> | undefined;
  let isStarted = false;
  let isStopped = false;
  let isWakeRequested = false;
  let nextPurgeAt = 0;

  async function run(): Promise<OutboxRunResult> {
    const result: OutboxRunResult = { sent: 0, retried: 0, failed: 0 };
    await purgeIfDue();
    for (let i = 0; i < maxPerRun && !isStopped; i++) {
      const now = clock();
      const row = await store.claimNextDue(db, { now, owner, lockedUntil: now + LOCK_MS, isPostgres });
      if (row === null) break;
      result[await deliver(row)] += 1;
    }
    return result;
  }

  async function deliver(row: MailOutboxRow): Promise<keyof OutboxRunResult> {
    const facts = { mailId: row.id, template: row.template, attempts: row.attempts };
    if (row.attempts > maxAttempts) {
      // The last try was claimed but never recorded: its instance died mid-send.
      return fail(row, { code: 'INTERRUPTED', responseCode: null, isPermanent: true, summary: 'INTERRUPTED the last attempt ended without an outcome' });
    }
    const mail = row.payload === null ? null : seal.open(row.id, row.payload);
    if (mail === null) {
      return fail(row, { code: 'UNREADABLE', responseCode: null, isPermanent: true, summary: 'UNREADABLE the payload cannot be opened with this AUTH_SECRET' });
    }

    try {
      await transport.send({ id: row.id, to: row.to_address, template: row.template, ...mail }, AbortSignal.any([AbortSignal.timeout(SEND_TIMEOUT_MS), stopping.signal]));
    } catch (error) {
      const failure = error instanceof MailSendError ? error.failure : describeSendError(error);
      if (failure.isPermanent || row.attempts >= maxAttempts) return fail(row, failure);
      const delayMs = retryDelayMs(row.attempts, random);
      await store.scheduleRetry(db, row.id, owner, { nextAttemptAt: clock() + delayMs, lastError: failure.summary });
      logger.warn({ ...facts, error: failure.code, responseCode: failure.responseCode, retryInMs: delayMs }, 'mail not sent; will retry');
      return 'retried';
    }

    const isRecorded = await store.markSent(db, row.id, owner, {
      sentAt: clock(),
      deliveredVia: transport.kind,
      // The dev outbox is read back at /dev/outbox; a mail handed to SMTP has no reason to keep its link.
      keepPayload: transport.kind === 'dev-outbox',
    });
    if (!isRecorded) logger.warn(facts, 'mail sent after its claim ran out; another instance may send it again');
    return 'sent';
  }

  async function fail(row: MailOutboxRow, failure: SendFailure): Promise<'failed'> {
    await store.markFailed(db, row.id, owner, failure.summary);
    logger.error(
      { mailId: row.id, template: row.template, attempts: row.attempts, error: failure.code, responseCode: failure.responseCode },
      failure.isPermanent ? 'mail failed: refused for good, not retried' : 'mail failed: no attempts left',
    );
    return 'failed';
  }

  async function purgeIfDue(): Promise<void> {
    const now = clock();
    if (now < nextPurgeAt) return;
    nextPurgeAt = now + PURGE_INTERVAL_MS;
    const deleted = await store.deleteFinishedBefore(db, now - retentionMs, PURGE_BATCH_SIZE);
    if (deleted > 0) logger.info({ deleted }, 'purged old outbox messages');
  }

  function runOnce(): Promise<OutboxRunResult> {
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
        // A full run may have left more due messages: go on at once rather than after the poll.
        const isFull = result.sent + result.retried + result.failed >= maxPerRun;
        schedule(isFull || isWakeRequested ? 0 : pollIntervalMs);
      })
      .catch((error: unknown) => {
        logger.error({ err: error }, 'mail outbox run failed; will retry');
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
      const grace = setTimeout(() => stopping.abort(new Error('mail worker stopping')), STOP_GRACE_MS);
      grace.unref();
      await running?.catch(() => {});
      clearTimeout(grace);
      transport.close();
    },
    runOnce,
  };
}
