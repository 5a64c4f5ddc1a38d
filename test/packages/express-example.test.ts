/**
 * Issue 19: examples/express, as an app outside this repository gets it. `npm pack` makes the
 * tarballs of gatehouse-protect and gatehouse-client; the example is copied to a fresh project in
 * the system's temporary directory (so nothing can resolve from the workspace) and installed there
 * with the MACHINE's own Node and npm (/usr/bin, not the Node 24 the tests run on), from the npm
 * registry and the two tarballs. It must then type-check under moduleResolution `node16`
 * (TypeScript 7 and 5.9) and `node` (TypeScript 5.9, through the packages' typesVersions), with a
 * wrong property on `req.gatehouse` refused (the typing is real), build, and run on the machine's
 * Node against a live Gatehouse: `/` public, `/api/me` 401 then 200, `/admin` 403 for a user and
 * 200 for an ADMIN, and a browser without a session sent to Gatehouse's sign-in page and, signed in
 * there, back to the app (its origin in TRUSTED_ORIGINS). gatehouse-client's script, on the same
 * Node, signs in and calls the app's API.
 *
 * Skipped, with the reason, only where the npm registry cannot be reached, and never in CI.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, lstatSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import { backends, type TestDatabase } from '../helpers/databases.ts';
import { createUser } from '../helpers/app.ts';
import { Browser, freePort, hiddenValue, listeningApp, type ListeningApp } from '../helpers/oidc-rp.ts';
import { REPO_ROOT, runNode } from '../helpers/process.ts';
import { killAll, MACHINE_NODE, MACHINE_NPM, prerequisites, run, start, tail, type Ran, type Started } from '../helpers/machine.ts';

/** The machine's own Node and npm: what an app's developer has, not the Node this repository pins. */
const EXAMPLE_DIR = join(REPO_ROOT, 'examples/express');
const PACKAGES = ['gatehouse-protect', 'gatehouse-client'] as const;
const PASSWORD = 'correct horse battery staple 1815';
const USER_EMAIL = 'ada@example.com';
const ADMIN_EMAIL = 'grace@example.com';
const inCi = process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false';

const unavailable = await prerequisites('express');
const skip = unavailable === true || inCi ? false : unavailable;

