/**
 * Sign-in with providers, end to end against real peers on loopback: an OpenID provider standing in
 * for Google and for the generic OIDC provider, and a GitHub-compatible server. The browser is
 * played with a cookie jar: our answers through `app.inject()`, the provider's authorize endpoint
 * over real HTTP. Every failure of issue #6 ends on an error page with no session, never a 500.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJwt } from 'jose';
import { totpCode } from '../../test/helpers/totp.ts';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { hiddenValue } from '../../test/helpers/pages.ts';
import { peerEnv, startGitHubPeer, startOidcPeer, type GitHubAccount, type GitHubPeer, type OidcAccount, type OidcPeer } from '../../test/helpers/oauth-peers.ts';
import type { Env } from '../config.ts';

const PASSWORD = 'correct horse battery staple';
const AUTH_URL = 'http://localhost:3000';
const ORIGIN = AUTH_URL;

let counter = 0;
/** A fresh identity per test, so tests on one database do not see each other's users. */
function uniqueOidcAccount(overrides: Partial<OidcAccount> = {}): OidcAccount {
  counter += 1;
  return { sub: `sub-${counter}`, email: `oidc${counter}@example.com`, email_verified: true, name: `Oidc Person ${counter}`, ...overrides };
}
function uniqueGitHubAccount(overrides: Partial<GitHubAccount> = {}): GitHubAccount {
  counter += 1;
  return {
    id: 100_000 + counter,
    login: `octo${counter}`,
    name: `Octo Person ${counter}`,
    emails: [{ email: `gh${counter}@example.com`, primary: true, verified: true }],
    ...overrides,
  };
}

function providerEnv(google: OidcPeer, oidc: OidcPeer, github: GitHubPeer): Env {
  return { ...peerEnv({ google, oidc, github }), OIDC_NAME: 'Acme SSO' };
}

