/**
 * gatehouse-client in Chromium, against a live Gatehouse: a page on loopback loads the package's
 * built ESM (packages/client/dist, `npm run build`) and @simplewebauthn/browser through an import
 * map, as an app's bundle would, and runs the client in the browser itself.
 *
 * The app is served as cookie mode expects (README, "Cookie mode"): from Gatehouse's origin, by a
 * reverse proxy in front of it that serves the app's files under /app/ and passes everything else
 * to Gatehouse, whose AUTH_URL is the proxy's address. The proxy counts the refresh requests that
 * reach Gatehouse; the session's row counts its rotations.
 *
 * - cookie mode: a user with an authenticator app signs in, the second factor (a code otpauth
 *   computes from the enrolment's otpauth:// URL) finishes it into Gatehouse's HttpOnly cookies, and
 *   the page then makes protected calls (a safe one, and an unsafe one with the CSRF token);
 * - a passkey (Chromium's virtual authenticator, through the DevTools protocol): added from the
 *   page, then a whole sign-in with it, then the second factor after a password, in cookie mode;
 *   and a sign-in with it in token mode;
 * - two tabs of one origin sharing tokens in localStorage both find the access token expiring: one
 *   refresh reaches Gatehouse (the other tab waits on the Web Lock and takes its result, even when
 *   its copy of localStorage has not caught up yet: src/tabs.ts), both end with the new token, the
 *   reuse detection does not fire; the tabs follow each other's sign-in and sign-out (BroadcastChannel).
 * One Gatehouse, one proxy and one browser for the suite; no sleeps: waits are on conditions.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request as forward, type Server } from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, normalize, resolve } from 'node:path';
import { URI } from 'otpauth';
import { createSqliteDatabase, type TestDatabase } from '../../../test/helpers/databases.ts';
import { freePort } from '../../../test/helpers/process.ts';
import { createTestApp, createUser, type TestApp } from '../../../test/helpers/app.ts';
import { addVirtualAuthenticator, chromiumAvailability, closeBrowser, launchBrowser, withPage, watchConsole, type Browser, type Page } from '../../../test/helpers/browser.ts';
import { cookieNames } from '../../../src/sessions/session-cookie.ts';
import { PASSWORD, STRICT_REFRESH } from './live.ts';

const DIST = resolve(import.meta.dirname, '../dist');
const WEBAUTHN = join(dirname(dirname(createRequire(import.meta.url).resolve('@simplewebauthn/browser'))), 'esm');
const TOKENS_KEY = 'gatehouse.tokens';
const TOTP_STEP_MS = 30_000;

const PAGE = `<!doctype html>
<meta charset="utf-8">
<title>App</title>
<script type="importmap">{ "imports": { "@simplewebauthn/browser": "/app/webauthn/index.js" } }</script>
<script type="module">
  import * as gatehouse from '/app/client/index.js';
  import * as webauthn from '@simplewebauthn/browser';
  Object.assign(window, { gatehouse, webauthn });
</script>
<p>An app on Gatehouse's origin</p>`;

/** A file under `root`, or null (nothing outside it). */
function fileUnder(root: string, path: string): Buffer | null {
  const file = normalize(join(root, path));
  if (!file.startsWith(`${root}/`) || !existsSync(file)) return null;
  return readFileSync(file);
}

