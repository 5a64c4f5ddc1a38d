/**
 * Runs at most `maxConcurrent` tasks at once; up to `maxQueued` more wait, each at most
 * `queueTimeoutMs`. A task that cannot get a slot is refused with `CapacityExceededError` at once,
 * so a burst costs a fast refusal instead of unbounded memory.
 */
export class CapacityExceededError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CapacityExceededError';
  }
}

interface Waiter {
  start: () => void;
  timer: NodeJS.Timeout;
}

export class BoundedConcurrency {
  readonly #maxConcurrent: number;
  readonly #maxQueued: number;
  readonly #queueTimeoutMs: number;
  readonly #queue: Waiter[] = [];
  #running = 0;

  constructor(options: { maxConcurrent: number; maxQueued: number; queueTimeoutMs: number }) {
    this.#maxConcurrent = options.maxConcurrent;
    this.#maxQueued = options.maxQueued;
    this.#queueTimeoutMs = options.queueTimeoutMs;
  }

  get running(): number {
    return this.#running;
  }

  get queued(): number {
    return this.#queue.length;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    await this.#acquire();
    try {
      return await task();
    } finally {
      this.#release();
    }
  }

  #acquire(): Promise<void> {
    if (this.#running < this.#maxConcurrent) {
      this.#running++;
      return Promise.resolve();
    }
    if (this.#queue.length >= this.#maxQueued) {
      return Promise.reject(new CapacityExceededError('queue full'));
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        start: () => {
          clearTimeout(waiter.timer);
          resolve();
        },
        timer: setTimeout(() => {
          this.#queue.splice(this.#queue.indexOf(waiter), 1);
          reject(new CapacityExceededError('queue wait timed out'));
        }, this.#queueTimeoutMs),
      };
      this.#queue.push(waiter);
    });
  }

  #release(): void {
    const next = this.#queue.shift();
    // The slot passes straight to the next waiter, so `running` stays the same.
    if (next) next.start();
    else this.#running--;
  }
}
