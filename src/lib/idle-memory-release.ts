/**
 * Gives memory a busy spell left behind back to the system once the process is idle.
 *
 * Starting (and any burst of requests) allocates fast: V8 grows its young generation to its cap
 * (`--max-semi-space-size`), promotes the start's temporary objects and runs no full collection
 * until the old generation fills, which an idle server never does. A default instance therefore sat
 * on about 20 MB it no longer used: 135 MB idle, 115 MB after one full collection
 * (perf/analysis.md, part 3). V8's own memory reducer does not give those pages back in time, and an
 * idle process never allocates enough to trigger it.
 *
 * So once the event loop has been nearly idle (`performance.eventLoopUtilization()`, under 2 % in
 * each one-second sample) for `quietMs`, one memory-reducing full collection runs: V8's
 * "last resort" collection (every reachable object kept, the young generation shrunk, free pages
 * returned). It pauses the loop once, for about 40–100 ms, while nothing is waiting. It runs again
 * only when the resident set has grown by `growthBytes` since the last one, and never more often
 * than every `minIntervalMs`; so a process whose memory is live (a full cache) stops trying after
 * one attempt, and steady traffic is never interrupted (it is never idle).
 */
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export interface IdleMemoryReleaseOptions {
  /** How long the event loop must be nearly idle before memory is released. */
  readonly quietMs: number;
  /** Told each release's figures (the server logs them). */
  readonly onRelease?: (release: MemoryRelease) => void;
  /** Told when a collection could not run (a Node.js whose V8 refuses the call); no release is tried again. */
  readonly onFailure?: (error: unknown) => void;
  /** How often the loop's utilization is sampled. */
  readonly sampleMs?: number;
  /** A sample at or above this share of the loop's time is busy. */
  readonly busyUtilization?: number;
  /** Growth of the resident set since the last release that makes another worth its pause. */
  readonly growthBytes?: number;
  /** The least time between two releases. */
  readonly minIntervalMs?: number;
  /** For tests: the collection, the resident set, the loop's utilization since the last call, the time. */
  readonly collect?: () => void;
  readonly residentBytes?: () => number;
  readonly utilization?: () => number;
  readonly now?: () => number;
}

export interface MemoryRelease {
  readonly rssBeforeBytes: number;
  readonly rssAfterBytes: number;
  readonly pauseMs: number;
}

export interface IdleMemoryRelease {
  /** One sample: what the timer calls every `sampleMs` (tests call it directly). */
  sample(): MemoryRelease | null;
  /** Starts the (unreferenced) sampling timer. */
  start(): void;
  stop(): void;
}

const MIB = 1024 * 1024;

export function createIdleMemoryRelease(options: IdleMemoryReleaseOptions): IdleMemoryRelease {
  const sampleMs = options.sampleMs ?? 1_000;
  const busyUtilization = options.busyUtilization ?? 0.02;
  const growthBytes = options.growthBytes ?? 8 * MIB;
  const minIntervalMs = options.minIntervalMs ?? 60_000;
  const now = options.now ?? (() => performance.now());
  const residentBytes = options.residentBytes ?? (() => process.memoryUsage.rss());
  const utilization = options.utilization ?? loopUtilizationSinceLastCall();
  let collect = options.collect;

  let quietSince: number | null = null;
  /** The resident set right after the last release; null before the first (the start is a busy spell). */
  let settledBytes: number | null = null;
  let lastReleaseAt = Number.NEGATIVE_INFINITY;
  let timer: NodeJS.Timeout | undefined;
  let failed = false;

  function sample(): MemoryRelease | null {
    if (failed) return null;
    const at = now();
    if (utilization() >= busyUtilization) {
      quietSince = null;
      return null;
    }
    quietSince ??= at - sampleMs;
    if (at - quietSince < options.quietMs || at - lastReleaseAt < minIntervalMs) return null;
    const rssBeforeBytes = residentBytes();
    if (settledBytes !== null && rssBeforeBytes < settledBytes + growthBytes) return null;
    const started = now();
    try {
      collect ??= memoryReducingCollection();
      collect();
    } catch (error) {
      // From a timer: an exception would end the process. Memory is then left to V8 alone.
      failed = true;
      stop();
      options.onFailure?.(error);
      return null;
    }
    const finished = now();
    const release = { rssBeforeBytes, rssAfterBytes: residentBytes(), pauseMs: finished - started };
    settledBytes = release.rssAfterBytes;
    lastReleaseAt = finished;
    // The pause itself is not a busy sample.
    utilization();
    quietSince = null;
    options.onRelease?.(release);
    return release;
  }

  function stop(): void {
    clearInterval(timer);
    timer = undefined;
  }

  return {
    sample,
    start() {
      if (timer !== undefined || failed) return;
      timer = setInterval(sample, sampleMs);
      timer.unref();
    },
    stop,
  };
}

/** The event loop's utilization (0–1) since the previous call (the first: since the process started). */
function loopUtilizationSinceLastCall(): () => number {
  let last: EventLoopUtilization | undefined;
  return () => {
    const current = performance.eventLoopUtilization();
    const since = last === undefined ? current : performance.eventLoopUtilization(current, last);
    last = current;
    return since.utilization;
  };
}

type GcFunction = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

/**
 * V8's full, memory-reducing collection through its `gc` extension: taken from a context made while
 * `--expose-gc` is briefly on, so no global `gc` appears anywhere else (unless the process was
 * started with `--expose-gc`, whose own function is used).
 */
function memoryReducingCollection(): () => void {
  let gc = (globalThis as { gc?: GcFunction }).gc;
  if (typeof gc !== 'function') {
    setFlagsFromString('--expose-gc');
    try {
      gc = runInNewContext('gc') as GcFunction;
    } finally {
      setFlagsFromString('--no-expose-gc');
    }
  }
  const collectAll = gc;
  return () => collectAll({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}
