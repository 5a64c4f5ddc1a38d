/**
 * A verified foreign hash is replaced by argon2id at the next sign-in, in the sign-in's
 * transaction (the password factor's `onSessionStarted`): a sign-in that fails after the password
 * was verified (here, the transaction that writes the session and its `signin.success` event fails)
 * leaves the foreign hash as it was, and the next sign-in replaces it. A sign-in that meets a second
 * factor's challenge replaces it too, and the challenge's answer still finds the hash it expects.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import bcrypt from 'bcryptjs';
import { backends } from '../../test/helpers/databases.ts';
import { useTestApp } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { enrolTotp, totpCode } from '../../test/helpers/totp.ts';
import { defineModule } from '../module.ts';
import { MODULES } from '../modules.ts';

const PASSWORD = 'an imported password 123';

/** Accounts whose next sign-in fails in the session's transaction. */
const failFor = new Set<string>();
const failingSignIn = defineModule({
  name: 'failing-signin',
  subscriptions: () => [
    {
      types: ['signin.success'],
      async handle(event) {
        if (event.userId !== null && failFor.delete(event.userId)) throw new Error('the sign-in failed after the password');
      },
    },
  ],
});

for (const backend of await backends()) {
  describe(`a foreign hash is replaced in the sign-in's transaction (${backend.name})`, { skip: backend.skip }, () => {
    const clock = fakeClock();
    const t = useTestApp(backend, { clock, modules: [...MODULES, failingSignIn] });
    let count = 0;

    async function importedUser(): Promise<{ id: string; email: string; foreign: string }> {
      const email = `imported-${backend.name}-${++count}@example.com`;
      const foreign = await bcrypt.hash(PASSWORD, 4);
      const created = await t.services.users.createUser({ email, name: 'Imported', passwordHash: foreign, emailVerified: true });
      assert.ok(created.ok);
      return { id: created.user.id, email, foreign };
    }
    const hashOf = async (id: string) => (await t.services.users.findCredentialsById(id))?.passwordHash;
    const signIn = (email: string, password = PASSWORD) => t.app.inject({ method: 'POST', url: '/api/auth', payload: { email, password } });

    it('after a sign-in the hash is argon2id; a sign-in failing later leaves the foreign hash intact', async () => {
      const user = await importedUser();
      failFor.add(user.id);
      const failed = await signIn(user.email);
      assert.equal(failed.statusCode, 500, failed.body);
      assert.equal(failFor.has(user.id), false, 'the failing step ran');
      assert.equal(await hashOf(user.id), user.foreign, 'the foreign hash is intact');
      assert.deepEqual(await t.services.sessions.listSessions(user.id), [], 'and no session was written');

      assert.equal((await signIn(user.email, 'not the password')).statusCode, 401);
      assert.equal(await hashOf(user.id), user.foreign);

      const signedIn = await signIn(user.email);
      assert.equal(signedIn.statusCode, 200, signedIn.body);
      assert.match((await hashOf(user.id))!, /^\$argon2id\$/);
      assert.equal((await signIn(user.email)).statusCode, 200, 'the same password opens it with the new hash');
    });

    it('a sign-in that meets a second factor replaces it too, and the challenge is answered against the new hash', async () => {
      const user = await importedUser();
      const secret = await enrolTotp(t.services as never, user, clock);
      const challenged = await signIn(user.email);
      assert.equal(challenged.statusCode, 403, challenged.body);
      assert.equal(challenged.json().error, 'MFA_REQUIRED');
      assert.match((await hashOf(user.id))!, /^\$argon2id\$/);
      const verified = await t.app.inject({ method: 'POST', url: '/api/auth/mfa/verify', payload: { mfaToken: challenged.json().mfaToken, code: totpCode(secret, clock()) } });
      assert.equal(verified.statusCode, 200, verified.body);
    });
  });
}