describe("examples/express: the packages from npm pack tarballs, in a fresh project on the machine's Node", { skip, timeout: 300_000 }, () => {
  let work: string | undefined;
  let project: string;
  let database: TestDatabase | undefined;
  let gatehouse: ListeningApp | undefined;
  let app: Started | undefined;
  let appUrl: string;
  let userId: string;
  let userToken: string;
  let adminToken: string;
  const packed = new Map<string, { filename: string; files: string[] }>();

  /** A machine-Node command in the project, which must succeed. */
  async function inProject(args: readonly string[], what: string, timeoutMs = 120_000): Promise<Ran> {
    const ran = await run(MACHINE_NODE, args, { cwd: project, timeoutMs });
    assert.equal(ran.code, 0, `${what} failed:\n${ran.output}`);
    return ran;
  }

  async function signInForToken(email: string): Promise<string> {
    const response = await fetch(`${gatehouse!.url}/api/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password: PASSWORD }) });
    assert.equal(response.status, 200, `POST /api/auth for ${email}`);
    return ((await response.json()) as { token: string }).token;
  }

  before(
    async () => {
      if (unavailable !== true) throw new Error(`${unavailable}; CI is set, so this fails instead of skipping`);

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

      // Gatehouse, trusting the app's origin for the way back after sign-in; the app on the machine's Node.
      const appPort = await freePort();
      appUrl = `http://127.0.0.1:${appPort}`;
      const [sqlite] = await backends();
      database = await sqlite!.create();
      gatehouse = await listeningApp(database, { TRUSTED_ORIGINS: appUrl });
      userId = (await createUser(gatehouse.services, { email: USER_EMAIL, password: PASSWORD })).id;
      await createUser(gatehouse.services, { email: ADMIN_EMAIL, password: PASSWORD, roles: ['ADMIN'] });
      userToken = await signInForToken(USER_EMAIL);
      adminToken = await signInForToken(ADMIN_EMAIL);

      app = start(MACHINE_NODE, ['dist/server.js'], {
        cwd: project,
        env: { GATEHOUSE_URL: gatehouse.url, PORT: String(appPort), HOST: '127.0.0.1', APP_URL: appUrl },
        deadlineMs: 290_000,
      });
      await app.waitForOutput(/listening on/, 20_000);
    },
    { timeout: 300_000 },
  );

  after(async () => {
    await app?.stop(5_000);
    killAll();
    await gatehouse?.close();
    await database?.drop();
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  async function get(path: string, token?: string) {
    const response = await fetch(`${appUrl}${path}`, { redirect: 'manual', headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
    const text = await response.text();
    return { status: response.status, headers: response.headers, text, json: () => JSON.parse(text) as Record<string, unknown> };
  }

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

  it('applies the seed rules: / public, /api/me 401 without a token and the user with one, /admin 403 for a user and 200 for an ADMIN', async () => {
    const home = await get('/');
    assert.equal(home.status, 200);

    const anonymous = await get('/api/me');
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.json().error, 'UNAUTHENTICATED');
    assert.equal(anonymous.headers.get('www-authenticate'), 'Bearer');

    const me = await get('/api/me', userToken);
    assert.equal(me.status, 200, me.text);
    assert.equal(me.json().userId, userId, "the app's req.gatehouse is the token's user");
    assert.deepEqual(me.json().roles, []);
    assert.equal(typeof me.json().sessionId, 'string');

    const dashboard = await get('/dashboard', userToken);
    assert.equal(dashboard.status, 200);
    assert.ok(dashboard.text.includes(userId), 'the dashboard shows req.gatehouse.userId');

    const forbidden = await get('/admin', userToken);
    assert.equal(forbidden.status, 403);
    assert.ok(!forbidden.text.includes('Admin area'), forbidden.text);
    assert.equal((await get('/api/me', `${userToken.slice(0, -4)}AAAA`)).status, 401, 'a tampered token');

    const admin = await get('/admin', adminToken);
    assert.equal(admin.status, 200);
    assert.ok(admin.text.includes('Admin area'), admin.text);
  });

  it("sends a browser without a session to Gatehouse's sign-in page, which sends it back to the app", async () => {
    const landing = `${appUrl}/dashboard?tab=sessions`;
    // The app's redirects, on its own origin, until the browser is sent elsewhere.
    let url = landing;
    let location = '';
    for (let hop = 0; hop < 3; hop++) {
      const response = await fetch(url, { redirect: 'manual' });
      assert.equal(response.status, 303, `${url}: ${await response.text()}`);
      location = new URL(response.headers.get('location')!, url).href;
      if (new URL(location).origin !== appUrl) break;
      url = location;
    }
    const signInPage = new URL('/auth/signin', gatehouse!.url);
    signInPage.searchParams.set('callbackUrl', landing);
    assert.equal(location, signInPage.href, 'Gatehouse sign-in, with the full URL of the app page as callbackUrl');
    // Signing in with Gatehouse's form, as a browser does.
    const browser = new Browser(gatehouse!.url);
    const page = await browser.fetch(signInPage.pathname + signInPage.search);
    assert.equal(page.status, 200);
    const html = await page.text();
    assert.equal(hiddenValue(html, 'callbackUrl'), landing);
    const signedIn = await browser.post('/api/auth/signin', {
      email: USER_EMAIL,
      password: PASSWORD,
      csrfToken: hiddenValue(html, 'csrfToken'),
      callbackUrl: hiddenValue(html, 'callbackUrl'),
    });
    assert.equal(signedIn.status, 303, await signedIn.text());
    assert.equal(signedIn.headers.get('location'), landing, 'back to the app page it came from');
    assert.equal((await browser.fetch('/api/auth/session')).status, 200, 'signed in at Gatehouse');

    // Both on 127.0.0.1 here, and cookies are not kept apart by port: the browser sends
    // Gatehouse's session cookie to the app too, and the app shows the dashboard to that user.
    const cookie = [...browser.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    const back = await fetch(landing, { redirect: 'manual', headers: { cookie } });
    const body = await back.text();
    assert.equal(back.status, 200, body);
    assert.ok(body.includes(userId), body);
  });

  it("gatehouse-client's script signs in on the machine's Node and calls the app's API with the token", async () => {
    const ran = await run(MACHINE_NODE, ['dist/client.js'], {
      cwd: project,
      env: { GATEHOUSE_URL: gatehouse!.url, APP_URL: appUrl, EMAIL: USER_EMAIL, PASSWORD },
      timeoutMs: 30_000,
    });
    assert.equal(ran.code, 0, ran.output);
    const result = JSON.parse(ran.stdout.trim().split('\n').at(-1)!) as { status: number; signedInAs: string; me: { userId: string } };
    assert.equal(result.status, 200, ran.output);
    assert.equal(result.signedInAs, USER_EMAIL);
    assert.equal(result.me.userId, userId);
  });
});
