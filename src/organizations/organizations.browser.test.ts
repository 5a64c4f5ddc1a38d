/**
 * Organizations in a real browser (Debian's Chromium through playwright-core) against the real
 * server on loopback, without JavaScript (the pages run none): an owner creates an organization
 * from the dashboard and invites someone from its page; the invitee opens the mailed link in
 * another browser, is sent to sign in and back, and accepts; the owner switches the active
 * organization from the dashboard, and the browser's access cookie then carries `org`; the admin
 * pages list and show it. A console error (a CSP violation, say) fails the test. Skipped with a
 * reason when Chromium is missing outside CI.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJwt } from 'jose';
import { createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { freePort } from '../../test/helpers/process.ts';
import { chromiumAvailability, closeBrowser, launchBrowser, withPage, watchConsole, type Browser, type Page } from '../../test/helpers/browser.ts';

const PASSWORD = 'correct horse battery staple';
const chromium = chromiumAvailability();

async function signIn(page: Page, email: string): Promise<void> {
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Login', exact: true }).click();
}

describe('organizations in Chromium', { skip: chromium.ok ? false : chromium.reason, timeout: 180_000 }, () => {
  let browser: Browser | undefined;
  let database: TestDatabase | undefined;
  let server: TestApp | undefined;
  let baseURL = '';

  before(async () => {
    browser = await launchBrowser();
    database = await createSqliteDatabase();
    const port = await freePort();
    baseURL = `http://127.0.0.1:${port}`;
    server = await createTestApp(database, { env: { AUTH_URL: baseURL } });
    await server.app.listen({ port, host: '127.0.0.1' });
  });
  after(async () => {
    await closeBrowser(browser);
    await server?.close();
    await database?.drop();
  });

  it('creates from the dashboard, invites, accepts from another browser via the mailed link, and switches the active organization', async (t) => {
    assert.ok(browser && server);
    const services = server.services;
    await createUser(services, { email: 'olive@example.com', password: PASSWORD, name: 'Olive Owner', roles: ['ADMIN'] });
    await createUser(services, { email: 'ivan@example.com', password: PASSWORD, name: 'Ivan Invitee' });

    let organizationPath = '';
    await withPage(t, browser, { baseURL }, async (page) => {
      const problems = watchConsole(page);
      await page.goto('/auth/signin?callbackUrl=/dashboard');
      await signIn(page, 'olive@example.com');
      await page.waitForURL(`${baseURL}/dashboard`);
      await page.getByRole('heading', { name: 'Organizations' }).waitFor();
      await page.locator('#organization-name').fill('Browser Bakery');
      await page.getByRole('button', { name: 'Create organization' }).click();
      await page.waitForURL(/\/organizations\/[A-Za-z0-9_-]+\?notice=ORGANIZATION_CREATED$/);
      organizationPath = new URL(page.url()).pathname;
      await page.getByRole('heading', { name: 'Browser Bakery' }).waitFor();
      await page.getByText('you are its owner').waitFor();

      await page.locator('#invite-email').fill('ivan@example.com');
      await page.locator('#invite-role').selectOption('ADMIN');
      await page.getByRole('button', { name: 'Send invitation' }).click();
      await page.getByText('The invitation is on its way').waitFor();
      await page.getByText('ivan@example.com').waitFor();
      assert.deepEqual(problems, []);
    });

    const mail = (await services.mail.listRecent(50)).find((m) => m.to === 'ivan@example.com' && m.template === 'organization-invitation');
    assert.ok(mail, 'the invitation was mailed');
    const link = mail.links.find((l) => l.includes('/organizations/invitations/accept'))!;
    assert.ok(link.startsWith(`${baseURL}/organizations/invitations/accept?token=`));

    await withPage(t, browser, { baseURL }, async (page) => {
      const problems = watchConsole(page);
      await page.goto(link);
      await page.getByText('You are invited to join').waitFor();
      await page.getByText('Browser Bakery').first().waitFor();
      await page.getByRole('link', { name: 'Log in to accept' }).click();
      await page.waitForURL(/\/auth\/signin\?callbackUrl=/);
      await signIn(page, 'ivan@example.com');
      await page.waitForURL(/\/organizations\/invitations\/accept\?token=/);
      await page.getByRole('button', { name: 'Accept' }).click();
      await page.waitForURL(new RegExp(`${organizationPath}\\?notice=INVITATION_ACCEPTED$`));
      await page.getByText('Welcome: you are a member now.').waitFor();
      await page.getByRole('cell', { name: 'Ivan Invitee (you)' }).waitFor();
      // The link works once.
      await page.goto(link);
      await page.getByText('This invitation link is not valid').waitFor();
      assert.deepEqual(problems, []);
    });

    await withPage(t, browser, { baseURL }, async (page) => {
      const problems = watchConsole(page);
      await page.goto('/auth/signin?callbackUrl=/dashboard');
      await signIn(page, 'olive@example.com');
      await page.waitForURL(`${baseURL}/dashboard`);
      await page.locator('#active-organization').selectOption({ label: 'Browser Bakery' });
      await page.getByRole('button', { name: 'Switch' }).click();
      await page.waitForURL(`${baseURL}/dashboard#organizations-heading`);
      await page.locator('#organizations .badge', { hasText: 'Active' }).waitFor();
      const access = (await page.context().cookies()).find((cookie) => cookie.name === 'gatehouse.session');
      assert.ok(access);
      assert.equal((decodeJwt(access.value).org as { slug: string; roles: string[] }).roles[0], 'OWNER');
      const session = await page.request.get('/api/auth/session');
      assert.equal(((await session.json()) as { claims: { org: { roles: string[] } } }).claims.org.roles[0], 'OWNER');

      // The admin pages.
      await page.goto('/admin/organizations');
      await page.getByRole('link', { name: 'Organizations' }).first().waitFor();
      await page.getByRole('link', { name: 'Browser Bakery' }).click();
      await page.getByRole('cell', { name: 'Ivan Invitee' }).waitFor();
      await page.getByRole('cell', { name: 'ADMIN' }).waitFor();
      assert.deepEqual(problems, []);
    });
  });
});
