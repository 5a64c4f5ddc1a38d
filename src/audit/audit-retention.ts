/**
 * Deletes audit events older than the retention period, in the background. Each run deletes at
 * most `maxBatchesPerRun` batches of `batchSize` rows, so one run is short however large the
 * backlog; the next run continues. Several instances may run it at once: deletes are idempotent.
 */
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import type { AuditService } from './audit.service.ts';
import { createPeriodicJob, type PeriodicJob } from '../lib/periodic-job.ts';

const HOUR_MS = 3_600_000;
/** The first run comes soon after start, so instances restarted often still purge. */
const FIRST_RUN_DELAY_MS = 60_000;

export interface AuditRetentionJob {
  start(): void;
  /** Stops the timer and waits for a run in progress to finish its current batch. */
  stop(): Promise<void>;
  /** One run now; returns how many events it deleted. */
  runOnce(): Promise<number>;
}

export function createAuditRetentionJob(deps: {
  audit: AuditService;
  clock: Clock;
  logger: Logger;
  retentionMs: number;
  intervalMs?: number;
  batchSize?: number;
  maxBatchesPerRun?: number;
}): AuditRetentionJob {
  const { audit, clock, logger, retentionMs } = deps;
  const batchSize = deps.batchSize ?? 1_000;
  const maxBatchesPerRun = deps.maxBatchesPerRun ?? 20;
  const job: PeriodicJob<number> = createPeriodicJob({
    name: 'audit purge',
    intervalMs: deps.intervalMs ?? HOUR_MS,
    firstDelayMs: FIRST_RUN_DELAY_MS,
    logger,
    async run() {
      const { deleted, isDone } = await audit.purgeOlderThan(clock() - retentionMs, { batchSize, maxBatches: maxBatchesPerRun, shouldStop: () => job.isStopped });
      if (deleted > 0) logger.info({ deleted, isDone }, 'purged old audit events');
      return deleted;
    },
  });
  return { start: () => job.start(), stop: () => job.stop(), runOnce: () => job.runOnce() };
}
