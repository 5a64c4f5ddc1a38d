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
 * Estimates are computed one at a time (the worst, a long keyboard walk, takes most of a second).
 * Like the hash queue, the wait is bounded: past these, a password-setting request gets 503 with
 * Retry-After instead of piling up, and a worker that does not answer is replaced.
 */
const DEFAULT_MAX_PENDING = 32;
const DEFAULT_TIMEOUT_MS = 10_000;
/** The dictionaries need about 55 MB; this bounds the worker, not the process. */
const WORKER_HEAP_MB = 256;

type Reply = { id: number; estimate: StrengthEstimate } | { id: number; error: string };

interface Running {
  worker: Worker;
  pending: Map<number, { resolve(estimate: StrengthEstimate): void; reject(error: Error): void; timer: NodeJS.Timeout }>;
  idleTimer: NodeJS.Timeout | null;
}

export function createStrengthEstimator(options: { idleMs: number; maxPending?: number; timeoutMs?: number }): StrengthEstimator {
  const maxPending = options.maxPending ?? DEFAULT_MAX_PENDING;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  let running: Running | null = null;
  let nextId = 1;

  function start(): Running {
    const worker = new Worker(WORKER_URL, { resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB } });
    const state: Running = { worker, pending: new Map(), idleTimer: null };
    worker.on('message', (reply: Reply) => {
      const waiting = state.pending.get(reply.id);
      if (waiting === undefined) return;
      state.pending.delete(reply.id);
      clearTimeout(waiting.timer);
      if ('error' in reply) waiting.reject(new Error(`password strength estimate failed: ${reply.error}`));
      else waiting.resolve(reply.estimate);
      if (state.pending.size > 0) return;
      // Idle: it must not keep the process alive, and it ends if nothing comes.
      worker.unref();
      state.idleTimer = setTimeout(() => stop(state), options.idleMs);
      state.idleTimer.unref();
    });
    const fail = (error: Error) => {
      if (running === state) running = null;
      if (state.idleTimer !== null) clearTimeout(state.idleTimer);
      for (const waiting of state.pending.values()) {
        clearTimeout(waiting.timer);
        waiting.reject(error);
      }
      state.pending.clear();
    };
    worker.on('error', (error) => fail(new UnavailableError(`password strength worker failed: ${error.message}`)));
    worker.on('exit', (code) => fail(new UnavailableError(`password strength worker exited (code ${code})`)));
    return state;
  }

  function stop(state: Running): void {
    if (running === state) running = null;
    void state.worker.terminate();
  }

  return {
    estimate(password, userInputs) {
      if (running !== null && running.pending.size >= maxPending) {
        return Promise.reject(new UnavailableError('too many password strength estimates waiting'));
      }
      const current = (running ??= start());
      if (current.idleTimer !== null) {
        clearTimeout(current.idleTimer);
        current.idleTimer = null;
      }
      // While an estimate is awaited, the worker keeps the process alive (a CLI has nothing else).
      current.worker.ref();
      const id = nextId++;
      return new Promise((resolve, reject) => {
        // No answer in time: the worker is stuck (or hopelessly behind); every waiting request gets
        // 503 and the next estimate starts a fresh worker.
        const timer = setTimeout(() => stop(current), timeoutMs);
        current.pending.set(id, { resolve, reject, timer });
        current.worker.postMessage({ id, password, userInputs: [...userInputs] });
      });
    },
    isRunning: () => running !== null,
  };
}

/**
 * The process's estimator: the worker ends after 5 s without an estimate. Passwords are set one at a
 * time (a sign-up, a reset); a burst of them keeps it running, and a new one costs about 150 ms.
 */
export const strengthEstimator = createStrengthEstimator({ idleMs: 5_000 });
