import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { openStorage, type Storage } from '../storage/database.ts';
import { migrateToLatest } from '../modules.ts';
import { createUserService } from '../users/user.service.ts';
import { sha256Base64url } from '../lib/random.ts';
import { createActionTokens, type ActionTokens } from './action-tokens.ts';

for (const backend of await backends()) {
  describe(`action tokens on ${backend.name}`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let storage: Storage;
    let tokens: ActionTokens;
    let now = 1_800_000_000_000;
    let alice: string;
    let bob: string;

    before(async () => {
      database = await backend.create();
      storage = openStorage(database.config);
      await migrateToLatest(storage.db);
      const clock = () => now;
      tokens = createActionTokens({ clock });
      const users = createUserService({ db: storage.db, clock });
      const a = await users.createUser({ email: 'alice@example.com', name: 'A', passwordHash: null });
      const b = await users.createUser({ email: 'bob@example.com', name: 'B', passwordHash: null });
      assert.ok(a.ok && b.ok);
      alice = a.user.id;
      bob = b.user.id;
    });
    after(async () => {
      await storage?.close();
      await database?.drop();
    });

    it('issues 256-bit tokens and stores only their SHA-256', async () => {
      const { token } = await tokens.issue(storage.db, { userId: alice, purpose: 'password_reset', ttlSeconds: 1800 });
      assert.match(token, /^[\w-]{43}$/);
      const rows = await storage.db.selectFrom('action_tokens').selectAll().where('user_id', '=', alice).execute();
      assert.ok(!JSON.stringify(rows).includes(token));
      assert.ok(rows.some((row) => row.token_hash === sha256Base64url(token)));
    });

    it('is single use, even for two requests racing with it', async () => {
      const { token } = await tokens.issue(storage.db, { userId: alice, purpose: 'password_reset', ttlSeconds: 1800 });
      const results = await Promise.all([1, 2, 3].map(() => tokens.consume(storage.db, token, 'password_reset')));
      assert.equal(results.filter((r) => r.ok).length, 1);
      assert.deepEqual(await tokens.check(storage.db, token, 'password_reset'), { ok: false, reason: 'INVALID_TOKEN' });
    });

    it('expires', async () => {
      const { token } = await tokens.issue(storage.db, { userId: alice, purpose: 'password_reset', ttlSeconds: 60 });
      now += 61_000;
      assert.deepEqual(await tokens.consume(storage.db, token, 'password_reset'), { ok: false, reason: 'TOKEN_EXPIRED' });
    });

    it('a newer token ends the older ones of the same purpose, not others', async () => {
      const first = await tokens.issue(storage.db, { userId: alice, purpose: 'password_reset', ttlSeconds: 1800 });
      const verification = await tokens.issue(storage.db, { userId: alice, purpose: 'email_verification', ttlSeconds: 1800 });
      const bobs = await tokens.issue(storage.db, { userId: bob, purpose: 'password_reset', ttlSeconds: 1800 });
      const second = await tokens.issue(storage.db, { userId: alice, purpose: 'password_reset', ttlSeconds: 1800 });
      assert.equal((await tokens.check(storage.db, first.token, 'password_reset')).ok, false);
      assert.equal((await tokens.check(storage.db, second.token, 'password_reset')).ok, true);
      assert.equal((await tokens.check(storage.db, verification.token, 'email_verification')).ok, true);
      const bobCheck = await tokens.check(storage.db, bobs.token, 'password_reset');
      assert.ok(bobCheck.ok && bobCheck.userId === bob, 'another user’s token is untouched and names its owner');
    });

    it('refuses a token of another purpose, and malformed values, without a lookup error', async () => {
      const { token } = await tokens.issue(storage.db, { userId: bob, purpose: 'email_verification', ttlSeconds: 1800 });
      assert.deepEqual(await tokens.consume(storage.db, token, 'password_reset'), { ok: false, reason: 'INVALID_TOKEN' });
      assert.equal((await tokens.check(storage.db, token, 'email_verification')).ok, true, 'still usable for its purpose');
      for (const value of ['', 'x', 'a'.repeat(44), null, 42, `${token}\n`]) {
        assert.deepEqual(await tokens.check(storage.db, value, 'email_verification'), { ok: false, reason: 'INVALID_TOKEN' });
      }
    });

    it('purges expired tokens in bounded batches', async () => {
      now += 10 * 86_400_000;
      const deleted = await tokens.purgeExpired(storage.db, 2);
      assert.equal(deleted, 2);
      while ((await tokens.purgeExpired(storage.db, 2)) > 0);
      const left = await storage.db.selectFrom('action_tokens').selectAll().execute();
      assert.ok(left.every((row) => row.expires_at >= now));
    });
  });
}
