/**
 * Migrations that run outside a transaction (`export const transaction = false`): on PostgreSQL an
 * index built with `createIndexConcurrently`, which `CREATE INDEX CONCURRENTLY` refuses inside a
 * transaction block; every other pending migration still runs in a transaction, in name order, and
 * two instances migrating at once run each migration once. SQLite runs them all as before.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type Kysely } from 'kysely';
import type { Migration } from 'kysely/migration';
import { openStorage, type Storage } from './database.ts';
import { applyMigrations, createIndexConcurrently, MigrationFailedError, pendingMigrations } from './migrations.ts';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';

/** What each migration saw, in the order they ran: its name and whether it ran in a transaction. */
type Trace = Array<{ name: string; inTransaction: boolean }>;

function migrations(trace: Trace, options: { failAlone?: () => boolean } = {}): Record<string, Migration> {
  const seen = async (name: string, db: Kysely<unknown>) => {
    trace.push({ name, inTransaction: db.isTransaction });
    await sql`insert into alone_trace (name) values (${name})`.execute(db);
  };
  return {
    '0001-table': {
      async up(db) {
        await db.schema.createTable('alone_trace').addColumn('name', 'text', (c) => c.notNull()).execute();
        await db.schema.createTable('alone_items').addColumn('id', 'integer', (c) => c.primaryKey()).addColumn('label', 'text', (c) => c.notNull()).execute();
        await seen('0001-table', db);
      },
    },
    '0002-before': { up: (db) => seen('0002-before', db) },
    '0003-index': {
      transaction: false,
      async up(db: Kysely<unknown>) {
        await seen('0003-index', db);
        await createIndexConcurrently(db, 'alone_items_label_idx', 'alone_items', sql`(label)`);
        if (options.failAlone?.() === true) throw new Error('cut off after the index');
      },
    } as Migration,
    '0004-after': { up: (db) => seen('0004-after', db) },
    '0005-after': { up: (db) => seen('0005-after', db) },
  };
}

