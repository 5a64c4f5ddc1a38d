import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { hotReaderOf, openStorage, type Storage } from './database.ts';
import { migrateToLatest } from '../modules.ts';
import { preparedInsert, preparedQuery } from './prepared.ts';

for (const backend of await backends()) {
  describe(`preparedQuery on ${backend.name}`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let storage: Storage;

    before(async () => {
      database = await backend.create();
      storage = openStorage(database.config);
      await migrateToLatest(storage.db);
      for (const key of ['a', 'b', 'c']) await storage.db.insertInto('rate_limits').values({ key, points: key.charCodeAt(0), expire: null }).execute();
    });
    after(async () => {
      await storage?.close();
      await database?.drop();
    });

    it('runs the compiled query with each call’s values, in any order and repeated', async () => {
      let builds = 0;
      const between = preparedQuery((db, low: number, high: number) => {
        builds++;
        return db
          .selectFrom('rate_limits')
          .select('key')
          .where('points', '<=', high)
          .where(sql<boolean>`points >= ${low} and ${low} >= 0`)
          .orderBy('key');
      });
      assert.deepEqual((await between(storage.db, 97, 98)).rows.map((row) => row.key), ['a', 'b']);
      assert.deepEqual((await between(storage.db, 98, 99)).rows.map((row) => row.key), ['b', 'c']);
      assert.deepEqual((await between(storage.db, 100, 200)).rows, []);
      assert.equal(builds, 1, 'built once for the same db');
      await storage.db.transaction().execute(async (trx) => {
        assert.deepEqual((await between(trx, 99, 99)).rows.map((row) => row.key), ['c']);
      });
      assert.equal(builds, 1, 'a transaction of the same db reuses the compiled form');
    });

    it('keeps constants the builder put in the query', async () => {
      const byKeyOrC = preparedQuery((db, key: string) => db.selectFrom('rate_limits').select('key').where('key', 'in', [key, 'c']).orderBy('key'));
      assert.deepEqual((await byKeyOrC(storage.db, 'a')).rows.map((row) => row.key), ['a', 'c']);
      assert.deepEqual((await byKeyOrC(storage.db, 'b')).rows.map((row) => row.key), ['b', 'c']);
    });

    it('inserts whole rows with one compiled statement, nulls included', async () => {
      const insert = preparedInsert('rate_limits', { key: true, points: true, expire: true });
      await insert(storage.db, { key: 'x', points: 7, expire: 123 });
      await insert(storage.db, { key: 'y', points: 8, expire: null });
      const rows = await storage.db.selectFrom('rate_limits').selectAll().where('key', 'in', ['x', 'y']).orderBy('key').execute();
      assert.deepEqual(rows.map((row) => ({ ...row })), [
        { key: 'x', points: 7, expire: 123 },
        { key: 'y', points: 8, expire: null },
      ]);
    });

    it('refuses a builder that does not pass an argument to the query as a value', async () => {
      const computed = preparedQuery((db, points: number) => db.selectFrom('rate_limits').select('key').where('points', '=', points + 1));
      await assert.rejects(computed(storage.db, 1), /every argument must be a value/);
    });
  });
}

describe('preparedQuery on SQLite: hot reads on the read-only connection', () => {
  let database: TestDatabase;
  let storage: Storage;
  const byKey = preparedQuery((db, key: string) => db.selectFrom('rate_limits').select(['key', 'points']).where('key', '=', key));

  before(async () => {
    const sqlite = (await backends()).find((backend) => backend.name === 'sqlite')!;
    database = await sqlite.create();
    storage = openStorage(database.config);
    await migrateToLatest(storage.db);
  });
  after(async () => {
    await storage?.close();
    await database?.drop();
  });

  it('reads what is committed, at once, and never what a transaction has not committed yet', async () => {
    assert.ok(hotReaderOf(storage.db), 'the root instance of a file database has a reader');
    await storage.db.insertInto('rate_limits').values({ key: 'hot', points: 1, expire: null }).execute();
    assert.deepEqual((await byKey(storage.db, 'hot')).rows, [{ key: 'hot', points: 1 }], 'a committed write is read at once');

    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const writing = storage.db.transaction().execute(async (trx) => {
      assert.equal(hotReaderOf(trx), undefined, 'a transaction reads through its own connection');
      await trx.updateTable('rate_limits').set({ points: 2 }).where('key', '=', 'hot').execute();
      assert.deepEqual((await byKey(trx, 'hot')).rows, [{ key: 'hot', points: 2 }], 'the transaction sees its own write');
      await held;
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Through Kysely this read would wait for the transaction (one connection, one mutex).
    assert.deepEqual((await byKey(storage.db, 'hot')).rows, [{ key: 'hot', points: 1 }], 'not blocked, and not the uncommitted value');
    release();
    await writing;
    assert.deepEqual((await byKey(storage.db, 'hot')).rows, [{ key: 'hot', points: 2 }], 'the commit is read at once');
  });

  it('tells the query observer of each read', async () => {
    const seen: string[] = [];
    storage.observeQueries?.((kind) => seen.push(kind));
    try {
      await byKey(storage.db, 'hot');
    } finally {
      storage.observeQueries?.(null);
    }
    assert.deepEqual(seen, ['SelectQueryNode']);
  });

  it('has no reader for an in-memory database (a second connection would be another database)', async () => {
    const memory = openStorage({ kind: 'sqlite', path: ':memory:' });
    try {
      assert.equal(hotReaderOf(memory.db), undefined);
      await migrateToLatest(memory.db);
      await memory.db.insertInto('rate_limits').values({ key: 'm', points: 3, expire: null }).execute();
      assert.deepEqual((await byKey(memory.db, 'm')).rows, [{ key: 'm', points: 3 }]);
    } finally {
      await memory.close();
    }
  });
});
