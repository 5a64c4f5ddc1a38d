/**
 * Passkeys in a real browser (Debian's Chromium through playwright-core), with the DevTools
 * protocol's virtual authenticator standing in for a fingerprint reader, against the real server
 * on loopback, for both session strategies: sign in with a password, add a passkey from the
 * dashboard (its first-factor recovery codes shown once), rename it, sign out, sign in with
 * "Sign in with a passkey", and find the session proved by the key and the user (`amr`). Then an
 * assertion the same authenticator makes for another origin (a page on another port of
 * `localhost`, so the same RP ID) is refused. And a browser without WebAuthn sees no passkey
 * button at all.
 *
 * WebAuthn needs a secure context and a domain RP ID: AUTH_URL is http://localhost:<port>, whose
 * RP ID is `localhost`. The pages load /assets/passkeys.js under their CSP nonce: a CSP
 * violation or any other console error fails the test. Skipped with a reason when Chromium is
 * missing outside CI.
 */
import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { createSqliteDatabase, type TestDatabase } from '../helpers/databases.ts';
import { freePort } from '../helpers/process.ts';
import { createTestApp, createUser, type TestApp } from '../helpers/app.ts';
import { addVirtualAuthenticator, chromiumAvailability, closeBrowser, launchBrowser, saveScreenshot, withPage, watchConsole, type Browser, type Page } from '../helpers/browser.ts';

const PASSWORD = 'correct horse battery staple';
const USER = { email: 'pia@example.com', password: PASSWORD, name: 'Pia Passkey' };
const STRATEGIES = ['database', 'jwt'] as const;

async function screenshot(t: TestContext, page: Page, name: string): Promise<void> {
  t.diagnostic(`screenshot: ${await saveScreenshot(page, name)}`);
}

/** @simplewebauthn/browser's UMD bundle, for the other origin's page. */
function browserBundle(): string {
  const require = createRequire(import.meta.url);
  return readFileSync(join(dirname(dirname(require.resolve('@simplewebauthn/browser'))), 'dist/bundle/index.umd.min.js'), 'utf8');
}

