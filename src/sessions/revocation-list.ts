/**
 * The jwt strategy's revocation list: sessions ended before their access tokens expire. Entries
 * live in storage, shared by every instance; each instance mirrors them in memory and pulls new
 * ones every `syncIntervalMs`, so a token check never touches storage. If pulling fails for longer
 * than `staleAfterMs`, checks fail closed (UnavailableError -> 503) rather than miss a sign-out.
 */
import type { Db } from '../storage/database.ts';
import type { Clock } from '../lib/clock.ts';
import { performance } from 'node:perf_hooks';
import { UnavailableError } from '../errors.ts';

/** Re-read a little behind the last seen `seq`: a lower sequence number can commit later. */
const SEQUENCE_OVERLAP = 256;
const PAGE_SIZE = 5_000;

export interface RevocationList {
  /** Loads current entries; then keeps pulling until `stop()`. */
  start(): Promise<void>;
  stop(): void;
  /** Pulls entries made by other instances now. */
  sync(): Promise<void>;
  /** Records a revocation in storage (inside the caller's transaction) and, once committed, here. */
  add(db: Db, sessionId: string, expiresAt: number): Promise<void>;
  /** Mirrors a committed revocation in memory at once. */
  remember(sessionId: string, expiresAt: number): void;
  isRevoked(sessionId: string): boolean;
}

export function createRevocationList(deps: { db: Db; clock: Clock; syncIntervalMs: number; staleAfterMs: number }): RevocationList {
  const { db, clock, syncIntervalMs, staleAfterMs } = deps;
  const revoked = new Map<string, number>();
  let lastSeq = 0;
  /** Monotonic time of the last successful pull: staleness is about this process, not the wall clock. */
  let lastSyncAt = Number.NEGATIVE_INFINITY;
  let timer: NodeJS.Timeout | undefined;
  let syncing: Promise<void> | undefined;

  async function pull(): Promise<void> {
    const now = clock();
    for (;;) {
      const rows = await db
        .selectFrom('revoked_sessions')
        .select(['seq', 'session_id', 'expires_at'])
        .where('seq', '>', Math.max(0, lastSeq - SEQUENCE_OVERLAP))
        .where('expires_at', '>', now)
        .orderBy('seq')
        .limit(PAGE_SIZE)
        .execute();
      for (const row of rows) {
        revoked.set(row.session_id, Math.max(row.expires_at, revoked.get(row.session_id) ?? 0));
        lastSeq = Math.max(lastSeq, Number(row.seq));
      }
      if (rows.length < PAGE_SIZE) break;
    }
    for (const [sessionId, expiresAt] of revoked) if (expiresAt <= now) revoked.delete(sessionId);
    lastSyncAt = performance.now();
  }

  function sync(): Promise<void> {
    syncing ??= pull().finally(() => {
      syncing = undefined;
    });
    return syncing;
  }

  return {
    async start() {
      await sync();
      timer = setInterval(() => {
        sync().catch(() => {
          // Logged by the caller's health signal: isRevoked fails closed once the mirror is stale.
        });
      }, syncIntervalMs);
      timer.unref();
    },
    stop() {
      clearInterval(timer);
    },
    sync,
    async add(tx, sessionId, expiresAt) {
      await tx.insertInto('revoked_sessions').values({ session_id: sessionId, expires_at: expiresAt, created_at: clock() }).execute();
    },
    remember(sessionId, expiresAt) {
      revoked.set(sessionId, expiresAt);
    },
    isRevoked(sessionId) {
      if (performance.now() - lastSyncAt > staleAfterMs) {
        throw new UnavailableError('revocation list is stale', { retryAfterSeconds: 2 });
      }
      const expiresAt = revoked.get(sessionId);
      return expiresAt !== undefined && expiresAt > clock();
    },
  };
}
