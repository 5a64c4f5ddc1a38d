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
import { BoundedConcurrency, CapacityExceededError, KeyCapacityExceededError } from '../lib/bounded-concurrency.ts';

export interface StrengthEstimate {
  /** zxcvbn's score, 0 (guessed at once) to 4. */
  score: number;
  /** For each part of the password zxcvbn matched: the dictionary it came from ('' when none). */
  dictionaryNames: string[];
  warning: string | null;
  suggestion: string | null;
  /** How many characters (code points) of the password were judged: at most ESTIMATED_LENGTH. */
  judgedLength: number;
}

/** This caller already has `maxPendingPerCaller` estimates running or waiting; others are still served. */
export class TooManyEstimatesError extends Error {
  readonly retryAfterSeconds = 1;
  constructor(options: { cause?: unknown } = {}) {
    super('this caller has too many password strength estimates in progress', options);
    this.name = 'TooManyEstimatesError';
  }
}

export interface StrengthEstimator {
  /**
   * zxcvbn's estimate for the first ESTIMATED_LENGTH characters of `password`, with `userInputs`
   * counted as words an attacker knows. `caller` (a client address, say) shares the worker fairly:
   * callers take turns, so one with many estimates waiting delays another by one at a time.
   */
  estimate(password: string, userInputs: readonly string[], caller?: string): Promise<StrengthEstimate>;
  /** Whether the worker is running now. */
  isRunning(): boolean;
  /** The estimate queue now, read-only (for metrics): computing (0 or 1), waiting, and the most that may wait. */
  stats?(): { readonly running: number; readonly queued: number; readonly maxQueued: number };
}

const WORKER_URL = new URL('./password-strength.worker.js', import.meta.url);

/**
 * Only this many characters (code points, after the policy's NFKC) are judged. zxcvbn's cost
 * grows with length, about linearly and steeply: its dictionary matcher tries every substring up
 * to the longest dictionary word against every dictionary, in l33t variants too. Measured on this
 * project's 2-core machine (zxcvbn-ts 4.2, the dictionaries of the worker, CPU time of one
 * estimate, median of five, under load), for the worst inputs found — a long random string, a
 * keyboard walk ('1qaz2wsx3edc…'), a repeated digit run ('0123456789…', refused), a repeated
 * short walk (refused):
 *   16 chars: 10–50 ms;   32: 160–245 ms;   64: 310–490 ms (slowest single run 0.7 s);
 *   100: 420–975 ms;   128: 510–1100 ms;   256: 1.1–2.1 s.
 * Repeated single characters, dictionary words, CJK and emoji stay under 30 ms at 64.
 * At 64 — the length SP 800-63B asks verifiers to accept at least, so any password up to that is
 * judged whole — one estimate costs at most about half a second here, a quarter of the 256 that
 * PASSWORD_MAX_LENGTH allows by default. Judging a prefix is safe: an attacker must guess those 64
 * characters before the rest, so the whole is at least as strong as they are. (It can refuse a
 * longer password whose first 64 characters alone are weak; a person can fix that.)
 */
export const ESTIMATED_LENGTH = 64;

/** What the worker is given for `password`: its first ESTIMATED_LENGTH code points. */
export function estimationInput(password: string): string {
  // Cheap before the slicing: a string of at most this many UTF-16 units has at most this many code points.
  if (password.length <= ESTIMATED_LENGTH) return password;
  return [...password.slice(0, 2 * ESTIMATED_LENGTH)].slice(0, ESTIMATED_LENGTH).join('');
}

/**
 * The worker computes estimates one at a time (the worst takes about half a second, see
 * ESTIMATED_LENGTH). Like the hash queue, the wait is bounded: at most `maxPending` in all (one
 * computing, the rest waiting, each at most `timeoutMs` for its turn), past which a
 * password-setting request gets 503 with Retry-After instead of piling up. Callers take turns
 * (round-robin by caller), and one caller has at most `maxPendingPerCaller` of those places: past
 * that its next estimate is refused with TooManyEstimatesError (the routes answer 429), so one
 * client's backlog can neither fill the queue nor stand in front of everyone else's estimate.
 * A worker that does not answer one estimate within `timeoutMs` of receiving it is stuck, and is
 * replaced; a long queue is not a stuck worker, nor is a slow start: that bound runs from the
 * worker's "ready" (its dictionaries built), and the start has its own, `startTimeoutMs`.
 */