/** Another origin on the same RP ID (`localhost`, another port): a page that can run a ceremony. */
async function startOtherOrigin(): Promise<{ server: Server; url: string }> {
  const port = await freePort();
  const bundle = browserBundle();
  const server = createServer((request, response) => {
    if (request.url === '/bundle.js') response.writeHead(200, { 'content-type': 'text/javascript' }).end(bundle);
    else if (request.url === '/') response.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>Elsewhere</title><script src="/bundle.js"></script><p>Another site</p>');
    else response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { server, url: `http://localhost:${port}` };
}

async function signInWithPassword(page: Page): Promise<void> {
  await page.goto('/auth/signin');
  await page.getByLabel('Email').fill(USER.email);
  await page.getByLabel('Password').fill(USER.password);
  await page.getByRole('button', { name: 'Login', exact: true }).click();
  await page.waitForURL((url) => url.pathname === '/dashboard');
}

const chromium = chromiumAvailability();

describe('passkeys in Chromium', { skip: chromium.ok ? false : chromium.reason, timeout: 180_000 }, () => {
  let browser: Browser | undefined;
  let elsewhere: { server: Server; url: string } | undefined;
  before(async () => {
    browser = await launchBrowser();
    elsewhere = await startOtherOrigin();
  });
  after(async () => {
    await closeBrowser(browser);
    elsewhere?.server.closeAllConnections();
    await new Promise((resolve) => elsewhere?.server.close(resolve) ?? resolve(undefined));
  });

  for (const strategy of STRATEGIES) {
    describe(`SESSION_STRATEGY=${strategy}`, () => {
      let database: TestDatabase | undefined;
      let server: TestApp | undefined;
      let baseURL = '';
      let userId = '';

      before(async () => {
        database = await createSqliteDatabase();
        const port = await freePort();
        baseURL = `http://localhost:${port}`;
        server = await createTestApp(database, { env: { AUTH_URL: baseURL, SESSION_STRATEGY: strategy } });
        await server.app.listen({ port, host: '127.0.0.1' });
        userId = (await createUser(server.services, USER)).id;
      });
      after(async () => {
        await server?.close();
        await database?.drop();
      });

      it('adds a passkey on the dashboard, then signs in with it alone; another origin cannot use it', async (t) => {
        assert.ok(browser && server && elsewhere);
        const services = server.services;
        await withPage(t, browser, { baseURL }, async (page) => {
          const problems = watchConsole(page);
          const { cdp, authenticatorId } = await addVirtualAuthenticator(page);

          // Signed in with the password, the dashboard offers a passkey.
          await signInWithPassword(page);
          const section = page.getByRole('region', { name: 'Passkeys' });
          await section.getByText('You have no passkeys yet.').waitFor();
          await section.getByLabel('Name for the new passkey (optional)').fill('Test laptop');
          await section.getByRole('button', { name: 'Add a passkey' }).click();

          // The account's first second factor: its recovery codes, shown once.
          await section.getByRole('heading', { name: 'Your recovery codes' }).waitFor();
          assert.equal(await section.locator('[data-passkey-code-list] li').count(), 10);
          assert.match(await section.getByRole('status').innerText(), /Passkey “Test laptop” added/);
          await screenshot(t, page, `passkeys-recovery-codes-${strategy}`);
          const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
          assert.equal(credentials.length, 1);
          assert.equal(credentials[0]!.isResidentCredential, true, 'a discoverable credential');
          assert.equal(credentials[0]!.rpId, 'localhost');
          await section.getByRole('button', { name: 'I have saved them' }).click();
          await section.locator('li.passkey').getByText('Test laptop').waitFor();
          await section.getByRole('status').getByText('Passkey “Test laptop” added.').waitFor();
          const stored = await services.passkeys.listPasskeys(userId);
          assert.deepEqual(stored.map((passkey) => passkey.name), ['Test laptop']);

          // Rename it in place.
          await section.getByLabel('Name', { exact: true }).fill('Desk laptop');
          await section.getByRole('button', { name: 'Rename' }).click();
          await section.getByRole('status').getByText('Passkey renamed to “Desk laptop”.').waitFor();
          assert.equal((await services.passkeys.listPasskeys(userId))[0]!.name, 'Desk laptop');
          await screenshot(t, page, `passkeys-dashboard-${strategy}`);

          // Sign out, then sign in with the passkey alone.
          await page.goto('/auth/signout');
          await page.getByRole('button', { name: 'Sign out' }).click();
          await page.waitForURL(`${baseURL}/`);
          assert.deepEqual(await services.sessions.listSessions(userId), []);
          await page.goto('/auth/signin');
          const button = page.getByRole('button', { name: 'Log in with a passkey' });
          assert.equal(await button.isVisible(), true);
          await screenshot(t, page, `passkeys-signin-${strategy}`);
          await button.click();
          await page.waitForURL((url) => url.pathname === '/dashboard');
          const session = await page.context().request.get('/api/auth/session');
          assert.equal(session.status(), 200);
          const amr = ((await session.json()) as { session: { amr: string[] } }).session.amr;
          assert.ok(amr.includes('hwk') || amr.includes('swk'), `amr ${amr.join(',')}`);
          assert.ok(amr.includes('user') && amr.includes('mfa'), `amr ${amr.join(',')}`);
          assert.ok(!amr.includes('pwd'), 'no password this time');
          assert.notEqual((await services.passkeys.listPasskeys(userId))[0]!.lastUsedAt, null);
          assert.deepEqual(problems, [], 'no console errors (e.g. CSP violations) and no failed requests');

          // With the password, the passkey is now the second factor: the code page offers it.
          await page.goto('/auth/signout');
          await page.getByRole('button', { name: 'Sign out' }).click();
          await page.waitForURL(`${baseURL}/`);
          await page.goto('/auth/signin');
          await page.getByLabel('Email').fill(USER.email);
          await page.getByLabel('Password').fill(USER.password);
          await page.getByRole('button', { name: 'Login', exact: true }).click();
          await page.waitForURL((url) => url.pathname === '/auth/mfa');
          await page.getByRole('button', { name: 'Use a passkey' }).click();
          await page.waitForURL((url) => url.pathname === '/dashboard');
          const secondFactor = ((await (await page.context().request.get('/api/auth/session')).json()) as { session: { amr: string[] } }).session.amr;
          assert.ok(secondFactor.includes('pwd') && secondFactor.includes('mfa') && (secondFactor.includes('hwk') || secondFactor.includes('swk')), `amr ${secondFactor.join(',')}`);
          assert.ok(!(await page.context().cookies()).some((cookie) => cookie.name === 'gatehouse.challenge'), 'the challenge cookie is used up');
          assert.deepEqual(problems, [], 'no console errors on the second-factor page either');

          // Another origin with the same RP ID gets a real assertion from the authenticator: refused.
          const fetchOptions = await fetch(`${baseURL}/api/auth/passkeys/authenticate/options`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
          const optionsJSON = await fetchOptions.json();
          await page.goto(elsewhere!.url);
          const assertion = await page.evaluate(async (options) => {
            const lib = (globalThis as unknown as { SimpleWebAuthnBrowser: { startAuthentication(input: { optionsJSON: unknown }): Promise<unknown> } }).SimpleWebAuthnBrowser;
            return lib.startAuthentication({ optionsJSON: options });
          }, optionsJSON);
          const clientData = JSON.parse(Buffer.from((assertion as { response: { clientDataJSON: string } }).response.clientDataJSON, 'base64url').toString()) as { origin: string };
          assert.equal(clientData.origin, elsewhere!.url, 'the browser signed for the other origin');
          const refused = await fetch(`${baseURL}/api/auth/passkeys/authenticate/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ response: assertion }) });
          assert.equal(refused.status, 401);
          assert.equal(((await refused.json()) as { error: string }).error, 'INVALID_PASSKEY');
          assert.equal(refused.headers.getSetCookie().length, 0, 'no session');
        });
      });

      it('shows no passkey button to a browser without WebAuthn, and the page is as it would be without it', async (t) => {
        assert.ok(browser);
        await withPage(t, browser, { baseURL }, async (page) => {
          const problems = watchConsole(page);
          await page.addInitScript(() => {
            delete (globalThis as { PublicKeyCredential?: unknown }).PublicKeyCredential;
          });
          await page.goto('/auth/signin');
          await page.getByRole('button', { name: 'Login', exact: true }).waitFor();
          assert.equal(await page.getByRole('button', { name: 'Log in with a passkey' }).isVisible(), false);
          assert.equal(await page.locator('[data-passkeys="signin"]').isHidden(), true);
          assert.deepEqual(problems, []);
        });
      });
    });
  }
});
