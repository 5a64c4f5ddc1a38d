/**
 * The language of a user's mails (`users.locale`, issue 22): the migration that adds it to a
 * database that already has accounts, on every backend, and how the store keeps it: a sign-in's
 * language only while none is stored, a chosen one whenever it differs, anything not one of ours
 * read as unknown.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { openStorage, type Storage } from '../storage/database.ts';
import { applyMigrations } from '../storage/migrations.ts';
import { collectMigrations } from '../module.ts';
import { MODULES, migrateToLatest } from '../modules.ts';
import { createUserService, type UserService } from './user.service.ts';
import { mailLocale } from './locale.ts';

const MIGRATION = '20261127-users-locale';

for (const backend of await backends()) {
  describe(`users.locale on ${backend.name}`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let storage: Storage;
    let users: UserService;
    before(async () => {
      database = await backend.create();
      storage = openStorage(database.config);
      users = createUserService({ db: storage.db, clock: () => 1_700_000_000_000 });
    });
    after(async () => {
      await storage?.close();
      await database?.drop();
    });

    it('adds a nullable column to a database that already has accounts: they read as "no language yet"', async () => {
      const { [MIGRATION]: added, ...before } = collectMigrations(MODULES);
      assert.ok(added, 'the users module declares the migration');
      await applyMigrations(storage.db, before);
      // An account written by the code before the column existed (it names no locale).
      await sql`insert into users (id, email, name, password_hash, email_verified_at, disabled_at, created_at, updated_at, password_locked_at, name_confirmed_at)
                values ('legacy-user-0000000001', 'legacy@example.com', 'Legacy', null, null, null, 1, 1, null, null)`.execute(storage.db);

      const result = await migrateToLatest(storage.db);
      assert.deepEqual(result.results?.map((r) => [r.migrationName, r.status]), [[MIGRATION, 'Success']]);
      const legacy = await users.findUserByEmail('legacy@example.com');
      assert.equal(legacy?.locale, null);
      assert.deepEqual((await migrateToLatest(storage.db)).results, [], 'applied once');

      // Down and up again: the column goes and comes back empty.
      await added.down!(storage.db as never);
      await assert.rejects(sql`select locale from users`.execute(storage.db));
      await added.up(storage.db as never);
      assert.equal((await users.findUserByEmail('legacy@example.com'))?.locale, null);
    });

    it('stores the language given at creation and reads it back', async () => {
      const created = await users.createUser({ email: 'sign-up@example.com', name: 'S', passwordHash: null, locale: 'pt-BR' });
      assert.ok(created.ok);
      assert.equal(created.user.locale, 'pt-BR');
      assert.equal((await users.findUserById(created.user.id))?.locale, 'pt-BR');
      assert.equal(await users.findLocaleByEmail(' Sign-Up@Example.com '), 'pt-BR');
      assert.equal(await users.findLocaleByEmail('nobody@example.com'), null);
      const without = await users.createUser({ email: 'admin-made@example.com', name: 'A', passwordHash: null });
      assert.ok(without.ok);
      assert.equal(without.user.locale, null);
    });

    it('keeps a sign-in’s language only while none is stored, and a chosen one whenever it differs', async () => {
      const created = await users.createUser({ email: 'chooser@example.com', name: 'C', passwordHash: null });
      assert.ok(created.ok);
      const id = created.user.id;
      const updatedAt = created.user.updatedAt;
      assert.equal(await users.setLocale(id, 'de', { onlyIfUnset: true }), true, 'the first sign-in stores its language');
      assert.equal(await users.setLocale(id, 'ja', { onlyIfUnset: true }), false, 'a later sign-in changes nothing');
      assert.equal((await users.findUserById(id))?.locale, 'de');
      assert.equal(await users.setLocale(id, 'de'), false, 'the same choice again writes nothing');
      assert.equal(await users.setLocale(id, 'fr'), true, 'a choice replaces it');
      const after = await users.findUserById(id);
      assert.equal(after?.locale, 'fr');
      assert.equal(after?.updatedAt, updatedAt, 'a language is a preference, not a change to the account');
    });

    it('reads a stored value that is not one of our languages as none', async () => {
      const created = await users.createUser({ email: 'odd@example.com', name: 'O', passwordHash: null });
      assert.ok(created.ok);
      await storage.db.updateTable('users').set({ locale: 'tlh' }).where('id', '=', created.user.id).execute();
      assert.equal((await users.findUserById(created.user.id))?.locale, null);
      assert.equal(await users.findLocaleByEmail('odd@example.com'), null);
    });
  });
}

describe('mailLocale', () => {
  it('the recipient’s stored language, else the request’s, else English', () => {
    assert.equal(mailLocale({ locale: 'ja' }, { locale: 'de' }), 'ja');
    assert.equal(mailLocale({ locale: null }, { locale: 'de' }), 'de');
    assert.equal(mailLocale({ locale: null }, {}), 'en');
    assert.equal(mailLocale(null), 'en');
  });
});
