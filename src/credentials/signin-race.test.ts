/**
 * Finding: "a sign-in racing a password change, reset or disable survives it". A sign-in whose
 * password check started before the change must not get a session written after the change ended
 * every session. The race is made deterministic: the sign-in is held right after its password
 * verified, the change is made, then the sign-in goes on.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../../test/helpers/databases.ts';
import { createUser, useTestApp } from '../../test/helpers/app.ts';

const PASSWORD = 'correct horse battery staple';
const NEW_PASSWORD = 'a completely different passphrase';

for (const backend of await backends()) {
  for (const strategy of ['database', 'jwt'] as const) {
    describe(`a sign-in racing a password change, reset or disable survives it (${strategy} strategy, ${backend.name})`, { skip: backend.skip }, () => {
      const t = useTestApp(backend, { env: { SESSION_STRATEGY: strategy } });
      let count = 0;

      async function newUser(roles: string[] = []) {
        const email = `race${++count}@example.com`;
        const user = await createUser(t.services, { email, password: PASSWORD, roles });
        return { ...user, email };
      }

      async function signIn(email: string, password = PASSWORD) {
        return t.app.inject({ method: 'POST', url: '/api/auth', payload: { email, password } });
      }

      /**
       * Starts a sign-in, holds it once its password has verified, runs `change`, then lets it
       * finish; returns its response.
       */
      async function signInAround(email: string, change: () => Promise<void>) {
        const { hasher } = t.services;
        const verify = hasher.verify;
        let verified!: () => void;
        const isVerified = new Promise<void>((resolve) => (verified = resolve));
        let release!: () => void;
        const released = new Promise<void>((resolve) => (release = resolve));
        hasher.verify = async (hash, password) => {
          const result = await verify.call(hasher, hash, password);
          hasher.verify = verify; // only the racing sign-in is held
          verified();
          await released;
          return result;
        };
        try {
          const pending = signIn(email);
          await isVerified;
          await change();
          release();
          return await pending;
        } finally {
          hasher.verify = verify;
          release();
        }
      }

      async function changePassword(token: string) {
        const changed = await t.app.inject({
          method: 'POST',
          url: '/api/auth/change-password',
          headers: { authorization: `Bearer ${token}` },
          payload: { currentPassword: PASSWORD, newPassword: NEW_PASSWORD },
        });
        assert.equal(changed.statusCode, 200, changed.body);
      }

      async function assertNoSessionBut(userId: string, keptSessionId: string | null) {
        const live = await t.services.sessions.listSessions(userId);
        assert.deepEqual(
          live.map((s) => s.id),
          keptSessionId === null ? [] : [keptSessionId],
          'no session was written after the change',
        );
      }

      it('a password change: the racing sign-in is refused, and only the changing session is left', async () => {
        const user = await newUser();
        const first = (await signIn(user.email)).json();
        const raced = await signInAround(user.email, () => changePassword(first.token));
        assert.equal(raced.statusCode, 401, raced.body);
        assert.equal(raced.json().error, 'INVALID_CREDENTIALS');
        const session = await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: { authorization: `Bearer ${first.token}` } });
        await assertNoSessionBut(user.id, session.json().session.id);
        assert.equal((await signIn(user.email, NEW_PASSWORD)).statusCode, 200, 'the new password works');
      });

      it('a password reset: the racing sign-in is refused, and no session is left', async () => {
        const user = await newUser();
        const { token } = await t.services.actionTokens.issue(t.services.storage.db, { userId: user.id, purpose: 'password_reset', ttlSeconds: 600 });
        const raced = await signInAround(user.email, async () => {
          const reset = await t.app.inject({ method: 'POST', url: '/api/auth/reset-password', payload: { token, password: NEW_PASSWORD } });
          assert.equal(reset.statusCode, 200, reset.body);
        });
        assert.equal(raced.statusCode, 401, raced.body);
        await assertNoSessionBut(user.id, null);
      });

      it('a disable by an admin: the racing sign-in is refused, and no session is left', async () => {
        const admin = await newUser(['ADMIN']);
        const adminToken = (await signIn(admin.email)).json().token;
        const user = await newUser();
        const raced = await signInAround(user.email, async () => {
          const disabled = await t.app.inject({
            method: 'PATCH',
            url: `/api/admin/users/${user.id}`,
            headers: { authorization: `Bearer ${adminToken}` },
            payload: { disabled: true },
          });
          assert.equal(disabled.statusCode, 200, disabled.body);
        });
        // As a disabled account with the right password is answered.
        assert.equal(raced.statusCode, 403, raced.body);
        assert.equal(raced.json().error, 'ACCOUNT_DISABLED');
        await assertNoSessionBut(user.id, null);
      });

      it('two sign-ins with the right password racing a rehash (after ARGON2_* changed) both succeed', async () => {
        const user = await newUser();
        const { hasher } = t.services;
        const needsRehash = hasher.needsRehash;
        hasher.needsRehash = () => true;
        try {
          let other: Awaited<ReturnType<typeof signIn>> | undefined;
          const raced = await signInAround(user.email, async () => {
            other = await signIn(user.email);
          });
          assert.equal(other!.statusCode, 200, other!.body);
          assert.equal(raced.statusCode, 200, `the held sign-in, whose hash was rehashed meanwhile: ${raced.body}`);
        } finally {
          hasher.needsRehash = needsRehash;
        }
        assert.equal((await t.services.sessions.listSessions(user.id)).length, 2);
      });

      it('a rehash on sign-in never puts back a password changed meanwhile', async () => {
        const user = await newUser();
        const { hasher } = t.services;
        const needsRehash = hasher.needsRehash;
        hasher.needsRehash = () => true;
        try {
          const first = (await signIn(user.email)).json();
          const raced = await signInAround(user.email, () => changePassword(first.token));
          assert.equal(raced.statusCode, 401, raced.body);
        } finally {
          hasher.needsRehash = needsRehash;
        }
        assert.equal((await signIn(user.email, PASSWORD)).statusCode, 401, 'the old password stays replaced');
        assert.equal((await signIn(user.email, NEW_PASSWORD)).statusCode, 200);
      });
    });
  }
}
