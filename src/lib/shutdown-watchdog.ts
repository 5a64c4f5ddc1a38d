/**
 * The last resort of a shutdown: a worker thread that kills the process (SIGKILL) if it is still
 * alive after `afterMs`. The main thread's own deadline (a timer) cannot fire while the main thread
 * is stuck outside the event loop (parked in a system call, say a write to a full pipe); a thread of
 * its own still runs then. It writes one line to standard error first, synchronously (it blocks
 * only itself). The thread does not keep the process alive: a clean exit ends it.
 */
import { Worker } from 'node:worker_threads';

const WATCHDOG_SOURCE = `
const { workerData } = require('node:worker_threads');
const { writeSync } = require('node:fs');
setTimeout(() => {
  try { writeSync(2, JSON.stringify({ level: 60, time: Date.now(), pid: workerData.pid, msg: 'shutdown watchdog: the process did not exit in time; killing it' }) + '\\n'); } catch {}
  process.kill(workerData.pid, 'SIGKILL');
}, workerData.afterMs);
`;

export function startShutdownWatchdog(afterMs: number): void {
  // `stdout: true, stderr: true`: the worker's output is not piped to the parent's process.stdout.
  // Piping it would make that stream, a second handle on fd 1 beside the log writer's (log-writer.ts);
  // when the log pipe is full the writer's handle is registered with the event loop and a second one
  // fails to open (EEXIST), which crashed the process at SIGTERM. The watchdog writes with writeSync.

  const worker = new Worker(WATCHDOG_SOURCE, { eval: true, workerData: { pid: process.pid, afterMs }, stdout: true, stderr: true });
  worker.unref();
}
