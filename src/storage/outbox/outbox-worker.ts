/**
 * Sends what is in an outbox, in the background, at least once: the one loop behind the mail outbox
 * and webhook deliveries. The queue says what an item is and how it is sent (an `OutboxHandler`);
 * this worker claims, leases, retries, purges and stops.
 *
 * Items go out on fair lanes (fair-lanes.ts): one lane per destination with something due (a
 * queue without destinations is one lane, or `parallel`), never two attempts to one destination at once, and
 * every other destination's due item started at once, whatever one destination's attempt is doing.
 * New items (`wake()`) and due retries (the poll) are claimed even while attempts are in flight.
 *
 * Each claim takes a lease (outbox.store.ts) under a token of its own, so several instances (and
 * several lanes of one) never attempt the same item at once; an instance that dies mid-attempt
 * leaves a lease that runs out, after which another instance (or this one, restarted) attempts the
 * item again. The handler's outcome is recorded: done; or, when it says so, retried with
 * exponential backoff and jitter until the policy's tries or age run out (retry-policy.ts); then
 * failed. Done and failed items are purged after the retention, at most once an hour.
 */
import type { Kysely } from 'kysely';
import type { Clock } from '../../lib/clock.ts';
import type { Logger } from '../../lib/logger.ts';
import { randomId } from '../../lib/random.ts';
import { createFairLanes } from './fair-lanes.ts';
import { claimNext, finishItem, laneKeyOf, purgeFinished, releaseLane, retryItem, type OutboxItem, type OutboxQueue } from './outbox.store.ts';
import { nextAttemptAt, type RetryPolicy } from './retry-policy.ts';

/** `stop()` lets the attempts in progress finish for this long before aborting them. */
const STOP_GRACE_MS = 5_000;
const PURGE_INTERVAL_MS = 3_600_000;
const PURGE_BATCH_SIZE = 1_000;
/** Batches per purge at most: a long-neglected table is caught up over the following hours. */
const PURGE_MAX_BATCHES = 10;
/** A wake right after a write inside a transaction would not yet see the row. */
const WAKE_AFTER_TRANSACTION_MS = 100;

/** What a run ended: items done (sent, delivered), given back for a retry, or failed for good. */
export interface OutboxRunResult {
  done: number;
  retried: number;
  failed: number;
}
export type OutboxVerdict = keyof OutboxRunResult;

/** What the handler made of one attempt. */
export interface OutboxAttempt<Item, Note> {
  /** `done`: handed over for good. `retry`: not, try again as the policy allows. `fail`: never (a permanent refusal). */
  readonly outcome: 'done' | 'retry' | 'fail';
  /** The queue's own columns, written with the outcome (the last error, the receiver's answer …). */
  readonly set?: Partial<Item>;
  /** Anything the handler wants back in `settled` (what failed, for its log line). */
  readonly note: Note;
}

/** An attempt's outcome as recorded. */
export interface OutboxSettled<Note> {
  readonly verdict: OutboxVerdict;
  readonly note: Note;
  /** False when the lease ran out before the outcome was written: another worker may attempt it again. */
  readonly isRecorded: boolean;
  readonly startedAt: number;
  readonly doneAt: number;
  /** When retried: the wait before the next try. */
  readonly retryInMs: number | null;
}

/** What is the queue's own: how an item is attempted, and what follows an outcome. */
export interface OutboxHandler<Item, Note> {
  /**
   * Attempts one claimed item (leased to `item.locked_by`). `signal` aborts when the worker stops
   * and the grace period is over. Throw only for a storage error (the lease then runs out and the
   * item is attempted again).
   */
  attempt(item: Item, context: { readonly startedAt: number; readonly signal: AbortSignal }): Promise<OutboxAttempt<Item, Note>>;
  /** After the outcome is written (log lines, the destination's health); the lane is held until it ends. */
  settled?(item: Item, settled: OutboxSettled<Note>): Promise<void>;
}

export interface OutboxWorkerOptions<Item extends OutboxItem, Note> {
  /** Any Kysely over a database with the queue's tables. */
  db: Kysely<any>;
  isPostgres: boolean;
  queue: OutboxQueue<Item>;
  handler: OutboxHandler<Item, Note>;
  retry: RetryPolicy<Item>;
  clock: Clock;
  logger: Logger;
  /** Due retries, and leases that ran out, are claimed at least this often. */
  pollIntervalMs: number;
  /**
   * The first poll (and purge) waits this long after `start()` (default: none). A queue that is
   * mostly empty need not query at the moment every other worker does, each taking a connection
   * the pool then keeps; what it holds is claimed at that first poll, or at once on `wake()`.
   */
  firstPollDelayMs?: number;
  /** Done and failed items are deleted this long after they were created. */
  retentionMs: number;
  /** How long a claim holds an item (and its lane): well beyond the longest possible attempt. */
  leaseMs: number;
  /**
   * A queue without lanes: how many items this worker attempts at once (default 1). Each still
   * under its own lease; several instances attempt up to this many each. A queue with lanes keeps
   * one attempt per destination, as many destinations at once as have work.
   */
  parallel?: number;
  /** The worker's log lines, in the queue's words. */
  messages: { readonly purged: string; readonly storageFailed: string; readonly stopping: string };
  /** Names this worker's leases (tests: two workers on one database). */
  owner?: string;
  random?: () => number;
}

