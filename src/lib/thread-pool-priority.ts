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

/** Pool threads kept for the pool's other work beside the hashes. */
export const SPARE_POOL_THREADS = 2;
/** libuv's own size when UV_THREADPOOL_SIZE is not set, and its largest. */
const LIBUV_DEFAULT_POOL_SIZE = 4;
const LIBUV_MAX_POOL_SIZE = 1024;

/**
 * The pool size libuv makes of a set UV_THREADPOOL_SIZE: C's `atoi` (leading digits; none is 0),
 * then 0 becomes 1 and anything past the maximum (a negative value too: it is read unsigned) the
 * maximum. So `abc` gives one thread, not the default four.
 */
function libuvReading(value: string): number {
  const parsed = Number.parseInt(value, 10);
  if (!Number.isFinite(parsed) || parsed === 0) return 1;
  return parsed < 0 || parsed > LIBUV_MAX_POOL_SIZE ? LIBUV_MAX_POOL_SIZE : parsed;
}

/**
 * The same pool runs every other piece of the process's pool work: the access token's signature
 * (WebCrypto), file reads, DNS lookups. libuv gives it 4 threads unless UV_THREADPOOL_SIZE says
 * otherwise, and HASH_CONCURRENCY defaults to the cores: from 4 cores up the hashes took every
 * thread, each sign-in's signature waited behind them (tens of milliseconds a hash), and cores past
 * the fourth hashed nothing. So, unless the operator set UV_THREADPOOL_SIZE, the pool is made
 * `maxConcurrentHashes` + SPARE_POOL_THREADS threads (at least libuv's 4). libuv reads the variable
 * when it starts the pool, at its first piece of work: call this before anything uses the pool
 * (the server does, right after reading its config; test/hash-thread-priority.test.ts counts the
 * threads). A set value that leaves no thread beside the hashes is kept, with a warning (returned;
 * null when there is nothing to warn of).
 */
export function sizeThreadPool(maxConcurrentHashes: number, env: NodeJS.ProcessEnv = process.env): string | null {
  const set = env.UV_THREADPOOL_SIZE;
  if (set !== undefined && set.trim() !== '') {
    const size = libuvReading(set);
    const advice = `unset it, or set it to ${maxConcurrentHashes + SPARE_POOL_THREADS}`;
    const read = String(size) === set.trim() ? '' : ` (libuv reads it as ${size})`;
    const warning = size <= maxConcurrentHashes ? `UV_THREADPOOL_SIZE=${set}${read} leaves no thread beside HASH_CONCURRENCY=${maxConcurrentHashes} hashes: token signatures and file reads wait behind them (${advice})` : null;
    return warning;
  }
  const size = Math.min(LIBUV_MAX_POOL_SIZE, Math.max(LIBUV_DEFAULT_POOL_SIZE, maxConcurrentHashes + SPARE_POOL_THREADS));
  env.UV_THREADPOOL_SIZE = String(size);
  return null;
}
