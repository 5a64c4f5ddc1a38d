/**
 * Issues 19 and 32: examples/express, as an app outside this repository gets it. `npm pack` makes
 * the tarballs of gatehouse-protect and gatehouse-client; the example is copied to a fresh project
 * in the system's temporary directory (so nothing can resolve from the workspace) and installed
 * there with the MACHINE's own Node and npm (/usr/bin, not the Node 24 the tests run on), from the
 * npm registry and the two tarballs. It must then type-check under moduleResolution `node16`
 * (TypeScript 7 and 5.9) and `node` (TypeScript 5.9, through the packages' typesVersions), with a
 * wrong property on `req.gatehouse` refused (the typing is real), build, and run on the machine's
 * Node against a live Gatehouse on ANOTHER HOST (Gatehouse on `localhost`, the app on `127.0.0.1`:
 * no cookie of one ever reaches the other). Its pages use sign-in mode: Chromium signs in on
 * Gatehouse's page and lands on the app's /dashboard showing the user; /admin is refused without
 * the role; signing out at the app ends both sessions; signing out at Gatehouse ends the app's
 * session through back-channel logout; a tampered or foreign session cookie is refused. Its API
 * takes machine tokens: a client-credentials token passes a scope rule, fails a wrong-scope rule
 * with 403 INSUFFICIENT_SCOPE, and a token for another audience gets 401 INVALID_TOKEN.
 * gatehouse-client's script, on the same Node, signs in and calls the app's API.
 *
 * Skipped, with the reason, only where the npm registry or Chromium is missing, and never in CI.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, lstatSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import * as oidc from 'openid-client';
import { backends, type TestDatabase } from '../helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../helpers/app.ts';
import { discover, registerClient } from '../helpers/oidc-rp.ts';
import { freePort, REPO_ROOT, runNode } from '../helpers/process.ts';
import { killAll, MACHINE_NODE, MACHINE_NPM, examplePrerequisites, run, start, type Ran, type Started } from '../helpers/machine.ts';
import { closeBrowser, launchBrowser, withPage, type Browser, type Page } from '../helpers/browser.ts';
import { createSealer } from '../../packages/protect/src/session-cookie.ts';

/** The machine's own Node and npm: what an app's developer has, not the Node this repository pins. */
const EXAMPLE_DIR = join(REPO_ROOT, 'examples/express');
const PACKAGES = ['gatehouse-protect', 'gatehouse-client'] as const;
const PASSWORD = 'correct horse battery staple 1815';
const USER_EMAIL = 'ada@example.com';
const ADMIN_EMAIL = 'grace@example.com';
const SESSION_SECRET = 'the-example-app-session-secret-0123456789';

const needs = await examplePrerequisites('express');
const skip = needs.skip;

