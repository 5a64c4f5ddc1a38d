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
        after.toSorted((a, b) => a.encoded.localeCompare(b.encoded)),
        [
          { encoded: '$argon2id$v=19$m=19456,t=2,p=1', count: 1 },
          { encoded: '$argon2id$v=19$m=8192,t=5,p=1', count: 2 },
        ],
      );
    });
  });
}