for (const backend of await backends()) {
  describe(`migrations outside a transaction (${backend.name})`, { skip: backend.skip, timeout: 120_000 }, () => {
    let database: TestDatabase;
    let storage: Storage;
    before(async () => {
      database = await backend.create();
      storage = openStorage(database.config);
    });
    after(async () => {
      await storage?.close();
      await database?.drop();
    });

    it('runs them in name order, each alone one outside a transaction and the rest inside, once', async () => {
      const trace: Trace = [];
      const result = await applyMigrations(storage.db, migrations(trace));
      assert.deepEqual(
        result.results?.map((r) => [r.migrationName, r.status]),
        ['0001-table', '0002-before', '0003-index', '0004-after', '0005-after'].map((name) => [name, 'Success']),
      );
      assert.deepEqual(
        trace.map((t) => t.name),
        ['0001-table', '0002-before', '0003-index', '0004-after', '0005-after'],
      );
      if (backend.name === 'postgres') {
        // CONCURRENTLY inside a transaction block is refused by PostgreSQL itself: it ran, so it was outside one.
        assert.deepEqual(
          trace.map((t) => t.inTransaction),
          [true, true, false, true, true],
        );
        const { rows } = await sql<{ valid: boolean }>`select i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid where c.relname = 'alone_items_label_idx'`.execute(storage.db);
        assert.deepEqual(rows, [{ valid: true }]);
      }
      assert.deepEqual((await applyMigrations(storage.db, migrations(trace))).results, [], 'nothing runs twice');
    });

    // SQLite: one process's storage migrates at start; two connections to one new file racing is not a case it serves.
    it('two instances migrating at once run every migration once', { skip: backend.name === 'sqlite' && 'PostgreSQL only' }, async () => {
      const other = await backend.create();
      const [first, second] = [openStorage(other.config), openStorage(other.config)];
      try {
        const traces: [Trace, Trace] = [[], []];
        await Promise.all([applyMigrations(first.db, migrations(traces[0])), applyMigrations(second.db, migrations(traces[1]))]);
        const ran = (await sql<{ name: string }>`select name from alone_trace order by name`.execute(first.db)).rows.map((row) => row.name);
        assert.deepEqual(ran, ['0001-table', '0002-before', '0003-index', '0004-after', '0005-after']);
        assert.deepEqual([...traces[0], ...traces[1]].map((t) => t.name).sort(), ran);
        assert.deepEqual(await pendingMigrations(first.db, migrations([])), []);
      } finally {
        await first.close();
        await second.close();
        await other.drop();
      }
    });

    it('one cut off half-way is not recorded, and the next start runs it again whole', async () => {
      const other = await backend.create();
      const db = openStorage(other.config);
      try {
        let cut = true;
        const failing = migrations([], { failAlone: () => cut });
        await assert.rejects(applyMigrations(db.db, failing), (error: unknown) => {
          assert.ok(error instanceof MigrationFailedError);
          assert.equal(error.message, 'Migration 0003-index failed');
          assert.deepEqual(error.applied, ['0001-table', '0002-before'], 'what this run applied before it, for the command to report');
          return true;
        });
        assert.deepEqual(await pendingMigrations(db.db, failing), ['0003-index', '0004-after', '0005-after'], 'what ran before it stays applied; it and the rest do not');
        if (backend.name === 'postgres') {
          // What a build cut off by a crash leaves: the index, invalid (a unique one over duplicates).
          await sql`drop index alone_items_label_idx`.execute(db.db);
          await sql`insert into alone_items (id, label) values (1, 'same'), (2, 'same')`.execute(db.db);
          await assert.rejects(sql`create unique index concurrently alone_items_label_idx on alone_items (label)`.execute(db.db));
          const { rows } = await sql<{ valid: boolean }>`select i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid where c.relname = 'alone_items_label_idx'`.execute(db.db);
          assert.deepEqual(rows, [{ valid: false }], 'the failed build left an invalid index');
        }
        cut = false;
        await applyMigrations(db.db, failing);
        assert.deepEqual(await pendingMigrations(db.db, failing), []);
        if (backend.name === 'postgres') {
          const { rows } = await sql<{ valid: boolean; unique: boolean }>`select i.indisvalid as valid, i.indisunique as unique from pg_index i join pg_class c on c.oid = i.indexrelid where c.relname = 'alone_items_label_idx'`.execute(db.db);
          assert.deepEqual(rows, [{ valid: true, unique: false }], 'the invalid leftover was dropped and the index built again');
        }
      } finally {
        await db.close();
        await other.drop();
      }
    });

    it('finds a leftover index as the statements do (a quoted, mixed-case schema on the search path) and refuses a name another table holds', { skip: backend.name === 'sqlite' && 'PostgreSQL only' }, async () => {
      await storage.db.connection().execute(async (connection) => {
        const db = connection as unknown as Kysely<unknown>;
        await sql`create schema "Auth Space"`.execute(db);
        try {
          await sql`set search_path to "Auth Space"`.execute(db);
          await sql`create table entries (id integer primary key, body text not null)`.execute(db);
          await sql`create table other (id integer primary key, body text not null)`.execute(db);
          await createIndexConcurrently(db, 'entries_body_idx', 'entries', sql`(body)`);
          await createIndexConcurrently(db, 'entries_body_idx', 'entries', sql`(body)`);
          const { rows } = await sql<{ schema: string; valid: boolean }>`select n.nspname as schema, i.indisvalid as valid from pg_index i join pg_class c on c.oid = i.indexrelid join pg_namespace n on n.oid = c.relnamespace where c.relname = 'entries_body_idx'`.execute(db);
          assert.deepEqual(rows, [{ schema: 'Auth Space', valid: true }], 'built once, in the schema the statements use, run twice');
          await assert.rejects(createIndexConcurrently(db, 'entries_body_idx', 'other', sql`(body)`), /an index named entries_body_idx exists on another table than other/);
        } finally {
          await sql`reset search_path`.execute(db);
          await sql`drop schema "Auth Space" cascade`.execute(db);
        }
      });
    });
  });
}
