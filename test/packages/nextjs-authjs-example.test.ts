/**
 * Issue 32 (item 3): examples/nextjs-authjs, the code of docs/guides/oidc-authjs-nextjs.md, as an
 * app outside this repository gets it. The guide shows each file of the example in a code block
 * headed by the file's name, and the first suite checks that every such block is that file, byte
 * for byte, and that every source file of the example is in the guide: what CI builds is what the
 * guide says.
 *
 * The second suite copies the example to the system's temporary directory, installs it there with
 * the MACHINE's own Node and npm (next@16 with cacheComponents, next-auth@beta as pinned), runs
 * `next build` (which stops on uncached data outside a <Suspense> boundary) and `next start`, with
 * the values of the example's .env.example pointed at a live Gatehouse, with which the guide's
 * `gatehouse clients create` command registered the app. Gatehouse is on `127.0.0.1`
 * and the app on `localhost`: different hosts, so no cookie of one reaches the other (the other way
 * round cannot work: Next.js rewrites a loopback host in request URLs to `localhost`, so Auth.js
 * would send another redirect_uri at its callback than at the sign-in; the guide says so). Chromium
 * signs in on Gatehouse's own page and lands on the app's /dashboard showing the user's e-mail and
 * roles; signing out at the app ends the app's session and, after Gatehouse's confirmation,
 * Gatehouse's too.
 *
 * Skipped, with the reason, only where the npm registry or Chromium is missing, and never in CI.
 */
import { describe, it, before, after, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { createSqliteDatabase, type TestDatabase } from '../helpers/databases.ts';
import { createUser, TEST_SECRET } from '../helpers/app.ts';
import { freePort, listeningApp, type ListeningApp } from '../helpers/oidc-rp.ts';
import { REPO_ROOT, runCli } from '../helpers/process.ts';
import { gatehouseCommand, guideFiles } from '../helpers/guides.ts';
import { killAll, MACHINE_NODE, MACHINE_NPM, examplePrerequisites, run, start, stopwatch, type Started } from '../helpers/machine.ts';
import { closeBrowser, launchBrowser, withPage, type Browser } from '../helpers/browser.ts';

const EXAMPLE = 'examples/nextjs-authjs';
const EXAMPLE_DIR = join(REPO_ROOT, EXAMPLE);
const GUIDE = join(REPO_ROOT, 'docs/guides/oidc-authjs-nextjs.md');
const PASSWORD = 'correct horse battery staple 1815';
const USER = { email: 'ada@example.com', name: 'Ada Lovelace', roles: ['ADMIN'] };
const AUTH_SECRET = 'a-test-secret-for-auth-js-of-more-than-32-characters';

/** What a local run leaves in the example, never part of it. */
const isLocalLeftover = (path: string) => /^(node_modules|\.next)(\/|$)/.test(path) || path === 'package-lock.json' || path === 'next-env.d.ts' || path.endsWith('.tsbuildinfo') || /^\.env.*\.local$/.test(path);

/** The example's files, relative to it, with `/` separators. */
function exampleFiles(dir = EXAMPLE_DIR): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    const name = relative(EXAMPLE_DIR, path).split(sep).join('/');
    if (isLocalLeftover(name)) return [];
    return entry.isDirectory() ? exampleFiles(path) : [name];
  });
}

