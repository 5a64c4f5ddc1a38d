/**
 * CSRF, both ways, on every backend: what a cross-site page can make a browser send is refused and
 * changes nothing; what our own pages send, with the token, works.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';

const PASSWORD = 'correct horse battery staple';
const EVIL = 'https://evil.example';

for (const backend of await backends()) {
  describe(`CSRF on ${backend.name}`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let t: TestApp;
    let origin: string;

    before(async () => {
      database = await backend.create();
      t = await createTestApp(database);
      origin = new URL(t.config.authUrl).origin;
      await createUser(t.services, { email: 'victim@example.com', password: PASSWORD });
    });
    after(async () => {
      await t?.close();
      await database?.drop();
    });

    /** A browser that has fetched a CSRF token, signed in through the form, and has the token of its new CSRF secret. */
    async function signedInBrowser() {
      const jar = new CookieJar();
      const csrf = await t.app.inject({ method: 'GET', url: '/api/auth/csrf' });
      jar.store(csrf);
      const csrfToken = csrf.json().csrfToken as string;
      const signIn = await t.app.inject({
        method: 'POST',
        url: '/api/auth/signin',
        headers: { origin, cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ email: 'victim@example.com', password: PASSWORD, csrfToken, callbackUrl: '/dashboard' }).toString(),
      });
      assert.equal(signIn.statusCode, 303, signIn.body);
      assert.equal(signIn.headers.location, '/dashboard');
      jar.store(signIn);
      assert.ok(jar.has('gatehouse.session') && jar.has('gatehouse.refresh'));
      // Signing in replaced the CSRF secret (src/http/csrf.test.ts): later requests need a fresh token.
      const fresh = await t.app.inject({ method: 'GET', url: '/api/auth/csrf', headers: { cookie: jar.header() } });
      jar.store(fresh);
      assert.notEqual(fresh.json().csrfToken, csrfToken);
      return { jar, csrfToken: fresh.json().csrfToken as string };
    }

    async function isSignedIn(jar: CookieJar): Promise<boolean> {
      const response = await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: { cookie: jar.header() } });
      return response.statusCode === 200;
    }

    it('GET /api/auth/csrf returns a token and sets a signed, HttpOnly cookie', async () => {
      const response = await t.app.inject({ method: 'GET', url: '/api/auth/csrf' });
      assert.equal(response.statusCode, 200);
      assert.match(response.json().csrfToken, /^[\w-]+$/);
      const cookie = response.cookies.find((c) => c.name === 'gatehouse.csrf');
      assert.ok(cookie);
      assert.equal(cookie.httpOnly, true);
      assert.equal(cookie.sameSite, 'Lax');
      assert.match(cookie.value, /\.[\w+/=-]+$/, 'signed');
    });

    it('a form sign-in redirects only to a same-origin callbackUrl; anything else lands on /', async () => {
      const cases: Array<[string | undefined, string]> = [
        [undefined, '/dashboard'],
        ['/dashboard/x?y=1', '/dashboard/x?y=1'],
        ['//evil.example', '/'],
        ['/\\evil.example', '/'],
        ['https://evil.example/', '/'],
        ['javascript:alert(1)', '/'],
        ['/%2F%2Fevil.example', '/%2F%2Fevil.example'],
      ];
      for (const [callbackUrl, expected] of cases) {
        const jar = new CookieJar();
        const csrf = await t.app.inject({ method: 'GET', url: '/api/auth/csrf' });
        jar.store(csrf);
        const form = new URLSearchParams({ email: 'victim@example.com', password: PASSWORD, csrfToken: csrf.json().csrfToken });
        if (callbackUrl !== undefined) form.set('callbackUrl', callbackUrl);
        const response = await t.app.inject({
          method: 'POST',
          url: '/api/auth/signin',
          headers: { origin, cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
          payload: form.toString(),
        });
        assert.equal(response.statusCode, 303, String(callbackUrl));
        assert.equal(response.headers.location, expected, String(callbackUrl));
      }
    });

    it('refuses a cross-site form post that carries the session cookie, and changes nothing', async () => {
      const { jar, csrfToken } = await signedInBrowser();
      for (const headers of [
        { origin: EVIL },
        { origin: 'null' },
        { 'sec-fetch-site': 'cross-site' },
        { 'sec-fetch-site': 'same-site' },
      ]) {
        const response = await t.app.inject({
          method: 'POST',
          url: '/api/auth/signout',
          headers: { ...headers, cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
          // Even a token the attacker somehow learned does not help from another origin.
          payload: `csrfToken=${csrfToken}`,
        });
        assert.equal(response.statusCode, 403, JSON.stringify(headers));
        assert.equal(response.json().error, 'CSRF_FAILED');
        assert.equal(response.headers['set-cookie'], undefined, 'no cookie is cleared or set');
      }
      assert.ok(await isSignedIn(jar), 'still signed in');
    });

    it('refuses a same-origin form post without a valid token', async () => {
      const { jar } = await signedInBrowser();
      const other = await t.app.inject({ method: 'GET', url: '/api/auth/csrf' });
      for (const payload of ['', 'csrfToken=', 'csrfToken=forged-token', `csrfToken=${other.json().csrfToken}`]) {
        const response = await t.app.inject({
          method: 'POST',
          url: '/api/auth/signout',
          headers: { origin, cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
          payload,
        });
        assert.equal(response.statusCode, 403, payload);
        assert.equal(response.json().error, 'CSRF_FAILED');
      }
      assert.ok(await isSignedIn(jar));
    });

    it('accepts Origin: null only when Sec-Fetch-Site says same-origin (a no-referrer page of ours)', async () => {
      const { jar, csrfToken } = await signedInBrowser();
      const post = (headers: Record<string, string>) =>
        t.app.inject({
          method: 'POST',
          url: '/api/auth/signout',
          headers: { ...headers, cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
          payload: `csrfToken=${csrfToken}`,
        });
      assert.equal((await post({ origin: 'null', 'sec-fetch-site': 'cross-site' })).statusCode, 403, 'a sandboxed frame elsewhere');
      assert.ok(await isSignedIn(jar));
      assert.equal((await post({ origin: 'null', 'sec-fetch-site': 'same-origin' })).statusCode, 303);
      assert.equal(await isSignedIn(jar), false);
    });

    it('accepts a same-origin form post with the token', async () => {
      const { jar, csrfToken } = await signedInBrowser();
      const response = await t.app.inject({
        method: 'POST',
        url: '/api/auth/signout',
        headers: { origin, cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
        payload: `csrfToken=${csrfToken}`,
      });
      assert.equal(response.statusCode, 303);
      assert.equal(response.headers.location, '/');
      jar.store(response);
      assert.ok(!jar.has('gatehouse.session') && !jar.has('gatehouse.refresh'), 'cookies cleared');
      assert.equal(await isSignedIn(jar), false);
    });

    it('refuses login CSRF: a cross-site form post to the sign-in endpoint sets no session', async () => {
      const response = await t.app.inject({
        method: 'POST',
        url: '/api/auth/signin',
        headers: { origin: EVIL, 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ email: 'victim@example.com', password: PASSWORD }).toString(),
      });
      assert.equal(response.statusCode, 403);
      assert.equal(response.json().error, 'CSRF_FAILED');
      assert.equal(response.cookies.length, 0);
      const noToken = await t.app.inject({
        method: 'POST',
        url: '/api/auth/signin',
        headers: { origin, 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ email: 'victim@example.com', password: PASSWORD }).toString(),
      });
      assert.equal(noToken.statusCode, 403, 'a form post needs the token even from our origin');
    });

    it('refuses a cross-site text/plain post (no preflight) carrying the cookie', async () => {
      const { jar } = await signedInBrowser();
      const response = await t.app.inject({
        method: 'POST',
        url: '/api/auth/signout',
        headers: { origin: EVIL, cookie: jar.header(), 'content-type': 'text/plain' },
        payload: '{"csrfToken":"x"}',
      });
      assert.equal(response.statusCode, 403);
      assert.ok(await isSignedIn(jar));
    });

    it('requires X-CSRF-Token on cookie-authenticated JSON requests, and accepts it', async () => {
      const { jar, csrfToken } = await signedInBrowser();
      const list = await t.app.inject({ method: 'GET', url: '/api/auth/sessions', headers: { cookie: jar.header() } });
      assert.equal(list.statusCode, 200, 'safe methods need no token');
      const [session] = list.json().sessions;
      const url = `/api/auth/sessions/${session.id}`;
      const without = await t.app.inject({ method: 'DELETE', url, headers: { origin, cookie: jar.header() } });
      assert.equal(without.statusCode, 403);
      assert.equal(without.json().error, 'CSRF_FAILED');
      assert.ok(await isSignedIn(jar));
      const withToken = await t.app.inject({ method: 'DELETE', url, headers: { origin, cookie: jar.header(), 'x-csrf-token': csrfToken } });
      assert.equal(withToken.statusCode, 200);
      jar.store(withToken);
      assert.equal(await isSignedIn(jar), false);
    });

    it('ends the browser’s previous session when it signs in again', async () => {
      const { jar, csrfToken } = await signedInBrowser();
      const before = await t.app.inject({ method: 'GET', url: '/api/auth/sessions', headers: { cookie: jar.header() } });
      const [previous] = before.json().sessions.filter((s: { current: boolean }) => s.current);
      const again = await t.app.inject({
        method: 'POST',
        url: '/api/auth/signin',
        headers: { origin, cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ email: 'victim@example.com', password: PASSWORD, csrfToken }).toString(),
      });
      assert.equal(again.statusCode, 303);
      jar.store(again);
      const after = await t.app.inject({ method: 'GET', url: '/api/auth/sessions', headers: { cookie: jar.header() } });
      const ids = after.json().sessions.map((s: { id: string }) => s.id);
      assert.ok(!ids.includes(previous.id), 'the replaced session is no longer active');
    });

    it('needs no CSRF token for Bearer-authenticated JSON', async () => {
      const signIn = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: 'victim@example.com', password: PASSWORD } });
      const { token } = signIn.json();
      const response = await t.app.inject({ method: 'DELETE', url: '/api/auth/sessions?keepCurrent=true', headers: { authorization: `Bearer ${token}`, origin: EVIL } });
      assert.equal(response.statusCode, 200);
    });
  });
}
