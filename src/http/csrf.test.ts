import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { hiddenValue } from '../../test/helpers/pages.ts';

const PASSWORD = 'correct horse battery staple';
const CSRF_COOKIE = 'gatehouse.csrf';

for (const backend of await backends()) {
  describe(`CSRF secret at sign-in on ${backend.name}`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let t: TestApp;
    let origin: string;
    let email: string;

    before(async () => {
      database = await backend.create();
      t = await createTestApp(database);
      origin = new URL(t.config.authUrl).origin;
      email = (await createUser(t.services, { email: 'rotating@example.com', password: PASSWORD })).email;
    });
    after(async () => {
      await t?.close();
      await database?.drop();
    });

    /** A browser that has fetched a CSRF token before signing in (as the sign-in page does). */
    async function browserWithToken() {
      const jar = new CookieJar();
      const csrf = await t.app.inject({ method: 'GET', url: '/api/auth/csrf' });
      jar.store(csrf);
      return { jar, tokenBefore: csrf.json().csrfToken as string, cookieBefore: jar.get(CSRF_COOKIE) };
    }

    /** A harmless unsafe request authenticated by the session cookie: end my other sessions. */
    function endOtherSessions(jar: CookieJar, csrfToken: string): Promise<LightMyRequestResponse> {
      return t.app.inject({
        method: 'DELETE',
        url: '/api/auth/sessions?keepCurrent=true',
        headers: { origin, cookie: jar.header(), 'x-csrf-token': csrfToken },
      });
    }

    function assertRotated(signIn: LightMyRequestResponse, cookieBefore: string | undefined) {
      const replaced = signIn.cookies.find((cookie) => cookie.name === CSRF_COOKIE);
      assert.ok(replaced, 'the sign-in response sets a new CSRF cookie');
      assert.notEqual(replaced.value, cookieBefore);
      assert.equal(replaced.httpOnly, true);
      assert.equal(replaced.sameSite, 'Lax');
    }

    it('the CSRF secret is rotated at a form sign-in: a token from before is refused (403 CSRF_FAILED), the next page\'s token works', async () => {
      const { jar, tokenBefore, cookieBefore } = await browserWithToken();
      const signIn = await t.app.inject({
        method: 'POST',
        url: '/api/auth/signin',
        headers: { origin, cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ email, password: PASSWORD, csrfToken: tokenBefore, callbackUrl: '/dashboard' }).toString(),
      });
      assert.equal(signIn.statusCode, 303, signIn.body);
      assertRotated(signIn, cookieBefore);
      jar.store(signIn);

      const stale = await endOtherSessions(jar, tokenBefore);
      assert.equal(stale.statusCode, 403, stale.body);
      assert.equal(stale.json().error, 'CSRF_FAILED');

      // The page the sign-in leads to renders its forms with a token of the new secret.
      const dashboard = await t.app.inject({ method: 'GET', url: '/dashboard', headers: { cookie: jar.header() } });
      assert.equal(dashboard.statusCode, 200);
      jar.store(dashboard);
      const fresh = await endOtherSessions(jar, hiddenValue(dashboard.body, 'csrfToken'));
      assert.equal(fresh.statusCode, 200, fresh.body);
    });

    it('the CSRF secret is rotated at a JSON sign-in that sets cookies: the old token is refused, a fresh one works', async () => {
      const { jar, tokenBefore, cookieBefore } = await browserWithToken();
      const signIn = await t.app.inject({
        method: 'POST',
        url: '/api/auth/signin',
        headers: { origin, cookie: jar.header(), 'x-csrf-token': tokenBefore },
        payload: { email, password: PASSWORD },
      });
      assert.equal(signIn.statusCode, 200, signIn.body);
      assertRotated(signIn, cookieBefore);
      jar.store(signIn);

      const stale = await endOtherSessions(jar, tokenBefore);
      assert.equal(stale.statusCode, 403, stale.body);
      assert.equal(stale.json().error, 'CSRF_FAILED');

      const csrf = await t.app.inject({ method: 'GET', url: '/api/auth/csrf', headers: { cookie: jar.header() } });
      jar.store(csrf);
      assert.equal(csrf.cookies.length, 0, 'the new secret is reused, not replaced again');
      const fresh = await endOtherSessions(jar, csrf.json().csrfToken);
      assert.equal(fresh.statusCode, 200, fresh.body);
    });

    it('the API sign-in (no cookies) leaves the CSRF cookie alone', async () => {
      const { jar } = await browserWithToken();
      const signIn = await t.app.inject({ method: 'POST', url: '/api/auth', headers: { cookie: jar.header() }, payload: { email, password: PASSWORD } });
      assert.equal(signIn.statusCode, 200);
      assert.equal(signIn.cookies.length, 0);
    });
  });
}
