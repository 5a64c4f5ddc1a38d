/**
 * The time bound on PostgreSQL queries (DATABASE_QUERY_TIMEOUT_MS) against a database that hangs:
 * a scratch database behind a TCP proxy of the test's own, stalled (connections stay open, no byte
 * goes either way) and then resumed. The timeout is short here; the fault test
 * (test/faults/postgres-hang.test.ts) runs the default under load in a real server.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../../test/helpers/databases.ts';
import { startProxiedPostgres, type ProxiedPostgres } from '../../test/helpers/proxied-postgres.ts';
import { waitUntil } from '../../test/helpers/traffic.ts';
import { UnavailableError } from '../errors.ts';
import { openStorage, type Storage } from './database.ts';
import { migrateToLatest } from '../modules.ts';

const [, postgres] = await backends();
const QUERY_TIMEOUT_MS = 300;
/** The bound's two errors: a query that waited out its timeout, and one refused at once. */
const TIMED_OUT = /did not answer within 300 ms/;
const REFUSED_AT_ONCE = /is not answering/;

describe('PostgreSQL queries against a database that hangs', { skip: postgres!.skip }, () => {
  const cleanups: Array<() => unknown> = [];
  let proxied: ProxiedPostgres;
  let storage: Storage;

  before(async () => {
    proxied = await startProxiedPostgres(postgres!, (fn) => cleanups.push(fn));
    storage = openStorage({ kind: 'postgres', url: proxied.url, queryTimeoutMs: QUERY_TIMEOUT_MS });
    cleanups.push(() => storage.close());
    await migrateToLatest(storage.db);
  });
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  const selectOne = async () => (await sql<{ one: number }>`select 1 as one`.execute(storage.db)).rows[0]?.one;
  const rejection = async (promise: Promise<unknown>) => {
    const error = await promise.then(
      () => assert.fail('expected the query to fail'),
      (error: unknown) => error,
    );
    assert.ok(error instanceof UnavailableError, `an UnavailableError (503), not ${String(error)}`);
    return error.message;
  };
  const recovered = () =>
    waitUntil(
      async () => (await selectOne().catch(() => null)) === 1,
      10_000,
      50,
      'a query answered after the resume',
    );

  it('fails the first query after its timeout, then every query at once, until a probe of its own finds the database back', async () => {
    // Answering first (on a busy machine a query may miss the short timeout before the hang too).
    await recovered();
    proxied.proxy.stall();
    try {
      assert.match(await rejection(selectOne()), TIMED_OUT, 'the first query waits out its timeout');
      // The request that met the hang may go on (a rate-limit counter falls back to memory): its
      // next query must not wait a second timeout, nor any other request's.
      assert.match(await rejection(selectOne()), REFUSED_AT_ONCE);
      assert.match(await rejection(storage.db.transaction().execute(async (trx) => sql`select 1`.execute(trx))), REFUSED_AT_ONCE);
      assert.match(await rejection(storage.ping()), REFUSED_AT_ONCE, 'the health check too');
    } finally {
      await proxied.proxy.restore();
    }
    // No query here probes (each is refused at once while it counts as hung): only the background
    // probe can end the hang.
    await recovered();
    assert.deepEqual(await Promise.all(Array.from({ length: 12 }, selectOne)), Array(12).fill(1), 'every pooled connection answers its own query');
  });

  it('drops a connection caught mid-transaction by the hang, so the server rolls it back and nobody reuses it', async () => {
    await recovered();
    const key = `hang-${Date.now()}`;
    const transaction = storage.db.transaction().execute(async (trx) => {
      await trx.insertInto('rate_limits').values({ key, points: 1, expire: null }).execute();
      proxied.proxy.stall();
      await sql`select 1`.execute(trx);
    });
    try {
      assert.match(await rejection(transaction), TIMED_OUT);
      assert.match(await rejection(selectOne()), REFUSED_AT_ONCE);
    } finally {
      await proxied.proxy.restore();
    }
    await recovered();
    const rows = await storage.db.selectFrom('rate_limits').select('key').where('key', '=', key).execute();
    assert.deepEqual(rows, [], 'the insert was never committed');
  });
});

describe('the PostgreSQL pool', { skip: postgres!.skip }, () => {
  it('opens at most DATABASE_POOL_SIZE connections; more queries at once wait for one', async () => {
    const database = await postgres!.create();
    const storage = openStorage({ ...(database.config as { kind: 'postgres'; url: string }), poolSize: 3 });
    try {
      // Eight queries at once, each holding its connection a moment: with a pool of 3 they share 3 backends.
      const pids = await Promise.all(
        Array.from({ length: 8 }, async () => (await sql<{ pid: number }>`select pg_backend_pid() as pid, pg_sleep(0.05)`.execute(storage.db)).rows[0]!.pid),
      );
      assert.equal(new Set(pids).size, 3, `backends used: ${[...new Set(pids)].join(', ')}`);
    } finally {
      await storage.close();
      await database.drop();
    }
  });
});
