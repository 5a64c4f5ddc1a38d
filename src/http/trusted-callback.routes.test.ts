/**
 * Back to the app after sign-in (issue 19): a `callbackUrl` naming one of TRUSTED_ORIGINS
 * absolutely is kept through every way of signing in, through the real app on SQLite and
 * PostgreSQL: the sign-in form (303 to it, and kept when a wrong password sends the form back), the
 * JSON sign-in, the second-factor page (the challenge's page carries it), a provider's round trip
 * (GitHub and OpenID Connect, against loopback peers), the passkey button's target; and the pages
 * whose forms end in that redirect add that one origin to their CSP `form-action`, only when asked
 * to. Anything else still lands on `/` (or `/dashboard` when none was given). The resolution's
 * hostile cases are src/http/safe-redirect.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { CookieJar, formBrowser, postForm } from '../../test/helpers/cookie-jar.ts';
import { hiddenValue, unescapeHtml } from '../../test/helpers/pages.ts';
import { enrolTotp, totpCode, TOTP_STEP_MS } from '../../test/helpers/totp.ts';
import { peerEnv, startGitHubPeer, startOidcPeer, type GitHubPeer, type OidcPeer } from '../../test/helpers/oauth-peers.ts';

const PASSWORD = 'correct horse battery staple';
const AUTH_URL = 'http://localhost:3000';
const ORIGIN = AUTH_URL;
const APP = 'https://app.example.com';
const DEV_APP = 'http://localhost:5173';

/** Disguised or foreign callbacks, each of which must land on `/` exactly as before. */
const UNTRUSTED = [
  'https://evil.example/',
  `${APP}@evil.example/`,
  `${APP}.evil.example/`,
  `${APP}./dashboard`,
  `${APP}:8443/`,
  'http://app.example.com/',
  '//app.example.com/dashboard',
  'https:\\\\app.example.com/',
  'https:app.example.com/',
  'https://app．example.com/',
  `${APP}%2F@evil.example/`,
  `${AUTH_URL}/dashboard`,
  'javascript:alert(1)',
];

/** The sources of the response's CSP `form-action`. */
function formActionSources(response: LightMyRequestResponse): string[] {
  const directive = /(?:^|;\s*)form-action ([^;]*)/.exec(String(response.headers['content-security-policy']))?.[1];
  assert.ok(directive !== undefined, 'the page has a form-action directive');
  return directive.trim().split(/\s+/);
}