/** The app's files under /app/, everything else passed on to Gatehouse; counts POST /api/auth/refresh. */
async function startProxy(port: number, gatehousePort: number) {
  let refreshes = 0;
  const server: Server = createServer((incoming, outgoing) => {
    const path = new URL(incoming.url ?? '/', 'http://proxy').pathname;
    if (path === '/app/') return void outgoing.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
    if (path.startsWith('/app/')) {
      const [root, rest] = path.startsWith('/app/client/') ? [DIST, path.slice('/app/client/'.length)] : path.startsWith('/app/webauthn/') ? [WEBAUTHN, path.slice('/app/webauthn/'.length)] : ['', ''];
      const body = root === '' ? null : fileUnder(root, rest);
      if (body === null) return void outgoing.writeHead(404).end();
      return void outgoing.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(body);
    }
    if (incoming.method === 'POST' && path === '/api/auth/refresh') refreshes += 1;
    const upstream = forward({ host: '127.0.0.1', port: gatehousePort, method: incoming.method, path: incoming.url, headers: incoming.headers, agent: false }, (answer) => {
      outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(outgoing);
    });
    upstream.on('error', () => outgoing.destroy());
    incoming.pipe(upstream);
  });
  await new Promise<void>((done) => server.listen(port, '127.0.0.1', done));
  return {
    refreshes: () => refreshes,
    async close() {
      server.closeAllConnections();
      await new Promise((done) => server.close(done));
    },
  };
}

/** The page of the app, with the client and @simplewebauthn/browser loaded. */
async function openApp(page: Page, appUrl: string): Promise<void> {
  const seen: string[] = [];
  const note = (text: string) => seen.push(text);
  page.on('console', (message) => note(message.text()));
  page.on('pageerror', (error) => note(error.message));
  await page.goto(`${appUrl}/app/`);
  try {
    await page.waitForFunction(() => 'gatehouse' in window && 'webauthn' in window);
  } catch (error) {
    throw new Error(`the app's modules did not load: ${seen.join('; ')}`, { cause: error });
  }
}

/** What the page's script sees of the client's module and of @simplewebauthn/browser. */
type AppWindow = typeof globalThis & {
  gatehouse: typeof import('../src/index.ts');
  webauthn: typeof import('@simplewebauthn/browser');
  client: import('../src/index.ts').GatehouseClient;
  pending: import('../src/index.ts').SignInResult;
  sent: string[];
  release: () => void;
  results: Promise<{ status: number; userId: string }>;
};

const chromium = chromiumAvailability();