const DEFAULT_MAX_PENDING = 32;
/**
 * Half the places: many people behind one NAT address (an office, a campus) may set passwords at
 * once, yet one client can never fill the queue, and with turns taken round-robin the other half
 * is served in between its estimates.
 */
const DEFAULT_MAX_PENDING_PER_CALLER = DEFAULT_MAX_PENDING / 2;
const DEFAULT_TIMEOUT_MS = 10_000;
/**
 * How long a new worker may take to build its dictionaries (about 150 ms on an idle core). Seen
 * past 10 s on a machine starved by two test runs at once, where the first estimate after each
 * idle end was refused with 503 while the bound covered the start too.
 */
const DEFAULT_START_TIMEOUT_MS = 60_000;
/** The dictionaries need about 55 MB; this bounds the worker, not the process. */
const WORKER_HEAP_MB = 256;

type Reply = { ready: true } | { id: number; estimate: StrengthEstimate } | { id: number; error: string };

interface Running {
  worker: Worker;
  /** The worker said its dictionaries are built: an estimate's own bound applies from then. */
  ready: boolean;
  /** The estimate the worker is computing, if any: there is never more than one. */
  asked: { id: number; resolve(estimate: StrengthEstimate): void; reject(error: Error): void; timer: NodeJS.Timeout } | null;
  idleTimer: NodeJS.Timeout | null;
}

export function createStrengthEstimator(options: {
  idleMs: number;
  maxPending?: number;
  maxPendingPerCaller?: number;
  timeoutMs?: number;
  startTimeoutMs?: number;
  /** The worker's module; tests give one whose start is slow for certain. */
  workerUrl?: URL;
}): StrengthEstimator {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const startTimeoutMs = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
  const turns = new BoundedConcurrency({
    maxConcurrent: 1,
    maxQueued: Math.max(0, (options.maxPending ?? DEFAULT_MAX_PENDING) - 1),
    queueTimeoutMs: timeoutMs,
    maxPendingPerKey: options.maxPendingPerCaller ?? DEFAULT_MAX_PENDING_PER_CALLER,
  });
  let running: Running | null = null;
  let nextId = 1;

  function start(): Running {
    const worker = new Worker(options.workerUrl ?? WORKER_URL, { resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB } });
    const state: Running = { worker, ready: false, asked: null, idleTimer: null };
    worker.on('message', (reply: Reply) => {
      if ('ready' in reply) {
        state.ready = true;
        // The estimate sent during the start now gets its own bound, from here.
        if (state.asked !== null) {
          clearTimeout(state.asked.timer);
          state.asked.timer = setTimeout(() => stop(state), timeoutMs);
        }
        return;
      }
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
      // a fresh worker. A worker still starting gets the start's bound (its "ready" sets this one).
      const timer = setTimeout(() => stop(current), current.ready ? timeoutMs : startTimeoutMs);
      current.asked = { id, resolve, reject, timer };
      current.worker.postMessage({ id, password, userInputs: [...userInputs] });
    });
  }

  return {
    // Without a caller (the CLI, the bootstrap admin): the process's own line, not capped per caller.
    async estimate(password, userInputs, caller) {
      const judged = estimationInput(password);
      try {
        return await turns.run(() => ask(judged, userInputs), caller);
      } catch (error) {
        if (error instanceof KeyCapacityExceededError) throw new TooManyEstimatesError({ cause: error });
        if (error instanceof CapacityExceededError) {
          throw new UnavailableError('too many password strength estimates waiting', { retryAfterSeconds: 1, cause: error });
        }
        throw error;
      }
    },
    isRunning: () => running !== null,
    stats: () => ({ running: turns.running, queued: turns.queued, maxQueued: Math.max(0, (options.maxPending ?? DEFAULT_MAX_PENDING) - 1) }),
  };
}

/**
 * The process's estimator: the worker ends after 5 s without an estimate. Passwords are set one at a
 * time (a sign-up, a reset); a burst of them keeps it running, and a new one costs about 150 ms.
 */
export const strengthEstimator = createStrengthEstimator({ idleMs: 5_000 });