for (const backend of await backends()) {
  describe(`OAuth sign-in on ${backend.name}`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let t: TestApp;
    let google: OidcPeer;
    let oidc: OidcPeer;
    let github: GitHubPeer;

    before(async () => {
      [google, oidc, github] = await Promise.all([startOidcPeer({ clientId: 'google-client' }), startOidcPeer({ clientId: 'acme-client' }), startGitHubPeer()]);
      database = await backend.create();
      t = await createTestApp(database, { env: { AUTH_URL, ...providerEnv(google, oidc, github) } });
    });
    after(async () => {
      await t?.close();
      await database?.drop();
      await Promise.all([google?.close(), oidc?.close(), github?.close()]);
    });

    /** A browser with a CSRF token. */
    async function newBrowser() {
      const jar = new CookieJar();
      const csrf = await t.app.inject({ method: 'GET', url: '/api/auth/csrf' });
      jar.store(csrf);
      return { jar, csrfToken: csrf.json().csrfToken as string };
    }

    /** Clicks "Sign in with …" (or "Link …"): our 303 to the provider's authorize endpoint. */
    async function startAt(browser: { jar: CookieJar; csrfToken: string }, path: string, callbackUrl?: string) {
      const form = new URLSearchParams({ csrfToken: browser.csrfToken });
      if (callbackUrl !== undefined) form.set('callbackUrl', callbackUrl);
      const response = await t.app.inject({
        method: 'POST',
        url: path,
        headers: { origin: ORIGIN, cookie: browser.jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
        payload: form.toString(),
      });
      assert.equal(response.statusCode, 303, response.body);
      browser.jar.store(response);
      return { response, location: new URL(String(response.headers.location), AUTH_URL) };
    }

    /** The provider's answer: where it sends the browser back (our callback URL with code and state). */
    async function authorize(url: URL): Promise<URL> {
      const response = await fetch(url, { redirect: 'manual' });
      assert.ok(response.status === 302 || response.status === 303, `authorize answered ${response.status}`);
      const location = new URL(String(response.headers.get('location')));
      assert.equal(location.origin, ORIGIN, 'the provider sends the browser back to AUTH_URL');
      return location;
    }

    /** The browser arriving at our callback. */
    async function callback(jar: CookieJar, url: URL) {
      const response = await t.app.inject({ method: 'GET', url: `${url.pathname}${url.search}`, headers: { cookie: jar.header() } });
      jar.store(response);
      return response;
    }

    async function sessionOf(jar: CookieJar) {
      return t.app.inject({ method: 'GET', url: '/api/auth/session', headers: { cookie: jar.header() } });
    }

    /** The whole round trip; returns the browser and our final answer. */
    async function signInWith(provider: string, callbackUrl?: string) {
      const browser = await newBrowser();
      const { location } = await startAt(browser, `/api/auth/signin/${provider}`, callbackUrl);
      const response = await callback(browser.jar, await authorize(location));
      return { ...browser, response };
    }

    async function assertErrorWithoutSession(result: { jar: CookieJar; response: Awaited<ReturnType<typeof callback>> }, code: string) {
      assert.equal(result.response.statusCode, 303, result.response.body);
      assert.equal(result.response.headers.location, `/auth/error?error=${code}`);
      assert.equal(result.jar.has('gatehouse.session'), false, 'no session cookie');
      assert.equal((await sessionOf(result.jar)).statusCode, 401);
    }

    async function linkedAccounts(userId: string) {
      return t.services.storage.db.selectFrom('oauth_accounts').selectAll().where('user_id', '=', userId).execute();
    }

    it('lists the configured providers with the exact callback URL to register at each', async () => {
      const response = await t.app.inject({ method: 'GET', url: '/api/auth/providers' });
      assert.equal(response.statusCode, 200);
      assert.deepEqual(response.json(), {
        github: { id: 'github', name: 'GitHub', type: 'oauth', signinUrl: `${AUTH_URL}/api/auth/signin/github`, callbackUrl: `${AUTH_URL}/api/auth/callback/github` },
        google: { id: 'google', name: 'Google', type: 'oidc', signinUrl: `${AUTH_URL}/api/auth/signin/google`, callbackUrl: `${AUTH_URL}/api/auth/callback/google` },
        oidc: { id: 'oidc', name: 'Acme SSO', type: 'oidc', signinUrl: `${AUTH_URL}/api/auth/signin/oidc`, callbackUrl: `${AUTH_URL}/api/auth/callback/oidc` },
      });
      const page = await t.app.inject({ method: 'GET', url: '/auth/signin' });
      for (const name of ['GitHub', 'Google', 'Acme SSO']) assert.match(page.body, new RegExp(`>Log in with ${name}</button>`));
      assert.match(page.body, /<form method="post" action="\/api\/auth\/signin\/github">\s*<input type="hidden" name="csrfToken" value="[^"]+">/);
      // The provider buttons' redirect must be allowed by the page's CSP.
      assert.match(String(page.headers['content-security-policy']), new RegExp(`form-action 'self' [^;]*${github.url.replace(/[.:/]/g, '\\$&')}`));
    });

    it('sends the browser out with state, PKCE S256, a nonce for OIDC, and the exact redirect_uri, bound to an encrypted cookie', async () => {
      for (const [provider, isOidc] of [['google', true], ['oidc', true], ['github', false]] as const) {
        const browser = await newBrowser();
        const { response, location } = await startAt(browser, `/api/auth/signin/${provider}`);
        const query = location.searchParams;
        assert.equal(query.get('redirect_uri'), `${AUTH_URL}/api/auth/callback/${provider}`);
        assert.equal(query.get('response_type'), 'code');
        assert.equal(query.get('code_challenge_method'), 'S256');
        assert.match(query.get('code_challenge') ?? '', /^[\w-]{43}$/);
        assert.ok((query.get('state') ?? '').length >= 22, 'state carries at least 128 bits');
        assert.equal(query.has('nonce'), isOidc, provider);
        if (isOidc) assert.match(query.get('scope') ?? '', /\bopenid\b/);
        const cookie = response.cookies.find((c) => c.name === 'gatehouse.oauth');
        assert.ok(cookie, 'flow cookie');
        assert.equal(cookie.httpOnly, true);
        assert.equal(cookie.sameSite, 'Lax');
        assert.equal(cookie.maxAge, 600);
        assert.ok(!cookie.value.includes(query.get('state')!), 'the cookie does not show the state in clear');
        assert.equal(cookie.value.split('.').length, 5, 'a compact JWE');
      }
    });

    it('Google: a new identity with a verified address creates a verified user, signs in, and lands on the callbackUrl', async () => {
      const account = uniqueOidcAccount();
      google.signInAs(account);
      const result = await signInWith('google', '/dashboard?tab=sessions');
      assert.equal(result.response.statusCode, 303, result.response.body);
      assert.equal(result.response.headers.location, '/dashboard?tab=sessions');
      assert.equal(result.jar.has('gatehouse.oauth'), false, 'the flow cookie is cleared');
      const session = await sessionOf(result.jar);
      assert.equal(session.statusCode, 200);
      assert.equal(session.json().user.email, account.email);
      assert.equal(session.json().user.name, account.name);
      const user = (await t.services.users.findUserByEmail(account.email!))!;
      assert.ok(user.emailVerifiedAt !== null, 'verified: the provider vouched for the address');
      const rows = await linkedAccounts(user.id);
      assert.deepEqual(rows.map((r) => [r.provider, r.provider_user_id]), [['google', account.sub]]);

      // The same identity again: the same user, no second account.
      const again = await signInWith('google');
      assert.equal(again.response.headers.location, '/dashboard');
      assert.equal((await sessionOf(again.jar)).json().user.id, user.id);
      assert.equal((await linkedAccounts(user.id)).length, 1);
    });

    it('the CSRF secret is rotated at a provider sign-in: a token from before the callback is refused (403 CSRF_FAILED), the next page\'s token works', async () => {
      google.signInAs(uniqueOidcAccount());
      const browser = await newBrowser();
      const cookieBefore = browser.jar.get('gatehouse.csrf');
      const { location } = await startAt(browser, '/api/auth/signin/google');
      const response = await callback(browser.jar, await authorize(location));
      assert.equal(response.statusCode, 303, response.body);
      const replaced = response.cookies.find((cookie) => cookie.name === 'gatehouse.csrf');
      assert.ok(replaced && replaced.value !== cookieBefore, 'the callback sets a new CSRF cookie');
      assert.equal((await sessionOf(browser.jar)).statusCode, 200);

      const endOthers = (csrfToken: string) =>
        t.app.inject({ method: 'DELETE', url: '/api/auth/sessions?keepCurrent=true', headers: { origin: ORIGIN, cookie: browser.jar.header(), 'x-csrf-token': csrfToken } });
      const stale = await endOthers(browser.csrfToken);
      assert.equal(stale.statusCode, 403, stale.body);
      assert.equal(stale.json().error, 'CSRF_FAILED');
      const dashboard = await t.app.inject({ method: 'GET', url: '/dashboard', headers: { cookie: browser.jar.header() } });
      browser.jar.store(dashboard);
      const fresh = await endOthers(hiddenValue(dashboard.body, 'csrfToken'));
      assert.equal(fresh.statusCode, 200, fresh.body);
    });

    it('keys identities by provider and subject, never by e-mail: a changed address still finds the user', async () => {
      const account = uniqueOidcAccount();
      oidc.signInAs(account);
      const first = await signInWith('oidc');
      const userId = (await sessionOf(first.jar)).json().user.id;
      oidc.signInAs({ ...account, email: `renamed-${account.email}` });
      const second = await signInWith('oidc');
      assert.equal((await sessionOf(second.jar)).json().user.id, userId);
      // Another subject with the first address is not that user.
      oidc.signInAs({ ...account, sub: `${account.sub}-other` });
      await assertErrorWithoutSession(await signInWith('oidc'), 'OAuthAccountNotLinked');
    });

    it('GitHub: reads the user and its verified primary address from the API', async () => {
      const base = uniqueGitHubAccount();
      const primary = `primary-${base.login}@example.com`;
      const account = {
        ...base,
        emails: [
          { email: `secondary-${base.login}@example.com`, primary: false, verified: true },
          { email: primary, primary: true, verified: true },
        ],
      };
      github.signInAs(account);
      const result = await signInWith('github');
      assert.equal(result.response.statusCode, 303);
      assert.equal(result.response.headers.location, '/dashboard');
      const body = (await sessionOf(result.jar)).json();
      assert.equal(body.user.email, primary, 'the primary address, not the first one listed');
      assert.equal(body.user.name, account.name);
      assert.deepEqual((await linkedAccounts(body.user.id)).map((r) => r.provider_user_id), [String(account.id)]);
      assert.ok(!github.authorizeRequests.at(-1)!.has('nonce'));
    });

    it('refuses a new account when the provider has not verified the address', async () => {
      const gh = uniqueGitHubAccount();
      github.signInAs({ ...gh, emails: [{ email: gh.emails[0]!.email, primary: true, verified: false }] });
      await assertErrorWithoutSession(await signInWith('github'), 'OAuthEmailUnverified');
      assert.equal(await t.services.users.findUserByEmail(gh.emails[0]!.email), null, 'no user created');

      const account = uniqueOidcAccount({ email_verified: false });
      google.signInAs(account);
      await assertErrorWithoutSession(await signInWith('google'), 'OAuthEmailUnverified');
      assert.equal(await t.services.users.findUserByEmail(account.email!), null);
    });

    it('links to an existing user automatically only when both sides have verified the address', async () => {
      // Both verified: linked, and the person is that user.
      const verified = uniqueOidcAccount();
      const existing = await createUser(t.services, { email: verified.email!, password: PASSWORD });
      google.signInAs(verified);
      const linked = await signInWith('google');
      assert.equal((await sessionOf(linked.jar)).json().user.id, existing.id);
      assert.deepEqual((await linkedAccounts(existing.id)).map((r) => r.provider), ['google']);

      // The existing account never proved its address: whoever created it may not own it.
      const unverifiedLocal = uniqueOidcAccount();
      const squatter = await t.services.credentials.createPasswordUser({ email: unverifiedLocal.email!, name: 'Squatter', password: PASSWORD, emailVerified: false });
      assert.ok(squatter.ok);
      google.signInAs(unverifiedLocal);
      await assertErrorWithoutSession(await signInWith('google'), 'OAuthAccountNotLinked');
      assert.equal((await linkedAccounts(squatter.user.id)).length, 0);

      // The provider does not vouch for the address: someone could have typed the victim's.
      const unverifiedRemote = uniqueOidcAccount({ email_verified: false });
      const victim = await createUser(t.services, { email: unverifiedRemote.email!, password: PASSWORD });
      google.signInAs(unverifiedRemote);
      await assertErrorWithoutSession(await signInWith('google'), 'OAuthAccountNotLinked');
      assert.equal((await linkedAccounts(victim.id)).length, 0);
    });

    it('never lets a look-alike address a provider verified stand for a plain one', async () => {
      const victim = await createUser(t.services, { email: `sam${counter}@corp.example`, password: PASSWORD });
      // U+017F (long s) and full-width letters fold to the victim's address under NFKC.
      for (const lookAlike of [`ſam${counter}@corp.example`, `ｓam${counter}@corp.example`]) {
        google.signInAs(uniqueOidcAccount({ email: lookAlike, email_verified: true }));
        await assertErrorWithoutSession(await signInWith('google'), 'OAuthAccountNotLinked');
      }
      assert.equal((await linkedAccounts(victim.id)).length, 0);
    });

    it('refuses to link a provider to an account whose address is not verified', async () => {
      const squatter = await t.services.credentials.createPasswordUser({ email: `squat${++counter}@example.com`, name: 'Squatter', password: PASSWORD, emailVerified: false });
      assert.ok(squatter.ok);
      const token = (await t.app.inject({ method: 'POST', url: '/api/auth/signin', payload: { email: squatter.user.email, password: PASSWORD } }));
      const jar = new CookieJar().store(token);
      const csrf = await t.app.inject({ method: 'GET', url: '/api/auth/csrf', headers: { cookie: jar.header() } });
      jar.store(csrf);
      github.signInAs(uniqueGitHubAccount());
      const { location } = await startAt({ jar, csrfToken: csrf.json().csrfToken }, '/api/auth/link/github');
      assert.equal((await callback(jar, await authorize(location))).headers.location, '/dashboard?error=EmailNotVerified');
      assert.equal((await linkedAccounts(squatter.user.id)).length, 0);
    });

    it('refuses a disabled user, and records sign-ins in the audit log', async () => {
      const account = uniqueOidcAccount();
      google.signInAs(account);
      const first = await signInWith('google');
      const view = (await sessionOf(first.jar)).json();
      const userId = view.user.id as string;
      assert.deepEqual(view.session.amr, ['fed'], 'a provider vouched for the user (no RFC 8176 value says which way)');
      await t.services.admin.updateUser(userId, { disabled: true }, { actorUserId: null, ip: null, userAgent: null });
      await assertErrorWithoutSession(await signInWith('google'), 'AccountDisabled');
      const events = await t.services.audit.listEvents({ userId, limit: 20 });
      const types = events.events.map((e) => `${e.type}:${e.reason ?? ''}`);
      assert.ok(types.includes('signin.success:'), types.join());
      assert.ok(types.includes('oauth.linked:SIGNUP'), types.join());
      assert.ok(types.includes('signin.failure:ACCOUNT_DISABLED'), types.join());
      const success = events.events.find((e) => e.type === 'signin.success')!;
      assert.equal(success.details?.provider, 'google');
      assert.deepEqual(success.details?.amr, ['fed']);
    });

    it('sends a provider sign-in of an account with a second factor to the code page, with no session yet', async () => {
      const account = uniqueOidcAccount();
      google.signInAs(account);
      const first = await signInWith('google');
      const user = (await t.services.users.findUserById((await sessionOf(first.jar)).json().user.id))!;
      const setup = await t.services.mfa.beginTotpSetup(user);
      assert.ok(setup.ok);
      const source = { actorUserId: user.id, ip: null, userAgent: null };
      assert.ok((await t.services.mfa.enableTotp(user, totpCode(setup.secret, Date.now()), source)).ok);

      const second = await signInWith('google', '/dashboard?tab=1');
      assert.equal(second.response.statusCode, 303);
      assert.equal(second.response.headers.location, `/auth/mfa?${new URLSearchParams({ callbackUrl: '/dashboard?tab=1' })}`);
      assert.equal(second.jar.has('gatehouse.session'), false, 'no session before the second factor');
      assert.ok(second.jar.has('gatehouse.challenge'), 'the challenge travels in its own cookie, not the URL');
      assert.equal((await sessionOf(second.jar)).statusCode, 401);
    });

    it('answers access_denied with AccessDenied', async () => {
      google.denyNext();
      await assertErrorWithoutSession(await signInWith('google'), 'AccessDenied');
      github.denyNext();
      await assertErrorWithoutSession(await signInWith('github'), 'AccessDenied');
    });

    it('refuses a callback without the flow cookie, with a changed state, or replayed', async () => {
      google.signInAs(uniqueOidcAccount());
      // No flow cookie: a callback this browser never started (login CSRF).
      const victim = await newBrowser();
      const attacker = await newBrowser();
      const { location } = await startAt(attacker, '/api/auth/signin/google');
      const attackersCallback = await authorize(location);
      await assertErrorWithoutSession({ jar: victim.jar, response: await callback(victim.jar, attackersCallback) }, 'OAuthCallback');

      // State changed on the way.
      const browser = await newBrowser();
      const started = await startAt(browser, '/api/auth/signin/google');
      const returned = await authorize(started.location);
      returned.searchParams.set('state', 'x'.repeat(43));
      await assertErrorWithoutSession({ jar: browser.jar, response: await callback(browser.jar, returned) }, 'OAuthCallback');

      // Missing state.
      const other = await newBrowser();
      const otherStart = await startAt(other, '/api/auth/signin/google');
      const withoutState = await authorize(otherStart.location);
      withoutState.searchParams.delete('state');
      await assertErrorWithoutSession({ jar: other.jar, response: await callback(other.jar, withoutState) }, 'OAuthCallback');

      // Replayed: a good callback works once; again (even with the old flow cookie) it does nothing.
      const good = await newBrowser();
      const goodStart = await startAt(good, '/api/auth/signin/google');
      const flowCookie = good.jar.get('gatehouse.oauth')!;
      const goodCallback = await authorize(goodStart.location);
      assert.equal((await callback(good.jar, goodCallback)).headers.location, '/dashboard');
      const replay = new CookieJar();
      const replayed = await t.app.inject({ method: 'GET', url: `${goodCallback.pathname}${goodCallback.search}`, headers: { cookie: `gatehouse.oauth=${flowCookie}` } });
      replay.store(replayed);
      await assertErrorWithoutSession({ jar: replay, response: replayed }, 'OAuthCallback');
    });

    it('refuses a code from another flow (PKCE binds the code to the browser that asked for it)', async () => {
      for (const provider of ['google', 'github'] as const) {
        const mine = await newBrowser();
        const mineStart = await startAt(mine, `/api/auth/signin/${provider}`);
        const theirs = await newBrowser();
        const theirCallback = await authorize((await startAt(theirs, `/api/auth/signin/${provider}`)).location);
        // Their code, with my state: the state check passes, the verifier does not match.
        const injected = new URL(`${AUTH_URL}/api/auth/callback/${provider}`);
        injected.searchParams.set('code', theirCallback.searchParams.get('code')!);
        injected.searchParams.set('state', mineStart.location.searchParams.get('state')!);
        await assertErrorWithoutSession({ jar: mine.jar, response: await callback(mine.jar, injected) }, 'OAuthCallback');
      }
    });

    it('refuses a response meant for another provider (mix-up)', async () => {
      google.signInAs(uniqueOidcAccount());
      const browser = await newBrowser();
      const { location } = await startAt(browser, '/api/auth/signin/google');
      const googleCallback = await authorize(location);
      // Delivered to the callback of another provider.
      const mixedUp = new URL(`${AUTH_URL}/api/auth/callback/oidc${googleCallback.search}`);
      await assertErrorWithoutSession({ jar: browser.jar, response: await callback(browser.jar, mixedUp) }, 'OAuthCallback');
      // An `iss` naming another issuer (RFC 9207).
      const other = await newBrowser();
      const otherCallback = await authorize((await startAt(other, '/api/auth/signin/google')).location);
      otherCallback.searchParams.set('iss', oidc.issuer);
      await assertErrorWithoutSession({ jar: other.jar, response: await callback(other.jar, otherCallback) }, 'OAuthCallback');
    });

    it('refuses a bad ID token: another audience, issuer or nonce, expired, unsigned by the provider', async () => {
      const tamperings: Array<{ claims?: Record<string, unknown>; foreignKey?: boolean }> = [
        { claims: { aud: 'someone-else' } },
        { claims: { iss: 'https://evil.example' } },
        { claims: { nonce: 'not-the-one-we-sent' } },
        { claims: { nonce: undefined } },
        { claims: { exp: Math.floor(Date.now() / 1000) - 3600, iat: Math.floor(Date.now() / 1000) - 7200 } },
        { foreignKey: true },
      ];
      for (const tampering of tamperings) {
        google.signInAs(uniqueOidcAccount());
        google.tamperNextIdToken(tampering);
        const result = await signInWith('google');
        await assertErrorWithoutSession(result, 'OAuthCallback');
      }
    });

    it('answers ProviderUnreachable when the GitHub API fails', async () => {
      github.signInAs(uniqueGitHubAccount());
      github.failApi(true);
      try {
        await assertErrorWithoutSession(await signInWith('github'), 'ProviderUnreachable');
      } finally {
        github.failApi(false);
      }
    });

    it('ends on OAuthSignin for an unknown provider, and never answers 500 to a hostile callback', async () => {
      const browser = await newBrowser();
      const { location } = await startAt(browser, '/api/auth/signin/myspace');
      assert.equal(`${location.pathname}${location.search}`, '/auth/error?error=OAuthSignin');
      for (const url of [
        '/api/auth/callback/myspace?code=x&state=y',
        '/api/auth/callback/google',
        '/api/auth/callback/google?code=&state=',
        `/api/auth/callback/google?code=${'a'.repeat(8000)}`,
        '/api/auth/callback/google?error=server_error&state=x',
        '/api/auth/callback/github?code=x&state=y&state=z',
      ]) {
        const response = await t.app.inject({ method: 'GET', url, headers: { cookie: 'gatehouse.oauth=eyJhbGciOiJkaXIifQ.a.b.c.d' } });
        assert.equal(response.statusCode, 303, url);
        assert.match(String(response.headers.location), /^\/auth\/error\?error=OAuthCallback$/, url);
      }
    });

    it('links and unlinks providers from the dashboard, never the last way to sign in', async () => {
      // A password user links GitHub, then signs in with it.
      const gh = uniqueGitHubAccount();
      const user = await createUser(t.services, { email: `linker${counter}@example.com`, password: PASSWORD });
      const browser = await newBrowser();
      const signIn = await t.app.inject({
        method: 'POST',
        url: '/api/auth/signin',
        headers: { origin: ORIGIN, cookie: browser.jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ email: user.email, password: PASSWORD, csrfToken: browser.csrfToken }).toString(),
      });
      browser.jar.store(signIn);
      const dashboard = await t.app.inject({ method: 'GET', url: '/dashboard', headers: { cookie: browser.jar.header() } });
      assert.match(dashboard.body, /action="\/api\/auth\/link\/github"/);
      // Signing in replaced the CSRF secret: the dashboard's forms carry a token of the new one.
      browser.jar.store(dashboard);
      browser.csrfToken = hiddenValue(dashboard.body, 'csrfToken');
      github.signInAs(gh);
      const { location } = await startAt(browser, '/api/auth/link/github');
      const linked = await callback(browser.jar, await authorize(location));
      assert.equal(linked.headers.location, '/dashboard?notice=PROVIDER_LINKED');
      assert.equal((await sessionOf(browser.jar)).json().user.id, user.id, 'still the same session');
      const accounts = await t.app.inject({ method: 'GET', url: '/api/auth/accounts', headers: { cookie: browser.jar.header() } });
      assert.deepEqual(accounts.json().accounts.map((a: { provider: string }) => a.provider), ['github']);
      const viaGitHub = await signInWith('github');
      assert.equal((await sessionOf(viaGitHub.jar)).json().user.id, user.id, 'GitHub now signs this user in');

      // That GitHub identity cannot be linked to someone else too.
      const other = await createUser(t.services, { email: `other${counter}@example.com`, password: PASSWORD });
      const otherTokens = (await t.app.inject({ method: 'POST', url: '/api/auth/signin', payload: { email: other.email, password: PASSWORD } }));
      const otherJar = new CookieJar().store(otherTokens);
      const otherCsrf = await t.app.inject({ method: 'GET', url: '/api/auth/csrf', headers: { cookie: otherJar.header() } });
      otherJar.store(otherCsrf);
      const otherStart = await startAt({ jar: otherJar, csrfToken: otherCsrf.json().csrfToken }, '/api/auth/link/github');
      assert.equal((await callback(otherJar, await authorize(otherStart.location))).headers.location, '/dashboard?error=IdentityInUse');
      assert.equal((await linkedAccounts(other.id)).length, 0);

      // Unlinking is fine while a password remains (Bearer, JSON).
      const bearer = (await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: user.email, password: PASSWORD } })).json().token;
      const unlink = await t.app.inject({ method: 'DELETE', url: '/api/auth/accounts/github', headers: { authorization: `Bearer ${bearer}` } });
      assert.equal(unlink.statusCode, 200, unlink.body);
      assert.equal((await linkedAccounts(user.id)).length, 0);
      const again = await t.app.inject({ method: 'DELETE', url: '/api/auth/accounts/github', headers: { authorization: `Bearer ${bearer}` } });
      assert.equal(again.json().error, 'NOT_FOUND');

      // A provider-only user cannot unlink their only provider, by the API or the dashboard form.
      const only = uniqueOidcAccount();
      google.signInAs(only);
      const provider = await signInWith('google');
      const onlyToken = provider.jar.get('gatehouse.session')!;
      const refused = await t.app.inject({ method: 'DELETE', url: '/api/auth/accounts/google', headers: { authorization: `Bearer ${onlyToken}` } });
      assert.equal(refused.statusCode, 409);
      assert.equal(refused.json().error, 'LAST_SIGN_IN_METHOD');
      const providerDashboard = await t.app.inject({ method: 'GET', url: '/dashboard', headers: { cookie: provider.jar.header() } });
      provider.jar.store(providerDashboard);
      const form = await t.app.inject({
        method: 'POST',
        url: '/dashboard/accounts/unlink',
        headers: { origin: ORIGIN, cookie: provider.jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ provider: 'google', csrfToken: hiddenValue(providerDashboard.body, 'csrfToken') }).toString(),
      });
      assert.equal(form.headers.location, '/dashboard?error=LAST_SIGN_IN_METHOD');
      const onlyId = decodeJwt(onlyToken).sub!;
      assert.equal((await linkedAccounts(onlyId)).length, 1, 'still linked');
    });

    it('links only into the account that started linking, and needs a CSRF token to start', async () => {
      const noToken = await t.app.inject({
        method: 'POST',
        url: '/api/auth/signin/google',
        headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
        payload: '',
      });
      assert.equal(noToken.statusCode, 403);
      assert.equal(noToken.json().error, 'CSRF_FAILED');
      const crossSite = await newBrowser();
      const evil = await t.app.inject({
        method: 'POST',
        url: '/api/auth/signin/google',
        headers: { origin: 'https://evil.example', cookie: crossSite.jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
        payload: `csrfToken=${crossSite.csrfToken}`,
      });
      assert.equal(evil.statusCode, 403);
      // Linking without a session goes to sign-in.
      const anonymous = await newBrowser();
      const { location } = await startAt(anonymous, '/api/auth/link/google');
      assert.equal(location.pathname, '/auth/signin');
    });
  });
}

