/**
 * A key's rate limit counted in leases, so a busy key does not write its shared counter (storage or
 * Redis) on every request: a request takes a point from the lease this instance holds for the key;
 * when there is none left, the instance counts a new lease against the shared counter at once.
 *
 * Leases grow while they are used up: the first is one point (a key used now and then is counted
 * exactly, one write per request, as without leases); each lease used up within LEASE_MS is
 * followed by one twice its size, up to MAX_LEASE_SHARE of the limit. A lease not used up within
 * LEASE_MS lapses, and the next starts at one point again. A lease that would go past the limit is
 * one point instead, so the last points of a window are counted one by one.
 *
 * What that costs in precision: points of a lapsed lease were counted and not used (a key that
 * stops suddenly may be refused up to that many requests early in the same window), and instances
 * sharing a counter each hold a lease (a key spread over N instances may go over its limit by up to
 * N leases). Both at most MAX_LEASE_SHARE of the limit per lease. Refusals are exact: a refused
 * lease is a refused request, with the shared counter's wait; until that wait is over this
 * instance refuses the key's requests itself, without asking the shared counter again.
 */
import type { Limiter, Wait } from '../http/rate-limit.ts';

/** How long a lease may be used: after that its points lapse. */
export const LEASE_MS = 1_000;
/** The largest lease, as a share of the limit. */
export const MAX_LEASE_SHARE = 0.05;
const MAX_HELD = 10_000;

interface Lease {
  left: number;
  size: number;
  /** Epoch ms: usable until then. */
  until: number;
  /** Epoch ms: refused until then (the shared counter's wait), without asking it again. */
  refusedUntil?: number;
}

export interface LeasedLimiter {
  /**
   * Counts one request of `key`: the wait when over the limit, else null. Answered at once (no
   * promise) when a held lease has a point left or the key is refused here; a promise when the
   * shared counter is asked.
   */
  consume(key: string): Wait | Promise<Wait>;
}

/** `now`: the app's clock (epoch ms), the one its shared counters' windows run on. */
export function leasedLimiter(shared: Pick<Limiter, 'consume' | 'count'>, points: number, now: () => number): LeasedLimiter {
  const maxLease = Math.max(1, Math.floor(points * MAX_LEASE_SHARE));
  const held = new Map<string, Lease>();
  /** A lease being counted for a key: its other requests wait for it rather than count one each. */
  const counting = new Map<string, Promise<Wait>>();

  /** A point of the lease held for `key`, when there is one left; false otherwise. */
  function takePoint(key: string, at: number): boolean {
    const lease = held.get(key);
    if (lease === undefined || lease.left <= 0 || lease.until <= at) return false;
    lease.left--;
    return true;
  }

  async function countLease(key: string, at: number): Promise<Wait> {
    const lease = held.get(key);
    // Used up in time: twice as large; lapsed (or none yet): one point.
    let size = lease !== undefined && lease.left === 0 && lease.until > at ? Math.min(maxLease, lease.size * 2) : 1;
    if (size > 1 && (await shared.count(key)) + size > points) size = 1;
    const wait = await shared.consume(key, size);
    if (wait !== null) {
      // Refused until the window ends: the next requests are refused here, not counted there.
      held.set(key, { left: 0, size: 1, until: at, refusedUntil: at + wait * 1000 });
      return wait;
    }
    if (!held.has(key) && held.size >= MAX_HELD) held.delete(held.keys().next().value!);
    // The point this request takes is the lease's first.
    held.set(key, { left: size - 1, size, until: at + LEASE_MS });
    return null;
  }

  /** No point held: waits for the lease being counted for `key`, if any, else counts one. */
  async function countOrWait(key: string): Promise<Wait> {
    const inFlight = counting.get(key);
    if (inFlight !== undefined) {
      await inFlight.catch(() => null);
      if (takePoint(key, now())) return null;
    }
    const pending = countLease(key, now()).finally(() => {
      if (counting.get(key) === pending) counting.delete(key);
    });
    counting.set(key, pending);
    return pending;
  }

  return {
    consume(key) {
      const at = now();
      const refusedUntil = held.get(key)?.refusedUntil;
      if (refusedUntil !== undefined && refusedUntil > at) return Math.max(1, Math.ceil((refusedUntil - at) / 1000));
      if (takePoint(key, at)) return null;
      return countOrWait(key);
    },
  };
}