export interface OutboxWorker {
  start(): void;
  /** Claim now (an item was just written), even while attempts are in flight. */
  wake(): void;
  /** `wake()` now, or just after the transaction `db` is (whose rows a wake now would not see). */
  wakeAfter(db: { readonly isTransaction: boolean }): void;
  /** Stops the timer and waits for the attempts in progress (aborted after a few seconds). */
  stop(): Promise<void>;
  /**
   * Claims everything claimable now and waits until nothing is in flight and nothing more is
   * claimable: what was attempted meanwhile (tests; concurrent calls share it). Rejects with the
   * first storage error met, once the attempts in flight have ended.
   */
  runOnce(): Promise<OutboxRunResult>;
}

export function createOutboxWorker<Item extends OutboxItem, Note>(options: OutboxWorkerOptions<Item, Note>): OutboxWorker {
  const { db, isPostgres, queue, handler, retry, clock, logger, pollIntervalMs, retentionMs, leaseMs, messages } = options;
  const random = options.random ?? Math.random;
  const owner = options.owner ?? randomId();
  const stopping = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<OutboxRunResult> | undefined;
  /** What runOnce() reports: the attempts that ended, and the first error, while it runs. */
  let tally: { result: OutboxRunResult; error?: unknown } | undefined;
  let isStarted = false;
  let isStopped = false;
  let purging: Promise<void> | undefined;
  let nextPurgeAt = 0;

  const slots = Math.max(1, Math.floor(options.parallel ?? 1));
  const lanes = createFairLanes<Item>({
    // Each claim under a lease token of its own (the owner, then a random part): a lane whose lease
    // ran out, and whose item another lane or instance took over, changes nothing with its writes.
    claim(busyKeys) {
      const now = clock();
      const token = `${owner.slice(0, 9)}:${randomId()}`;
      return claimNext(db, queue, { now, owner: token, lockedUntil: now + leaseMs, isPostgres, busyKeys, slots });
    },
    keyOf: (item) => laneKeyOf(queue, item),
    async work(item) {
      try {
        const verdict = await attempt(item);
        if (tally !== undefined) tally.result[verdict] += 1;
      } finally {
        await releaseLane(db, queue, laneKeyOf(queue, item), item.locked_by!);
      }
    },
    onError(error) {
      if (tally !== undefined) tally.error ??= error;
      // A claimed item whose outcome could not be written is claimed again once its lease runs out.
      logger.error({ err: error }, messages.storageFailed);
    },
  });

  async function attempt(item: Item): Promise<OutboxVerdict> {
    // The claim's lease token: every write about this attempt names it.
    const token = item.locked_by!;
    const startedAt = clock();
    const { outcome, set, note } = await handler.attempt(item, { startedAt, signal: stopping.signal });
    const doneAt = clock();
    let verdict: OutboxVerdict;
    let isRecorded: boolean;
    let retryInMs: number | null = null;
    const retryAt = outcome === 'retry' ? nextAttemptAt(retry, item, { startedAt, doneAt }, random) : null;
    if (outcome === 'done') {
      verdict = 'done';
      isRecorded = await finishItem(db, queue, item.id, token, { status: 'done', at: doneAt, ...(set !== undefined && { set }) });
    } else if (retryAt === null) {
      verdict = 'failed';
      isRecorded = await finishItem(db, queue, item.id, token, { status: 'failed', at: doneAt, ...(set !== undefined && { set }) });
    } else {
      verdict = 'retried';
      retryInMs = retryAt - doneAt;
      isRecorded = await retryItem(db, queue, item.id, token, retryAt, set);
    }
    await handler.settled?.(item, { verdict, note, isRecorded, startedAt, doneAt, retryInMs });
    return verdict;
  }

  /** Deletes what is past the retention, at most once an hour; a call during a purge shares it. */
  function purgeIfDue(): Promise<void> {
    const now = clock();
    if (purging !== undefined || now < nextPurgeAt) return purging ?? Promise.resolve();
    nextPurgeAt = now + PURGE_INTERVAL_MS;
    purging = (async () => {
      let deleted = 0;
      for (let batch = 0; batch < PURGE_MAX_BATCHES && !isStopped; batch++) {
        const count = await purgeFinished(db, queue, now - retentionMs, PURGE_BATCH_SIZE);
        deleted += count;
        if (count < PURGE_BATCH_SIZE) break;
      }
      if (deleted > 0) logger.info({ deleted }, messages.purged);
    })().finally(() => {
      purging = undefined;
    });
    return purging;
  }

  async function run(): Promise<OutboxRunResult> {
    const current: NonNullable<typeof tally> = { result: { done: 0, retried: 0, failed: 0 } };
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

  function runOnce(): Promise<OutboxRunResult> {
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
    purgeIfDue().catch((error: unknown) => logger.error({ err: error }, messages.storageFailed));
    lanes.fill();
  }

  function wake(): void {
    if (isStarted && !isStopped) lanes.fill();
  }

  return {
    start() {
      if (isStarted || isStopped) return;
      isStarted = true;
      if ((options.firstPollDelayMs ?? 0) <= 0) return tick();
      timer = setTimeout(tick, options.firstPollDelayMs);
      timer.unref();
    },
    wake,
    wakeAfter(target) {
      if (target.isTransaction) setTimeout(wake, WAKE_AFTER_TRANSACTION_MS).unref();
      else wake();
    },
    async stop() {
      isStopped = true;
      clearTimeout(timer);
      const grace = setTimeout(() => stopping.abort(new Error(messages.stopping)), STOP_GRACE_MS);
      grace.unref();
      await Promise.allSettled([lanes.close(), running, purging]);
      clearTimeout(grace);
    },
    runOnce,
  };
}
