/**
 * For answers that must not tell, by how long they take, whether an address has an account
 * (forgot-password, a new verification link). The real work for an account (a token, rendering
 * and sealing a mail, a few inserts) takes some milliseconds more than for none; holding every
 * answer until one fixed time after its request arrived hides that difference, and any other we
 * have not thought of, far better than imitating the work on the other path. It costs a timer,
 * not a thread. The work must end well within the floor; past it, the answer waits for the work.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

/** The floor of those answers: far above the work's few milliseconds, short for a person. */
export const ACCOUNT_NEUTRAL_MIN_RESPONSE_MS = 250;

/** Where the floor reads the time and waits: the real ones, or a test's. */
export interface FloorTimer {
  now(): number;
  sleep(ms: number): Promise<void>;
}

const realTimer: FloorTimer = { now: () => performance.now(), sleep: (ms) => sleep(ms) };

/**
 * Runs `work` and settles as it does, but no sooner than the floor after the call: its value, or
 * its error (storage down) too, so that a failure on one path looks like a failure on the other.
 */
export type ResponseFloor = <T>(work: () => Promise<T>) => Promise<T>;

export function createResponseFloor(minMs: number, timer: FloorTimer = realTimer): ResponseFloor {
  return async (work) => {
    const answerAt = timer.now() + minMs;
    try {
      return await work();
    } finally {
      const wait = answerAt - timer.now();
      if (wait > 0) await timer.sleep(wait);
    }
  };
}
