/**
 * When an outbox tries a failed item again: exponential backoff with jitter, until a number of
 * tries (mail) or an age (webhooks) is reached. Pure: the worker (outbox-worker.ts) applies it.
 */

export interface RetryPolicy<Item> {
  /** The wait after the first failed try; it doubles after each further one… */
  readonly firstDelayMs: number;
  /** …up to this. */
  readonly maxDelayMs: number;
  /** Up to this share of a wait is taken off at random, so instances and items spread out. */
  readonly jitter: number;
  /** Tries (counted at claim) after which a failed item is given up. */
  readonly maxAttempts?: number;
  /** Tries go on for this long after the first one, with one last try at the end; then given up. */
  readonly maxAgeMs?: number;
  /** When the item's first try started (for `maxAgeMs`); null before it: the try now ending. */
  firstAttemptAt?(item: Item): number | null;
}

/**
 * The wait before try `attempts + 1`: `firstDelayMs` doubling up to `maxDelayMs`, less up to
 * `jitter` of it at random. `random` returns [0, 1).
 */
export function backoffMs(policy: Pick<RetryPolicy<never>, 'firstDelayMs' | 'maxDelayMs' | 'jitter'>, attempts: number, random: () => number = Math.random): number {
  const nominal = Math.min(policy.maxDelayMs, policy.firstDelayMs * 2 ** Math.min(30, Math.max(0, attempts - 1)));
  return Math.round(nominal * (1 - policy.jitter * random()));
}

/**
 * When to try an item that just failed (`attempts` tries so far, the last started at `startedAt`
 * and ended at `doneAt`) again; null when it is given up.
 */
export function nextAttemptAt<Item extends { attempts: number }>(
  policy: RetryPolicy<Item>,
  item: Item,
  at: { startedAt: number; doneAt: number },
  random: () => number = Math.random,
): number | null {
  if (policy.maxAttempts !== undefined && item.attempts >= policy.maxAttempts) return null;
  if (policy.maxAgeMs === undefined) return at.doneAt + backoffMs(policy, item.attempts, random);
  const giveUpAt = (policy.firstAttemptAt?.(item) ?? at.startedAt) + policy.maxAgeMs;
  if (at.doneAt >= giveUpAt) return null;
  return Math.min(at.doneAt + backoffMs(policy, item.attempts, random), giveUpAt);
}
