/**
 * Issue 19 (item 4, the Next.js half): examples/nextjs, as an app outside this repository gets it.
 * `npm pack` makes gatehouse-protect's tarball; the example is copied to a fresh project in the
 * system's temporary directory and installed there with the MACHINE's own Node and npm (/usr/bin,
 * not the Node the tests run on): next@16, react@19 and the tarball. `next build` and `next start`
 * run on the machine's Node, against a live Gatehouse, and a real browser (Chromium) goes through
 * it: the app's /dashboard sends it to Gatehouse's sign-in page, which sends it back signed in;
 * /admin is 403 for a plain user; after signing out at Gatehouse, an app with CHECK_SESSION=true
 * refuses the old token within its 5 s cache, while an app with the defaults accepts it until it
 * expires (ACCESS_TOKEN_TTL, short here) and refuses it after.
 *
 * Gatehouse and the apps all listen on 127.0.0.1 (different ports). Cookies are not kept apart by
 * port, so the browser sends Gatehouse's `gatehouse.session` cookie (plain http: no __Host- prefix)
 * to the apps too, and gatehouse-protect reads it: the "sibling" setup of the example's README.
 *
 * Skipped, with the reason, only where the npm registry or Chromium is missing, and never in CI.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, lstatSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { backends, type TestDatabase } from '../helpers/databases.ts';
import { createUser } from '../helpers/app.ts';
import { freePort, listeningApp, type ListeningApp } from '../helpers/oidc-rp.ts';
import { REPO_ROOT, runNode } from '../helpers/process.ts';
import { killAll, MACHINE_NODE, MACHINE_NPM, prerequisites, run, start, tail, type Ran, type Started } from '../helpers/machine.ts';
import { closeBrowser, launchBrowser, skipUnlessChromium, withPage, type Browser, type Page } from '../helpers/browser.ts';

/** The machine's own Node and npm: what an app's developer has, not the Node this repository pins. */
const EXAMPLE_DIR = join(REPO_ROOT, 'examples/nextjs');
const PACKAGE = 'gatehouse-protect';
const PASSWORD = 'correct horse battery staple 1815';
const USER_EMAIL = 'ada@example.com';
/** Short, so that the defaults' "valid until it expires" is seen to end within the test. */
const ACCESS_TOKEN_TTL_SECONDS = 15;
/** gatehouse-protect's clock tolerance (contract.ts) and its checkSession cache. */
const CLOCK_TOLERANCE_SECONDS = 5;
const SESSION_CHECK_CACHE_MS = 5_000;
const inCi = process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false';

const unavailable = await prerequisites('next@16');
const chromiumSkip = skipUnlessChromium();
const skip = inCi ? false : unavailable !== true ? unavailable : chromiumSkip;

/** The exp (epoch seconds) of a JWT, read without verifying (the app verifies; this is for timing). */
function expiryOf(jwt: string): number {
  const payload = JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8')) as { exp: number };
  return payload.exp;
}

