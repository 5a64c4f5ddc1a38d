/**
 * `WORKERS=2`: two server processes share the port and the storage. A session made by one is
 * good on the other, a sign-out on one holds on the other, the load is spread, a worker that dies
 * is replaced, and SIGTERM stops them all with exit 0.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createSqliteDatabase, type TestDatabase } from './helpers/databases.ts';
import { randomSecret, startGatehouse, type ChildEnv, type RunningGatehouse } from './helpers/process.ts';
import { parseExposition, valueOf } from '../src/metrics/exposition.ts';

const ADMIN_EMAIL = 'cluster-admin@example.com';
const ADMIN_PASSWORD = 'a cluster of unusual words';
const METRICS_TOKEN = 'cluster-metrics-token-0123456789abcdef-0123';

describe('WORKERS=2 (node:cluster) on SQLite', () => {
  let database: TestDatabase;
  let dataDir: string;
  let server: RunningGatehouse;
  const cleanups: Array<() => unknown> = [];

  before(async () => {
    database = await createSqliteDatabase();
    dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-cluster-'));
    const env: ChildEnv = {
      NODE_ENV: 'development',
      LOG_LEVEL: 'info',
      AUTH_SECRET: randomSecret(),
      DATA_DIR: dataDir,
      DATABASE_URL: database.url,
      ADMIN_EMAIL,
      ADMIN_PASSWORD,
      WORKERS: '2',
      SESSION_STRATEGY: 'jwt',
      REVOCATION_SYNC_INTERVAL_MS: '100',
      METRICS_TOKEN: METRICS_TOKEN,
    };
    server = await startGatehouse({ env, cleanup: (fn) => cleanups.push(fn) });
    // Both workers listening.
    await server.child.waitForLog((entry) => entry.msg === 'Gatehouse listening' && server.child.logs().filter((e) => e.msg === 'Gatehouse listening').length >= 2, 30_000, 'two workers listening');
  });
  after(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
    rmSync(dataDir, { recursive: true, force: true });
    await database?.drop();
  });

  const workerPids = () => new Set(server.child.logs().filter((e) => e.msg === 'Gatehouse listening').map((e) => e.pid));

  async function signIn(): Promise<string> {
    const response = await fetch(`${server.base}/api/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: ADMIN_EMAIL, password: ADMIN_PASSWORD }) });
    assert.equal(response.status, 200);
    return ((await response.json()) as { token: string }).token;
  }

  it('runs two workers that serve requests, with one admin and one signing key between them', async () => {
    assert.equal(workerPids().size, 2);
    const tokens = await Promise.all(Array.from({ length: 8 }, () => signIn()));
    const kids = new Set(tokens.map((token) => JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()).kid));
    assert.equal(kids.size, 1, 'one signing key');
    const served = new Set(server.child.logs().filter((e) => e.msg === 'request completed' && (e.req as { url?: string } | undefined)?.url === '/api/auth').map((e) => e.pid));
    assert.equal(served.size, 2, `requests spread over both workers (${[...served].join(',')})`);
  });

  it('a scrape answers for the whole cluster, whichever worker takes it: counts never jump back', async () => {
    const scrape = async () => {
      const response = await fetch(`${server.base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
      assert.equal(response.status, 200);
      return parseExposition(await response.text());
    };
    const served = () => scrape().then((families) => valueOf(families, 'gatehouse_http_requests_total', { method: 'GET', route: '/api/health/live', status: '200' }) ?? 0);
    const before = await served();
    // New connections each time, so both workers answer some.
    await Promise.all(Array.from({ length: 40 }, () => fetch(`${server.base}/api/health/live`, { headers: { connection: 'close' } })));
    const counts: number[] = [];
    for (let i = 0; i < 6; i += 1) counts.push(await served());
    assert.ok(counts.every((count) => count === before + 40), `every scrape sees all 40, whichever worker answers it: ${before} then ${counts.join(', ')}`);
    const families = await scrape();
    assert.equal(valueOf(families, 'gatehouse_signing_keys_signing'), 2, 'shared state is not summed over the workers');
  });

  it('shares sessions and sign-out between workers', async () => {
    const token = await signIn();
    const check = () => fetch(`${server.base}/api/auth/session`, { headers: { authorization: `Bearer ${token}` } });
    for (let i = 0; i < 6; i += 1) assert.equal((await check()).status, 200);
    const out = await fetch(`${server.base}/api/auth/signout`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    assert.equal(out.status, 200);
    await sleep(400); // the other worker's revocation pull (100 ms)
    for (let i = 0; i < 6; i += 1) assert.equal((await check()).status, 401, `check ${i} after sign-out`);
  });

  it('replaces a worker that dies, and stops them all on SIGTERM with exit 0', async () => {
    const [victim] = [...workerPids()];
    process.kill(Number(victim), 'SIGKILL');
    // Two first workers and the replacement have each logged that they listen.
    await server.child.waitForLog((entry) => entry.msg === 'Gatehouse listening' && workerPids().size >= 3, 30_000, 'a replacement worker');
    for (let i = 0; i < 4; i += 1) assert.equal((await fetch(`${server.base}/api/health`)).status, 200);
    const exit = await server.child.stop(20_000);
    assert.deepEqual(exit, { code: 0, signal: null });
    for (const pid of workerPids()) {
      assert.throws(() => process.kill(Number(pid), 0), `worker ${pid} is gone`);
    }
  });
});
