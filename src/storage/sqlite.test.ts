import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Kysely, sql } from 'kysely';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createSqliteDialect, openSqlite } from './sqlite.ts';

describe('the node:sqlite adapter', () => {
  function open() {
    const db = new Kysely<Record<string, Record<string, unknown>>>({ dialect: createSqliteDialect(openSqlite(':memory:')) });
    return db;
  }

  it('returns rows as plain objects with every column, in order, with SQLite types kept', async () => {
    const db = open();
    try {
      await sql`create table t (id text primary key, n integer, x real, b blob, maybe text)`.execute(db);
      await sql`insert into t values ('a', 1, 1.5, x'00ff', null), ('b', 2, -0.25, x'', 'set')`.execute(db);
      const { rows } = await sql<Record<string, unknown>>`select id, n, x, b, maybe from t order by id`.execute(db);
      assert.equal(rows.length, 2);
      for (const row of rows) {
        assert.equal(Object.getPrototypeOf(row), Object.prototype, 'a plain object, not a null-prototype one');
        assert.deepEqual(Object.keys(row), ['id', 'n', 'x', 'b', 'maybe']);
      }
      assert.deepEqual({ ...rows[0] }, { id: 'a', n: 1, x: 1.5, b: new Uint8Array([0, 255]), maybe: null });
      assert.deepEqual({ ...rows[1] }, { id: 'b', n: 2, x: -0.25, b: new Uint8Array([]), maybe: 'set' });
      // Kysely's own builder, an empty result, RETURNING, and a write's result still work.
      assert.deepEqual(await db.selectFrom('t').select('id').where('n', '>', 5).execute(), []);
      const inserted = await db.insertInto('t').values({ id: 'c', n: 3 }).returning(['id', 'n']).executeTakeFirstOrThrow();
      assert.deepEqual({ ...inserted }, { id: 'c', n: 3 });
      const updated = await db.updateTable('t').set({ n: 9 }).where('id', '=', 'a').executeTakeFirst();
      assert.equal(updated.numUpdatedRows, 1n);
    } finally {
      await db.destroy();
    }
  });

  it("sizes the page cache in MiB when asked, and leaves SQLite's default otherwise", () => {
    const sized = openSqlite(':memory:', { cacheMib: 8 });
    const plain = openSqlite(':memory:');
    try {
      assert.deepEqual({ ...sized.prepare('pragma cache_size').get() }, { cache_size: -8192 });
      assert.deepEqual({ ...plain.prepare('pragma cache_size').get() }, { cache_size: -2000 });
    } finally {
      sized.close();
      plain.close();
    }
  });

  it('reads column names as data, never as code, and refuses one named __proto__', async () => {
    const db = open();
    try {
      const tricky = `x"}; globalThis.__sqliteInjected = true; ({"y`;
      const { rows } = await sql<Record<string, unknown>>`select 1 as ${sql.id(tricky)}, 2 as "constructor", 3 as "same", 4 as "same"`.execute(db);
      assert.equal((globalThis as Record<string, unknown>).__sqliteInjected, undefined);
      assert.deepEqual(Object.keys(rows[0]!), [tricky, 'constructor', 'same']);
      assert.equal(rows[0]![tricky], 1);
      assert.equal(rows[0]!.same, 4, 'a repeated name keeps the last value, as node:sqlite does');
      await assert.rejects(sql`select 1 as "__proto__"`.execute(db), /__proto__/);
    } finally {
      await db.destroy();
    }
  });

  it('names columns afresh after a schema change on the same connection', async () => {
    const db = open();
    try {
      await sql`create table t (a text, b text)`.execute(db);
      await sql`insert into t values ('1', '2')`.execute(db);
      assert.deepEqual({ ...(await sql<Record<string, unknown>>`select * from t`.execute(db)).rows[0] }, { a: '1', b: '2' });
      // Rebuilt with the columns in another order, as a migration might.
      await sql`drop table t`.execute(db);
      await sql`create table t (b text, a text)`.execute(db);
      await sql`insert into t values ('2', '1')`.execute(db);
      assert.deepEqual({ ...(await sql<Record<string, unknown>>`select * from t`.execute(db)).rows[0] }, { b: '2', a: '1' });
    } finally {
      await db.destroy();
    }
  });

  it('still builds rows where code from strings is disallowed', () => {
    const module = fileURLToPath(new URL('./sqlite.ts', import.meta.url));
    const script = `
      import { Kysely, sql } from 'kysely';
      import { createSqliteDialect, openSqlite } from ${JSON.stringify(module)};
      const db = new Kysely({ dialect: createSqliteDialect(openSqlite(':memory:')) });
      const { rows } = await sql\`select 1 as one, 'x' as two\`.execute(db);
      process.stdout.write(JSON.stringify(rows));`;
    const out = execFileSync(process.execPath, ['--disallow-code-generation-from-strings', '--input-type=module', '-e', script], { encoding: 'utf8', cwd: fileURLToPath(new URL('../..', import.meta.url)) });
    assert.deepEqual(JSON.parse(out), [{ one: 1, two: 'x' }]);
  });
});
