/**
 * Password reset in a real browser (Debian's Chromium through playwright-core) against the real
 * server on loopback, with mail delivered over SMTP to a test server: from the sign-in page's
 * "Forgot password?" to the form, the "check your email" page, the link from the mail, the reset
 * page (a refused password first, then a good one), "password changed", and sign-in with the new
 * password (the old one refused); then the dashboard's change-password form. The reset page sends
 * no Referer at all, so its form post carries `Origin: null`: this proves that our CSRF check
 * accepts it from our own page. The pages allow no script, so this also proves they work without
 * JavaScript; a console error (a CSP violation, say) fails the test. Screenshots go to
 * test-artifacts/screenshots/. Skipped with a reason when Chromium is missing outside CI.
 */
import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createSqliteDatabase, type TestDatabase } from '../helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../helpers/app.ts';
import { startSmtpServer, type ReceivedMail, type TestSmtpServer, smtpEnv } from '../helpers/smtp.ts';
import { freePort } from '../helpers/process.ts';
import { chromiumAvailability, closeBrowser, launchBrowser, saveScreenshot, withPage, type Browser, type Page, watchConsole } from '../helpers/browser.ts';

const OLD_PASSWORD = 'correct horse battery staple';
const NEW_PASSWORD = 'violet harbour lantern mosaic';
const CHANGED_PASSWORD = 'amber quartz meadow river';
const PERSON = { name: 'Rhea Reset', email: 'rhea@example.com' };
const MAIL_WAIT_MS = 10_000;

async function screenshot(t: TestContext, page: Page, name: string): Promise<void> {
  t.diagnostic(`screenshot: ${await saveScreenshot(page, name)}`);
}

async function signIn(page: Page, email: string, password: string): Promise<void> {
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Login', exact: true }).click();
}

async function mailTo(smtp: TestSmtpServer, to: string, subject: string, nth = 1): Promise<ReceivedMail> {
  const deadline = Date.now() + MAIL_WAIT_MS;
  for (;;) {
    const mail = smtp.messages.filter((m) => m.rcptTo.includes(to) && m.subject === subject)[nth - 1];
    if (mail !== undefined) return mail;
    if (Date.now() > deadline) throw new Error(`no mail #${nth} "${subject}" to ${to} within ${MAIL_WAIT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const chromium = chromiumAvailability();

describe('password reset in Chromium', { skip: chromium.ok ? false : chromium.reason, timeout: 180_000 }, () => {
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
        ...smtpEnv(smtp),
      },
    });
    await server.app.listen({ port, host: '127.0.0.1' });
    await createUser(server.services, { ...PERSON, password: OLD_PASSWORD });
  });
  after(async () => {
    await closeBrowser(browser);
    await server?.close();
    await smtp?.stop();
    await database?.drop();
  });

  it('forgot password -> mail -> reset page -> sign in with the new password; then a change on the dashboard', async (t) => {
    assert.ok(browser && smtp);
    const mail = smtp;
    await withPage(t, browser, { baseURL }, async (page) => {
      const problems = watchConsole(page);

      await page.goto('/auth/signin');
      await page.getByRole('link', { name: 'Forgot password?' }).click();
      await page.waitForURL(`${baseURL}/auth/forgot-password`);
      await page.getByRole('heading', { name: 'Forgot your password?' }).waitFor();
      await screenshot(t, page, 'reset-forgot-password');
      await page.getByLabel('Email').fill(PERSON.email);
      await page.getByRole('button', { name: 'Send reset link' }).click();
      await page.waitForURL(`${baseURL}/auth/forgot-password/sent`);
      assert.match(await page.locator('main').innerText(), /If an account exists for that address, we have sent it a link/);
      await screenshot(t, page, 'reset-check-email');

      const resetMail = await mailTo(mail, PERSON.email, 'Reset your Gatehouse password');
      const link = /https?:\/\/\S+\/auth\/reset-password\?token=[\w-]+/.exec(resetMail.text)?.[0];
      assert.ok(link, resetMail.text);
      assert.equal(new URL(link).origin, baseURL, 'the link is under AUTH_URL');

      // The reset page: no Referer leaves it, so its form posts with Origin: null.
      const opened = await page.goto(link);
      assert.equal(opened?.status(), 200);
      assert.equal(opened?.headers()['referrer-policy'], 'no-referrer');
      assert.match(await page.locator('main').innerText(), new RegExp(PERSON.email));
      await screenshot(t, page, 'reset-new-password-form');
      const resetPosts: Array<{ origin: string | undefined; referer: string | undefined }> = [];
      page.on('request', (request) => {
        if (request.method() === 'POST' && new URL(request.url()).pathname === '/api/auth/reset-password') {
          void request.allHeaders().then((headers) => resetPosts.push({ origin: headers.origin, referer: headers.referer }));
        }
      });

      // A refused password comes back to the same link, with the reason.
      await page.getByLabel('New password').fill('password1234');
      await page.getByRole('button', { name: 'Set new password' }).click();
      await page.waitForURL((url) => url.pathname === '/auth/reset-password' && url.searchParams.get('reason') === 'TOO_COMMON');
      assert.match(await page.locator('body').innerText(), /lists of passwords attackers try first/);
      await screenshot(t, page, 'reset-refused-password');

      await page.getByLabel('New password').fill(NEW_PASSWORD);
      await page.getByRole('button', { name: 'Set new password' }).click();
      await page.waitForURL(`${baseURL}/auth/reset-password/done`);
      await page.getByRole('heading', { name: 'Password changed' }).waitFor();
      await screenshot(t, page, 'reset-done');
      assert.equal(resetPosts.length, 2);
      for (const post of resetPosts) {
        assert.equal(post.origin, 'null', 'Chromium sends Origin: null from a no-referrer page');
        assert.equal(post.referer, undefined, 'and no Referer: the token stays on the page');
      }

      // Nobody was signed in by the reset; the old password no longer works, the new one does.
      await page.getByRole('link', { name: 'Log in' }).click();
      await page.waitForURL((url) => url.pathname === '/auth/signin');
      await signIn(page, PERSON.email, OLD_PASSWORD);
      await page.waitForURL((url) => url.pathname === '/auth/signin' && url.searchParams.get('error') === 'INVALID_CREDENTIALS');
      await signIn(page, PERSON.email, NEW_PASSWORD);
      await page.waitForURL(`${baseURL}/dashboard`);
      await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
      await mailTo(mail, PERSON.email, 'Your Gatehouse password was changed');

      // The dashboard's change-password form.
      await page.getByLabel('Current password').fill(NEW_PASSWORD);
      await page.getByLabel('New password').fill(CHANGED_PASSWORD);
      await screenshot(t, page, 'reset-dashboard-change-password');
      await page.getByRole('button', { name: 'Change password' }).click();
      await page.waitForURL((url) => url.pathname === '/dashboard' && url.searchParams.get('notice') === 'PASSWORD_CHANGED');
      assert.match(await page.locator('div.alert[role="status"]').innerText(), /Your password has been changed/);
      await screenshot(t, page, 'reset-dashboard-password-changed');
      await mailTo(mail, PERSON.email, 'Your Gatehouse password was changed', 2);

      assert.deepEqual(problems, [], 'no console errors (e.g. CSP violations) and no failed responses');
    });
  });
});
