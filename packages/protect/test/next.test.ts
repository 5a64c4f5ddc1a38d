/**
 * Issue 32.1, the Next.js adapter (`gatehouse-protect/next`) without Next.js: its proxy, route
 * handlers and `user()` called as Next.js calls them, with Web `Request`s and a stand-in for
 * `NextResponse.next` that records what the proxy asked of it. A live Gatehouse signs the user in
 * (its pages driven over HTTP by the test's browser stand-in). Two instances of the adapter with
 * the same options stand for the proxy's bundle and the route handlers' (Next.js bundles them
 * apart): a back-channel logout received by one ends the session in the other. examples/nextjs and
 * its test (test/packages/nextjs-example.test.ts) run it in Next.js itself.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { importJWK, SignJWT, type JWK } from 'jose';
import { backends, type TestDatabase } from '../../../test/helpers/databases.ts';
import { createUser } from '../../../test/helpers/app.ts';
import { Browser, follow, hiddenValue, listeningApp, registerClient, type ListeningApp } from '../../../test/helpers/oidc-rp.ts';
import { applySetCookie, createNextSignIn, type NextSignIn } from '../src/next.ts';
import type { SignInOptions } from '../src/sign-in.types.ts';
import { createSealer } from '../src/session-cookie.ts';

const APP = 'http://127.0.0.1:1';
const SECRET = 'a-test-secret-of-more-than-32-characters!';
const EMAIL = 'grace@example.com';
const PASSWORD = 'correct horse battery staple 1815';
const SESSION = 'gatehouse-app.session';

/** `NextResponse.next` as the proxy calls it: what it was given, and a response saying "go on". */
function nextResponse() {
  const calls: Array<{ request?: { headers?: Headers }; headers?: Headers } | undefined> = [];
  return {
    calls,
    next(init?: { request?: { headers?: Headers }; headers?: Headers }) {
      calls.push(init);
      return new Response(null, { headers: { 'x-middleware-next': '1' } });
    },
  };
}

const cookieValue = (setCookie: string[], name: string) => setCookie.find((header) => header.startsWith(`${name}=`))?.split(';')[0]!.slice(name.length + 1);

