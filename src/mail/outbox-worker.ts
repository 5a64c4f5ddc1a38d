/**
 * Sends what is in the mail outbox, in the background, on the shared outbox worker
 * (storage/outbox/outbox-worker.ts): what is the mail module's is here. A message is opened and
 * handed to the transport (SMTP or the dev outbox); the outcome is sent; or retried later (5 s,
 * 10 s, 20 s … doubling to 15 min, less up to 20 % at random); or, after `maxAttempts` tries or a
 * permanent refusal (a 5xx for the message), failed, with an error log naming the message id and
 * template (never its content). All state is in the table, so a restart loses nothing and any
 * instance can carry on where another stopped.
 *
 * Every message goes to the one relay (EMAIL_SERVER_HOST), so there are no lanes per recipient
 * domain: each process (each WORKERS worker) hands up to MAIL_CONCURRENCY messages (3 by default)
 * to the relay at once, each on a connection of its own, so that a burst of sign-in links or codes
 * is not sent one connection after another. A claim is held for `LOCK_MS`; a send is cut off well before that, so
 * two instances never send the same message in normal operation. If an instance dies mid-send, the
 * claim runs out and another instance sends the message again: at least once, never dropped.
 */
import type { Db } from '../storage/database.ts';
import type { MailOutboxRow } from '../storage/schema.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { createOutboxWorker, type OutboxAttempt, type OutboxWorker } from '../storage/outbox/outbox-worker.ts';
import { backoffMs, type RetryPolicy } from '../storage/outbox/retry-policy.ts';
import { MAIL_QUEUE } from './outbox.store.ts';
import type { PayloadSeal } from './payload-seal.ts';
import { describeSendError, MailSendError, type MailTransport, type SendFailure } from './transports.ts';

/** 5 s, 10 s, 20 s, … doubling up to 15 min, less up to 20 % at random. */
const RETRY_DELAYS = { firstDelayMs: 5_000, maxDelayMs: 15 * 60_000, jitter: 0.2 };
/** One send may take this long in all (connect, TLS, auth, data) before it is abandoned. */
const SEND_TIMEOUT_MS = 60_000;
/** A claim outlives the longest possible send by a wide margin. */
const LOCK_MS = 3 * SEND_TIMEOUT_MS;

/** The wait before try `attempts + 1`. `random` returns [0, 1). */
export function retryDelayMs(attempts: number, random: () => number = Math.random): number {
  return backoffMs(RETRY_DELAYS, attempts, random);
}

export interface OutboxRunResult {
  sent: number;
  retried: number;
  failed: number;
}

/** The shared worker's, with its counts in the mail module's words. */
export interface MailOutboxWorker extends Omit<OutboxWorker, 'runOnce'> {
  runOnce(): Promise<OutboxRunResult>;
}

export function createMailOutboxWorker(deps: {
  db: Db;
  isPostgres: boolean;
  transport: MailTransport;
  seal: PayloadSeal;
  clock: Clock;
  logger: Logger;
  maxAttempts: number;
  pollIntervalMs: number;
  retentionMs: number;
  /** Messages sent at once (MAIL_CONCURRENCY); default 1. */
  concurrency?: number;
  random?: () => number;
}): MailOutboxWorker {
  const { transport, seal, logger, maxAttempts } = deps;
  const retry: RetryPolicy<MailOutboxRow> = { ...RETRY_DELAYS, maxAttempts };
  /** The failure of a message not sent, for its log line; null when sent. */
  type Note = SendFailure | null;
  const fail = (failure: SendFailure): OutboxAttempt<MailOutboxRow, Note> => ({ outcome: 'fail', set: { last_error: failure.summary }, note: failure });

  const worker = createOutboxWorker<MailOutboxRow, Note>({
    db: deps.db,
    isPostgres: deps.isPostgres,
    queue: MAIL_QUEUE,
    retry,
    clock: deps.clock,
    logger,
    pollIntervalMs: deps.pollIntervalMs,
    retentionMs: deps.retentionMs,
    leaseMs: LOCK_MS,
    parallel: deps.concurrency ?? 1,
    messages: { purged: 'purged old outbox messages', storageFailed: 'mail outbox run failed; will retry', stopping: 'mail worker stopping' },
    ...(deps.random !== undefined && { random: deps.random }),
    handler: {
      async attempt(row, { signal }) {
        if (row.attempts > maxAttempts) {
          // The last try was claimed but never recorded: its instance died mid-send.
          return fail({ code: 'INTERRUPTED', responseCode: null, isPermanent: true, summary: 'INTERRUPTED the last attempt ended without an outcome' });
        }
        const mail = row.payload === null ? null : seal.open(row.id, row.payload);
        if (mail === null) return fail({ code: 'UNREADABLE', responseCode: null, isPermanent: true, summary: 'UNREADABLE the payload cannot be opened with this AUTH_SECRET' });
        try {
          await transport.send({ id: row.id, to: row.to_address, template: row.template, ...mail }, AbortSignal.any([AbortSignal.timeout(SEND_TIMEOUT_MS), signal]));
        } catch (error) {
          const failure = error instanceof MailSendError ? error.failure : describeSendError(error);
          // A transient failure is retried until MAIL_MAX_ATTEMPTS (the worker counts).
          return failure.isPermanent ? fail(failure) : { outcome: 'retry', set: { last_error: failure.summary }, note: failure };
        }
        return {
          outcome: 'done',
          // The dev outbox is read back at /dev/outbox; a mail handed to SMTP has no reason to keep its link.
          set: { delivered_via: transport.kind, last_error: null, ...(transport.kind === 'dev-outbox' ? {} : { payload: null }) },
          note: null,
        };
      },

      async settled(row, { verdict, note: failure, isRecorded, retryInMs }) {
        const facts = { mailId: row.id, template: row.template, attempts: row.attempts };
        if (failure === null) {
          if (!isRecorded) logger.warn(facts, 'mail sent after its claim ran out; another instance may send it again');
        } else if (verdict === 'retried') {
          logger.warn({ ...facts, error: failure.code, responseCode: failure.responseCode, retryInMs }, 'mail not sent; will retry');
        } else {
          logger.error(
            { ...facts, error: failure.code, responseCode: failure.responseCode },
            failure.isPermanent ? 'mail failed: refused for good, not retried' : 'mail failed: no attempts left',
          );
        }
      },
    },
  });

  return {
    ...worker,
    async runOnce() {
      const { done, retried, failed } = await worker.runOnce();
      return { sent: done, retried, failed };
    },
  };
}
