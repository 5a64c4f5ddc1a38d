/**
 * Finding: "after Redis loses its counters, a locked real account answers 429 while a locked
 * unknown address answers 401". Counters can be lost (a Redis flush or restart; here the storage
 * counters are deleted, which is the same loss); a real account's lock survives in its row. Its
 * answers must still be those of an address without an account that went through the same.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../../test/helpers/databases.ts';
import { createUser, useTestApp } from '../../test/helpers/app.ts';

const PASSWORD = 'correct horse battery staple';
const LOCK_AFTER = 10;

for (const backend of await backends()) {
  describe(`after the rate-limit counters are lost, a locked account answers like a locked unknown address (${backend.name})`, { skip: backend.skip }, () => {
    const t = useTestApp(backend, { env: { SIGNIN_LOCK_AFTER_FAILURES: String(LOCK_AFTER), SIGNIN_DELAY_AFTER_FAILURES: '100' } });

    const signIn = (email: string, password: string) => t.app.inject({ method: 'POST', url: '/api/auth', payload: { email, password } });

    async function lock(email: string) {
      for (let i = 0; i < LOCK_AFTER; i++) assert.equal((await signIn(email, `wrong guess ${i}`)).statusCode, 401);
      const locked = await signIn(email, PASSWORD);
      assert.equal(locked.statusCode, 429, 'locked');
    }

    it('the same status and body for any password, then the same relock', async () => {
      const real = 'locked-real@example.com';
      const unknown = 'locked-unknown@example.com';
      await createUser(t.services, { email: real, password: PASSWORD });
      await lock(real);
      await lock(unknown);

      await t.services.storage.db.deleteFrom('rate_limits').execute();

      for (const password of [PASSWORD, 'another wrong guess']) {
        const [a, b] = [await signIn(real, password), await signIn(unknown, password)];
        assert.equal(a.statusCode, b.statusCode, `status for ${password === PASSWORD ? 'the right' : 'a wrong'} password`);
        assert.deepEqual(a.json(), b.json());
        assert.equal(a.statusCode, 401, 'the right password is still refused: the lock holds');
      }
      // Both count from the loss on, and lock again together.
      for (let i = 2; i < LOCK_AFTER; i++) {
        assert.equal((await signIn(real, `guess ${i}`)).statusCode, 401);
        assert.equal((await signIn(unknown, `guess ${i}`)).statusCode, 401);
      }
      const [a, b] = [await signIn(real, PASSWORD), await signIn(unknown, PASSWORD)];
      assert.equal(a.statusCode, 429);
      assert.equal(b.statusCode, 429);
      assert.equal(a.headers['retry-after'], b.headers['retry-after']);
    });
  });
}
