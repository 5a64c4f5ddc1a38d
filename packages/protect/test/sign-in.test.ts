/**
 * Issue 32.1: sign-in mode, gatehouse-protect as an app's OpenID Connect relying party, for an app
 * on another host than Gatehouse (the app on 127.0.0.1, Gatehouse on localhost: no cookie of one
 * ever reaches the other). A node:http app with the Node middleware; Chromium signs in on
 * Gatehouse's own page and lands on the app's /dashboard showing the user; /admin is refused
 * without the role; a tampered or foreign session cookie is refused; the session is refreshed
 * before its access token expires and ends when Gatehouse ends the grant; signing out at the app
 * ends both sessions (RP-initiated logout); the sign-in paths refuse what is not theirs.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSqliteDatabase, type TestDatabase } from '../../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../../test/helpers/app.ts';
import { freePort } from '../../../test/helpers/process.ts';
import { registerClient } from '../../../test/helpers/oidc-rp.ts';
import { chromiumAvailability, closeBrowser, launchBrowser, withPage, type Browser, type Page } from '../../../test/helpers/browser.ts';
import { createSignIn } from '../src/protect.ts';
import { toNodeMiddleware, type ProtectedRequest } from '../src/node.ts';
import { createSealer, parseCookieHeader, readChunked } from '../src/session-cookie.ts';
import { toFastifyHook } from '../src/fastify.ts';
import Fastify from 'fastify';
import { generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';
import { randomUUID } from 'node:crypto';

const PASSWORD = 'correct horse battery staple 1815';
const SECRET = 'a-test-secret-of-more-than-32-characters!';
const chromium = chromiumAvailability();

describe('sign-in mode: an app on another host signs its users in through Gatehouse', { skip: chromium.ok ? false : chromium.reason, timeout: 180_000 }, () => {
  let browser: Browser | undefined;
  let database: TestDatabase;
  let gatehouse: TestApp;
  let gatehouseUrl: string;
  let server: Server;
  let appUrl: string;
  let userId: string;

  before(async () => {
    database = await createSqliteDatabase();
    const port = await freePort();
    gatehouseUrl = `http://localhost:${port}`;
    gatehouse = await createTestApp(database, { env: { AUTH_URL: gatehouseUrl, OIDC_PROVIDER_ALLOW_PRIVATE_TARGETS: 'true' } });
    await gatehouse.app.listen({ port, host: '127.0.0.1' });
    userId = (await createUser(gatehouse.services, { email: 'ada@example.com', password: PASSWORD, name: 'Ada Lovelace' })).id;

    // The app: its port first, since its URLs are registered with Gatehouse.
    server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    appUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const { clientId, clientSecret } = await registerClient(gatehouse, {
      name: 'The app',
      redirectUris: [`${appUrl}/auth/callback`],
      postLogoutRedirectUris: [`${appUrl}/`],
      grantTypes: ['authorization_code', 'refresh_token'],
      isFirstParty: true,
      backchannelLogoutUri: `${appUrl}/auth/backchannel-logout`,
    });
    const signIn = createSignIn({ issuer: gatehouseUrl, clientId, clientSecret, appUrl, secret: SECRET });
    const middleware = toNodeMiddleware(signIn);
    server.on('request', (req: ProtectedRequest, res) => {
      middleware(req, res, (error?: unknown) => {
        if (error !== undefined) {
          res.statusCode = 500;
          res.end(String(error));
          return;
        }
        const user = req.gatehouse;
        res.setHeader('content-type', 'text/html; charset=utf-8');
        res.end(
          `<!doctype html><title>App</title><h1>${req.url}</h1>` +
            (user ? `<p id="who">${user.email} (${user.name}) ${user.userId}</p><form method="post" action="/auth/signout"><button>Sign out of the app</button></form>` : '<p id="who">nobody</p>'),
        );
      });
    });
    browser = await launchBrowser();
  });
  after(async () => {
    await closeBrowser(browser);
    await new Promise((resolve) => server?.close(resolve));
    await gatehouse?.close();
    await database?.drop();
  });

  async function signInThroughGatehouse(page: Page): Promise<void> {
    await page.goto(`${appUrl}/dashboard`);
    // The app sent the browser to Gatehouse, whose own sign-in page asks.
    await page.waitForURL((url) => url.origin === gatehouseUrl && url.pathname === '/auth/signin');
    await page.getByLabel('Email').fill('ada@example.com');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Login', exact: true }).click();
    await page.waitForURL(`${appUrl}/dashboard`);
  }

  const sessionCookieOf = async (page: Page) => (await page.context().cookies(appUrl)).find((cookie) => cookie.name.startsWith('gatehouse-app.session'));

  it('signs in on Gatehouse’s page and lands on the app’s dashboard with the user; /admin is refused without the role', (t) =>
    withPage(t, browser!, {}, async (page) => {
      await signInThroughGatehouse(page);
      assert.equal(await page.locator('#who').textContent(), `ada@example.com (Ada Lovelace) ${userId}`);
      const cookie = await sessionCookieOf(page);
      assert.ok(cookie, 'the app has a session cookie of its own');
      assert.equal(cookie.httpOnly, true);
      assert.equal(cookie.sameSite, 'Lax');
      assert.ok(!(await page.context().cookies(appUrl)).some((c) => c.name.startsWith('gatehouse.')), 'no Gatehouse cookie on the app');

      const admin = await page.goto(`${appUrl}/admin`);
      assert.equal(admin?.status(), 403);
      const api = await page.request.get(`${appUrl}/api/me`);
      assert.equal(api.status(), 200, 'the session opens the API too');
    }));

  it('refuses a tampered or foreign session cookie', (t) =>
    withPage(t, browser!, {}, async (page) => {
      await signInThroughGatehouse(page);
      const cookie = (await sessionCookieOf(page))!;
      const tampered = `${cookie.value.slice(0, -4)}${cookie.value.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
      const foreign = await createSealer(['another-secret-of-more-than-32-characters'], 'session').seal({ sub: userId, roles: ['ADMIN'], amr: [], scope: 'openid', accessToken: 'x', accessTokenExpiresAt: 9e9, since: 0, until: 9e9 }, Math.floor(Date.now() / 1000) + 3600);
      for (const value of [tampered, foreign]) {
        const response = await fetch(`${appUrl}/api/me`, { headers: { cookie: `${cookie.name}=${value}` } });
        assert.equal(response.status, 401);
        assert.match(response.headers.get('set-cookie') ?? '', new RegExp(`${cookie.name}=;.*Max-Age=0`), 'the bad cookie is cleared');
      }
    }));

  it('refreshes the session before its access token expires, and ends it when Gatehouse ends the grant', (t) =>
    withPage(t, browser!, {}, async (page) => {
      await signInThroughGatehouse(page);
      const cookie = (await sessionCookieOf(page))!;
      // The session as the app sealed it, made due for a refresh (the test holds the app's secret).
      const sealer = createSealer([SECRET], 'session');
      const session = (await sealer.open(cookie.value, 'session'))!;
      assert.ok(typeof session.refreshToken === 'string', 'a refresh token came with the sign-in');
      const due = await sealer.seal({ ...session, accessTokenExpiresAt: Math.floor(Date.now() / 1000) - 1 }, session.until as number);
      const refreshed = await fetch(`${appUrl}/dashboard`, { headers: { cookie: `${cookie.name}=${due}` } });
      assert.equal(refreshed.status, 200);
      const renewed = readChunked(parseCookieHeader(refreshed.headers.getSetCookie().map((header) => header.split(';')[0]).join('; ')), cookie.name);
      assert.ok(renewed, 'a new session cookie');
      const next = (await sealer.open(renewed, 'session'))!;
      assert.notEqual(next.accessToken, session.accessToken, 'a new access token');
      assert.notEqual(next.refreshToken, session.refreshToken, 'Gatehouse rotated the refresh token');
      assert.ok((next.accessTokenExpiresAt as number) > Math.floor(Date.now() / 1000));

      // Signed out everywhere at Gatehouse: the grant ends, and with it the app's session at its next refresh.
      await gatehouse.services.sessions.endAllSessions(userId);
      const dueAgain = await sealer.seal({ ...next, accessTokenExpiresAt: Math.floor(Date.now() / 1000) - 1 }, next.until as number);
      const ended = await fetch(`${appUrl}/api/me`, { headers: { cookie: `${cookie.name}=${dueAgain}` } });
      assert.equal(ended.status, 401);
    }));

  it('signs out at the app and at Gatehouse (RP-initiated logout)', (t) =>
    withPage(t, browser!, {}, async (page) => {
      await signInThroughGatehouse(page);
      await page.getByRole('button', { name: 'Sign out of the app' }).click();
      // Gatehouse asks whether to sign out of it too.
      await page.waitForURL((url) => url.origin === gatehouseUrl);
      await page.getByRole('button', { name: 'Sign out', exact: true }).click();
      await page.waitForURL(`${appUrl}/`);
      assert.equal(await sessionCookieOf(page), undefined, 'the app’s session is gone');
      assert.equal(await page.locator('#who').textContent(), 'nobody');
      // And Gatehouse's: its dashboard asks to sign in.
      await page.goto(`${gatehouseUrl}/dashboard`);
      assert.equal(new URL(page.url()).pathname, '/auth/signin');
    }));

  it('ends the app’s session when the person signs out at Gatehouse (back-channel logout), and only that browser’s', (t) =>
    withPage(t, browser!, {}, async (page) =>
      withPage(t, browser!, {}, async (other) => {
        await signInThroughGatehouse(page);
        await signInThroughGatehouse(other);
        // Signing out on Gatehouse's own page, in the first browser.
        const signedOutAt = Date.now();
        await page.goto(`${gatehouseUrl}/auth/signout`);
        await page.getByRole('button', { name: 'Sign out', exact: true }).click();
        await page.waitForURL((url) => url.origin === gatehouseUrl && url.pathname === '/');
        // The logout token goes out through Gatehouse's outbox, woken after the sign-out commits:
        // whatever the worker has not done yet, it does now (and waits for what it is doing).
        await gatehouse.services.oidcProvider.backchannel.worker.runOnce();
        const deliveries = await gatehouse.services.storage.db.selectFrom('oidc_logout_deliveries').select(['status', 'last_error']).where('created_at', '>=', signedOutAt).execute();
        assert.deepEqual(deliveries, [{ status: 'delivered', last_error: null }], 'one logout token, to the one app of that session, accepted');
        const after = await page.goto(`${appUrl}/dashboard`);
        assert.equal(new URL(page.url()).origin, gatehouseUrl, `the app's session ended: sent to sign in (${after?.status()})`);
        await other.goto(`${appUrl}/dashboard`);
        assert.equal(new URL(other.url()).origin, appUrl, 'the other browser’s session of the app stays');
        assert.match((await other.locator('#who').textContent()) ?? '', /ada@example\.com/);
      })));

  it('signs out only from the app’s own pages, and starts a sign-in only back to its own paths', async () => {
    const crossSite = await fetch(`${appUrl}/auth/signout`, { method: 'POST', headers: { origin: 'https://evil.example' }, redirect: 'manual' });
    assert.equal(crossSite.status, 403);
    const start = await fetch(`${appUrl}/auth/signin?returnTo=${encodeURIComponent('//evil.example/x')}`, { redirect: 'manual' });
    assert.equal(start.status, 303);
    const authorize = new URL(start.headers.get('location')!);
    assert.equal(authorize.origin, gatehouseUrl);
    assert.equal(authorize.searchParams.get('code_challenge_method'), 'S256');
    assert.equal(authorize.searchParams.get('redirect_uri'), `${appUrl}/auth/callback`);
    // The way back after sign-in is a path of this app: another origin became /, a path is kept (encoded).
    const transactionOf = async (response: Response) => {
      const cookie = response.headers.getSetCookie().find((header) => header.startsWith('gatehouse-app.signin='))!;
      return (await createSealer([SECRET], 'sign-in transaction').open(cookie.split(';')[0]!.slice('gatehouse-app.signin='.length), 'sign-in transaction'))!;
    };
    assert.equal((await transactionOf(start)).returnTo, '/');
    const kept = await fetch(`${appUrl}/auth/signin?returnTo=${encodeURIComponent('/reports?q=é#top')}`, { redirect: 'manual' });
    assert.equal((await transactionOf(kept)).returnTo, '/reports?q=%C3%A9#top');
    // A callback without this browser's sign-in cookie, or with a forged state, makes no session.
    const forged = await fetch(`${appUrl}/auth/callback?code=abc&state=xyz&iss=${encodeURIComponent(gatehouseUrl)}`, { redirect: 'manual' });
    assert.equal(forged.status, 303, 'no transaction: start again');
    assert.ok(!forged.headers.getSetCookie().some((header) => header.startsWith('gatehouse-app.session=') && !header.includes('Max-Age=0')));
    const transaction = start.headers.getSetCookie().find((header) => header.startsWith('gatehouse-app.signin='))!.split(';')[0]!;
    const wrongState = await fetch(`${appUrl}/auth/callback?code=abc&state=xyz&iss=${encodeURIComponent(gatehouseUrl)}`, { headers: { cookie: transaction }, redirect: 'manual' });
    assert.equal(wrongState.status, 400);
    assert.equal(((await wrongState.json()) as { error: string }).error, 'SIGN_IN_FAILED');
  });

  /** A logout token as Gatehouse signs them (OpenID Back-Channel Logout 1.0), with its current key. */
  async function logoutToken(claims: Record<string, unknown>, audience: string, options: { typ?: string } = {}): Promise<string> {
    const jwk = gatehouse.services.keys.privateJwks().find((key) => key.alg === 'EdDSA') as JWK;
    const key = await importJWK(jwk, 'EdDSA');
    return new SignJWT({ events: { 'http://schemas.openid.net/event/backchannel-logout': {} }, jti: randomUUID(), ...claims })
      .setProtectedHeader({ alg: 'EdDSA', kid: jwk.kid!, typ: options.typ ?? 'logout+jwt' })
      .setIssuer(gatehouseUrl)
      .setAudience(audience)
      .setIssuedAt()
      .setExpirationTime('2m')
      .sign(key);
  }

  it('ends the sessions a verified logout token names, each token once, on Fastify too', async () => {
    const { clientId, clientSecret } = await registerClient(gatehouse, { name: 'Fastify app', redirectUris: ['http://127.0.0.1:1/auth/callback'], grantTypes: ['authorization_code', 'refresh_token'], isFirstParty: true });
    const signIn = createSignIn({ issuer: gatehouseUrl, clientId, clientSecret, appUrl: 'http://127.0.0.1:1', secret: SECRET });
    const app = Fastify();
    app.addHook('onRequest', toFastifyHook(signIn));
    app.get('/api/me', async (request) => ({ userId: request.gatehouse?.userId ?? null }));
    await app.ready();
    try {
      const sealer = createSealer([SECRET], 'session');
      const now = Math.floor(Date.now() / 1000);
      const session = (sid: string) => sealer.seal({ sub: userId, sid, roles: [], amr: ['pwd'], scope: 'openid', accessToken: 'opaque', accessTokenExpiresAt: now + 600, since: now - 1, until: now + 3600 }, now + 3600);
      const [first, second] = await Promise.all([session('sid-one'), session('sid-two')]);
      const me = (sealed: string) => app.inject({ method: 'GET', url: '/api/me', headers: { cookie: `gatehouse-app.session=${sealed}` } });
      assert.deepEqual((await me(first)).json(), { userId });
      assert.deepEqual((await me(second)).json(), { userId });
      assert.deepEqual(await signIn.authenticate(`gatehouse-app.session=${first}`).then((user) => user?.userId), userId);

      const post = (body: string) => app.inject({ method: 'POST', url: '/auth/backchannel-logout', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: body });
      const token = await logoutToken({ sub: userId, sid: 'sid-one' }, clientId);
      assert.equal((await post(`logout_token=${token}`)).statusCode, 200);
      assert.equal((await me(first)).statusCode, 401, 'the named session ended');
      assert.equal(await signIn.authenticate(`gatehouse-app.session=${first}`), null);
      assert.deepEqual((await me(second)).json(), { userId }, 'another session of the user stays');
      assert.equal((await post(`logout_token=${token}`)).statusCode, 400, 'a logout token is accepted once');

      // Refused: for another client, not a logout token, with a nonce, signed by someone else, junk.
      const refused = [
        await logoutToken({ sub: userId }, 'another-client'),
        await logoutToken({ sub: userId }, clientId, { typ: 'JWT' }),
        await logoutToken({ sub: userId, nonce: 'n' }, clientId),
        await logoutToken({ events: {}, sub: userId }, clientId),
        await new SignJWT({ sub: userId, jti: 'x', events: { 'http://schemas.openid.net/event/backchannel-logout': {} } }).setProtectedHeader({ alg: 'HS256', typ: 'logout+jwt' }).setIssuer(gatehouseUrl).setAudience(clientId).setIssuedAt().sign(new TextEncoder().encode(SECRET)),
        'not-a-token',
        // Without exp, which Back-Channel Logout 1.0 requires.
        await new SignJWT({ sub: userId, jti: 'no-exp', events: { 'http://schemas.openid.net/event/backchannel-logout': {} } })
          .setProtectedHeader({ alg: 'EdDSA', kid: (gatehouse.services.keys.privateJwks().find((k) => k.alg === 'EdDSA') as JWK).kid!, typ: 'logout+jwt' })
          .setIssuer(gatehouseUrl)
          .setAudience(clientId)
          .setIssuedAt()
          .sign(await importJWK(gatehouse.services.keys.privateJwks().find((k) => k.alg === 'EdDSA') as JWK, 'EdDSA')),
      ];
      for (const bad of refused) assert.equal((await post(`logout_token=${bad}`)).statusCode, 400, bad.slice(0, 40));
      assert.equal((await post('nothing=here')).statusCode, 400);
      // A key Gatehouse's JWKS does not list (yet: a rotation within the refetch cooldown) is not the
      // token's fault: 503, which Gatehouse tries again, not 400, which it would give up on.
      const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
      const unknownKey = await new SignJWT({ sub: userId, jti: randomUUID(), events: { 'http://schemas.openid.net/event/backchannel-logout': {} } })
        .setProtectedHeader({ alg: 'EdDSA', kid: 'a-key-not-published-yet', typ: 'logout+jwt' })
        .setIssuer(gatehouseUrl)
        .setAudience(clientId)
        .setIssuedAt()
        .setExpirationTime('2m')
        .sign(privateKey);
      assert.equal((await post(`logout_token=${unknownKey}`)).statusCode, 503);
      assert.deepEqual((await me(second)).json(), { userId }, 'none of them ended anything');

      // A token naming the user only ends every session of theirs begun before it.
      assert.equal((await post(`logout_token=${await logoutToken({ sub: userId }, clientId)}`)).statusCode, 200);
      assert.equal((await me(second)).statusCode, 401);

      const start = await app.inject({ method: 'GET', url: '/auth/signin?returnTo=/api/me' });
      assert.equal(start.statusCode, 303);
      assert.equal(new URL(start.headers.location!.toString()).origin, gatehouseUrl);
      assert.equal((await app.inject({ method: 'POST', url: '/auth/signout', headers: { origin: 'https://evil.example' } })).statusCode, 403);
    } finally {
      await app.close();
    }
  });
});