describe('gatehouse-client in Chromium against a live Gatehouse', { skip: chromium.ok ? false : chromium.reason, timeout: 180_000 }, () => {
  let browser: Browser | undefined;
  let database: TestDatabase | undefined;
  let gatehouse: TestApp | undefined;
  let proxy: Awaited<ReturnType<typeof startProxy>> | undefined;
  let appUrl = '';
  let count = 0;

  before(async () => {
    assert.ok(existsSync(join(DIST, 'index.js')), 'packages/client/dist is missing: run `npm run build` first');
    browser = await launchBrowser();
    database = await createSqliteDatabase();
    const [port, gatehousePort] = [await freePort(), await freePort()];
    // `localhost`: a secure context with a domain, the RP ID passkeys need.
    appUrl = `http://localhost:${port}`;
    gatehouse = await createTestApp(database, { env: { ...STRICT_REFRESH, AUTH_URL: appUrl } });
    await gatehouse.app.listen({ port: gatehousePort, host: '127.0.0.1' });
    proxy = await startProxy(port, gatehousePort);
  });
  after(async () => {
    await closeBrowser(browser);
    await proxy?.close();
    await gatehouse?.close();
    await database?.drop();
  });

  async function newUser(prefix: string) {
    const email = `${prefix}${++count}@example.com`;
    return { email, id: (await createUser(gatehouse!.services, { email, password: PASSWORD })).id };
  }

  /** The session cookies the browser holds for the app's origin (HttpOnly: the page cannot see them). */
  async function sessionCookies(page: Page) {
    const names = cookieNames(gatehouse!.config);
    const cookies = await page.context().cookies(appUrl);
    return cookies.filter((cookie) => cookie.name === names.access || cookie.name === names.refresh);
  }

  it('cookie mode: a sign-in with an authenticator app finishes its second factor into the cookies, and protected calls work', async (t) => {
    const services = gatehouse!.services;
    const { email, id } = await newUser('totp');
    const user = (await services.users.findUserById(id))!;
    const setup = await services.mfa.beginTotpSetup(user);
    assert.ok(setup.ok);
    const app = URI.parse(setup.otpauthUrl);
    const enabled = await services.mfa.enableTotp(user, app.generate(), { actorUserId: id, ip: null, userAgent: null });
    assert.ok(enabled.ok);

    await withPage(t, browser!, {}, async (page) => {
      const problems = watchConsole(page);
      await openApp(page, appUrl);
      const challenge = await page.evaluate(async ({ email, password }) => {
        const w = window as unknown as AppWindow;
        w.client = w.gatehouse.createGatehouseClient({ baseUrl: location.origin, mode: 'cookies' });
        w.pending = await w.client.signIn({ email, password });
        return w.pending.status === 'second-factor' ? { status: w.pending.status, methods: w.pending.methods } : w.pending;
      }, { email, password: PASSWORD });
      assert.deepEqual(challenge, { status: 'second-factor', methods: ['totp', 'recovery_code'] });
      assert.deepEqual(await sessionCookies(page), [], 'no session before the second factor');

      // The enabling code's step is spent: the app's next code.
      const code = app.generate({ timestamp: Date.now() + TOTP_STEP_MS });
      const signedIn = await page.evaluate(async (code) => {
        const w = window as unknown as AppWindow;
        if (w.pending.status !== 'second-factor') throw new Error('no challenge');
        const result = await w.pending.verifySecondFactor({ code });
        const protectedCall = await w.client.fetch('/api/auth/sessions');
        const unsafeCall = await w.client.fetch('/api/auth/sessions?keepCurrent=true', { method: 'DELETE' });
        return { result, protectedCall: protectedCall.status, unsafeCall: unsafeCall.status, state: w.client.getState().status, storage: localStorage.length, cookie: document.cookie };
      }, code);
      assert.equal(signedIn.result.status, 'signed-in', JSON.stringify(signedIn.result));
      assert.equal(signedIn.result.status === 'signed-in' && signedIn.result.session.user.id, id);
      assert.deepEqual(signedIn.result.status === 'signed-in' && signedIn.result.session.session.amr, ['pwd', 'otp', 'mfa']);
      assert.equal(signedIn.protectedCall, 200, 'the session cookie works for a protected call');
      assert.equal(signedIn.unsafeCall, 200, 'and for an unsafe one, with the CSRF token');
      assert.equal(signedIn.state, 'signed-in');
      assert.equal(signedIn.storage, 0, 'nothing kept in storage');
      const cookies = await sessionCookies(page);
      assert.equal(cookies.length, 2);
      assert.ok(cookies.every((cookie) => cookie.httpOnly && cookie.sameSite === 'Lax'));
      assert.ok(!cookies.some((cookie) => signedIn.cookie.includes(cookie.value)), 'the page cannot read them');
      assert.equal((await services.sessions.listSessions(id)).length, 1);
      // The one refusal there was: 403 MFA_REQUIRED, which asked for the second factor.
      const unexpected = problems.filter((problem) => !problem.startsWith('403 POST') && !problem.includes('status of 403'));
      assert.deepEqual(unexpected, [], 'no console errors and no other failed requests');
      assert.ok(problems.length <= 2, problems.join('\n'));
    });
  });

  it('cookie mode: a passkey added from the page signs in alone, then is the second factor after a password', async (t) => {
    const { email, id } = await newUser('passkey');
    await withPage(t, browser!, {}, async (page) => {
      const { cdp, authenticatorId } = await addVirtualAuthenticator(page);
      await openApp(page, appUrl);
      const added = await page.evaluate(async ({ email, password }) => {
        const w = window as unknown as AppWindow;
        w.client = w.gatehouse.createGatehouseClient({ baseUrl: location.origin, mode: 'cookies' });
        const signedIn = await w.client.signIn({ email, password });
        if (signedIn.status !== 'signed-in') return { step: 'sign-in', signedIn };
        const json = { method: 'POST', headers: { 'content-type': 'application/json' } };
        const options = await w.client.fetch('/api/auth/passkeys/register/options', { ...json, body: '{}' });
        const response = await w.webauthn.startRegistration({ optionsJSON: await options.json() });
        const verified = await w.client.fetch('/api/auth/passkeys/register/verify', { ...json, body: JSON.stringify({ response, name: 'Virtual key' }) });
        return { step: 'registered', status: verified.status, signedOut: (await w.client.signOut()).status };
      }, { email, password: PASSWORD });
      assert.deepEqual(added, { step: 'registered', status: 200, signedOut: 'signed-out' });
      assert.equal((await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials.length, 1);
      assert.deepEqual(await sessionCookies(page), []);

      // A whole sign-in with the passkey.
      const alone = await page.evaluate(async () => {
        const w = window as unknown as AppWindow;
        const result = await w.client.signInWithPasskey();
        return { result, protectedCall: (await w.client.fetch('/api/auth/sessions')).status, signedOut: (await w.client.signOut()).status };
      });
      assert.equal(alone.result.status, 'signed-in', JSON.stringify(alone.result));
      const amr = alone.result.status === 'signed-in' ? alone.result.session.session.amr : [];
      assert.ok((amr.includes('hwk') || amr.includes('swk')) && amr.includes('user') && amr.includes('mfa') && !amr.includes('pwd'), amr.join());
      assert.equal(alone.protectedCall, 200);

      // With the password, the passkey is now the second factor.
      const second = await page.evaluate(async ({ email, password }) => {
        const w = window as unknown as AppWindow;
        const first = await w.client.signIn({ email, password });
        if (first.status !== 'second-factor') return { first };
        const result = await first.verifySecondFactor({ passkey: true });
        return { methods: first.methods, result, unsafeCall: (await w.client.fetch('/api/auth/sessions?keepCurrent=true', { method: 'DELETE' })).status };
      }, { email, password: PASSWORD });
      assert.deepEqual(second.methods, ['passkey', 'recovery_code']);
      assert.equal(second.result?.status, 'signed-in', JSON.stringify(second));
      const both = second.result?.status === 'signed-in' ? second.result.session.session.amr : [];
      assert.ok(both.includes('pwd') && both.includes('mfa') && (both.includes('hwk') || both.includes('swk')), both.join());
      assert.equal(second.unsafeCall, 200);
      assert.equal((await sessionCookies(page)).length, 2);
      assert.equal((await gatehouse!.services.sessions.listSessions(id)).length, 1);

      // Token mode too: the client keeps the tokens and its calls carry them; it sends and takes no cookie.
      const cookiesBefore = await sessionCookies(page);
      const tokenMode = await page.evaluate(async () => {
        const w = window as unknown as AppWindow;
        const client = w.gatehouse.createGatehouseClient({ baseUrl: location.origin });
        const result = await client.signInWithPasskey();
        return { status: result.status, call: (await client.fetch('/api/auth/sessions', { credentials: 'omit' })).status };
      });
      assert.deepEqual(tokenMode, { status: 'signed-in', call: 200 });
      assert.deepEqual(await sessionCookies(page), cookiesBefore, "the cookie-mode session's cookies are untouched");
      assert.equal((await gatehouse!.services.sessions.listSessions(id)).length, 2);
    });
  });

  it('two tabs with an expiring access token share one refresh (Web Locks): one reaches Gatehouse, both end with the new token, no reuse', async (t) => {
    const { email, id } = await newUser('tabs');
    const db = gatehouse!.services.storage.db;
    await withPage(t, browser!, {}, async (tabA) => {
      const tabB = await tabA.context().newPage();
      const tabs = [tabA, tabB];
      for (const tab of tabs) {
        await openApp(tab, appUrl);
        await tab.evaluate((key) => {
          const w = window as unknown as AppWindow;
          w.sent = [];
          // Records the Authorization header of each request the client makes.
          const recording: typeof fetch = (input, init) => {
            w.sent.push(new Request(input, init).headers.get('authorization') ?? '');
            return fetch(input, init);
          };
          w.client = w.gatehouse.createGatehouseClient({ baseUrl: location.origin, storage: w.gatehouse.localStorageAdapter({ key }), fetch: recording });
        }, TOKENS_KEY);
      }

      // A sign-in in one tab reaches the other.
      const signedIn = await tabA.evaluate(async ({ email, password }) => (await (window as unknown as AppWindow).client.signIn({ email, password })).status, { email, password: PASSWORD });
      assert.equal(signedIn, 'signed-in');
      await tabB.waitForFunction(() => (window as unknown as AppWindow).client.getState().status === 'signed-in');

      // Both tabs find the access token expiring. Tab A holds the refresh lock while both start a
      // request, so that both are waiting for it at once.
      const before = await tabA.evaluate((key) => {
        const tokens = JSON.parse(localStorage.getItem(key)!) as { accessToken: string; expiresAt: string };
        localStorage.setItem(key, JSON.stringify({ ...tokens, expiresAt: new Date(Date.now() - 1000).toISOString() }));
        const w = window as unknown as AppWindow;
        void navigator.locks.request(`gatehouse-refresh:${key}`, () => new Promise<void>((release) => (w.release = release)));
        return tokens.accessToken;
      }, TOKENS_KEY);
      const refreshesBefore = proxy!.refreshes();
      for (const tab of tabs) {
        await tab.evaluate(() => {
          const w = window as unknown as AppWindow;
          w.sent.length = 0;
          w.results = w.client.fetch('/api/auth/session').then(async (response) => ({ status: response.status, userId: ((await response.json()) as { user: { id: string } }).user.id }));
        });
      }
      await tabA.waitForFunction(async (name) => ((await navigator.locks.query()).pending ?? []).filter((lock) => lock.name === name).length === 2, `gatehouse-refresh:${TOKENS_KEY}`, { polling: 50 });
      await tabA.evaluate(() => (window as unknown as AppWindow).release());

      const results = await Promise.all(tabs.map((tab) => tab.evaluate(() => (window as unknown as AppWindow).results)));
      assert.deepEqual(results, [{ status: 200, userId: id }, { status: 200, userId: id }]);
      // Which tab sent a refresh (the requests without Authorization): for the message only, no token in it.
      const refreshedBy = await Promise.all(tabs.map((tab) => tab.evaluate(() => (window as unknown as AppWindow).sent.filter((header) => header === '').length)));
      assert.equal(proxy!.refreshes() - refreshesBefore, 1, `one POST /api/auth/refresh reached Gatehouse (tab A sent ${refreshedBy[0]}, tab B ${refreshedBy[1]})`);
      const row = await db.selectFrom('sessions').select(['refresh_generation', 'revoked_at']).where('user_id', '=', id).executeTakeFirstOrThrow();
      assert.deepEqual(row, { refresh_generation: 1, revoked_at: null }, 'the session rotated once and lives');
      const after = await tabA.evaluate((key) => (JSON.parse(localStorage.getItem(key)!) as { accessToken: string }).accessToken, TOKENS_KEY);
      assert.notEqual(after, before);
      for (const tab of tabs) {
        const sent = await tab.evaluate(() => (window as unknown as AppWindow).sent.filter((header) => header !== ''));
        assert.deepEqual(sent, [`Bearer ${after}`], 'the tab sent its request with the new token only');
      }
      const reuses = await db.selectFrom('audit_events').select('id').where('type', '=', 'refresh.reuse_detected').where('user_id', '=', id).execute();
      assert.deepEqual(reuses, [], 'no reuse detected');

      // A sign-out in the other tab reaches this one.
      assert.equal(await tabB.evaluate(async () => (await (window as unknown as AppWindow).client.signOut()).status), 'signed-out');
      await tabA.waitForFunction(() => (window as unknown as AppWindow).client.getState().status === 'signed-out');
      assert.equal(await tabA.evaluate((key) => localStorage.getItem(key), TOKENS_KEY), null);
    });
  });
});
