/**
 * The hosted pages in a real browser (Debian's Chromium through playwright-core), against the real
 * server listening on loopback, for both session strategies: sign in through the form, see the
 * dashboard, end another browser's session with its End button, sign out through the confirmation
 * page. The pages' CSP forbids every script, so this also proves they work without JavaScript;
 * a CSP violation or any other console error fails the test. Screenshots of each page go to
 * test-artifacts/screenshots/. Skipped with a reason when Chromium is missing outside CI.
 */
import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createSqliteDatabase, type TestDatabase } from '../helpers/databases.ts';
import { freePort } from '../helpers/process.ts';
import { createTestApp, createUser, type TestApp } from '../helpers/app.ts';
import {
  chromiumAvailability,
  closeBrowser,
  launchBrowser,
  saveScreenshot,
  withPage,
  type Browser,
  type Page,
  watchConsole,
} from '../helpers/browser.ts';

const PASSWORD = 'correct horse battery staple';
const USER = { email: 'dana@example.com', password: PASSWORD, name: 'Dana Browser' };
const OTHER_AGENT = 'GatehouseTestBrowser/2.0 (second device)';
const STRATEGIES = ['database', 'jwt'] as const;

/** The one DOM call made in the page (the project's types do not include the DOM). */
interface BrowserWindow {
  getComputedStyle(element: unknown): { borderRadius: string };
}

async function screenshot(t: TestContext, page: Page, name: string): Promise<void> {
  t.diagnostic(`screenshot: ${await saveScreenshot(page, name)}`);
}

/** Submits a form whose answer is a redirect back to the same URL, and waits for the new page. */
async function submitAndReload(page: Page, click: () => Promise<void>, path: string): Promise<void> {
  const reloaded = page.waitForResponse((r) => r.request().method() === 'GET' && new URL(r.url()).pathname === path);
  await click();
  await reloaded;
  await page.waitForLoadState('load');
}

async function signIn(page: Page, email: string, password: string): Promise<void> {
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Login', exact: true }).click();
}

const chromium = chromiumAvailability();

describe('hosted pages in Chromium', { skip: chromium.ok ? false : chromium.reason, timeout: 180_000 }, () => {
  let browser: Browser | undefined;
  before(async () => {
    browser = await launchBrowser();
  });
  after(() => closeBrowser(browser));

  for (const strategy of STRATEGIES) {
    describe(`SESSION_STRATEGY=${strategy}`, () => {
      let database: TestDatabase | undefined;
      let server: TestApp | undefined;
      let baseURL = '';
      let userId = '';

      before(async () => {
        database = await createSqliteDatabase();
        const port = await freePort();
        baseURL = `http://127.0.0.1:${port}`;
        server = await createTestApp(database, { env: { AUTH_URL: baseURL, SESSION_STRATEGY: strategy } });
        await server.app.listen({ port, host: '127.0.0.1' });
        userId = (await createUser(server.services, USER)).id;
      });
      after(async () => {
        await server?.close();
        await database?.drop();
      });

      it('signs in, ends another session, and signs out, all through the pages', async (t) => {
        assert.ok(browser && server);
        const live = browser;
        const services = server.services;
        await withPage(t, live, { baseURL }, async (page) => {
          const problems = watchConsole(page);

          // Sign-in page: a wrong password comes back as a message on the same form.
          const signinResponse = await page.goto('/auth/signin');
          assert.equal(signinResponse?.status(), 200);
          // One script, ours, under this response's nonce (the passkey button); never inline.
          assert.match(signinResponse?.headers()['content-security-policy'] ?? '', /script-src 'nonce-[^']+'/);
          await screenshot(t, page, `ui-signin-${strategy}`);
          await signIn(page, USER.email, 'not the password at all');
          await page.waitForURL((url) => url.pathname === '/auth/signin' && url.searchParams.get('error') === 'INVALID_CREDENTIALS');
          assert.match(await page.getByRole('alert').innerText(), /INVALID_CREDENTIALS/);

          // The stylesheet loads under the CSP.
          const radius = await page.getByRole('button', { name: 'Login' }).evaluate((el) => (globalThis as unknown as BrowserWindow).getComputedStyle(el).borderRadius);
          assert.equal(radius, '6px', 'gatehouse.css applied');

          await signIn(page, USER.email, USER.password);
          await page.waitForURL(`${baseURL}/dashboard`);
          await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
          assert.match(await page.locator('main').innerText(), new RegExp(USER.name));
          assert.equal(await page.locator('li.session').count(), 1);

          // A second browser signs in as the same user: it is sent to sign-in and back to the dashboard.
          await withPage(t, live, { baseURL, userAgent: OTHER_AGENT }, async (other) => {
            const otherProblems = watchConsole(other);
            await other.goto('/dashboard');
            await other.waitForURL((url) => url.pathname === '/auth/signin' && url.searchParams.get('callbackUrl') === '/dashboard');
            await signIn(other, USER.email, USER.password);
            await other.waitForURL(`${baseURL}/dashboard`);
            assert.equal((await services.sessions.listSessions(userId)).length, 2);

            // The first browser sees both sessions and ends the other one.
            await page.reload();
            const sessions = page.locator('li.session');
            assert.equal(await sessions.count(), 2);
            const otherSession = sessions.filter({ hasNotText: 'This device' });
            assert.match(await otherSession.innerText(), /GatehouseTestBrowser/, 'the other device, named by its product');
            await screenshot(t, page, `ui-dashboard-${strategy}`);
            await submitAndReload(page, () => otherSession.getByRole('button', { name: 'End', exact: true }).click(), '/dashboard');
            assert.equal(await page.locator('li.session').count(), 1);
            assert.equal((await services.sessions.listSessions(userId)).length, 1);

            // The other browser is signed out: its dashboard sends it to sign in.
            await other.goto('/dashboard');
            await other.waitForURL((url) => url.pathname === '/auth/signin');
            assert.deepEqual(otherProblems, []);
          });

          // Sign out through the confirmation page.
          await page.getByRole('link', { name: 'Sign out' }).click();
          await page.waitForURL(`${baseURL}/auth/signout`);
          await page.getByText('Are you sure you want to sign out?').waitFor();
          await screenshot(t, page, `ui-signout-${strategy}`);
          await page.getByRole('button', { name: 'Sign out' }).click();
          await page.waitForURL(`${baseURL}/`);
          assert.equal((await services.sessions.listSessions(userId)).length, 0);
          await page.goto('/dashboard');
          await page.waitForURL((url) => url.pathname === '/auth/signin');

          assert.deepEqual(problems, [], 'no console errors (e.g. CSP violations)');
        });
      });

      it('explains an error code on the error page', async (t) => {
        assert.ok(browser);
        await withPage(t, browser, { baseURL }, async (page) => {
          const problems = watchConsole(page);
          const response = await page.goto('/auth/error?error=Configuration');
          assert.equal(response?.status(), 200);
          const alert = await page.getByRole('alert').innerText();
          assert.match(alert, /problem when trying to authenticate/);
          assert.match(alert, /Configuration/);
          await screenshot(t, page, `ui-error-${strategy}`);
          assert.deepEqual(problems, []);
        });
      });
    });
  }
});
