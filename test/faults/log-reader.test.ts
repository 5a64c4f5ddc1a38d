/**
 * A slow or vanished log reader must cost dropped log lines, never a frozen or unkillable service
 * (issue 21, item 3). Seen before: a server whose stdout reader had stopped reading parked its main
 * thread in a write to the full pipe; SIGTERM then did nothing, and the 10 s shutdown watchdog (a
 * timer on that same thread) never fired.
 *
 * Here a real server (`node src/start.js`, logging every request at info) writes to a pipe the test
 * never reads (it fills after some hundred kilobytes), or whose read end the test closes. Requests
 * must still be answered after the pipe is full, and SIGTERM must end the process, cleanly, within
 * the shutdown bound.
 */
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { request as httpRequest, Agent } from 'node:http';
import { childEnv, freePort, serverScratch, SERVER_ENTRY } from '../helpers/process.ts';

/** Far more log than a pipe and the reading stream's buffer hold together (about 130 KB). */
const REQUESTS = 3_000;
/** The server's own bound (10 s) plus its watchdog's margin, plus slack for a noisy machine. */
const EXIT_BOUND_MS = 15_000;

function get(port: number, path: string, agent: Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest({ host: '127.0.0.1', port, path, agent, timeout: 5_000 }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    outgoing.on('timeout', () => outgoing.destroy(new Error(`GET ${path} timed out: is the event loop stuck?`)));
    outgoing.on('error', reject);
    outgoing.end();
  });
}

async function startWithUnreadStdout(t: TestContext): Promise<{ child: ChildProcess; port: number; stderr: () => string }> {
  const { cleanup, env } = serverScratch(t, 'log-reader');
  const port = await freePort();
  const child = spawn(process.execPath, [SERVER_ENTRY], {
    env: childEnv({ ...env, HOST: '127.0.0.1', PORT: String(port), AUTH_URL: `http://127.0.0.1:${port}`, WORKERS: '1' }),
    // stdout is a pipe the test never reads from.
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  cleanup(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => void (stderr += chunk.toString()));
  const agent = new Agent({ keepAlive: true });
  cleanup(() => agent.destroy());
  for (let attempt = 0; ; attempt++) {
    try {
      if ((await get(port, '/api/health/live', agent)) === 200) break;
    } catch {
      // not listening yet
    }
    if (attempt > 300 || child.exitCode !== null) throw new Error(`the server did not start: ${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { child, port, stderr: () => stderr };
}

async function hammer(port: number, count: number): Promise<number[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  try {
    const statuses: number[] = [];
    for (let i = 0; i < count; i += 50) statuses.push(...(await Promise.all(Array.from({ length: 50 }, () => get(port, '/api/health/live?padding=log-line-filler', agent)))));
    return statuses;
  } finally {
    agent.destroy();
  }
}

async function stopWithin(child: ChildProcess, boundMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null; tookMs: number }> {
  const started = performance.now();
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  child.kill('SIGTERM');
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no exit within ${boundMs} ms of SIGTERM`)), boundMs).unref());
  const [code, signal] = await Promise.race([exited, timeout]);
  return { code, signal, tookMs: performance.now() - started };
}

describe('a slow or vanished log reader', { timeout: 120_000 }, () => {
  it('a reader that stopped reading: requests are still answered, and SIGTERM ends the process cleanly', async (t) => {
    const { child, port, stderr } = await startWithUnreadStdout(t);
    const statuses = await hammer(port, REQUESTS);
    assert.ok(statuses.every((status) => status === 200), 'every request answered while the log pipe is full');
    // Still answering, with the pipe long full.
    assert.equal(await get(port, '/api/health/live', new Agent()), 200);
    const stopped = await stopWithin(child, EXIT_BOUND_MS);
    assert.equal(stopped.signal, null, `exited by itself, not killed (${stderr()})`);
    assert.equal(stopped.code, 0, stderr());
  });

  it('a reader that went away: requests are still answered, and SIGTERM ends the process cleanly', async (t) => {
    const { child, port, stderr } = await startWithUnreadStdout(t);
    child.stdout!.destroy();
    const statuses = await hammer(port, 500);
    assert.ok(statuses.every((status) => status === 200));
    const stopped = await stopWithin(child, EXIT_BOUND_MS);
    assert.equal(stopped.signal, null, stderr());
    assert.equal(stopped.code, 0, stderr());
  });
});
