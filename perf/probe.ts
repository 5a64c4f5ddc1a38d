/**
 * Imported first by every process the benchmarks load (the Gatehouse entry, the bare and
 * downstream apps): it watches the event loop from inside that process. On SIGUSR2 it writes what
 * it saw since the previous SIGUSR2 to `$BENCH_PROBE_DIR/probe-<pid>.json` and starts afresh, so
 * the bench brackets each measured run with two signals and reads the second file.
 *
 * Event-loop delay comes from `perf_hooks.monitorEventLoopDelay` (a libuv timer sampled every
 * 10 ms: its maximum is the longest stretch the loop could not run a callback); utilisation from
 * `performance.eventLoopUtilization()` (1.0 means the process was busy the whole run, so the load
 * generator was not the bottleneck).
 *
 * With BENCH_PROFILE_DIR set, the same signals also bracket a CPU profile (node:inspector, the
 * profiler `--cpu-prof` uses): each window between two signals is written as
 * `profile-<pid>-<n>.cpuprofile`, so start-up work never mixes with the measured load.
 */
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { Session } from 'node:inspector/promises';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ProbeReport {
  pid: number;
  /** Milliseconds. */
  eventLoopDelay: { maxMs: number; p99Ms: number; meanMs: number; samples: number };
  eventLoopUtilization: number;
  rssMb: number;
  heapUsedMb: number;
}

const directory = process.env.BENCH_PROBE_DIR;

if (directory !== undefined && directory !== '') {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  let utilizationSince = performance.eventLoopUtilization();

  process.on('SIGUSR2', () => {
    const utilization = performance.eventLoopUtilization(utilizationSince);
    const report: ProbeReport = {
      pid: process.pid,
      eventLoopDelay: {
        maxMs: histogram.max / 1e6,
        p99Ms: histogram.percentile(99) / 1e6,
        meanMs: Number.isNaN(histogram.mean) ? 0 : histogram.mean / 1e6,
        samples: histogram.count,
      },
      eventLoopUtilization: utilization.utilization,
      rssMb: process.memoryUsage.rss() / 2 ** 20,
      heapUsedMb: Math.round(process.memoryUsage().heapUsed / 2 ** 20),
    };
    histogram.reset();
    utilizationSince = performance.eventLoopUtilization();
    // Written aside and renamed, so the bench never reads half a file.
    const file = join(directory, `probe-${process.pid}.json`);
    writeFileSync(`${file}.tmp`, JSON.stringify(report));
    renameSync(`${file}.tmp`, file);
    void profiler?.next();
  });
}

/** One CPU profile per window between signals (BENCH_PROFILE_DIR). */
const profiler = (() => {
  const profileDir = process.env.BENCH_PROFILE_DIR;
  if (profileDir === undefined || profileDir === '') return null;
  mkdirSync(profileDir, { recursive: true });
  const session = new Session();
  session.connect();
  let isRunning = false;
  let windowNumber = 0;
  let chain = Promise.resolve();
  return {
    next() {
      chain = chain.then(async () => {
        if (isRunning) {
          const { profile } = await session.post('Profiler.stop');
          writeFileSync(join(profileDir, `profile-${process.pid}-${++windowNumber}.cpuprofile`), JSON.stringify(profile));
        } else {
          await session.post('Profiler.enable');
          await session.post('Profiler.setSamplingInterval', { interval: 500 });
        }
        await session.post('Profiler.start');
        isRunning = true;
      });
      return chain;
    },
  };
})();
