/**
 * How guessable a password is, estimated by zxcvbn-ts in a worker thread
 * (password-strength.worker.js). The worker starts on the first estimate (about 150 ms: the
 * dictionaries are built) and ends after `idleMs` without one, taking its memory (about 55 MB)
 * with it. So a process that only signs people in holds none of it, one that sets a password now
 * and then (the ADMIN_PASSWORD check at start, an occasional reset) gives it back, and an estimate
 * never stalls the event loop.
 */
import { Worker } from 'node:worker_threads';
import { UnavailableError } from '../errors.ts';
import { BoundedConcurrency, CapacityExceededError } from '../lib/bounded-concurrency.ts';

export interface StrengthEstimate {
  /** zxcvbn's score, 0 (guessed at once) to 4. */
  score: number;
  /** For each part of the password zxcvbn matched: the dictionary it came from ('' when none). */
  dictionaryNames: string[];
  warning: string | null;
  suggestion: string | null;
}

export interface StrengthEstimator {
  /** zxcvbn's estimate for `password`, with `userInputs` counted as words an attacker knows. */
  estimate(password: string, userInputs: readonly string[]): Promise<StrengthEstimate>;
  /** Whether the worker is running now. */
  isRunning(): boolean;
}

const WORKER_URL = new URL('./password-strength.worker.js', import.meta.url);
/**
 * The worker computes estimates one at a time (the worst, a long keyboard walk, takes most of a
 * second). Like the hash queue, the wait is bounded: at most `maxPending` in all (one computing,
 * the rest waiting, each at most `timeoutMs` for its turn), past which a password-setting request
 * gets 503 with Retry-After instead of piling up. A worker that does not answer one estimate
 * within `timeoutMs` of receiving it is stuck, and is replaced; a long queue is not a stuck worker.
 */
const DEFAULT_MAX_PENDING = 32;
const DEFAULT_TIMEOUT_MS = 10_000;
/** The dictionaries need about 55 MB; this bounds the worker, not the process. */
const WORKER_HEAP_MB = 256;

type Reply = { id: number; estimate: StrengthEstimate } | { id: number; error: string };

interface Running {
  worker: Worker;
  /** The estimate the worker is computing, if any: there is never more than one. */
  asked: { id: number; resolve(estimate: StrengthEstimate): void; reject(error: Error): void; timer: NodeJS.Timeout } | null;
  idleTimer: NodeJS.Timeout | null;
}

export function createStrengthEstimator(options: { idleMs: number; maxPending?: number; timeoutMs?: number }): StrengthEstimator {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const turns = new BoundedConcurrency({ maxConcurrent: 1, maxQueued: Math.max(0, (options.maxPending ?? DEFAULT_MAX_PENDING) - 1), queueTimeoutMs: timeoutMs });
  let running: Running | null = null;
  let nextId = 1;

  function start(): Running {
    const worker = new Worker(WORKER_URL, { resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB } });
    const state: Running = { worker, asked: null, idleTimer: null };
    worker.on('message', (reply: Reply) => {
      const asked = state.asked;
      if (asked === null || asked.id !== reply.id) return;
      state.asked = null;
      clearTimeout(asked.timer);
      if ('error' in reply) asked.reject(new Error(`password strength estimate failed: ${reply.error}`));
      else asked.resolve(reply.estimate);
      // Idle unless the next estimate is asked (it clears this): it must not keep the process
      // alive, and it ends if nothing comes.
      worker.unref();
      state.idleTimer = setTimeout(() => stop(state), options.idleMs);
      state.idleTimer.unref();
    });
    const fail = (error: Error) => {
      if (running === state) running = null;
      if (state.idleTimer !== null) clearTimeout(state.idleTimer);
      if (state.asked !== null) {
        clearTimeout(state.asked.timer);
        state.asked.reject(error);
        state.asked = null;
      }
    };
    worker.on('error', (error) => fail(new UnavailableError(`password strength worker failed: ${error.message}`)));
    worker.on('exit', (code) => fail(new UnavailableError(`password strength worker exited (code ${code})`)));
    return state;
  }

  function stop(state: Running): void {
    if (running === state) running = null;
    void state.worker.terminate();
  }

  /** Sends one estimate to the worker (starting one if none runs); called only on this estimator's turn. */
  function ask(password: string, userInputs: readonly string[]): Promise<StrengthEstimate> {
    const current = (running ??= start());
    if (current.idleTimer !== null) {
      clearTimeout(current.idleTimer);
      current.idleTimer = null;
    }
    // While an estimate is awaited, the worker keeps the process alive (a CLI has nothing else).
    current.worker.ref();
    const id = nextId++;
    return new Promise((resolve, reject) => {
      // No answer in time: the worker is stuck; this request gets 503 and the next estimate starts
      // a fresh worker.
      const timer = setTimeout(() => stop(current), timeoutMs);
      current.asked = { id, resolve, reject, timer };
      current.worker.postMessage({ id, password, userInputs: [...userInputs] });
    });
  }

  return {
    async estimate(password, userInputs) {
      try {
        return await turns.run(() => ask(password, userInputs));
      } catch (error) {
        if (error instanceof CapacityExceededError) {
          throw new UnavailableError('too many password strength estimates waiting', { retryAfterSeconds: 1, cause: error });
        }
        throw error;
      }
    },
    isRunning: () => running !== null,
  };
}

/**
 * The process's estimator: the worker ends after 5 s without an estimate. Passwords are set one at a
 * time (a sign-up, a reset); a burst of them keeps it running, and a new one costs about 150 ms.
 */
export const strengthEstimator = createStrengthEstimator({ idleMs: 5_000 });