describe('docs/guides/oidc-authjs-nextjs.md is examples/nextjs-authjs', () => {
  it('shows each source file of the example once, exactly as it is, and no file the example does not have', () => {
    const blocks = guideFiles(GUIDE);
    const files = exampleFiles();
    const sources = files.filter((file) => /\.(ts|tsx)$/.test(file) || file === '.env.example');
    assert.ok(sources.includes('auth.ts') && sources.includes('app/dashboard/page.tsx') && sources.includes('next.config.ts'), `the example's files: ${files.join(', ')}`);
    for (const file of sources) {
      const shown = blocks.get(file);
      assert.ok(shown !== undefined, `the guide shows ${EXAMPLE}/${file}`);
      assert.equal(shown.length, 1, `the guide shows ${file} once`);
      assert.equal(shown[0], readFileSync(join(EXAMPLE_DIR, file), 'utf8'), `the guide's ${file} is ${EXAMPLE}/${file}`);
    }
    for (const file of blocks.keys()) assert.ok(files.includes(file), `the guide shows ${file}, which ${EXAMPLE} does not have`);
  });

  it("registers the app with the same command as the example's README", () => {
    assert.deepEqual(gatehouseCommand(join(EXAMPLE_DIR, 'README.md'), 'clients create'), gatehouseCommand(GUIDE, 'clients create'));
  });

  it('installs next-auth@beta, and links the example', () => {
    const guide = readFileSync(GUIDE, 'utf8');
    assert.match(guide, /^\s*npm i(nstall)? .*next-auth@beta\b/m);
    assert.doesNotMatch(guide, /^\s*npm i(nstall)?\b.*next-auth@5\b/m, 'next-auth@5 finds no release (v5 is published under the beta tag)');
    assert.ok(guide.includes('../../examples/nextjs-authjs'), 'the guide links the example');
    const manifest = JSON.parse(readFileSync(join(EXAMPLE_DIR, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    assert.match(manifest.dependencies['next-auth'] ?? '', /^5\.0\.0-beta\.\d+$/, 'the example pins one v5 beta');
    assert.ok(guide.includes(manifest.dependencies['next-auth']!), 'the guide names the beta the example pins');
  });
});

const manifest = JSON.parse(readFileSync(join(EXAMPLE_DIR, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
const needs = await examplePrerequisites(`next-auth@${manifest.dependencies['next-auth']}`);
const skip = needs.skip;

describe("examples/nextjs-authjs: Next.js 16 (cacheComponents) with Auth.js v5 and Gatehouse as its OpenID Provider, on the machine's Node, in Chromium", { skip, timeout: 600_000 }, () => {
  let work: string | undefined;
  let project: string;
  let database: TestDatabase | undefined;
  let gatehouse: ListeningApp | undefined;
  let gatehouseUrl: string;
  let app: Started | undefined;
  let appUrl: string;
  let browser: Browser | undefined;
  let buildOutput: string;
  const clock = stopwatch();

  before(
    async () => {
      needs.requireAll();

      // The example, without anything a local run may have left in it, outside the repository.
      work = mkdtempSync(join(tmpdir(), 'gatehouse-nextjs-authjs-example-'));
      project = join(work, 'app');
      cpSync(EXAMPLE_DIR, project, { recursive: true, filter: (source) => !isLocalLeftover(relative(EXAMPLE_DIR, source).split(sep).join('/')) });
      assert.ok(!realpathSync(project).startsWith(realpathSync(REPO_ROOT)), 'the project is outside the repository');

      // The registry's next@16, next-auth (the pinned v5 beta), react@19 and the TypeScript tooling.
      const install = await clock.time('npm install', () => run(MACHINE_NPM, ['install', '--no-audit', '--no-fund'], { cwd: project, timeoutMs: 300_000 }));
      assert.equal(install.code, 0, `npm install failed:\n${install.output}`);

      // No Auth.js or Gatehouse value at build time: they are read when a request comes.
      const build = await clock.time('next build', () => run(MACHINE_NODE, ['node_modules/next/dist/bin/next', 'build'], { cwd: project, env: { NEXT_TELEMETRY_DISABLED: '1' }, timeoutMs: 300_000 }));
      assert.equal(build.code, 0, `next build failed:\n${build.output}`);
      buildOutput = build.stdout;

      // Gatehouse on 127.0.0.1, the app on localhost (Next.js calls every loopback host localhost).
      database = await createSqliteDatabase();
      gatehouse = await listeningApp(database);
      gatehouseUrl = gatehouse.url;
      await createUser(gatehouse.services, { ...USER, password: PASSWORD });

      // The guide's registration command, run with Gatehouse's CLI on Gatehouse's database and data,
      // with this app's address for the local one (.env.example's AUTH_URL).
      const appPort = await freePort();
      appUrl = `http://localhost:${appPort}`;
      const localAppUrl = /^AUTH_URL=(.+)$/m.exec(readFileSync(join(EXAMPLE_DIR, '.env.example'), 'utf8'))![1]!;
      const command = gatehouseCommand(GUIDE, 'clients create').map((arg) => arg.replaceAll(localAppUrl, appUrl));
      const registered = await runCli(command, { env: { NODE_ENV: 'development', AUTH_URL: gatehouse.url, AUTH_SECRET: TEST_SECRET, DATA_DIR: gatehouse.config.dataDir, DATABASE_URL: database.url }, timeoutMs: 60_000 });
      assert.equal(registered.code, 0, `gatehouse ${command.join(' ')} failed:\n${registered.stdout}${registered.stderr}`);
      const { issuer, clientId, clientSecret } = JSON.parse(registered.stdout) as { issuer: string; clientId: string; clientSecret: string };
      assert.equal(issuer, gatehouseUrl, 'the CLI prints the issuer');
      const client = await gatehouse.services.oidcClients.show(clientId);
      assert.deepEqual(client?.redirectUris, [`${appUrl}/api/auth/callback/gatehouse`], "the guide registers Auth.js's callback for the provider id gatehouse, at AUTH_URL");

      // The variables of the example's .env.example.
      const env = { AUTH_SECRET, AUTH_URL: appUrl, AUTH_GATEHOUSE_ISSUER: issuer, AUTH_GATEHOUSE_ID: clientId, AUTH_GATEHOUSE_SECRET: clientSecret, NEXT_TELEMETRY_DISABLED: '1' };
      const envExample = readFileSync(join(EXAMPLE_DIR, '.env.example'), 'utf8');
      for (const name of Object.keys(env).filter((name) => name.startsWith('AUTH_'))) assert.match(envExample, new RegExp(`^${name}=`, 'm'), `.env.example sets ${name}`);
      await clock.time('next start', async () => {
        app = start(MACHINE_NODE, ['node_modules/next/dist/bin/next', 'start', '-p', String(appPort), '-H', '127.0.0.1'], { cwd: project, env, deadlineMs: 590_000 });
        await app.waitForOutput(/Ready in/, 60_000);
      });
      browser = await launchBrowser();
    },
    { timeout: 600_000 },
  );

  /** What the app logged (Auth.js logs its errors there), with a failure. */
  async function withAppLog(t: TestContext, fn: () => Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (error) {
      t.diagnostic(app?.output() ?? 'the app did not start');
      throw error;
    }
  }

  after(async (t) => {
    if ('diagnostic' in t) t.diagnostic(clock.summary());
    await closeBrowser(browser);
    await app?.stop(5_000);
    killAll();
    await gatehouse?.close();
    await database?.drop();
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  it('builds with next 16 and cacheComponents: / static, /dashboard a partial prerender (the session streamed in its <Suspense>)', async (t) => {
    const version = await run(MACHINE_NODE, ['--version'], { cwd: project, timeoutMs: 10_000 });
    const installed = (name: string) => (JSON.parse(readFileSync(join(project, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
    t.diagnostic(`machine Node ${version.stdout.trim()}, next ${installed('next')}, next-auth ${installed('next-auth')} (the tests run on ${process.version})`);
    assert.equal(installed('next').split('.')[0], '16');
    assert.match(installed('next-auth'), /^5\./);
    assert.match(buildOutput, /Cache Components enabled/);
    assert.match(buildOutput, /○ \/\s*$/m, `/ is static:\n${buildOutput}`);
    assert.match(buildOutput, /◐ \/dashboard\s*$/m, `/dashboard is a partial prerender:\n${buildOutput}`);
  });

  it('signs in through Gatehouse and lands on /dashboard with the e-mail and roles; signing out at the app ends both sessions', (t) =>
    withAppLog(t, () => withPage(t, browser!, {}, async (page) => {
      await page.goto(`${appUrl}/dashboard`);
      await page.locator('#signed-out').waitFor();
      await page.getByRole('button', { name: 'Sign in with Gatehouse' }).click();
      await page.waitForURL((url) => url.origin === gatehouseUrl && url.pathname === '/auth/signin');
      await page.getByLabel('Email').fill(USER.email);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Login', exact: true }).click();
      await page.waitForURL(`${appUrl}/dashboard`);
      assert.equal(await page.locator('#signed-in').innerText(), `Signed in as ${USER.email} (admin)`);
      await page.getByText(`Name: ${USER.name}. Roles: ADMIN.`).waitFor();

      const appCookies = await page.context().cookies(appUrl);
      const session = appCookies.find((cookie) => cookie.name === 'authjs.session-token');
      assert.ok(session, `Auth.js's session cookie (${appCookies.map((cookie) => cookie.name).join(', ')})`);
      assert.equal(session.httpOnly, true);
      assert.ok(!appCookies.some((cookie) => cookie.name.startsWith('gatehouse.')), 'no Gatehouse cookie on the app');

      await page.getByRole('button', { name: 'Sign out' }).click();
      // Gatehouse asks whether to sign out of it too, then sends the browser to the app's home page.
      await page.waitForURL((url) => url.origin === gatehouseUrl);
      await page.getByRole('button', { name: 'Sign out', exact: true }).click();
      await page.waitForURL(`${appUrl}/`);
      assert.ok(!(await page.context().cookies(appUrl)).some((cookie) => cookie.name === 'authjs.session-token'), "the app's session is gone");
      await page.goto(`${appUrl}/dashboard`);
      await page.locator('#signed-out').waitFor();
      await page.goto(`${gatehouseUrl}/dashboard`);
      assert.equal(new URL(page.url()).pathname, '/auth/signin', "Gatehouse's session is gone");
    })));
});
