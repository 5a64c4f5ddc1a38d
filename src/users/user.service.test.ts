import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { openStorage, type Storage } from '../storage/database.ts';
import { migrateToLatest } from '../modules.ts';
import { createUserService, type UserService } from './user.service.ts';
import { normaliseEmail } from './email.ts';

for (const backend of await backends()) {
  describe(`users on ${backend.name}`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let storage: Storage;
    let users: UserService;
    before(async () => {
      database = await backend.create();
      storage = openStorage(database.config);
      await migrateToLatest(storage.db);
      users = createUserService({ db: storage.db, clock: () => 1_700_000_000_123 });
    });
    after(async () => {
      await storage?.close();
      await database?.drop();
    });

    it('applies migrations idempotently', async () => {
      const again = await migrateToLatest(storage.db);
      assert.deepEqual(again.results, []);
    });

    it('knows whether any account exists, reading one row', async () => {
      assert.equal(await users.hasAnyUser(), false, 'before the first account');
      assert.ok((await users.createUser({ email: 'first@example.com', name: 'First', passwordHash: null })).ok);
      assert.equal(await users.hasAnyUser(), true);
    });

    it('stores a normalised e-mail, random ids, roles and times', async () => {
      const result = await users.createUser({ email: '  Carol@EXAMPLE.com ', name: ' Carol ', passwordHash: null, roles: ['ADMIN', 'EDITOR', 'ADMIN'] });
      assert.ok(result.ok);
      const { user } = result;
      assert.equal(user.email, 'carol@example.com');
      assert.equal(user.name, 'Carol');
      assert.deepEqual(user.roles, ['ADMIN', 'EDITOR']);
      assert.match(user.id, /^[\w-]{22}$/);
      assert.equal(user.createdAt, 1_700_000_000_123);
      assert.equal(typeof user.createdAt, 'number', 'BIGINT times read back as numbers');
      assert.equal(user.disabledAt, null);
      assert.equal(user.emailVerifiedAt, null);
      assert.deepEqual(await users.findUserById(user.id), user);
    });

    it('makes ids unpredictable', async () => {
      const ids = new Set<string>();
      for (let i = 0; i < 20; i++) {
        const result = await users.createUser({ email: `user${i}@example.com`, name: 'U', passwordHash: null });
        assert.ok(result.ok);
        ids.add(result.user.id);
      }
      assert.equal(ids.size, 20);
      const sorted = [...ids].sort();
      assert.notDeepEqual(sorted, [...ids], 'not in creation order');
    });

    it('refuses a second account for the same address in any spelling', async () => {
      await users.createUser({ email: 'dave@example.com', name: 'Dave', passwordHash: null });
      for (const email of ['DAVE@example.com', ' dave@example.com', 'ｄａｖｅ@example.com']) {
        const result = await users.createUser({ email, name: 'Dave again', passwordHash: null });
        assert.deepEqual(result, { ok: false, reason: 'EMAIL_TAKEN' }, email);
      }
    });

    it('enforces e-mail uniqueness in storage too, for concurrent creations', async () => {
      const results = await Promise.all(
        Array.from({ length: 5 }, () => users.createUser({ email: 'race@example.com', name: 'Race', passwordHash: null })),
      );
      assert.equal(results.filter((r) => r.ok).length, 1);
      assert.ok(results.filter((r) => !r.ok).every((r) => !r.ok && r.reason === 'EMAIL_TAKEN'));
    });

    it('refuses malformed role names', async () => {
      const result = await users.createUser({ email: 'erin@example.com', name: 'Erin', passwordHash: null, roles: ['admin; drop table'] });
      assert.deepEqual(result, { ok: false, reason: 'INVALID_ROLE' });
    });

    it('deletes roles and sessions with their user', async () => {
      const result = await users.createUser({ email: 'frank@example.com', name: 'F', passwordHash: null, roles: ['ADMIN'] });
      assert.ok(result.ok);
      await storage.db.deleteFrom('users').where('id', '=', result.user.id).execute();
      const roles = await storage.db.selectFrom('user_roles').selectAll().where('user_id', '=', result.user.id).execute();
      assert.deepEqual(roles, []);
    });
  });
}

describe('normaliseEmail', () => {
  it('trims, applies NFKC and lower-cases', () => {
    assert.equal(normaliseEmail('  Alice@Example.COM\t'), 'alice@example.com');
    assert.equal(normaliseEmail('ａｌｉｃｅ@ｅｘａｍｐｌｅ.com'), 'alice@example.com');
  });
});
