/**
 * Sign-up in a real browser (Debian's Chromium through playwright-core) against the real server on
 * loopback, with mail delivered over SMTP to a test server: from the sign-in page to "Create an
 * account", the form (a refused password first), "check your inbox", sign-in refused until the
 * address is verified (REQUIRE_EMAIL_VERIFICATION=true), the link from the mail, its button, and
 * sign-in to the dashboard. The pages allow no script, so this also proves they work without
 * JavaScript; the verification page sends no Referer, so its button also proves that our CSRF check
 * accepts the `Origin: null` that such a page's form posts carry. A console error (a CSP violation,
 * say) fails the test. Screenshots go to test-artifacts/screenshots/. Skipped with a reason when
 * Chromium is missing outside CI.
 */
import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createSqliteDatabase, type TestDatabase } from '../helpers/databases.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp.ts';
import { freePort } from '../helpers/process.ts';
import { chromiumAvailability, closeBrowser, launchBrowser, saveScreenshot, withPage, type Browser, type Page, watchConsole } from '../helpers/browser.ts';

const PASSWORD = 'correct horse battery staple';
const PERSON = { name: 'Bea Browser', email: 'bea@example.com' };

async function screenshot(t: TestContext, page: Page, name: string): Promise<void> {
  t.diagnostic(`screenshot: ${await saveScreenshot(page, name)}`);
}

async function signIn(page: Page, email: string, password: string): Promise<void> {
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Login', exact: true }).click();
}

const chromium = chromiumAvailability();

describe('sign-up in Chromium', { skip: chromium.ok ? false : chromium.reason, timeout: 180_000 }, () => {
  let browser: Browser | undefined;
  let database: TestDatabase | undefined;
  let smtp: TestSmtpServer | undefined;
  let server: TestApp | undefined;
  let baseURL = '';

  before(async () => {
    browser = await launchBrowser();
    database = await createSqliteDatabase();
    smtp = await startSmtpServer();
    const port = await freePort();
    baseURL = `http://127.0.0.1:${port}`;
    server = await createTestApp(database, {
      env: {
        AUTH_URL: baseURL,
        EMAIL_SERVER_HOST: smtp.host,
        EMAIL_SERVER_PORT: String(smtp.port),
        EMAIL_FROM: 'Gatehouse <no-reply@example.test>',
        MAIL_POLL_INTERVAL_MS: '200',
        REQUIRE_EMAIL_VERIFICATION: 'true',
      },
    });
    await server.app.listen({ port, host: '127.0.0.1' });
  });
  after(async () => {
    await closeBrowser(browser);
    await server?.close();
    await smtp?.stop();
    await database?.drop();
  });

  it('signs up on the page, follows the link from the mail, presses the button, and signs in', async (t) => {
    assert.ok(browser && server && smtp);
    const services = server.services;
    const mailbox = smtp;
    await withPage(t, browser, { baseURL }, async (page) => {
      const problems = watchConsole(page);

      await page.goto('/auth/signin');
      await page.getByRole('link', { name: 'Create an account' }).click();
      await page.waitForURL(`${baseURL}/auth/signup`);
      await page.getByRole('heading', { name: 'Create an account' }).waitFor();

      // A password on the attackers' lists comes back with the reason.
      await page.getByLabel('Name').fill(PERSON.name);
      await page.getByLabel('Email').fill(PERSON.email);
      await page.getByLabel('Password').fill('password123');
      await page.getByRole('button', { name: 'Create account' }).click();
      await page.waitForURL((url) => url.pathname === '/auth/signup' && url.searchParams.get('reason') === 'TOO_COMMON');
      assert.match(await page.locator('body').innerText(), /lists of passwords attackers try first/);
      await screenshot(t, page, 'signup-refused-password');

      await page.getByLabel('Name').fill(PERSON.name);
      await page.getByLabel('Email').fill(PERSON.email);
      await page.getByLabel('Password').fill(PASSWORD);
      await screenshot(t, page, 'signup-form');
      await page.getByRole('button', { name: 'Create account' }).click();
      await page.waitForURL(`${baseURL}/auth/check-email`);
      await page.getByRole('heading', { name: 'Check your inbox' }).waitFor();
      await screenshot(t, page, 'signup-check-email');

      // Not verified yet: the right password is refused with the reason and a way to a new link.
      await page.goto('/auth/signin');
      await signIn(page, PERSON.email, PASSWORD);
      await page.waitForURL((url) => url.pathname === '/auth/signin' && url.searchParams.get('error') === 'EMAIL_NOT_VERIFIED');
      assert.match(await page.getByRole('alert').innerText(), /EMAIL_NOT_VERIFIED/);
      await page.getByRole('link', { name: 'Send a new verification link' }).waitFor();
      await screenshot(t, page, 'signup-signin-unverified');

      const [mail] = await mailbox.waitForMessages(1, 10_000);
      assert.ok(mail);
      assert.deepEqual(mail.rcptTo, [PERSON.email]);
      const link = /https?:\/\/\S+\/auth\/verify-email\?token=[\w-]+/.exec(mail.text)?.[0];
      assert.ok(link, mail.text);
      assert.equal(new URL(link).origin, baseURL);

      // Opening the link shows a button and verifies nothing.
      await page.goto(link);
      await page.getByRole('heading', { name: 'Verify your email address' }).waitFor();
      assert.equal((await services.users.findUserByEmail(PERSON.email))!.emailVerifiedAt, null);
      await screenshot(t, page, 'signup-verify-email');
      await page.getByRole('button', { name: 'Verify email address' }).click();
      await page.waitForURL(`${baseURL}/auth/email-verified`);
      await page.getByRole('heading', { name: 'Email address verified' }).waitFor();
      assert.notEqual((await services.users.findUserByEmail(PERSON.email))!.emailVerifiedAt, null);
      await screenshot(t, page, 'signup-email-verified');

      await page.getByRole('link', { name: 'Log in' }).click();
      await page.waitForURL((url) => url.pathname === '/auth/signin');
      await signIn(page, PERSON.email, PASSWORD);
      await page.waitForURL(`${baseURL}/dashboard`);
      assert.match(await page.locator('main').innerText(), new RegExp(PERSON.name));
      await screenshot(t, page, 'signup-dashboard');

      assert.deepEqual(problems, [], 'no console errors (e.g. CSP violations) and no failed responses');
    });
  });
});