for (const backend of await backends()) {
  describe(`back to a trusted origin after sign-in, on ${backend.name}`, { skip: backend.skip }, () => {
    const clock = fakeClock();
    let database: TestDatabase;
    let t: TestApp;
    let oidc: OidcPeer;
    let github: GitHubPeer;
    let count = 0;

    before(async () => {
      [oidc, github] = await Promise.all([startOidcPeer({ clientId: 'acme-client' }), startGitHubPeer()]);
      database = await backend.create();
      t = await createTestApp(database, { clock, env: { AUTH_URL, TRUSTED_ORIGINS: `${APP}, ${DEV_APP}`, ...peerEnv({ oidc, github }) } });
    });
    after(async () => {
      await t?.close();
      await database?.drop();
      await Promise.all([oidc?.close(), github?.close()]);
    });

    async function newUser() {
      const email = `trusted${++count}@example.com`;
      const user = await createUser(t.services, { email, password: PASSWORD });
      return { user, email };
    }

    /** A user with an authenticator app; their secret. */
    async function enrolledUser() {
      const { user, email } = await newUser();
      return { user, email, secret: await enrolTotp(t.services, user, clock) };
    }

    /** A browser with a CSRF token, as a page load gives it. */
    const browser = () => formBrowser(t.app);

    const formPost = (b: { jar: CookieJar; csrfToken: string }, url: string, fields: Record<string, string>) => postForm(t.app, b, url, fields, ORIGIN);

    async function get(url: string, jar?: CookieJar) {
      const response = await t.app.inject({ method: 'GET', url, headers: jar === undefined ? {} : { cookie: jar.header() } });
      jar?.store(response);
      return response;
    }

    async function isSignedIn(jar: CookieJar) {
      return (await get('/api/auth/session', jar)).statusCode === 200;
    }

    /** A form sign-in with `callbackUrl` (left out when undefined): our answer and the browser. */
    async function formSignIn(email: string, callbackUrl: string | undefined, password = PASSWORD) {
      const b = await browser();
      const response = await formPost(b, '/api/auth/signin', { email, password, ...(callbackUrl !== undefined && { callbackUrl }) });
      return { ...b, response };
    }

    describe('the sign-in form', () => {
      it('lands 303 on a trusted absolute callbackUrl, as browsers serialise it, signed in', async () => {
        const { email } = await newUser();
        for (const [callbackUrl, landing] of [
          [`${APP}/dashboard?x=1`, `${APP}/dashboard?x=1`],
          [`${APP}/`, `${APP}/`],
          ['HTTPS://APP.example.com:443/a/../b#c', `${APP}/b#c`],
          [`${DEV_APP}/callback?state=abc`, `${DEV_APP}/callback?state=abc`],
        ]) {
          const { jar, response } = await formSignIn(email, callbackUrl);
          assert.equal(response.statusCode, 303, response.body);
          assert.equal(response.headers.location, landing, callbackUrl);
          assert.ok(await isSignedIn(jar), `${callbackUrl}: signed in`);
        }
      });

      it('lands an untrusted or disguised callbackUrl on /, keeps a path of ours, and gives /dashboard for none, as before', async () => {
        const { email } = await newUser();
        for (const callbackUrl of UNTRUSTED) {
          const { jar, response } = await formSignIn(email, callbackUrl);
          assert.equal(response.statusCode, 303, `${callbackUrl}: ${response.body}`);
          assert.equal(response.headers.location, '/', callbackUrl);
          assert.ok(await isSignedIn(jar), `${callbackUrl}: signed in all the same`);
        }
        assert.equal((await formSignIn(email, '/dashboard?tab=sessions')).response.headers.location, '/dashboard?tab=sessions');
        assert.equal((await formSignIn(email, undefined)).response.headers.location, '/dashboard');
      });

      it('keeps a trusted callback when a wrong password sends the form back, and drops an untrusted one', async () => {
        const { email } = await newUser();
        const callbackUrl = `${APP}/dashboard?x=1`;
        const wrong = await formSignIn(email, callbackUrl, 'not the password at all');
        assert.equal(wrong.response.statusCode, 303);
        assert.equal(wrong.response.headers.location, `/auth/signin?${new URLSearchParams({ error: 'INVALID_CREDENTIALS', callbackUrl })}`);
        const page = await get(String(wrong.response.headers.location), wrong.jar);
        assert.equal(page.statusCode, 200);
        assert.equal(hiddenValue(page.body, 'callbackUrl'), callbackUrl);
        assert.ok(formActionSources(page).includes(APP));
        const again = await formPost({ jar: wrong.jar, csrfToken: hiddenValue(page.body, 'csrfToken') }, '/api/auth/signin', { email, password: PASSWORD, callbackUrl: hiddenValue(page.body, 'callbackUrl') });
        assert.equal(again.headers.location, callbackUrl, 'the second try still goes back to the app');

        const hostile = await formSignIn(email, `${APP}@evil.example/`, 'not the password at all');
        assert.equal(hostile.response.headers.location, `/auth/signin?${new URLSearchParams({ error: 'INVALID_CREDENTIALS' })}`);
      });

      it('JSON sign-in takes the same callbackUrl and answers exactly as before: the tokens, and the session cookies', async () => {
        const { email } = await newUser();
        for (const callbackUrl of [`${APP}/dashboard?x=1`, 'https://evil.example/']) {
          const b = await browser();
          const response = await t.app.inject({
            method: 'POST',
            url: '/api/auth/signin',
            headers: { origin: ORIGIN, cookie: b.jar.header(), 'x-csrf-token': b.csrfToken },
            payload: { email, password: PASSWORD, callbackUrl },
          });
          assert.equal(response.statusCode, 200, response.body);
          assert.deepEqual(Object.keys(response.json()).sort(), ['expiresAt', 'refreshToken', 'token', 'user'], 'a script navigates itself: no redirect, no new field');
          assert.equal(response.headers.location, undefined);
          b.jar.store(response);
          assert.ok(await isSignedIn(b.jar));
        }
      });
    });

    describe('the sign-in page', () => {
      it('names the trusted origin in form-action only when its callbackUrl names it, and hands the callback to every form', async () => {
        const plain = formActionSources(await get('/auth/signin'));
        assert.equal(plain[0], "'self'");
        assert.ok(!plain.includes(APP) && !plain.includes(DEV_APP), plain.join(' '));
        assert.deepEqual(formActionSources(await get('/auth/signin?callbackUrl=/dashboard')), plain, 'a path of ours adds nothing');

        const callbackUrl = `${APP}/dashboard?x=1`;
        const page = await get(`/auth/signin?callbackUrl=${encodeURIComponent(callbackUrl)}`);
        assert.equal(page.statusCode, 200);
        assert.deepEqual(formActionSources(page), [...plain, APP], 'the providers as before, and that one origin');
        const forms = [...page.body.matchAll(/<input type="hidden" name="callbackUrl" value="([^"]*)">/g)].map((match) => unescapeHtml(match[1]!));
        assert.deepEqual(forms, [callbackUrl, callbackUrl, callbackUrl], 'the password form and both provider buttons');
        assert.match(page.body, new RegExp(`data-callback-url="${callbackUrl.replace(/[.?/]/g, '\\$&')}"`), 'the passkey button goes there too');

        const dev = formActionSources(await get(`/auth/signin?callbackUrl=${encodeURIComponent(`${DEV_APP}/cb`)}`));
        assert.deepEqual(dev, [...plain, DEV_APP], 'only the origin this request names, never every trusted one');
      });

      it('adds nothing for an untrusted callbackUrl, which becomes /', async () => {
        const plain = formActionSources(await get('/auth/signin'));
        for (const callbackUrl of UNTRUSTED) {
          const page = await get(`/auth/signin?callbackUrl=${encodeURIComponent(callbackUrl)}`);
          assert.equal(page.statusCode, 200, callbackUrl);
          assert.deepEqual(formActionSources(page), plain, callbackUrl);
          assert.equal(hiddenValue(page.body, 'callbackUrl'), '/', callbackUrl);
        }
      });
    });

    describe('the second factor', () => {
      it('carries a trusted callback through the challenge: its page, its CSP, a retry, and the 303 after the code', async () => {
        const { email, secret } = await enrolledUser();
        const callbackUrl = `${APP}/dashboard?x=1`;
        const signIn = await formSignIn(email, callbackUrl);
        assert.equal(signIn.response.statusCode, 303);
        assert.equal(signIn.response.headers.location, `/auth/mfa?${new URLSearchParams({ callbackUrl })}`);
        assert.ok(signIn.jar.has('gatehouse.challenge'));
        assert.equal(await isSignedIn(signIn.jar), false);

        const page = await get(String(signIn.response.headers.location), signIn.jar);
        assert.equal(page.statusCode, 200);
        assert.equal(hiddenValue(page.body, 'callbackUrl'), callbackUrl);
        assert.deepEqual(formActionSources(page), ["'self'", APP], 'the code forms end in a redirect to the app');
        const b = { jar: signIn.jar, csrfToken: hiddenValue(page.body, 'csrfToken') };

        const wrong = await formPost(b, '/auth/mfa', { code: '000000', callbackUrl });
        assert.equal(wrong.headers.location, `/auth/mfa?${new URLSearchParams({ error: 'INVALID_CODE', callbackUrl })}`);
        const untrusted = await get(`/auth/mfa?callbackUrl=${encodeURIComponent('https://evil.example/')}`, b.jar);
        assert.equal(hiddenValue(untrusted.body, 'callbackUrl'), '/');
        assert.deepEqual(formActionSources(untrusted), ["'self'"], 'nothing added for a callback not trusted');
        assert.deepEqual(formActionSources(await get('/auth/mfa?callbackUrl=/dashboard', b.jar)), ["'self'"]);

        const right = await formPost(b, '/auth/mfa', { code: totpCode(secret, clock()), callbackUrl });
        assert.equal(right.statusCode, 303, right.body);
        assert.equal(right.headers.location, callbackUrl);
        assert.ok(await isSignedIn(b.jar));
      });

      it('lands an untrusted callback posted with the code on /', async () => {
        const { email, secret } = await enrolledUser();
        const signIn = await formSignIn(email, `${APP}/x`);
        const page = await get(String(signIn.response.headers.location), signIn.jar);
        const answer = await formPost({ jar: signIn.jar, csrfToken: hiddenValue(page.body, 'csrfToken') }, '/auth/mfa', { code: totpCode(secret, clock()), callbackUrl: `${APP}@evil.example/` });
        assert.equal(answer.statusCode, 303);
        assert.equal(answer.headers.location, '/');
      });
    });

    describe('provider sign-in', () => {
      /** Clicks "Sign in with …": our 303 to the provider, with the flow cookie. */
      async function start(provider: string, callbackUrl: string) {
        const b = await browser();
        const response = await formPost(b, `/api/auth/signin/${provider}`, { callbackUrl });
        assert.equal(response.statusCode, 303, response.body);
        return { ...b, response, location: new URL(String(response.headers.location)) };
      }

      /** The provider's answer, over real HTTP, then the browser arriving at our callback. */
      async function roundTrip(b: { jar: CookieJar; location: URL }) {
        const answer = await fetch(b.location, { redirect: 'manual' });
        assert.ok(answer.status === 302 || answer.status === 303, `authorize answered ${answer.status}`);
        const back = new URL(String(answer.headers.get('location')));
        assert.equal(back.origin, ORIGIN);
        return get(`${back.pathname}${back.search}`, b.jar);
      }

      for (const provider of ['github', 'oidc'] as const) {
        it(`${provider}: keeps a trusted callback through the round trip to the provider, sealed in the flow cookie`, async () => {
          count += 1;
          if (provider === 'github') github.signInAs({ id: 900_000 + count, login: `app${count}`, name: 'App Person', emails: [{ email: `gh-app${count}@example.com`, primary: true, verified: true }] });
          else oidc.signInAs({ sub: `app-${count}`, email: `oidc-app${count}@example.com`, email_verified: true, name: 'App Person' });
          const callbackUrl = `${APP}/dashboard?x=1`;
          const b = await start(provider, callbackUrl);
          const flow = b.response.cookies.find((cookie) => cookie.name === 'gatehouse.oauth');
          assert.ok(flow && !flow.value.includes('app.example.com'), 'sealed, not readable');
          const callback = await roundTrip(b);
          assert.equal(callback.statusCode, 303, callback.body);
          assert.equal(callback.headers.location, callbackUrl);
          assert.ok(await isSignedIn(b.jar));
        });
      }

      it('lands an untrusted callback on / after the round trip', async () => {
        count += 1;
        github.signInAs({ id: 900_000 + count, login: `app${count}`, name: 'App Person', emails: [{ email: `gh-app${count}@example.com`, primary: true, verified: true }] });
        const b = await start('github', `${APP}@evil.example/`);
        const callback = await roundTrip(b);
        assert.equal(callback.statusCode, 303, callback.body);
        assert.equal(callback.headers.location, '/');
      });

      it('carries a trusted callback to the second factor after the provider, and on to the app', async () => {
        count += 1;
        const account = { sub: `app-mfa-${count}`, email: `oidc-mfa${count}@example.com`, email_verified: true, name: 'App Person' };
        oidc.signInAs(account);
        assert.equal((await roundTrip(await start('oidc', '/dashboard'))).statusCode, 303, 'the first sign-in creates the account');
        const user = (await t.services.users.findUserByEmail(account.email))!;
        const setup = await t.services.mfa.beginTotpSetup(user);
        assert.ok(setup.ok);
        assert.ok((await t.services.mfa.enableTotp(user, totpCode(setup.secret, clock()), { actorUserId: user.id, ip: null, userAgent: null })).ok);
        clock.advance(TOTP_STEP_MS);

        const callbackUrl = `${DEV_APP}/after?y=2`;
        const b = await start('oidc', callbackUrl);
        const callback = await roundTrip(b);
        assert.equal(callback.headers.location, `/auth/mfa?${new URLSearchParams({ callbackUrl })}`);
        const page = await get(String(callback.headers.location), b.jar);
        assert.deepEqual(formActionSources(page), ["'self'", DEV_APP]);
        const answer = await formPost({ jar: b.jar, csrfToken: hiddenValue(page.body, 'csrfToken') }, '/auth/mfa', { code: totpCode(setup.secret, clock()), callbackUrl: hiddenValue(page.body, 'callbackUrl') });
        assert.equal(answer.statusCode, 303, answer.body);
        assert.equal(answer.headers.location, callbackUrl);
        assert.ok(await isSignedIn(b.jar));
      });
    });
  });
}
