/**
 * Issue 32 (items 1 and 2, the Next.js half of the tests): examples/nextjs in sign-in mode, as an
 * app outside this repository gets it. `npm pack` makes gatehouse-protect's tarball; the example is
 * copied to a fresh project in the system's temporary directory and installed there with the
 * MACHINE's own Node and npm (/usr/bin, not the Node the tests run on): next@16, react@19 and the
 * tarball. One `next build`, one `next start` on the machine's Node, against a live Gatehouse, and
 * one real browser (Chromium).
 *
 * The app listens on 127.0.0.1 and Gatehouse on localhost: different hosts, so no cookie of one ever
 * reaches the other; the app has a session of its own (gatehouse-protect/next). Chromium signs in on
 * Gatehouse's page and lands on the app's /dashboard showing the user; /admin is refused without the
 * role and allowed with it; a session due for a refresh is refreshed in the proxy and the page sees
 * the refreshed one; signing out at the app ends both sessions; signing out at Gatehouse ends the
 * app's session through back-channel logout within seconds; a tampered or foreign session cookie is
 * refused. The API under /api/items takes client-credentials tokens Gatehouse issued for it: a
 * scope rule passes, a wrong-scope one answers 403 INSUFFICIENT_SCOPE, a token for another audience
 * 401 INVALID_TOKEN.
 *
 * Skipped, with the reason, only where the npm registry or Chromium is missing, and never in CI.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, lstatSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import * as oidc from 'openid-client';
import { backends, type TestDatabase } from '../helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../helpers/app.ts';
import { discover, freePort, registerClient } from '../helpers/oidc-rp.ts';
import { REPO_ROOT, runNode } from '../helpers/process.ts';
import { killAll, MACHINE_NODE, MACHINE_NPM, examplePrerequisites, run, start, type Started } from '../helpers/machine.ts';
import { closeBrowser, launchBrowser, withPage, type Browser, type Page } from '../helpers/browser.ts';
import { SYSTEM_SOURCE } from '../../src/audit/audit.service.ts';
import { createSealer } from '../../packages/protect/src/session-cookie.ts';

const EXAMPLE_DIR = join(REPO_ROOT, 'examples/nextjs');
const PACKAGE = 'gatehouse-protect';
const PASSWORD = 'correct horse battery staple 1815';
const USER = { email: 'ada@example.com', name: 'Ada Lovelace' };
const ADMIN = { email: 'grace@example.com', name: 'Grace Hopper' };
const SESSION_SECRET = 'the-example-session-secret-of-32-characters-or-more';
const SESSION_COOKIE = 'gatehouse-app.session';
/** How long a back-channel logout may take to end the app's session. */
const BACKCHANNEL_WITHIN_MS = 10_000;

const needs = await examplePrerequisites('next@16');
const skip = needs.skip;

