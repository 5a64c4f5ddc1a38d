/**
 * Impersonation in a real browser (Debian's Chromium through playwright-core) against the real
 * server on loopback: an ADMIN signs in with their second factor, opens a user's admin page and
 * acts as them with a reason and a time limit; the browser's access cookie then carries `act`, the
 * dashboard shows the banner, and its Stop button ends the impersonation and signs the browser out.
 * A console error (a CSP violation, say) fails the test. Skipped with a reason when Chromium is
 * missing outside CI.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJwt } from 'jose';
import { createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { freePort } from '../../test/helpers/process.ts';
import { enrolTotp, totpCode } from '../../test/helpers/totp.ts';
import { chromiumAvailability, closeBrowser, launchBrowser, withPage, watchConsole, type Browser } from '../../test/helpers/browser.ts';
import { cookieNames } from '../sessions/session-cookie.ts';

const PASSWORD = 'correct horse battery staple';
const chromium = chromiumAvailability();

describe('impersonation in Chromium', { skip: chromium.ok ? false : chromium.reason, timeout: 180_000 }, () => {
  const clock = fakeClock();
  let browser: Browser | undefined;
  let database: TestDatabase | undefined;
  let server: TestApp | undefined;
  let baseURL = '';

  before(async () => {
    browser = await launchBrowser();
    database = await createSqliteDatabase();
    const port = await freePort();
    baseURL = `http://127.0.0.1:${port}`;
    server = await createTestApp(database, { env: { AUTH_URL: baseURL }, clock });
    await server.app.listen({ port, host: '127.0.0.1' });
  });
  after(async () => {
    await closeBrowser(browser);
    await server?.close();
    await database?.drop();
  });

  it('acts as a user from the admin page: act in the cookie, the banner, Stop', async (t) => {
    assert.ok(browser && server);
    const services = server.services;
    const admin = await createUser(services, { email: 'ada@example.com', password: PASSWORD, name: 'Ada Admin', roles: ['ADMIN'] });
    const user = await createUser(services, { email: 'uma@example.com', password: PASSWORD, name: 'Uma User' });
    const secret = await enrolTotp(services as never, admin, clock);

    await withPage(t, browser, { baseURL }, async (page) => {
      const problems = watchConsole(page);
      await page.goto(`/auth/signin?callbackUrl=/admin/users/${user.id}`);
      await page.getByLabel('Email').fill('ada@example.com');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Login', exact: true }).click();
      await page.locator('#mfa-code').fill(totpCode(secret, clock()));
      await page.getByRole('button', { name: 'Verify' }).click();
      await page.waitForURL(`${baseURL}/admin/users/${user.id}`);

      await page.getByRole('heading', { name: 'Act as this user' }).waitFor();
      await page.getByLabel('Reason (shown to the user)').fill('Support ticket 7');
      await page.getByLabel('Time limit').selectOption('30');
      await page.getByRole('button', { name: 'Act as this user' }).click();
      await page.waitForURL(`${baseURL}/dashboard`);
      await page.getByRole('alert').filter({ hasText: 'An administrator is acting as uma@example.com (Support ticket 7) until' }).waitFor();

      const access = (await page.context().cookies()).find((cookie) => cookie.name === cookieNames(server!.config).access);
      assert.ok(access);
      const claims = decodeJwt(access.value);
      assert.equal(claims.sub, user.id);
      assert.deepEqual(claims.act, { sub: admin.id });

      await page.getByRole('button', { name: 'Stop' }).click();
      await page.waitForURL(/\/auth\/signin\?callbackUrl=\/admin\/users\//);
      assert.equal((await page.context().cookies()).some((cookie) => cookie.name === cookieNames(server!.config).access), false, 'signed out');
      assert.deepEqual(problems, []);
    });

    assert.ok((await services.mail.listRecent(50)).some((mail) => mail.to === 'uma@example.com' && mail.template === 'impersonation-ended'));
  });
});