describe('gatehouse-protect/next: the proxy, the route handlers and user()', { timeout: 120_000 }, () => {
  let database: TestDatabase;
  let gatehouse: ListeningApp;
  let options: SignInOptions;
  let app: NextSignIn;
  let userId: string;

  before(async () => {
    const [sqlite] = await backends();
    database = await sqlite!.create();
    gatehouse = await listeningApp(database);
    userId = (await createUser(gatehouse.services, { email: EMAIL, password: PASSWORD, name: 'Grace Hopper' })).id;
    const { clientId, clientSecret } = await registerClient(gatehouse, {
      name: 'Next app',
      redirectUris: [`${APP}/auth/callback`],
      postLogoutRedirectUris: [`${APP}/`],
      grantTypes: ['authorization_code', 'refresh_token'],
      isFirstParty: true,
    });
    options = { issuer: gatehouse.url, clientId, clientSecret, appUrl: APP, secret: SECRET };
    app = createNextSignIn(() => options);
  });
  after(async () => {
    await gatehouse?.close();
    await database?.drop();
  });

  /** A sign-in through the route handlers and Gatehouse's pages: the session cookie the callback sets. */
  async function signIn(): Promise<string> {
    const start = await app.GET(new Request(`${APP}/auth/signin?returnTo=/dashboard`));
    assert.equal(start.status, 303);
    const transaction = cookieValue(start.headers.getSetCookie(), 'gatehouse-app.signin')!;
    const authorize = new URL(start.headers.get('location')!);
    assert.equal(authorize.origin, gatehouse.url);
    const browser = new Browser(gatehouse.url);
    let step = await follow(browser, authorize.pathname + authorize.search);
    while ('page' in step) {
      if (step.url.startsWith('/auth/signin')) {
        await browser.signIn(EMAIL, PASSWORD);
        step = await follow(browser, new URL(step.url, gatehouse.url).searchParams.get('callbackUrl')!);
        continue;
      }
      const consent = await browser.post(`${step.url}/consent`, { csrfToken: hiddenValue(await step.page.text(), 'csrfToken'), decision: 'allow' });
      step = await follow(browser, consent.headers.get('location')!);
    }
    const callback = await app.GET(new Request(step.external, { headers: { cookie: `gatehouse-app.signin=${transaction}` } }));
    assert.equal(callback.status, 303, await callback.clone().text());
    assert.equal(callback.headers.get('location'), '/dashboard');
    const session = cookieValue(callback.headers.getSetCookie(), SESSION);
    assert.ok(session, 'the callback set the session cookie');
    return session;
  }

  it('signs in through the route handlers; the proxy lets the session through untouched, and user() reads it from cookies()', async () => {
    const session = await signIn();
    const next = nextResponse();
    const response = await app.proxy(new Request(`${APP}/dashboard`, { headers: { cookie: `${SESSION}=${session}; theme=dark` } }), next);
    assert.equal(response.headers.get('x-middleware-next'), '1');
    assert.deepEqual(next.calls, [undefined], 'no refresh: the request goes on as it came');

    // `await cookies()` in a server component: an object with getAll().
    const cookies = { getAll: () => [{ name: 'theme', value: 'dark' }, { name: SESSION, value: session }] };
    const user = await app.user(cookies);
    assert.equal(user?.userId, userId);
    assert.equal(user?.email, EMAIL);
    assert.equal(user?.name, 'Grace Hopper');
    assert.equal((await app.user(`${SESSION}=${session}`))?.userId, userId, 'a Cookie header');
    assert.equal((await app.user(new Request(APP, { headers: { cookie: `${SESSION}=${session}` } })))?.userId, userId, 'a Request');
    assert.equal(await app.user({ getAll: () => [] }), null);
    assert.equal(await app.user(null), null);

    // The seed's rules: a plain user is refused /admin (403), /api/me is theirs.
    const admin = await app.proxy(new Request(`${APP}/admin`, { headers: { cookie: `${SESSION}=${session}` } }), next);
    assert.equal(admin.status, 403);
    const api = await app.proxy(new Request(`${APP}/api/me`, { headers: { cookie: `${SESSION}=${session}` } }), next);
    assert.equal(api.headers.get('x-middleware-next'), '1');
  });

  it('refuses without a session (a page to sign in, an API path 401 JSON) and refuses a tampered cookie, clearing it', async () => {
    const next = nextResponse();
    const page = await app.proxy(new Request(`${APP}/dashboard?tab=2`), next);
    assert.equal(page.status, 303);
    assert.equal(page.headers.get('location'), `${APP}/auth/signin?returnTo=${encodeURIComponent('/dashboard?tab=2')}`, 'absolute: Next.js takes no other from a proxy');
    const api = await app.proxy(new Request(`${APP}/api/me`), next);
    assert.equal(api.status, 401);
    assert.equal(((await api.json()) as { error: string }).error, 'UNAUTHENTICATED');
    const tampered = await app.proxy(new Request(`${APP}/api/me`, { headers: { cookie: `${SESSION}=not.a.sealed.session.value` } }), next);
    assert.equal(tampered.status, 401);
    assert.match(tampered.headers.get('set-cookie') ?? '', new RegExp(`^${SESSION}=;.*Max-Age=0`));
    assert.deepEqual(next.calls, [], 'nothing went on');
  });

  it('hands a refreshed session to the browser and to the request the page renders', async () => {
    const session = await signIn();
    const sealer = createSealer([SECRET], 'session');
    const opened = (await sealer.open(session, 'session'))!;
    const due = await sealer.seal({ ...opened, accessTokenExpiresAt: Math.floor(Date.now() / 1000) - 1 }, opened.until as number);
    const next = nextResponse();
    await app.proxy(new Request(`${APP}/dashboard`, { headers: { cookie: `theme=dark; ${SESSION}=${due}`, 'x-request-id': 'r1' } }), next);
    assert.equal(next.calls.length, 1);
    const init = next.calls[0]!;
    const renewed = cookieValue(init.headers!.getSetCookie(), SESSION);
    assert.ok(renewed && renewed !== due, 'the browser gets the refreshed session');
    assert.equal(init.request!.headers!.get('cookie'), `theme=dark; ${SESSION}=${renewed}`, 'the page sees it too, beside the other cookies');
    assert.equal(init.request!.headers!.get('x-request-id'), 'r1', 'the other request headers stay');
    assert.notEqual((await sealer.open(renewed, 'session'))!.accessToken, opened.accessToken, 'a new access token');
    assert.equal((await app.user(init.request!.headers!.get('cookie')))?.userId, userId);
  });

  it('ends the session in the proxy when the route handlers receive a back-channel logout (two bundles, one process)', async () => {
    const session = await signIn();
    const { sid } = (await createSealer([SECRET], 'session').open(session, 'session'))! as { sid?: string };
    const routeBundle = createNextSignIn(options); // what app/auth/[...gatehouse]/route.ts holds: another instance
    const jwk = gatehouse.services.keys.privateJwks().find((key) => key.alg === 'EdDSA') as JWK;
    const token = await new SignJWT({ events: { 'http://schemas.openid.net/event/backchannel-logout': {} }, jti: randomUUID(), sub: userId, ...(sid !== undefined && { sid }) })
      .setProtectedHeader({ alg: 'EdDSA', kid: jwk.kid!, typ: 'logout+jwt' })
      .setIssuer(gatehouse.url)
      .setAudience(options.clientId)
      .setIssuedAt()
      .setExpirationTime('2m')
      .sign(await importJWK(jwk, 'EdDSA'));
    const received = await routeBundle.POST(new Request(`${APP}/auth/backchannel-logout`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `logout_token=${token}` }));
    assert.equal(received.status, 200);
    const next = nextResponse();
    const after = await app.proxy(new Request(`${APP}/dashboard`, { headers: { cookie: `${SESSION}=${session}` } }), next);
    assert.equal(after.status, 303, 'sent to sign in again');
    assert.ok(after.headers.get('location')!.startsWith(`${APP}/auth/signin?`));
    assert.equal(await app.user(`${SESSION}=${session}`), null);
  });

  it('signs out through the route handler (to Gatehouse’s end-session endpoint); a copy of the cookie is refused after', async () => {
    const session = await signIn();
    const crossSite = await app.POST(new Request(`${APP}/auth/signout`, { method: 'POST', headers: { origin: 'https://evil.example', cookie: `${SESSION}=${session}` } }));
    assert.equal(crossSite.status, 403);
    const out = await app.POST(new Request(`${APP}/auth/signout`, { method: 'POST', headers: { origin: APP, cookie: `${SESSION}=${session}` } }));
    assert.equal(out.status, 303);
    const endSession = new URL(out.headers.get('location')!);
    assert.equal(endSession.origin, gatehouse.url);
    assert.equal(endSession.searchParams.get('post_logout_redirect_uri'), `${APP}/`);
    assert.match(out.headers.getSetCookie().join('\n'), new RegExp(`^${SESSION}=;.*Max-Age=0`, 'm'));
    assert.equal(await app.user(`${SESSION}=${session}`), null);
    assert.equal((await app.proxy(new Request(`${APP}/api/me`, { headers: { cookie: `${SESSION}=${session}` } }), nextResponse())).status, 401);
  });

  it('leaves the sign-in paths to the route handlers, which answer only those, each with its method', async () => {
    const next = nextResponse();
    for (const path of ['/auth/signin', '/auth/callback?code=x', '/auth/signout', '/auth/backchannel-logout']) {
      const response = await app.proxy(new Request(`${APP}${path}`), next);
      assert.equal(response.headers.get('x-middleware-next'), '1', path);
    }
    assert.deepEqual(next.calls, [undefined, undefined, undefined, undefined]);
    const unknown = await app.GET(new Request(`${APP}/auth/elsewhere`));
    assert.equal(unknown.status, 404);
    assert.equal(((await unknown.json()) as { error: string }).error, 'NOT_FOUND');
    const wrongMethod = await app.GET(new Request(`${APP}/auth/signout`));
    assert.equal(wrongMethod.status, 405);
    assert.equal(wrongMethod.headers.get('allow'), 'POST');
    assert.equal((await app.POST(new Request(`${APP}/auth/callback`, { method: 'POST' }))).status, 405);
    const badLogout = await app.POST(new Request(`${APP}/auth/backchannel-logout`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'logout_token=junk' }));
    assert.equal(badLogout.status, 400);
  });

  it('reads its options at the first request, not when the module loads (next build runs without the secrets)', () => {
    let read = 0;
    const lazy = createNextSignIn(() => {
      read += 1;
      return { ...options, secret: 'too short' };
    });
    assert.equal(read, 0);
    assert.throws(() => lazy.signIn(), /32 characters/);
  });
});

describe('applySetCookie: the Cookie header a page sees after the proxy set cookies', () => {
  it('replaces what was set, drops what was cleared, keeps the rest in order', () => {
    assert.equal(applySetCookie('a=1; s.0=old0; s.1=old1; b=2', ['s=new; Path=/; HttpOnly; SameSite=Lax', 's.0=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0', 's.1=; Path=/; Max-Age=0']), 'a=1; b=2; s=new');
    assert.equal(applySetCookie(null, ['s=v; Path=/']), 's=v');
    assert.equal(applySetCookie('s=old', ['s=; Path=/; Max-Age=0']), '');
    assert.equal(applySetCookie('a=1', ['junk']), 'a=1');
  });
});
