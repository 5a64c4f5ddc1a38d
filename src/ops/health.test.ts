/**
 * The health endpoints: live answers while the process does; ready flips to 503 naming the failed
 * check when storage is cut (PostgreSQL through a proxy of the test's own), when migrations are
 * pending, and once the server starts closing, and back to 200 when storage returns.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { backends } from '../../test/helpers/databases.ts';
import { createTestApp, testEnv } from '../../test/helpers/app.ts';
import { startProxiedPostgres } from '../../test/helpers/proxied-postgres.ts';
import { defineModule } from '../module.ts';
import { loadConfig, migrateToLatest, MODULES } from '../modules.ts';
import { openStorage } from '../storage/database.ts';
import { createServices } from '../services.ts';
import { buildApp } from '../app.ts';

const [sqlite, postgres] = await backends();

describe('health: live and ready', () => {
  it('both answer 200 on a migrated instance, and ready lists its checks', async () => {
    const database = await sqlite!.create();
    const t = await createTestApp(database);
    try {
      const live = await t.app.inject({ method: 'GET', url: '/api/health/live' });
      assert.deepEqual([live.statusCode, live.json()], [200, { status: 'ok' }]);
      const ready = await t.app.inject({ method: 'GET', url: '/api/health/ready' });
      assert.equal(ready.statusCode, 200, ready.body);
      assert.deepEqual(ready.json(), { status: 'ok', checks: { storage: 'ok', migrations: 'ok', signingKeys: 'ok', shutdown: 'ok' } });
    } finally {
      await t.close();
      await database.drop();
    }
  });

  it('ready is 503 while a module’s migration is pending, naming it', async () => {
    const database = await sqlite!.create();
    const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-health-'));
    const late = defineModule({
      name: 'late',
      migrations: { '20261127-late-table': { up: async (db) => void (await sql`create table late_table (id text)`.execute(db)) } },
    });
    const config = loadConfig({ DATA_DIR: dataDir, ...testEnv(database) });
    const storage = openStorage(config.database);
    try {
      await migrateToLatest(storage.db);
      const services = await createServices({ config, storage, modules: [...MODULES, late] });
      const app = await buildApp(services);
      try {
        const ready = await app.inject({ method: 'GET', url: '/api/health/ready' });
        assert.equal(ready.statusCode, 503, ready.body);
        assert.equal(ready.headers['retry-after'], '5');
        assert.equal(ready.json().error, 'SERVICE_UNAVAILABLE');
        assert.match(ready.json().checks.migrations, /^1 pending \(first: 20261127-late-table\)/);
        assert.equal(ready.json().checks.storage, 'ok');
        assert.equal((await app.inject({ method: 'GET', url: '/api/health/live' })).statusCode, 200, 'alive all the same');

        await migrateToLatest(storage.db, [...MODULES, late]);
        assert.equal((await app.inject({ method: 'GET', url: '/api/health/ready' })).statusCode, 200, 'ready once migrated');
      } finally {
        await app.close();
      }
    } finally {
      await storage.close();
      rmSync(dataDir, { recursive: true, force: true });
      await database.drop();
    }
  });

  it('ready turns 503 (shutdown) as soon as the server starts closing', async () => {
    const database = await sqlite!.create();
    const t = await createTestApp(database);
    try {
      assert.equal((await t.services.readiness.check()).checks.shutdown, 'ok');
      // preClose runs as closing begins (Fastify 5 answers 503 to requests on open connections from then on).
      await t.app.close();
      const after = await t.services.readiness.check();
      assert.equal(after.checks.shutdown, 'shutting down');
      assert.equal(after.isReady, false);
    } finally {
      await t.close().catch(() => undefined);
      await database.drop();
    }
  });

  it('ready flips to 503 (storage) when PostgreSQL is cut, and back when it returns; live stays 200', { skip: postgres!.skip }, async (t) => {
    const cleanups: Array<() => unknown> = [];
    t.after(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup();
    });
    const proxied = await startProxiedPostgres(postgres!, (fn) => cleanups.push(fn));
    const app = await createTestApp({ ...proxied.database, url: proxied.url, config: proxied.database.config }, { env: { DATABASE_URL: proxied.url } });
    cleanups.push(() => app.close());

    assert.equal((await app.app.inject({ method: 'GET', url: '/api/health/ready' })).statusCode, 200);
    await proxied.proxy.cut();
    const cut = await app.app.inject({ method: 'GET', url: '/api/health/ready' });
    assert.equal(cut.statusCode, 503, cut.body);
    assert.notEqual(cut.json().checks.storage, 'ok');
    assert.equal(cut.json().checks.migrations, 'ok', 'known to be current before the cut');
    assert.equal((await app.app.inject({ method: 'GET', url: '/api/health/live' })).statusCode, 200);

    await proxied.proxy.restore();
    let back = 0;
    for (let attempt = 0; attempt < 50 && back !== 200; attempt++) {
      back = (await app.app.inject({ method: 'GET', url: '/api/health/ready' })).statusCode;
      if (back !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(back, 200, 'ready again once storage answers');
  });
});
