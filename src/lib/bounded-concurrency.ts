/**
 * Runs at most `maxConcurrent` tasks at once; up to `maxQueued` more wait, each at most
 * `queueTimeoutMs`. A task that cannot get a slot is refused with `CapacityExceededError` at once,
 * so a burst costs a fast refusal instead of unbounded memory.
 *
 * A task may name whom it runs for (`key`: a client, an account). Waiting tasks are then served
 * round-robin by key rather than first come, first served: a key with a backlog delays another key
 * by at most one task of its own per turn, not by its whole backlog, and with `maxPendingPerKey`
 * it cannot fill the queue either. Tasks without a key share one line, served in order, to which
 * `maxPendingPerKey` does not apply.
 */
export class CapacityExceededError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CapacityExceededError';
  }
}

/** This key has `maxPendingPerKey` tasks running or waiting already; other keys may still get in. */
export class KeyCapacityExceededError extends CapacityExceededError {
  constructor(message: string) {
    super(message);
    this.name = 'KeyCapacityExceededError';
  }
}

interface Waiter {
  start: () => void;
  timer: NodeJS.Timeout;
}

/** A task's key; tasks without one share the `undefined` line. */
type Key = string | undefined;

export class BoundedConcurrency {
  readonly #maxConcurrent: number;
  readonly #maxQueued: number;
  readonly #queueTimeoutMs: number;
  readonly #maxPendingPerKey: number;
  /** Each key's waiting tasks, in arrival order; the map's order is the order keys are served in. */
  readonly #waiting = new Map<Key, Waiter[]>();
  /** Tasks running or waiting, per key. */
  readonly #pending = new Map<Key, number>();
  #queued = 0;
  #running = 0;

  constructor(options: { maxConcurrent: number; maxQueued: number; queueTimeoutMs: number; maxPendingPerKey?: number }) {
    this.#maxConcurrent = options.maxConcurrent;
    this.#maxQueued = options.maxQueued;
    this.#queueTimeoutMs = options.queueTimeoutMs;
    this.#maxPendingPerKey = options.maxPendingPerKey ?? Number.POSITIVE_INFINITY;
  }

  get running(): number {
    return this.#running;
  }

  get queued(): number {
    return this.#queued;
  }

  async run<T>(task: () => Promise<T>, key?: string): Promise<T> {
    const pending = this.#pending.get(key) ?? 0;
    if (key !== undefined && pending >= this.#maxPendingPerKey) throw new KeyCapacityExceededError('too many tasks for this key');
    this.#pending.set(key, pending + 1);
    try {
      await this.#acquire(key);
      try {
        return await task();
      } finally {
        this.#release(key);
      }
    } finally {
      const left = this.#pending.get(key)! - 1;
      if (left === 0) this.#pending.delete(key);
      else this.#pending.set(key, left);
    }
  }

  #acquire(key: Key): Promise<void> {
    if (this.#running < this.#maxConcurrent) {
      this.#running++;
      return Promise.resolve();
    }
    if (this.#queued >= this.#maxQueued) {
      return Promise.reject(new CapacityExceededError('queue full'));
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        start: () => {
          clearTimeout(waiter.timer);
          resolve();
        },
        timer: setTimeout(() => {
          const line = this.#waiting.get(key)!;
          line.splice(line.indexOf(waiter), 1);
          if (line.length === 0) this.#waiting.delete(key);
          this.#queued--;
          reject(new CapacityExceededError('queue wait timed out'));
        }, this.#queueTimeoutMs),
      };
      const line = this.#waiting.get(key);
      if (line === undefined) this.#waiting.set(key, [waiter]);
      else line.push(waiter);
      this.#queued++;
    });
  }

  #release(finishedKey: Key): void {
    // The key that just had its turn goes behind every other key that is waiting.
    this.#toBack(finishedKey);
    const first = this.#waiting.entries().next();
    if (first.done === true) {
      this.#running--;
      return;
    }
    const [key, line] = first.value;
    const next = line.shift()!;
    this.#queued--;
    if (line.length === 0) this.#waiting.delete(key);
    // Behind the others already now, for when more than one slot frees before its task ends.
    else this.#toBack(key);
    // The slot passes straight to the next waiter, so `running` stays the same.
    next.start();
  }

  #toBack(key: Key): void {
    const line = this.#waiting.get(key);
    if (line === undefined) return;
    this.#waiting.delete(key);
    this.#waiting.set(key, line);
  }
}