describe("examples/nextjs: Next.js 16 in sign-in mode with gatehouse-protect from its npm pack tarball, on the machine's Node, in Chromium", { skip, timeout: 600_000 }, () => {
  let work: string | undefined;
  let project: string;
  let database: TestDatabase | undefined;
  let gatehouse: TestApp | undefined;
  let gatehouseUrl: string;
  let browser: Browser | undefined;
  let app: Started | undefined;
  let appUrl: string;
  let userId: string;
  let machineToken: string;
  let otherAudienceToken: string;
  const timings: string[] = [];

  async function timed<T>(what: string, fn: () => Promise<T>): Promise<T> {
    const began = Date.now();
    try {
      return await fn();
    } finally {
      timings.push(`${what}: ${((Date.now() - began) / 1000).toFixed(1)} s`);
    }
  }

  before(
    async () => {
      needs.requireAll();

      if (!existsSync(join(REPO_ROOT, 'packages/protect/dist/next.js'))) {
        const build = await runNode([join(REPO_ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(REPO_ROOT, 'packages/protect/tsconfig.json')], { env: {}, timeoutMs: 90_000 });
        assert.equal(build.code, 0, `building packages/protect failed:\n${build.stdout}${build.stderr}`);
      }

      // The example, without anything a local run may have left in it, outside the repository.
      work = mkdtempSync(join(tmpdir(), 'gatehouse-nextjs-example-'));
      project = join(work, 'app');
      cpSync(EXAMPLE_DIR, project, {
        recursive: true,
        filter: (source) => {
          const path = relative(EXAMPLE_DIR, source).split(sep).join('/');
          return !/^(node_modules|\.next)(\/|$)/.test(path) && !path.endsWith('.tgz') && path !== 'package-lock.json' && path !== 'next-env.d.ts' && !path.endsWith('.tsbuildinfo') && !path.startsWith('.env');
        },
      });
      assert.ok(!realpathSync(project).startsWith(realpathSync(REPO_ROOT)), 'the project is outside the repository');

      const pack = await run(MACHINE_NPM, ['pack', '--json', '--ignore-scripts', '--pack-destination', project, '-w', PACKAGE], { cwd: REPO_ROOT, timeoutMs: 120_000 });
      assert.equal(pack.code, 0, `npm pack failed:\n${pack.output}`);
      const [entry] = JSON.parse(pack.stdout) as { name: string; filename: string }[];
      assert.equal(entry?.name, PACKAGE);
      const manifest = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
      assert.equal(manifest.dependencies[PACKAGE], `file:${entry.filename}`, `examples/nextjs/package.json must name the tarball npm pack writes`);

      // next@16, react@19, react-dom@19 and the TypeScript tooling from the registry; ours from the tarball.
      const install = await timed('npm install', () => run(MACHINE_NPM, ['install', '--no-audit', '--no-fund'], { cwd: project, timeoutMs: 300_000 }));
      assert.equal(install.code, 0, `npm install failed:\n${install.output}`);

      // next build type-checks (TypeScript) and bundles (SWC, its native binary an optional dependency of next),
      // without any of the app's settings: they are read at run time.
      const build = await timed('next build', () => run(MACHINE_NODE, ['node_modules/next/dist/bin/next', 'build'], { cwd: project, timeoutMs: 300_000 }));
      assert.equal(build.code, 0, `next build failed:\n${build.output}`);
      assert.match(build.stdout, /Proxy|Middleware/, `next build found no proxy.ts:\n${build.output}`);

      // Gatehouse on localhost, the app on 127.0.0.1: the app's URLs first, since Gatehouse is told them.
      const appPort = await freePort();
      appUrl = `http://127.0.0.1:${appPort}`;
      const apiAudience = `${appUrl}/api`;
      const otherAudience = 'http://127.0.0.1:1/another-api';
      const [sqlite] = await backends();
      database = await sqlite!.create();
      const gatehousePort = await freePort();
      gatehouseUrl = `http://localhost:${gatehousePort}`;
      gatehouse = await createTestApp(database, {
        env: {
          AUTH_URL: gatehouseUrl,
          // Back-channel logout tokens to an app on loopback (development only).
          OIDC_PROVIDER_ALLOW_PRIVATE_TARGETS: 'true',
          OIDC_PROVIDER_RESOURCES: `${apiAudience}=read:items write:items,${otherAudience}=read:items`,
        },
      });
      await gatehouse.app.listen({ port: gatehousePort, host: '127.0.0.1' });
      userId = (await createUser(gatehouse.services, { ...USER, password: PASSWORD })).id;
      await createUser(gatehouse.services, { ...ADMIN, password: PASSWORD, roles: ['ADMIN'] });

      // The app's client, as `gatehouse clients create … --json` registers it (README.md).
      const { clientId, clientSecret } = await registerClient(gatehouse, {
        name: 'Next.js example',
        redirectUris: [`${appUrl}/auth/callback`],
        postLogoutRedirectUris: [`${appUrl}/`],
        grantTypes: ['authorization_code', 'refresh_token'],
        isFirstParty: true,
        backchannelLogoutUri: `${appUrl}/auth/backchannel-logout`,
      });
      // A machine, with tokens for the app's API (read:items only) and for another API.
      const machine = await registerClient(gatehouse, { name: 'Nightly job', grantTypes: ['client_credentials'] });
      const machineConfig = await discover(gatehouseUrl, machine.clientId, machine.clientSecret);
      machineToken = (await oidc.clientCredentialsGrant(machineConfig, { scope: 'read:items', resource: apiAudience })).access_token;
      otherAudienceToken = (await oidc.clientCredentialsGrant(machineConfig, { scope: 'read:items', resource: otherAudience })).access_token;

      app = await timed('next start', async () => {
        const started = start(MACHINE_NODE, ['node_modules/next/dist/bin/next', 'start', '-p', String(appPort), '-H', '127.0.0.1'], {
          cwd: project,
          env: { GATEHOUSE_URL: gatehouseUrl, APP_URL: appUrl, CLIENT_ID: clientId, CLIENT_SECRET: clientSecret!, SESSION_SECRET, API_AUDIENCE: apiAudience },
          deadlineMs: 590_000,
        });
        await started.waitForOutput(/Ready in/, 60_000);
        return started;
      });
      browser = await launchBrowser();
    },
    { timeout: 600_000 },
  );

  after(async (t) => {
    if ('diagnostic' in t) t.diagnostic(`timings: ${timings.join('; ')}`);
    await closeBrowser(browser);
    await app?.stop(5_000);
    killAll();
    await gatehouse?.close();
    await database?.drop();
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  it("runs on the machine's own Node with next 16, and gatehouse-protect installed from its tarball", async (t) => {
    const version = await run(MACHINE_NODE, ['--version'], { cwd: project, timeoutMs: 10_000 });
    const next = JSON.parse(readFileSync(join(project, 'node_modules/next/package.json'), 'utf8')) as { version: string };
    t.diagnostic(`machine Node ${version.stdout.trim()}, next ${next.version} (the tests run on ${process.version})`);
    assert.equal(next.version.split('.')[0], '16');
    const installed = join(project, 'node_modules', PACKAGE);
    const stat = lstatSync(installed);
    assert.ok(stat.isDirectory() && !stat.isSymbolicLink(), `${installed} is a real directory`);
    assert.ok(existsSync(join(installed, 'dist/next.js')) && !existsSync(join(installed, 'src')));
  });

  it('applies the rules without a browser: / public, /api/me 401 JSON, pages to the app’s own sign-in, which goes to Gatehouse', async () => {
    const home = await fetch(`${appUrl}/`);
    assert.equal(home.status, 200);
    assert.match(await home.text(), /Public/);

    const anonymous = await fetch(`${appUrl}/api/me`);
    assert.equal(anonymous.status, 401);
    assert.equal(((await anonymous.json()) as { error: string }).error, 'UNAUTHENTICATED');

    const page = await fetch(`${appUrl}/dashboard?tab=x`, { redirect: 'manual' });
    assert.equal(page.status, 303);
    // (Next.js writes a same-origin Location as a path.)
    assert.equal(new URL(page.headers.get('location')!, appUrl).href, `${appUrl}/auth/signin?returnTo=${encodeURIComponent('/dashboard?tab=x')}`);

    const signIn = await fetch(`${appUrl}/auth/signin?returnTo=/dashboard`, { redirect: 'manual' });
    assert.equal(signIn.status, 303);
    const authorize = new URL(signIn.headers.get('location')!);
    assert.equal(authorize.origin, gatehouseUrl, 'the authorization request goes to Gatehouse');
    assert.equal(authorize.searchParams.get('redirect_uri'), `${appUrl}/auth/callback`);
    assert.equal(authorize.searchParams.get('code_challenge_method'), 'S256');

    assert.equal((await fetch(`${appUrl}/auth/elsewhere`)).status, 404);
    assert.equal((await fetch(`${appUrl}/auth/signout`)).status, 405);
    const crossSite = await fetch(`${appUrl}/auth/signout`, { method: 'POST', headers: { origin: 'https://evil.example' }, redirect: 'manual' });
    assert.equal(crossSite.status, 403, 'another site cannot sign people out');
  });

  async function signIn(page: Page, who: { email: string }, path = '/dashboard'): Promise<void> {
    await page.goto(`${appUrl}${path}`);
    // The app sent the browser to Gatehouse, whose own sign-in page asks.
    await page.waitForURL((url) => url.origin === gatehouseUrl && url.pathname === '/auth/signin');
    await page.getByLabel('Email').fill(who.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Login', exact: true }).click();
    await page.waitForURL(`${appUrl}${path}`);
  }

  const sessionCookieOf = async (page: Page) => (await page.context().cookies(appUrl)).find((cookie) => cookie.name === SESSION_COOKIE);
  /** /api/me with only this session cookie, as any HTTP client holding a copy of it. */
  const meWith = (value: string) => fetch(`${appUrl}/api/me`, { headers: { cookie: `${SESSION_COOKIE}=${value}` } });

  it('signs in on Gatehouse’s page and lands on /dashboard with the user; /admin 403; a tampered or foreign cookie is refused; signing out at the app ends both sessions', (t) =>
    withPage(t, browser!, {}, async (page) => {
      await signIn(page, USER);
      assert.equal(await page.locator('#email').textContent(), USER.email);
      assert.equal(await page.locator('#roles').textContent(), 'none');
      const cookie = await sessionCookieOf(page);
      assert.ok(cookie, 'the app has a session cookie of its own');
      assert.equal(cookie.httpOnly, true);
      assert.ok(!(await page.context().cookies(appUrl)).some((c) => c.name.startsWith('gatehouse.')), 'no Gatehouse cookie on the app');

      const admin = await page.goto(`${appUrl}/admin`);
      assert.equal(admin?.status(), 403);
      assert.ok(!(await page.content()).includes('Admin area'));
      const me = await page.goto(`${appUrl}/api/me`);
      assert.equal(me?.status(), 200);
      const body = (await me!.json()) as { userId: string; email: string };
      assert.equal(body.userId, userId);
      assert.equal(body.email, USER.email);

      // A cookie changed by a byte, or sealed with another secret (claiming ADMIN): refused, and cleared.
      const tampered = `${cookie.value.slice(0, -4)}${cookie.value.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
      const now = Math.floor(Date.now() / 1000);
      const foreign = await createSealer(['another-secret-of-more-than-32-characters'], 'session').seal({ sub: userId, roles: ['ADMIN'], amr: ['pwd'], scope: 'openid', accessToken: 'x', accessTokenExpiresAt: now + 600, since: now, until: now + 3600 }, now + 3600);
      for (const value of [tampered, foreign]) {
        const response = await meWith(value);
        assert.equal(response.status, 401);
        assert.match(response.headers.get('set-cookie') ?? '', new RegExp(`^${SESSION_COOKIE}=;.*Max-Age=0`));
        const adminPage = await fetch(`${appUrl}/admin`, { headers: { cookie: `${SESSION_COOKIE}=${value}` }, redirect: 'manual' });
        assert.equal(adminPage.status, 303, 'sent to sign in, not let in');
      }

      // Sign out at the app: its session ends, and Gatehouse (RP-initiated logout) asks to end its own.
      await page.goto(`${appUrl}/dashboard`);
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL((url) => url.origin === gatehouseUrl);
      await page.getByRole('button', { name: 'Sign out', exact: true }).click();
      await page.waitForURL(`${appUrl}/`);
      assert.equal(await sessionCookieOf(page), undefined, 'the app’s session cookie is gone');
      assert.equal((await meWith(cookie.value)).status, 401, 'a copy of the old cookie is refused');
      await page.goto(`${gatehouseUrl}/dashboard`);
      assert.equal(new URL(page.url()).pathname, '/auth/signin', 'Gatehouse’s session ended too');
      await page.goto(`${appUrl}/dashboard`);
      await page.waitForURL((url) => url.origin === gatehouseUrl && url.pathname === '/auth/signin');
    }));

  it('refreshes a session due for it in the proxy, and the page renders the refreshed one (new roles)', (t) =>
    withPage(t, browser!, {}, async (page) => {
      await signIn(page, USER);
      const cookie = (await sessionCookieOf(page))!;
      // Gatehouse gives the user a role; the app's session learns it at its next refresh.
      const updated = await gatehouse!.services.admin.updateUser(userId, { roles: ['EDITOR'] }, SYSTEM_SOURCE);
      assert.ok(updated.ok);
      try {
        // The session as the app sealed it, made due for a refresh (the test holds the app's secret).
        const sealer = createSealer([SESSION_SECRET], 'session');
        const session = (await sealer.open(cookie.value, 'session'))!;
        const due = await sealer.seal({ ...session, accessTokenExpiresAt: Math.floor(Date.now() / 1000) - 1 }, session.until as number);
        await page.context().addCookies([{ ...cookie, value: due }]);
        await page.goto(`${appUrl}/dashboard`);
        assert.equal(await page.locator('#roles').textContent(), 'EDITOR', 'the page read the refreshed session, not the cookie the browser sent');
        const renewed = (await sessionCookieOf(page))!;
        assert.notEqual(renewed.value, due, 'the browser got the refreshed session');
        assert.notEqual((await sealer.open(renewed.value, 'session'))!.accessToken, session.accessToken, 'with a new access token');
      } finally {
        await gatehouse!.services.admin.updateUser(userId, { roles: [] }, SYSTEM_SOURCE);
      }
    }));

  it('lets an ADMIN into /admin; signing out at Gatehouse ends the app’s session through back-channel logout within seconds', (t) =>
    withPage(t, browser!, {}, async (page) => {
      await signIn(page, ADMIN, '/admin');
      assert.equal(await page.locator('h1').textContent(), 'Admin area');
      const cookie = (await sessionCookieOf(page))!;
      assert.equal((await meWith(cookie.value)).status, 200);

      // Signing out on Gatehouse's own page: nothing goes through the app's pages.
      await page.goto(`${gatehouseUrl}/auth/signout`);
      await page.getByRole('button', { name: 'Sign out', exact: true }).click();
      await page.waitForURL((url) => url.origin === gatehouseUrl && url.pathname !== '/auth/signout');
      // Gatehouse posts a logout token to the app; the app's session ends at its next request.
      const deadline = Date.now() + BACKCHANNEL_WITHIN_MS;
      let status = 200;
      while (status !== 401 && Date.now() < deadline) {
        status = (await meWith(cookie.value)).status;
        if (status !== 401) await delay(100);
      }
      assert.equal(status, 401, `the app's session still worked ${BACKCHANNEL_WITHIN_MS} ms after signing out at Gatehouse`);
      await page.goto(`${appUrl}/admin`);
      await page.waitForURL((url) => url.origin === gatehouseUrl && url.pathname === '/auth/signin');
    }));

  it('protects the API for machines by scope: read:items passes, write:items is 403 INSUFFICIENT_SCOPE, another audience 401 INVALID_TOKEN', async () => {
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
    const items = await fetch(`${appUrl}/api/items`, { headers: bearer(machineToken) });
    assert.equal(items.status, 200);
    assert.equal(((await items.json()) as { items: unknown[] }).items.length, 2);

    const write = await fetch(`${appUrl}/api/items/write`, { method: 'POST', headers: { ...bearer(machineToken), 'content-type': 'application/json' }, body: '{"name":"Pier"}' });
    assert.equal(write.status, 403);
    assert.equal(write.headers.get('www-authenticate'), 'Bearer error="insufficient_scope", scope="read:items write:items"');
    assert.equal(((await write.json()) as { error: string }).error, 'INSUFFICIENT_SCOPE');

    const other = await fetch(`${appUrl}/api/items`, { headers: bearer(otherAudienceToken) });
    assert.equal(other.status, 401);
    assert.equal(other.headers.get('www-authenticate'), 'Bearer error="invalid_token"');
    assert.equal(((await other.json()) as { error: string }).error, 'INVALID_TOKEN');

    const none = await fetch(`${appUrl}/api/items`);
    assert.equal(none.status, 401);
    assert.equal(((await none.json()) as { error: string }).error, 'UNAUTHENTICATED');
    // A person's session is not a token for the API (and the API is not the person's pages).
    const page = await fetch(`${appUrl}/api/items`, { headers: { cookie: `${SESSION_COOKIE}=x` } });
    assert.equal(page.status, 401);
  });
});
