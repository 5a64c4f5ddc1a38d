/**
 * Password hashes run on libuv's thread pool, on the same cores as the event loop. At equal
 * priority the kernel shares a core between them by time slice, so under a flood of sign-ins every
 * other request (session checks, JWKS, health) waits for the hashes' slices: measured on one pinned
 * core with 64 sign-ins in flight, the event loop spent 2.4 s of 6 s waiting for the CPU, and a
 * JWKS client got 1,800–2,700 req/s. With the pool's threads at nice 10 the loop waited 0.5–0.8 s
 * and the same client got 15,000 req/s (perf/analysis.md). Hashes still get every cycle the loop
 * does not use; they only stop taking it from cheap requests.
 *
 * Linux only: a thread's nice value is its own there (setpriority on a thread id), and the pool's
 * threads are named `libuv-worker`. Raising a nice value needs no privilege. Elsewhere, or when
 * /proc cannot be read, nothing changes and `null` says so.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { access } from 'node:fs/promises';
import { getPriority, setPriority } from 'node:os';

const POOL_THREAD_NAME = 'libuv-worker';

/**
 * Lowers the thread pool's threads to `nice` (never raises them: a process started under a higher
 * nice value keeps it). How many threads it lowered, or null where none could be.
 */
export async function lowerThreadPoolPriority(nice: number): Promise<number | null> {
  if (process.platform !== 'linux') return null;
  let threadIds: string[];
  try {
    // libuv starts all of its pool's threads on the first piece of work given to it (this one).
    await access('/proc/self/task');
    threadIds = readdirSync('/proc/self/task');
  } catch {
    return null;
  }
  let threads = 0;
  for (const threadId of threadIds) {
    try {
      if (readFileSync(`/proc/self/task/${threadId}/comm`, 'utf8').trim() !== POOL_THREAD_NAME) continue;
      if (getPriority(Number(threadId)) < nice) setPriority(Number(threadId), nice);
      threads += 1;
    } catch {
      // A thread that ended meanwhile, or one we may not change: the others still are.
    }
  }
  return threads === 0 ? null : threads;
}
