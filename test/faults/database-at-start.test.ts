/**
 * PostgreSQL unreachable when the server starts (issue 21, item 6): it is retried with backoff for
 * DATABASE_CONNECT_TIMEOUT, each retry saying which database (host and port, never the password)
 * and why; a database that comes up meanwhile is used; one that does not ends the start with exit 1
 * and a message naming it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../helpers/databases.ts';
import { freePort, serverScratch, startGatehouse, startNode, SERVER_ENTRY, type Child } from '../helpers/process.ts';
import { startProxiedPostgres } from '../helpers/proxied-postgres.ts';
import { describeDatabase, waitForStorage } from '../../src/storage/wait-for-storage.ts';

const [, postgres] = await backends();
const PASSWORD = 'pg-password-never-printed';

describe('an unreachable database at start', () => {
  it('names the database without its credentials', () => {
    assert.equal(describeDatabase({ kind: 'postgres', url: `postgres://gate:${PASSWORD}@db.internal:6543/auth` }), 'PostgreSQL at db.internal:6543/auth');
    assert.equal(describeDatabase({ kind: 'postgres', url: 'postgres://db.internal/auth' }), 'PostgreSQL at db.internal:5432/auth');
  });

  it('retries with growing delays until the deadline, then gives up; a refusal retrying cannot cure fails at once', async () => {
    let clock = 0;
    const delays: number[] = [];
    const messages: string[] = [];
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    await assert.rejects(
      waitForStorage(
        { ping: async () => Promise.reject(refused) },
        {
          config: { kind: 'postgres', url: `postgres://u:${PASSWORD}@127.0.0.1:1/x` },
          timeoutMs: 10_000,
          onRetry: (message) => messages.push(message),
          sleep: async (ms) => void (delays.push(ms), (clock += ms)),
          now: () => clock,
        },
      ),
      /PostgreSQL at 127\.0\.0\.1:1\/x is not reachable after 10 s \(ECONNREFUSED\)/,
    );
    assert.deepEqual(delays.slice(0, 5), [250, 500, 1000, 2000, 4000]);
    assert.ok(delays.every((ms) => ms <= 5_000));
    assert.equal(delays.reduce((sum, ms) => sum + ms, 0), 10_000, 'waits exactly up to the deadline');
    assert.ok(messages.every((message) => !message.includes(PASSWORD)));

    let pings = 0;
    const badPassword = Object.assign(new Error('password authentication failed'), { code: '28P01' });
    await assert.rejects(
      waitForStorage({ ping: async () => {
        pings += 1;
        throw badPassword;
      } }, { config: { kind: 'postgres', url: 'postgres://u@h/x' }, timeoutMs: 10_000, onRetry: () => {} }),
      /refused the connection \(28P01\)/,
    );
    assert.equal(pings, 1, 'not retried');
  });

  it('a server whose PostgreSQL never answers exits 1 within the bound, naming the host, never the password', { timeout: 60_000 }, async (t) => {
    const { cleanup, env } = serverScratch(t, 'db-at-start');
    const closedPort = await freePort();
    const port = await freePort();
    const child = startNode([SERVER_ENTRY], {
      env: { ...env, HOST: '127.0.0.1', PORT: String(port), DATABASE_URL: `postgres://gate:${PASSWORD}@127.0.0.1:${closedPort}/auth`, DATABASE_CONNECT_TIMEOUT: '3s' },
      deadlineMs: 30_000,
      cleanup,
    });
    const started = performance.now();
    const exit = await child.waitForExit(25_000);
    assert.equal(exit.code, 1, child.output());
    assert.ok(performance.now() - started < 20_000);
    const stderr = child.stderr();
    assert.match(stderr, new RegExp(`PostgreSQL at 127\\.0\\.0\\.1:${closedPort}/auth is not reachable \\(ECONNREFUSED\\); retrying in`));
    assert.match(stderr, /Gatehouse failed to start: .*not reachable after 3 s \(ECONNREFUSED\); giving up/);
    assert.ok(!child.output().includes(PASSWORD), 'the password is never printed');
  });

  it('a server whose PostgreSQL comes up while it waits starts and serves', { skip: postgres!.skip, timeout: 90_000 }, async (t) => {
    const { cleanup, env } = serverScratch(t, 'db-later');
    const proxied = await startProxiedPostgres(postgres!, cleanup);
    await proxied.proxy.cut();
    // Back once the server has found it unreachable (not after a fixed time: a cold start may take longer than that).
    let isRestored = false;
    const restoreOnceRefused = (child: Child) =>
      child.process.stderr?.on('data', () => {
        if (isRestored || !/is not reachable \(ECONNREFUSED\)/.test(child.stderr())) return;
        isRestored = true;
        void proxied.proxy.restore();
      });
    const server = await startGatehouse({ env: { ...env, DATABASE_URL: proxied.url, DATABASE_CONNECT_TIMEOUT: '30s' }, cleanup, startTimeoutMs: 45_000, onSpawned: restoreOnceRefused });
    assert.match(server.child.stderr(), /is not reachable \(ECONNREFUSED\); retrying in/);
    assert.match(server.child.stderr(), /answers now/);
    assert.equal((await fetch(`${server.base}/api/health/ready`)).status, 200);
  });
});
