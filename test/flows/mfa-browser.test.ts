/**
 * Two-step verification in a real browser (Debian's Chromium through playwright-core), against the
 * real server on loopback, for both session strategies: a user sets up an authenticator app from
 * the dashboard (the code is computed by the test from the key the page shows), sees the recovery
 * codes once, signs out, signs in again and is asked for a code (a wrong one first), then with a
 * recovery code; an administrator resets the user's factors. The pages run no script (a CSP
 * violation or any console error fails the test). Screenshots go to test-artifacts/screenshots/.
 */
import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createSqliteDatabase, type TestDatabase } from '../helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../helpers/app.ts';
import { freePort } from '../helpers/process.ts';
import { chromiumAvailability, closeBrowser, launchBrowser, saveScreenshot, withPage, type Browser, type Page, watchConsole } from '../helpers/browser.ts';
import { totpCode, TOTP_STEP_MS } from '../helpers/totp.ts';

const PASSWORD = 'correct horse battery staple';
const STRATEGIES = ['database', 'jwt'] as const;

async function screenshot(t: TestContext, page: Page, name: string): Promise<void> {
  t.diagnostic(`screenshot: ${await saveScreenshot(page, name)}`);
}

async function submitPassword(page: Page, email: string): Promise<void> {
  await page.goto('/auth/signin');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Login', exact: true }).click();
}

const chromium = chromiumAvailability();

describe('two-step verification in Chromium', { skip: chromium.ok ? false : chromium.reason, timeout: 180_000 }, () => {
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

      before(async () => {
        database = await createSqliteDatabase();
        const port = await freePort();
        baseURL = `http://127.0.0.1:${port}`;
        server = await createTestApp(database, { env: { AUTH_URL: baseURL, SESSION_STRATEGY: strategy } });
        await server.app.listen({ port, host: '127.0.0.1' });
      });
      after(async () => {
        await server?.close();
        await database?.drop();
      });

      it('sets up an authenticator app, signs in with a code and with a recovery code; an admin resets the factors', async (t) => {
        assert.ok(browser && server);
        const services = server.services;
        const user = await createUser(services, { email: `mia-${strategy}@example.com`, password: PASSWORD, name: 'Mia Factor' });
        await createUser(services, { email: `ada-${strategy}@example.com`, password: PASSWORD, name: 'Ada Admin', roles: ['ADMIN'] });

        let recoveryCodes: string[] = [];
        let secret = '';
        await withPage(t, browser, { baseURL }, async (page) => {
          const problems = watchConsole(page);
          await submitPassword(page, user.email);
          await page.waitForURL((url) => url.pathname === '/dashboard');

          // Set up: the QR code and the key; the code comes from the key, as an app would compute it.
          await page.getByRole('button', { name: 'Set up an authenticator app' }).click();
          await page.getByRole('heading', { name: 'Set up an authenticator app' }).waitFor();
          assert.equal(await page.locator('figure.qr svg').count(), 1, 'the QR code is on the page');
          secret = (await page.locator('#totp-secret').innerText()).replace(/\s+/g, '');
          assert.match(secret, /^[A-Z2-7]{32}$/);
          await page.getByLabel('The 6-digit code the app shows now').fill(totpCode(secret, Date.now(), 5));
          await page.getByRole('button', { name: 'Turn on' }).click();
          await page.getByRole('alert').waitFor();
          assert.match(await page.getByRole('alert').innerText(), /INVALID_CODE/, 'a wrong code: the same setup again');
          await page.getByLabel('The 6-digit code the app shows now').fill(totpCode(secret, Date.now()));
          await page.getByRole('button', { name: 'Turn on' }).click();
          await page.getByRole('heading', { name: 'Your recovery codes' }).waitFor();
          recoveryCodes = (await page.locator('ul.recovery-codes code').allInnerTexts()).map((code) => code.trim());
          assert.equal(recoveryCodes.length, 10);
          assert.equal(await page.getByLabel('To copy them').inputValue(), recoveryCodes.join('\n'));
          assert.match((await page.getByRole('link', { name: 'Download as a file' }).getAttribute('href')) ?? '', /^data:text\/plain/);
          await screenshot(t, page, `mfa-recovery-codes-${strategy}`);
          await page.getByRole('link', { name: 'Done' }).click();
          await page.waitForURL((url) => url.pathname === '/dashboard');
          assert.match(await page.locator('section[aria-labelledby="mfa-heading"]').innerText(), /authenticator app is set up\. 10 of 10 recovery codes left/);
          assert.deepEqual(problems, []);
        });

        // A new browser: the password is not enough any more.
        await withPage(t, browser, { baseURL }, async (page) => {
          const problems = watchConsole(page);
          await submitPassword(page, user.email);
          await page.waitForURL((url) => url.pathname === '/auth/mfa');
          assert.ok(!(await page.context().cookies()).some((cookie) => cookie.name === 'gatehouse.session'), 'no session before the second factor');
          await page.getByLabel('Code', { exact: true }).fill('000000');
          await page.getByRole('button', { name: 'Verify' }).click();
          await page.waitForURL((url) => url.pathname === '/auth/mfa' && url.searchParams.get('error') === 'INVALID_CODE');
          // Said once, at the field; the summary above links to it.
          assert.match(await page.getByRole('alert').innerText(), /Code[\s\S]*INVALID_CODE/);
          assert.match(await page.locator('form').filter({ has: page.getByLabel('Code', { exact: true }) }).innerText(), /not right/);
          // The step of the setup's code is spent: the next step's code.
          await page.getByLabel('Code', { exact: true }).fill(totpCode(secret, Date.now() + TOTP_STEP_MS));
          await page.getByRole('button', { name: 'Verify' }).click();
          await page.waitForURL((url) => url.pathname === '/dashboard');
          await screenshot(t, page, `mfa-signed-in-${strategy}`);
          assert.deepEqual(problems, []);
        });

        // And with a recovery code.
        await withPage(t, browser, { baseURL }, async (page) => {
          await submitPassword(page, user.email);
          await page.waitForURL((url) => url.pathname === '/auth/mfa');
          await page.getByText('Use a recovery code').click();
          await page.getByLabel('Recovery code').fill(recoveryCodes[0]!);
          await page.getByRole('button', { name: 'Use recovery code' }).click();
          await page.waitForURL((url) => url.pathname === '/dashboard');
          assert.match(await page.locator('section[aria-labelledby="mfa-heading"]').innerText(), /9 of 10 recovery codes left/);
        });

        // An administrator resets them: the user signs in with the password alone again.
        await withPage(t, browser, { baseURL }, async (page) => {
          await submitPassword(page, `ada-${strategy}@example.com`);
          await page.waitForURL((url) => url.pathname === '/dashboard');
          await page.goto(`/admin/users/${user.id}`);
          assert.match(await page.locator('section[aria-labelledby="mfa-admin-heading"]').innerText(), /Authenticator app\s+Set up/);
          await page.getByRole('button', { name: 'Reset second factors' }).click();
          await page.waitForURL((url) => url.pathname === `/admin/users/${user.id}`);
          assert.match(await page.locator('section[aria-labelledby="mfa-admin-heading"]').innerText(), /Authenticator app\s+None/);
        });
        assert.deepEqual(await services.mfa.methodsOf(user.id), []);
        const events = await services.audit.listEvents({ userId: user.id, type: 'mfa.reset', limit: 5 });
        assert.equal(events.events.length, 1);
      });
    });
  }
});
