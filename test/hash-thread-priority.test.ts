/**
 * Hashes run below the event loop: the server process lowers its thread pool's threads to
 * HASH_THREAD_NICE (Linux), so a flood of sign-ins cannot take the CPU from cheap requests; and the
 * pool has threads beside the HASH_CONCURRENCY hashes for its other work (the access token's
 * signature, file reads), unless the operator sized it (src/lib/thread-pool-priority.ts). Read from
 * the kernel's own view of the process's threads.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { serverScratch, startGatehouse } from './helpers/process.ts';

/** name → nice values of the process's threads, from /proc/<pid>/task/<tid>/stat. */
function threadNiceValues(pid: number): Map<string, number[]> {
  const byName = new Map<string, number[]>();
  for (const threadId of readdirSync(`/proc/${pid}/task`)) {
    const stat = readFileSync(`/proc/${pid}/task/${threadId}/stat`, 'utf8');
    // "tid (comm) state ppid …": fields after the closing parenthesis; nice is field 19.
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    byName.set(name, [...(byName.get(name) ?? []), Number(fields[16])]);
  }
  return byName;
}

describe('hash thread priority', { skip: process.platform !== 'linux' && 'the thread pool is lowered on Linux only' }, () => {
  for (const [setting, expected] of [[undefined, 10], ['15', 15], ['0', 0]] as const) {
    it(`HASH_THREAD_NICE=${setting ?? '(default)'}: the thread pool runs at nice ${expected}, the event loop at 0`, async (t) => {
      const { cleanup, env } = serverScratch(t, 'nice');
      const server = await startGatehouse({
        env: { ...env, NODE_ENV: 'test', ...(setting !== undefined && { HASH_THREAD_NICE: setting }) },
        cleanup,
      });
      const threads = threadNiceValues(server.child.pid);
      // Relative to the nice value the test runs under (0 unless started with `nice`).
      const [loop] = threads.get('MainThread') ?? [];
      const [ownLoop] = threadNiceValues(process.pid).get('MainThread') ?? [];
      assert.ok(loop !== undefined && ownLoop !== undefined, `both processes name their event-loop thread MainThread: ${[...threads.keys()].join(', ')}`);
      assert.equal(loop, ownLoop, 'the event loop keeps its priority');
      const pool = threads.get('libuv-worker') ?? [];
      assert.ok(pool.length >= 1, `the process has thread-pool threads: ${[...threads.keys()].join(', ')}`);
      assert.deepEqual(pool, pool.map(() => Math.max(expected, loop)));
      const started = server.child.output();
      if (expected > 0) assert.match(started, /hash threads run below the event loop/);
    });
  }
});

describe('thread pool size', { skip: process.platform !== 'linux' && 'threads are counted from /proc' }, () => {
  const cases = [
    { name: 'HASH_CONCURRENCY=6: 6 threads for hashes and 2 beside them', env: { HASH_CONCURRENCY: '6' }, threads: 8, warns: null },
    {
      name: 'UV_THREADPOOL_SIZE set by the operator is kept; one that leaves no thread beside the hashes is warned of',
      env: { HASH_CONCURRENCY: '6', UV_THREADPOOL_SIZE: '5' },
      threads: 5,
      warns: /warning: UV_THREADPOOL_SIZE=5 leaves no thread beside HASH_CONCURRENCY=6 hashes/,
    },
    {
      name: 'a UV_THREADPOOL_SIZE that is not a number is read by libuv as one thread, and warned of',
      env: { HASH_CONCURRENCY: '2', UV_THREADPOOL_SIZE: 'abc' },
      threads: 1,
      warns: /warning: UV_THREADPOOL_SIZE=abc \(libuv reads it as 1\) leaves no thread beside HASH_CONCURRENCY=2 hashes/,
    },
  ];
  for (const { name, env: settings, threads, warns } of cases) {
    it(name, async (t) => {
      const { cleanup, env } = serverScratch(t, 'pool');
      const server = await startGatehouse({ env: { ...env, NODE_ENV: 'test', ...settings }, cleanup });
      // The start lowers the pool's priority, which starts all of its threads.
      assert.equal(threadNiceValues(server.child.pid).get('libuv-worker')?.length, threads);
      if (warns !== null) assert.match(server.child.stderr(), warns);
      else assert.doesNotMatch(server.child.stderr(), /UV_THREADPOOL_SIZE/);
    });
  }
});