describe("examples/nextjs: Next.js 16 with gatehouse-protect from its npm pack tarball, on the machine's Node, in Chromium", { skip, timeout: 600_000 }, () => {
  let work: string | undefined;
  let project: string;
  let database: TestDatabase | undefined;
  let gatehouse: ListeningApp | undefined;
  let browser: Browser | undefined;
  /** Two `next start` of the same build: the defaults, and CHECK_SESSION=true. */
  let plainApp: Started | undefined;
  let checkedApp: Started | undefined;
  let plainUrl: string;
  let checkedUrl: string;
  let userId: string;
  const timings: string[] = [];

  async function timed<T>(what: string, fn: () => Promise<T>): Promise<T> {
    const began = Date.now();
    try {
      return await fn();
    } finally {
      timings.push(`${what}: ${((Date.now() - began) / 1000).toFixed(1)} s`);
    }
  }

  async function startApp(port: number, env: Record<string, string>): Promise<Started> {
    const url = `http://127.0.0.1:${port}`;
    const app = start(MACHINE_NODE, ['node_modules/next/dist/bin/next', 'start', '-p', String(port), '-H', '127.0.0.1'], {
      cwd: project,
      env: { GATEHOUSE_URL: gatehouse!.url, APP_URL: url, ...env },
      deadlineMs: 590_000,
    });
    await app.waitForOutput(/Ready in/, 60_000);
    return app;
  }

  before(
    async () => {
      if (unavailable !== true) throw new Error(`${unavailable}; CI is set, so this fails instead of skipping`);
      if (chromiumSkip !== false) throw new Error(`${chromiumSkip}; CI is set, so this fails instead of skipping`);

      if (!existsSync(join(REPO_ROOT, 'packages/protect/dist'))) {
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
          return !/^(node_modules|\.next)(\/|$)/.test(path) && !path.endsWith('.tgz') && path !== 'package-lock.json' && path !== 'next-env.d.ts' && !path.endsWith('.tsbuildinfo');
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

      // next build type-checks (TypeScript) and bundles (SWC, its native binary an optional dependency of next).
      const build = await timed('next build', () => run(MACHINE_NODE, ['node_modules/next/dist/bin/next', 'build'], { cwd: project, timeoutMs: 300_000 }));
      assert.equal(build.code, 0, `next build failed:\n${build.output}`);
      assert.match(build.stdout, /Proxy|Middleware/, `next build found no proxy.ts:\n${build.output}`);

      const plainPort = await freePort();
      const checkedPort = await freePort();
      plainUrl = `http://127.0.0.1:${plainPort}`;
      checkedUrl = `http://127.0.0.1:${checkedPort}`;
      const [sqlite] = await backends();
      database = await sqlite!.create();
      gatehouse = await listeningApp(database, { TRUSTED_ORIGINS: `${plainUrl},${checkedUrl}`, ACCESS_TOKEN_TTL: `${ACCESS_TOKEN_TTL_SECONDS}s` });
      userId = (await createUser(gatehouse.services, { email: USER_EMAIL, password: PASSWORD })).id;

      await timed('next start (both)', async () => {
        [plainApp, checkedApp] = await Promise.all([startApp(plainPort, {}), startApp(checkedPort, { CHECK_SESSION: 'true' })]);
      });
      browser = await launchBrowser();
    },
    { timeout: 600_000 },
  );

  after(async (t) => {
    if ('diagnostic' in t) t.diagnostic(`timings: ${timings.join('; ')}`);
    await closeBrowser(browser);
    await plainApp?.stop(5_000);
    await checkedApp?.stop(5_000);
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
    assert.ok(existsSync(join(installed, 'dist')) && !existsSync(join(installed, 'src')));
  });

  it('applies the seed rules without a browser: / public, /api/me 401 JSON, a forged x-gatehouse-user header counts for nothing', async () => {
    for (const base of [plainUrl, checkedUrl]) {
      const home = await fetch(`${base}/`);
      assert.equal(home.status, 200);
      assert.match(await home.text(), /Public/);

      const anonymous = await fetch(`${base}/api/me`, { headers: { 'x-gatehouse-user': JSON.stringify({ userId: 'forged', roles: ['ADMIN'] }) } });
      assert.equal(anonymous.status, 401);
      assert.equal(((await anonymous.json()) as { error: string }).error, 'UNAUTHENTICATED');

      const page = await fetch(`${base}/dashboard?tab=x`, { redirect: 'manual' });
      assert.equal(page.status, 303);
      const signIn = new URL('/auth/signin', gatehouse!.url);
      signIn.searchParams.set('callbackUrl', `${base}/dashboard?tab=x`);
      assert.equal(page.headers.get('location'), signIn.href);
    }
  });

  async function signInThroughApp(page: Page, base: string): Promise<void> {
    await page.goto(`${base}/dashboard`);
    await page.waitForURL((url) => url.origin === gatehouse!.url && url.pathname === '/auth/signin');
    await page.getByLabel('Email').fill(USER_EMAIL);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Login', exact: true }).click();
    await page.waitForURL((url) => url.origin === base && url.pathname === '/dashboard');
    await page.getByText('Signed in as').waitFor();
  }

  async function expectSentToSignIn(page: Page, url: string): Promise<void> {
    await page.goto(url);
    await page.waitForURL((u) => u.origin === gatehouse!.url && u.pathname === '/auth/signin');
    assert.equal(new URL(page.url()).searchParams.get('callbackUrl'), url);
  }

  it("signs in through Gatehouse and back; /admin 403; after sign-out CHECK_SESSION=true refuses the token at once, the defaults until it expires", async (t) => {
    await withPage(t, browser!, {}, async (page) => {
      await signInThroughApp(page, checkedUrl);
      assert.match(await page.locator('#signed-in').innerText(), new RegExp(`Signed in as ${userId}`));

      // The same cookie, the other app (defaults): signed in there too.
      await page.goto(`${plainUrl}/dashboard`);
      assert.equal(new URL(page.url()).origin, plainUrl);
      await page.getByText(`Signed in as ${userId}`).waitFor();

      // A plain user at /admin: 403, not the admin page.
      for (const base of [plainUrl, checkedUrl]) {
        const admin = await page.goto(`${base}/admin`);
        assert.equal(admin?.status(), 403);
        assert.ok(!(await page.content()).includes('Admin area'));
      }

      // /api/me: the token's user.
      const me = await page.goto(`${checkedUrl}/api/me`);
      assert.equal(me?.status(), 200);
      assert.equal(((await me!.json()) as { userId: string }).userId, userId);
      const lastCheckedAt = Date.now();

      const [session] = (await page.context().cookies(gatehouse!.url)).filter((cookie) => cookie.name === 'gatehouse.session');
      assert.ok(session, 'Gatehouse set its session cookie (gatehouse.session, no __Host- prefix on http)');
      const expiresAt = expiryOf(session.value);

      // Sign out at Gatehouse, with its own page.
      await page.goto(`${gatehouse!.url}/auth/signout`);
      await page.getByRole('button', { name: 'Sign out', exact: true }).click();
      await page.waitForURL((url) => url.pathname !== '/auth/signout');
      assert.ok(!(await page.context().cookies(gatehouse!.url)).some((cookie) => cookie.name === 'gatehouse.session' && cookie.value === session.value), 'sign-out cleared the cookie');
      await expectSentToSignIn(page, `${plainUrl}/dashboard`);

      // The token is still out there (a copy kept anywhere): put it back in the browser, again
      // before each visit (Gatehouse's sign-in page may clear it when the browser passes there).
      const putBack = () => page.context().addCookies([{ name: 'gatehouse.session', value: session.value, domain: '127.0.0.1', path: '/', httpOnly: true, sameSite: 'Lax' }]);
      /** Still inside the token's lifetime as gatehouse-protect counts it (exp plus its clock tolerance). */
      const alive = () => Date.now() / 1000 < expiresAt + CLOCK_TOLERANCE_SECONDS;
      await putBack();

      // The defaults verify the token offline: still accepted while it lives.
      await page.goto(`${plainUrl}/dashboard`);
      assert.ok(alive(), 'the token has not expired yet (the test was too slow otherwise)');
      assert.equal(new URL(page.url()).origin, plainUrl, 'the defaults accept a signed-out token within its lifetime');
      await page.getByText(`Signed in as ${userId}`).waitFor();

      // CHECK_SESSION=true asks Gatehouse: refused once the 5 s cache of the last "live" answer is over.
      await sleep(Math.max(0, lastCheckedAt + SESSION_CHECK_CACHE_MS + 500 - Date.now()));
      await expectSentToSignIn(page, `${checkedUrl}/dashboard`);
      await putBack();
      const api = await page.goto(`${checkedUrl}/api/me`);
      assert.equal(api?.status(), 401);
      assert.equal(((await api!.json()) as { error: string }).error, 'UNAUTHENTICATED');
      // ...while the same token is still good for the defaults: the refusal was the session check's.
      await putBack();
      const stillAccepted = await page.goto(`${plainUrl}/api/me`);
      assert.ok(alive(), 'the token was still alive when CHECK_SESSION=true refused it (the test was too slow otherwise)');
      assert.equal(stillAccepted?.status(), 200, 'the defaults still accept it');

      // ACCESS_TOKEN_TTL bounds the defaults: refused after the token expires (plus the clock tolerance).
      await sleep(Math.max(0, (expiresAt + CLOCK_TOLERANCE_SECONDS + 1) * 1000 - Date.now()));
      await putBack();
      const expired = await page.goto(`${plainUrl}/api/me`);
      assert.equal(expired?.status(), 401, 'the defaults refuse the token once it has expired');
      await putBack();
      await expectSentToSignIn(page, `${plainUrl}/dashboard`);
    });
  });
});
