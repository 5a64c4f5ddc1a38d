/**
 * Deletes what no longer serves anything, in the background: sessions ended (expired, revoked or
 * idle past the timeout) a day ago, revocation entries whose tokens have all expired, expired
 * single-use tokens, and ended rate-limit windows. Each run deletes at most `maxBatches` batches of
 * `batchSize` rows per kind, so it is short however large the backlog (the next run continues) and
 * never holds a lock for long; several instances may run it at once, deletes being idempotent.
 * (Audit events and outbox mail have retention jobs of their own.)
 */
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import { createPeriodicJob, type PeriodicJob } from '../lib/periodic-job.ts';
import { deleteEndedSessions, deleteExpiredRevocations } from '../sessions/session.store.ts';
import { purgeEndedCounters } from '../http/rate-limit.store.ts';
import type { ActionTokens } from '../tokens/action-tokens.ts';

/** Ended sessions are kept this long (the dashboard and admin pages list only active ones). */
const ENDED_SESSION_GRACE_MS = 86_400_000;

export type HousekeepingCounts = Record<'sessions' | 'revocations' | 'actionTokens' | 'rateLimits', number>;

export function createHousekeepingJob(deps: {
  db: Db;
  clock: Clock;
  logger: Logger;
  actionTokens: ActionTokens;
  idleTimeoutMs: number;
  intervalMs?: number;
  batchSize?: number;
  maxBatches?: number;
}): PeriodicJob<HousekeepingCounts> {
  const { db, clock, logger, actionTokens } = deps;
  const batchSize = deps.batchSize ?? 1_000;
  const maxBatches = deps.maxBatches ?? 20;

  /** Runs `deleteBatch` until a batch comes back short, the run's budget is spent, or the job stops. */
  async function drain(deleteBatch: () => Promise<number>): Promise<number> {
    let total = 0;
    for (let batch = 0; batch < maxBatches && !job.isStopped; batch += 1) {
      const deleted = await deleteBatch();
      total += deleted;
      if (deleted < batchSize) break;
    }
    return total;
  }

  const job: PeriodicJob<HousekeepingCounts> = createPeriodicJob({
    name: 'housekeeping',
    intervalMs: deps.intervalMs ?? 10 * 60_000,
    firstDelayMs: 60_000,
    logger,
    async run() {
      const now = clock();
      const counts: HousekeepingCounts = {
        sessions: await drain(() => deleteEndedSessions(db, now - ENDED_SESSION_GRACE_MS, now - deps.idleTimeoutMs - ENDED_SESSION_GRACE_MS, batchSize)),
        revocations: await drain(() => deleteExpiredRevocations(db, now, batchSize)),
        actionTokens: await drain(() => actionTokens.purgeExpired(db, batchSize)),
        rateLimits: await drain(() => purgeEndedCounters(db, now, batchSize)),
      };
      if (Object.values(counts).some((count) => count > 0)) logger.info(counts, 'housekeeping: deleted ended rows');
      return counts;
    },
  });
  return job;
}