describe('OAuth with an unreachable provider', () => {
  it('ends on ProviderUnreachable when discovery cannot reach the issuer, with no session', async (t) => {
    const [sqlite] = await backends();
    const database = await sqlite!.create();
    const app = await createTestApp(database, {
      // Port 9 (discard) on loopback: nothing listens there.
      env: { AUTH_URL, GOOGLE_CLIENT_ID: 'x', GOOGLE_CLIENT_SECRET: 'y', GOOGLE_ISSUER: 'http://127.0.0.1:9' },
    });
    t.after(async () => {
      await app.close();
      await database.drop();
    });
    const jar = new CookieJar();
    const csrf = await app.app.inject({ method: 'GET', url: '/api/auth/csrf' });
    jar.store(csrf);
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const response = await app.app.inject({
        method: 'POST',
        url: '/api/auth/signin/google',
        headers: { origin: ORIGIN, cookie: jar.header(), 'content-type': 'application/x-www-form-urlencoded' },
        payload: `csrfToken=${csrf.json().csrfToken}`,
      });
      assert.equal(response.statusCode, 303);
      assert.equal(response.headers.location, '/auth/error?error=ProviderUnreachable');
      assert.ok(!response.cookies.some((c) => c.name === 'gatehouse.oauth' || c.name === 'gatehouse.session'));
    }
    const page = await app.app.inject({ method: 'GET', url: '/auth/error?error=ProviderUnreachable' });
    assert.match(page.body, /could not be reached/);
  });
});
