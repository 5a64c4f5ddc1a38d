/**
 * Finding: "accounts whose hash was made with older ARGON2_* settings take 4x longer to refuse than
 * unknown addresses". The job reads the parameter mix of the stored hashes (SQLite and PostgreSQL)
 * and the unknown-address dummy follows it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { hash } from '@node-rs/argon2';
import { backends } from '../../test/helpers/databases.ts';
import { createUser, useTestApp } from '../../test/helpers/app.ts';
import { countPasswordHashParameters } from '../users/user.store.ts';

const OLD = { algorithm: 2, memoryCost: 8192, timeCost: 5, parallelism: 1 } as const;

for (const backend of await backends()) {
  describe(`stored hash parameters steer the unknown-address dummy (${backend.name})`, { skip: backend.skip }, () => {
    const t = useTestApp(backend);

    it('counts the hashes per parameter set, and unknown addresses then cost like the accounts', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await createUser(t.services, { email: `old${i}@example.com`, password: 'correct horse battery staple' })).id);
      const oldHash = await hash('correct horse battery staple', OLD);
      await t.services.storage.db.updateTable('users').set({ password_hash: oldHash }).where('id', 'in', ids).execute();
      await t.services.users.createUser({ email: 'provider-only@example.com', name: 'No Password', passwordHash: null, roles: [], emailVerified: true });

      const mix = await t.services.storedHashParameters.runOnce();
      assert.deepEqual(mix, [{ encoded: '$argon2id$v=19$m=8192,t=5,p=1', count: 3 }]);
      for (let i = 0; i < 50; i++) assert.equal(t.services.hasher.dummyParametersFor(`nobody${i}@example.com`), '$argon2id$v=19$m=8192,t=5,p=1');

      // The right password of an old-hash account is rehashed at sign-in: the mix follows.
      const signIn = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: 'old0@example.com', password: 'correct horse battery staple' } });
      assert.equal(signIn.statusCode, 200, signIn.body);
      const after = await t.services.storedHashParameters.runOnce();
      assert.deepEqual(
        after?.toSorted((a, b) => a.encoded.localeCompare(b.encoded)),
        [
          { encoded: '$argon2id$v=19$m=19456,t=2,p=1', count: 1 },
          { encoded: '$argon2id$v=19$m=8192,t=5,p=1', count: 2 },
        ],
      );
    });

    it('reads the accounts in slices, one short statement each, and counts every hash once; a stop ends it with nothing', async () => {
      // Sets of parameters spread over ids that sort differently by byte and by a language's collation.
      const sets = [
        { algorithm: 2, memoryCost: 4096, timeCost: 3, parallelism: 1 },
        { algorithm: 2, memoryCost: 6144, timeCost: 2, parallelism: 1 },
      ] as const;
      const base = (await countPasswordHashParameters(t.services.storage.db))!;
      const ids = ['a-1', 'A_2', 'b3', 'B-4', 'c_5', 'Z6', 'z-7'];
      // Accounts copied from an existing row, with their own id, address and hash.
      const template = await t.services.storage.db.selectFrom('users').selectAll().limit(1).executeTakeFirstOrThrow();
      const insertAccount = (id: string, email: string, passwordHash: string | null) =>
        t.services.storage.db.insertInto('users').values({ ...template, id, email, password_hash: passwordHash }).execute();
      for (const [i, id] of ids.entries()) await insertAccount(id, `slice${i}@example.com`, await hash('correct horse battery staple', sets[i % 2]));
      await insertAccount('b-no-password', 'nopassword@example.com', null);
      // An imported argon2 hash with an 8-byte salt and a 16-byte hash: shorter than our suffix.
      const short = '$argon2id$v=19$m=4096,t=3,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA';
      assert.ok(short.length < 1 + 22 + 1 + 43);
      await insertAccount('b-short-argon2', 'short@example.com', short);

      let statements = 0;
      const counted = t.services.storage.db.withPlugin({
        transformQuery: (args) => args.node,
        // Once per statement run (transformQuery is asked again for each builder a query nests).
        transformResult: async (args) => {
          statements++;
          return args.result;
        },
      });
      let pauses = 0;
      const sliced = await countPasswordHashParameters(counted, { slice: 2, between: async () => void pauses++ });
      const sorted = (mix: ReadonlyArray<{ encoded: string; count: number }> | null) => mix?.toSorted((a, b) => a.encoded.localeCompare(b.encoded));
      const expected = new Map(base.map((entry) => [entry.encoded, entry.count]));
      expected.set('$argon2id$v=19$m=4096,t=3,p=1', 4);
      expected.set('$argon2id$v=19$m=6144,t=2,p=1', 3);
      assert.deepEqual(sorted(sliced), sorted([...expected].map(([encoded, count]) => ({ encoded, count }))));
      // Slices of every account, with a password or not (one without is among them); the short
      // imported hash is in no set (and refused no statement: PostgreSQL refuses a negative substr).
      const accounts = Number((await t.services.storage.db.selectFrom('users').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
      assert.ok(accounts > [...expected.values()].reduce((sum, count) => sum + count, 0));
      assert.equal(statements, Math.floor(accounts / 2) + 1, `one statement per slice of 2 (${accounts} accounts)`);
      assert.equal(pauses, statements - 1, 'a pause between slices');

      let asked = 0;
      assert.equal(await countPasswordHashParameters(t.services.storage.db, { slice: 2, shouldStop: () => ++asked > 2 }), null, 'stopped: no partial mix');
    });
  });
}
