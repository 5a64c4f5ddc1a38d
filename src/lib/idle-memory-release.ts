/**
 * Gives memory a busy spell left behind back to the system once the process is idle.
 *
 * Starting (and any burst of requests) allocates fast: V8 grows its young generation to its cap
 * (`--max-semi-space-size`), promotes the start's temporary objects and runs no full collection
 * until the old generation fills, which an idle server never does. A default instance therefore sat
 * on about 20 MB it no longer used: 134 MB idle, 115 MB after one full collection
 * (perf/analysis.md, part 3). V8's own memory reducer did not give those pages back within the
 * 100 s watched.
 *
 * So once the process has been idle for `quietMs` (no request begun, and the event loop under 2 %
 * busy, in every one-second sample), one memory-reducing full collection runs: V8's "last resort"
 * collection (every reachable object kept, the young generation shrunk, free pages returned). It
 * pauses the loop once, for about 80–140 ms on the machines measured. It runs again only after V8's
 * heap has grown by `growthBytes` since the last one, and never more often than every
 * `minIntervalMs`; so a process whose heap is live stops after one attempt, and a server with
 * steady traffic never pauses (it is never idle). A request still in progress when it runs (one
 * begun more than `quietMs` earlier and waiting on storage or a hash) waits that much longer.
 */
import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export interface IdleMemoryReleaseOptions {
  /** How long the event loop must be nearly idle before memory is released. */
  readonly quietMs: number;
  /** Told each release's figures (the server logs them). */
  readonly onRelease?: (release: MemoryRelease) => void;
  /** Told when a release failed (V8's `gc` function could not be had, the resident set could not be read); none is tried again. */
  readonly onFailure?: (error: unknown) => void;
  /** A count of the requests the process has begun: any change in a sample makes it busy. */
  readonly activity?: () => number;
  /** How often the loop's utilization is sampled. */
  readonly sampleMs?: number;
  /** A sample at or above this share of the loop's time is busy. */
  readonly busyUtilization?: number;
  /** Growth of V8's heap (committed pages) since the last release that makes another worth its pause. */
  readonly growthBytes?: number;
  /** The least time between two releases. */
  readonly minIntervalMs?: number;
  /** For tests: the collection, the resident set, V8's heap, the loop's utilization since the last call, the time. */
  readonly collect?: () => void;
  readonly residentBytes?: () => number;
  readonly heapBytes?: () => number;
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
  const heapBytes = options.heapBytes ?? (() => getHeapStatistics().total_physical_size);
  const activity = options.activity ?? (() => 0);
  const utilization = options.utilization ?? loopUtilizationSinceLastCall();
  let collect = options.collect;

  let quietSince: number | null = null;
  let lastActivity = activity();
  /** V8's heap right after the last release; null before the first (the start is a busy spell). */
  let settledHeapBytes: number | null = null;
  let lastReleaseAt = Number.NEGATIVE_INFINITY;
  let timer: NodeJS.Timeout | undefined;
  let failed = false;

  function release(at: number): MemoryRelease | null {
    const currentActivity = activity();
    const busy = utilization() >= busyUtilization || currentActivity !== lastActivity;
    lastActivity = currentActivity;
    if (busy) {
      quietSince = null;
      return null;
    }
    quietSince ??= at - sampleMs;
    if (at - quietSince < options.quietMs || at - lastReleaseAt < minIntervalMs) return null;
    if (settledHeapBytes !== null && heapBytes() < settledHeapBytes + growthBytes) return null;
    const rssBeforeBytes = residentBytes();
    collect ??= memoryReducingCollection();
    const started = now();
    collect();
    const finished = now();
    const made = { rssBeforeBytes, rssAfterBytes: residentBytes(), pauseMs: finished - started };
    settledHeapBytes = heapBytes();
    lastReleaseAt = finished;
    // The pause itself is not a busy sample.
    utilization();
    quietSince = null;
    return made;
  }

  function sample(): MemoryRelease | null {
    if (failed) return null;
    let made: MemoryRelease | null;
    try {
      made = release(now());
    } catch (error) {
      // From a timer, an exception would end the process: memory is left to V8 alone from here.
      failed = true;
      stop();
      options.onFailure?.(error);
      return null;
    }
    if (made !== null) options.onRelease?.(made);
    return made;
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
 * V8's full, memory-reducing collection through its `gc` extension (the options are V8's; one it
 * does not know is ignored, never refused). Taken from a context made while `--expose-gc` is
 * briefly on, so no global `gc` appears in this context; a worker thread starting in that instant
 * could see one, which gives it nothing it could harm. A process started with `--expose-gc` uses
 * its own `gc`, and one started with `--expose-gc-as=<name>` its `<name>`: the flags are left as
 * the operator set them.
 */
function memoryReducingCollection(): () => void {
  const gc = exposedGc() ?? gcFromNewContext();
  return () => gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

/** The gc function the process was started with, if any; throws when it was asked for under a name that is not there. */
function exposedGc(): GcFunction | null {
  const flags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
  let name: string | null = null;
  for (const [index, flag] of flags.entries()) {
    const as = /^--expose[-_]gc[-_]as(?:=(.*))?$/.exec(flag);
    if (as !== null) name = as[1] ?? flags[index + 1] ?? null;
    else if (/^--expose[-_]gc$/.test(flag)) name ??= 'gc';
  }
  if (name === null) return null;
  const gc = (globalThis as Record<string, unknown>)[name];
  if (typeof gc !== 'function') throw new Error(`the process was started with V8's gc exposed as "${name}", which is not a function here`);
  return gc as GcFunction;
}

function gcFromNewContext(): GcFunction {
  setFlagsFromString('--expose-gc');
  try {
    return runInNewContext('gc') as GcFunction;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}