describe("examples/express: the packages from npm pack tarballs, in a fresh project on the machine's Node, on another host than Gatehouse", { skip, timeout: 300_000 }, () => {
  let work: string | undefined;
  let project: string;
  let database: TestDatabase | undefined;
  let gatehouse: TestApp | undefined;
  let gatehouseUrl: string;
  let app: Started | undefined;
  let appUrl: string;
  let apiAudience: string;
  let browser: Browser | undefined;
  let userId: string;
  let webClientId: string;
  let machineId: string;
  /** Client-credentials tokens: for the app's API with reports:read, with audit:read only, for another API. */
  let reportsToken: string;
  let wrongScopeToken: string;
  let otherAudienceToken: string;
  const packed = new Map<string, { filename: string; files: string[] }>();

  /** A machine-Node command in the project, which must succeed. */
  async function inProject(args: readonly string[], what: string, timeoutMs = 120_000): Promise<Ran> {
    const ran = await run(MACHINE_NODE, args, { cwd: project, timeoutMs });
    assert.equal(ran.code, 0, `${what} failed:\n${ran.output}`);
    return ran;
  }

  before(
    async () => {
      needs.requireAll();

      // The workspace packages' dist/ (built by `npm install` / `npm test` at the root), built here only if missing.
      for (const dir of ['packages/protect', 'packages/client']) {
        if (existsSync(join(REPO_ROOT, dir, 'dist'))) continue;
        const build = await runNode([join(REPO_ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(REPO_ROOT, dir, 'tsconfig.json')], { env: {}, timeoutMs: 90_000 });
        assert.equal(build.code, 0, `building ${dir} failed:\n${build.stdout}${build.stderr}`);
      }

      // The example, without anything a local run may have left in it, outside the repository.
      work = mkdtempSync(join(tmpdir(), 'gatehouse-express-example-'));
      project = join(work, 'app');
      cpSync(EXAMPLE_DIR, project, {
        recursive: true,
        filter: (source) => {
          const path = relative(EXAMPLE_DIR, source).split(sep).join('/');
          return !/^(node_modules|dist)(\/|$)/.test(path) && !path.endsWith('.tgz') && path !== 'package-lock.json';
        },
      });
      assert.ok(!realpathSync(project).startsWith(realpathSync(REPO_ROOT)), 'the project is outside the repository');

      // npm pack, as a publisher would (scripts off: dist/ is built, and a prepack rebuilding it
      // would rewrite files other test files are importing at the same time).
      const pack = await run(MACHINE_NPM, ['pack', '--json', '--ignore-scripts', '--pack-destination', project, ...PACKAGES.flatMap((name) => ['-w', name])], { cwd: REPO_ROOT, timeoutMs: 120_000 });
      assert.equal(pack.code, 0, `npm pack failed:\n${pack.output}`);
      for (const entry of JSON.parse(pack.stdout) as { name: string; filename: string; files: { path: string }[] }[]) {
        packed.set(entry.name, { filename: entry.filename, files: entry.files.map((file) => file.path) });
      }
      const manifest = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
      for (const name of PACKAGES) {
        assert.ok(packed.has(name), `npm pack made no tarball for ${name}`);
        assert.equal(manifest.dependencies[name], `file:${packed.get(name)!.filename}`, `examples/express/package.json must name the tarball npm pack writes for ${name}`);
      }

      // Installed by the machine's npm (on the machine's Node): the registry for express and the
      // tooling, the tarballs for ours.
      const install = await run(MACHINE_NPM, ['install', '--no-audit', '--no-fund'], { cwd: project, timeoutMs: 240_000 });
      assert.equal(install.code, 0, `npm install failed:\n${install.output}`);

      // The build: TypeScript 7, moduleResolution node16 (type-checks as it emits).
      await inProject(['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json'], 'tsc -p tsconfig.json (TypeScript 7)');

      // Gatehouse on localhost, the app on 127.0.0.1: two hosts, so no cookie of one reaches the other.
      const gatehousePort = await freePort();
      const appPort = await freePort();
      gatehouseUrl = `http://localhost:${gatehousePort}`;
      appUrl = `http://127.0.0.1:${appPort}`;
      apiAudience = `${appUrl}/api`;
      const otherApi = 'http://127.0.0.1:1/other-api';
      const [sqlite] = await backends();
      database = await sqlite!.create();
      gatehouse = await createTestApp(database, {
        env: {
          AUTH_URL: gatehouseUrl,
          // The API's resource and its scopes; back-channel logout may go to a loopback app.
          OIDC_PROVIDER_RESOURCES: `${apiAudience}=reports:read audit:read,${otherApi}=reports:read`,
          OIDC_PROVIDER_ALLOW_PRIVATE_TARGETS: 'true',
        },
      });
      await gatehouse.app.listen({ port: gatehousePort, host: '127.0.0.1' });
      userId = (await createUser(gatehouse.services, { email: USER_EMAIL, password: PASSWORD, name: 'Ada Lovelace' })).id;
      await createUser(gatehouse.services, { email: ADMIN_EMAIL, password: PASSWORD, roles: ['ADMIN'] });

      // The app's client, registered as its README says (first party: Gatehouse asks no consent).
      const web = await registerClient(gatehouse, {
        name: 'Express example',
        redirectUris: [`${appUrl}/auth/callback`],
        postLogoutRedirectUris: [`${appUrl}/`],
        grantTypes: ['authorization_code', 'refresh_token'],
        isFirstParty: true,
        backchannelLogoutUri: `${appUrl}/auth/backchannel-logout`,
      });
      webClientId = web.clientId;
      // A machine calling the app's API for itself.
      const machine = await registerClient(gatehouse, { name: 'Nightly report', grantTypes: ['client_credentials'] });
      machineId = machine.clientId;
      const machineConfig = await discover(gatehouseUrl, machine.clientId, machine.clientSecret);
      const tokenFor = async (scope: string, resource: string) => (await oidc.clientCredentialsGrant(machineConfig, { scope, resource })).access_token;
      [reportsToken, wrongScopeToken, otherAudienceToken] = await Promise.all([tokenFor('reports:read', apiAudience), tokenFor('audit:read', apiAudience), tokenFor('reports:read', otherApi)]);

      app = start(MACHINE_NODE, ['dist/server.js'], {
        cwd: project,
        env: { GATEHOUSE_URL: gatehouseUrl, PORT: String(appPort), HOST: '127.0.0.1', APP_URL: appUrl, CLIENT_ID: web.clientId, CLIENT_SECRET: web.clientSecret!, SESSION_SECRET },
        deadlineMs: 290_000,
      });
      await app.waitForOutput(/listening on/, 20_000);
      browser = await launchBrowser();
    },
    { timeout: 300_000 },
  );

  after(async () => {
    await closeBrowser(browser);
    await app?.stop(5_000);
    killAll();
    await gatehouse?.close();
    await database?.drop();
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  const call = (path: string, token?: string) => fetch(`${appUrl}${path}`, { redirect: 'manual', headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
  const errorOf = async (response: Response) => ((await response.json()) as { error: string }).error;

  async function signInThroughApp(page: Page, email: string, path = '/dashboard'): Promise<void> {
    await page.goto(`${appUrl}${path}`);
    // The app sent the browser to Gatehouse (by way of its OpenID Provider), whose own page asks.
    await page.waitForURL((url) => url.origin === gatehouseUrl && url.pathname === '/auth/signin');
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Login', exact: true }).click();
    await page.waitForURL(`${appUrl}${path}`);
  }

  const appSessionCookie = async (page: Page) => (await page.context().cookies(appUrl)).find((cookie) => cookie.name.startsWith('gatehouse-app.session'));
  const cookieHeader = async (page: Page) => (await page.context().cookies(appUrl)).map((cookie) => `${cookie.name}=${cookie.value}`).join('; ');

  it("runs on the machine's own Node, 20.19 or later", async (t) => {
    const { stdout } = await inProject(['--version'], 'node --version');
    const [major, minor] = stdout.trim().replace(/^v/, '').split('.').map(Number);
    t.diagnostic(`machine Node ${stdout.trim()} (the tests run on ${process.version})`);
    assert.ok(major! > 20 || (major === 20 && minor! >= 19), `the packages need Node 20.19+ (engines); the machine has ${stdout.trim()}`);
  });

  it('installs both packages from their tarballs: real directories holding dist/, not links into the workspace', () => {
    for (const name of PACKAGES) {
      const { files } = packed.get(name)!;
      assert.ok(files.includes('package.json') && files.some((file) => file.startsWith('dist/') && file.endsWith('.d.ts')), `${name}: the tarball has dist/ with types`);
      assert.ok(!files.some((file) => file.startsWith('src/') || file.startsWith('test/')), `${name}: the tarball holds no sources or tests: ${files.join(', ')}`);
      const installed = join(project, 'node_modules', name);
      const stat = lstatSync(installed);
      assert.ok(stat.isDirectory() && !stat.isSymbolicLink(), `${installed} is a real directory`);
      assert.ok(realpathSync(installed).startsWith(realpathSync(project)), `${name} resolves inside the project`);
      assert.ok(existsSync(join(installed, 'dist')), `${name} has dist/`);
      assert.ok(!existsSync(join(installed, 'src')), `${name} has no src/`);
    }
  });

  it('type-checks under moduleResolution node16 (TypeScript 7 and 5.9) and node (TypeScript 5.9, through typesVersions)', async () => {
    await inProject(['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json', '--noEmit'], 'TypeScript 7, tsconfig.json (node16)');
    await inProject(['node_modules/typescript-5/bin/tsc', '-p', 'tsconfig.json', '--noEmit'], 'TypeScript 5.9, tsconfig.json (node16)');
    await inProject(['node_modules/typescript-5/bin/tsc', '-p', 'tsconfig.node.json'], 'TypeScript 5.9, tsconfig.node.json (moduleResolution node)');
  });

  it('refuses a property GatehouseUser does not have on req.gatehouse, under both settings: the typing is real', async () => {
    writeFileSync(
      join(project, 'negative.ts'),
      [
        "import type { Request } from 'express';",
        "import type {} from 'gatehouse-protect/node';",
        'export const userId = (req: Request): string | undefined => req.gatehouse?.userId;',
        'export const wrong = (req: Request) => req.gatehouse?.nonexistent;',
        '',
      ].join('\n'),
    );
    for (const [compiler, base] of [
      ['typescript', 'tsconfig.json'],
      ['typescript-5', 'tsconfig.json'],
      ['typescript-5', 'tsconfig.node.json'],
    ] as const) {
      const config = `negative.${compiler}.${base}`;
      writeFileSync(join(project, config), JSON.stringify({ extends: `./${base}`, compilerOptions: { noEmit: true }, files: ['negative.ts'] }));
      const ran = await run(MACHINE_NODE, [`node_modules/${compiler}/bin/tsc`, '-p', config], { cwd: project, timeoutMs: 120_000 });
      const errors = `${ran.stdout}${ran.stderr}`.split('\n').filter((line) => /error TS\d+/.test(line));
      assert.notEqual(ran.code, 0, `${compiler} with ${base} accepted req.gatehouse?.nonexistent\n${ran.output}`);
      assert.equal(errors.length, 1, `${compiler} with ${base}: exactly the one wrong line fails\n${ran.output}`);
      assert.match(errors[0]!, /negative\.ts\(4,\d+\): error TS2339: Property 'nonexistent' does not exist on type 'GatehouseUser'/, `${compiler} with ${base}`);
    }
  });

  it('signs in through Gatehouse on another host and lands on the dashboard showing the user; /admin is refused without the role', (t) =>
    withPage(t, browser!, {}, async (page) => {
      await signInThroughApp(page, USER_EMAIL);
      assert.match((await page.locator('#who').textContent()) ?? '', new RegExp(`Signed in as ${USER_EMAIL} \\(${userId}; roles: none\\)`));
      const cookie = await appSessionCookie(page);
      assert.ok(cookie, 'the app keeps a session of its own');
      assert.equal(cookie.httpOnly, true);
      assert.ok(!(await page.context().cookies(appUrl)).some((c) => c.name.startsWith('gatehouse.')), 'no Gatehouse cookie on the app');

      const admin = await page.goto(`${appUrl}/admin`);
      assert.equal(admin?.status(), 403);
      assert.ok(!((await page.content()).includes('Admin area')));
      // The pages' session is no key to the API: it takes Bearer tokens only.
      const api = await fetch(`${appUrl}/api/me`, { headers: { cookie: await cookieHeader(page) } });
      assert.equal(api.status, 401);
    }));

  it('lets an ADMIN into /admin', (t) =>
    withPage(t, browser!, {}, async (page) => {
      await signInThroughApp(page, ADMIN_EMAIL, '/admin');
      assert.match(await page.content(), /Admin area for/);
    }));

  it('refuses a tampered or foreign session cookie', (t) =>
    withPage(t, browser!, {}, async (page) => {
      await signInThroughApp(page, USER_EMAIL);
      const cookie = (await appSessionCookie(page))!;
      assert.equal((await fetch(`${appUrl}/dashboard`, { redirect: 'manual', headers: { cookie: `${cookie.name}=${cookie.value}` } })).status, 200, 'the real one opens the page');
      const tampered = `${cookie.value.slice(0, -4)}${cookie.value.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
      // Sealed like the app's, with the right claims and the ADMIN role, but by someone without its secret.
      const now = Math.floor(Date.now() / 1000);
      const foreign = await createSealer(['someone-else-s-secret-of-32-characters-or-more'], 'session').seal(
        { sub: userId, roles: ['ADMIN'], amr: ['pwd'], scope: 'openid', accessToken: 'x', accessTokenExpiresAt: now + 600, since: now, until: now + 3600 },
        now + 3600,
      );
      for (const value of [tampered, foreign]) {
        const response = await fetch(`${appUrl}/admin`, { redirect: 'manual', headers: { cookie: `${cookie.name}=${value}` } });
        assert.equal(response.status, 303, 'no session: sent to sign in');
        assert.match(response.headers.get('set-cookie') ?? '', new RegExp(`${cookie.name}=;.*Max-Age=0`), 'the bad cookie is cleared');
      }
    }));

  it('signs out at the app and at Gatehouse (RP-initiated logout)', (t) =>
    withPage(t, browser!, {}, async (page) => {
      await signInThroughApp(page, USER_EMAIL);
      await page.getByRole('button', { name: 'Sign out' }).click();
      // Gatehouse asks whether to sign out of it too.
      await page.waitForURL((url) => url.origin === gatehouseUrl);
      await page.getByRole('button', { name: 'Sign out', exact: true }).click();
      await page.waitForURL(`${appUrl}/`);
      assert.equal(await appSessionCookie(page), undefined, "the app's session is gone");
      assert.match(await page.content(), />Sign in</);
      await page.goto(`${gatehouseUrl}/dashboard`);
      assert.equal(new URL(page.url()).pathname, '/auth/signin', "Gatehouse's session is gone too");
    }));

  it("ends the app's session when the person signs out at Gatehouse (back-channel logout)", (t) =>
    withPage(t, browser!, {}, async (page) => {
      await signInThroughApp(page, USER_EMAIL);
      const cookies = await cookieHeader(page);
      await page.goto(`${gatehouseUrl}/auth/signout`);
      await page.getByRole('button', { name: 'Sign out', exact: true }).click();
      await page.waitForURL((url) => url.origin === gatehouseUrl && url.pathname === '/');
      // Gatehouse's outbox sends the logout token on its own; the app's session ends within seconds.
      const deadline = Date.now() + 15_000;
      let status = 200;
      while (status === 200 && Date.now() < deadline) {
        status = (await fetch(`${appUrl}/dashboard`, { redirect: 'manual', headers: { cookie: cookies } })).status;
        if (status === 200) await delay(100);
      }
      assert.equal(status, 303, "the app's session ended: sent to sign in");
      const delivered = await gatehouse!.services.storage.db.selectFrom('oidc_logout_deliveries').select(['client_id', 'status']).where('client_id', '=', webClientId).execute();
      assert.ok(delivered.some((row) => row.status === 'delivered'), JSON.stringify(delivered));
    }));

  it('takes machine tokens on its API: a scope rule passes and refuses, another audience is an invalid token, and no machine is told to sign in', async () => {
    const reports = await call('/api/reports', reportsToken);
    assert.equal(reports.status, 200);
    assert.deepEqual(await reports.json(), { reports: [{ id: 'weekly', title: 'Weekly sign-ins' }], calledBy: machineId, forUser: null });

    const wrongScope = await call('/api/reports', wrongScopeToken);
    assert.equal(wrongScope.status, 403);
    assert.equal(wrongScope.headers.get('www-authenticate'), 'Bearer error="insufficient_scope", scope="reports:read"');
    assert.equal(await errorOf(wrongScope), 'INSUFFICIENT_SCOPE');

    const otherAudience = await call('/api/reports', otherAudienceToken);
    assert.equal(otherAudience.status, 401);
    assert.equal(otherAudience.headers.get('www-authenticate'), 'Bearer error="invalid_token"');
    assert.equal(await errorOf(otherAudience), 'INVALID_TOKEN');

    // The same rules whatever the case Express routes by.
    assert.equal((await call('/API/Reports', wrongScopeToken)).status, 403);
    // A machine's own token speaks for no user: not for /api/me.
    const me = await call('/api/me', reportsToken);
    assert.equal(me.status, 403);
    assert.equal(await errorOf(me), 'FORBIDDEN');
    const none = await call('/api/reports');
    assert.equal(none.status, 401);
    assert.equal(await errorOf(none), 'UNAUTHENTICATED');
    assert.equal((await call('/')).status, 200, '/ is public');
  });

  it("gatehouse-client's script signs in on the machine's Node and calls the app's API with the token", async () => {
    const ran = await run(MACHINE_NODE, ['dist/client.js'], {
      cwd: project,
      env: { GATEHOUSE_URL: gatehouseUrl, APP_URL: appUrl, EMAIL: USER_EMAIL, PASSWORD },
      timeoutMs: 30_000,
    });
    assert.equal(ran.code, 0, ran.output);
    const result = JSON.parse(ran.stdout.trim().split('\n').at(-1)!) as { status: number; signedInAs: string; me: { userId: string } };
    assert.equal(result.status, 200, ran.output);
    assert.equal(result.signedInAs, USER_EMAIL);
    assert.equal(result.me.userId, userId);
  });
});
