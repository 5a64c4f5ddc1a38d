/**
 * A Redis server of the test's own on a free loopback port, so a test can stop and restart it
 * without disturbing anything else, and no key of another run is ever seen.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';

const isCi = process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false';

/** `redis-server` where the machine has it; CI must (`.ci/run` starts one, so the binary is there). */
function findRedisServer(): string | null {
  const found = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() : null;
}

export const redisServerPath = findRedisServer();
if (redisServerPath === null && isCi) throw new Error('redis-server is required under CI for the Redis tests');

/** Why Redis tests cannot run here, or false. */
export const redisSkip: string | false = redisServerPath === null ? 'redis-server is not installed (CI requires it)' : false;

export async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn(redisServerPath!, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => 100, maxRetriesPerRequest: 0 });
  probe.on('error', () => {}); // refused until the server is up: expected
  try {
    for (let attempt = 0; attempt < 50; attempt += 1) {
      try {
        if (probe.status !== 'ready') await probe.connect().catch(() => {});
        if ((await probe.ping()) === 'PONG') return child;
      } catch {
        await sleep(100);
      }
    }
  } finally {
    probe.disconnect();
  }
  child.kill('SIGKILL');
  throw new Error(`redis-server did not start on port ${port}`);
}

export async function stopRedis(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  child.kill('SIGKILL');
  await once(child, 'exit');
}
