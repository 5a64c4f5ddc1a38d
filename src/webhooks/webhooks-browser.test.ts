/**
 * The webhook pages in a real browser (Debian's Chromium through playwright-core) against the real
 * server on loopback: an admin signs in, opens Webhooks from the admin navigation, registers an
 * endpoint for a receiver on 127.0.0.1, copies the secret shown once, and, after a real action (an
 * administrator creates a user), sees the delivery on the endpoint's page as delivered with the
 * receiver's 204 (which verified its signature with the `standardwebhooks` library), and
 * redelivers it. The pages run no script; a CSP violation or any console error fails.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createUser, serveTestApp, type ServedTestApp } from '../../test/helpers/app.ts';
import { chromiumAvailability, closeBrowser, launchBrowser, saveScreenshot, watchConsole, withPage, type Browser } from '../../test/helpers/browser.ts';
import { startReceiver, verifyWithLibrary } from './test-receiver.ts';

const PASSWORD = 'correct horse battery staple';
const chromium = chromiumAvailability();

describe('webhook admin pages in Chromium', { skip: chromium.ok ? false : chromium.reason, timeout: 120_000 }, () => {
  let browser: Browser | undefined;
  let server: ServedTestApp | undefined;
  let baseURL = '';

  before(async () => {
    browser = await launchBrowser();
    server = await serveTestApp({ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_POLL_INTERVAL_MS: '200' });
    baseURL = server.baseURL;
    await createUser(server.services, { email: 'ada@example.com', password: PASSWORD, name: 'Ada Admin', roles: ['ADMIN'] });
  });
  after(async () => {
    await closeBrowser(browser);
    await server?.close();
  });

  it('registers an endpoint, shows its secret once, and lists its delivery', async (t) => {
    assert.ok(browser && server);
    const services = server.services;
    const receiver = await startReceiver((fn) => t.after(fn));
    await withPage(t, browser, { baseURL }, async (page) => {
      const problems = watchConsole(page);
      await page.goto('/auth/signin');
      await page.getByLabel('Email').fill('ada@example.com');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Login', exact: true }).click();
      await page.waitForURL((url) => url.pathname === '/dashboard');

      await page.goto('/admin');
      await page.getByRole('navigation', { name: 'Administration' }).getByRole('link', { name: 'Webhooks', exact: true }).click();
      await page.waitForURL(`${baseURL}/admin/webhooks`);
      await page.getByText('No webhook endpoints are registered yet.').waitFor();

      await page.getByLabel('URL').fill(receiver.url);
      await page.getByLabel('Description').fill('Browser test');
      await page.getByLabel('user.created').check();
      await page.getByRole('button', { name: 'Register endpoint', exact: true }).click();
      await page.getByRole('heading', { name: 'Webhook endpoint registered' }).waitFor();
      const secret = await page.getByLabel('Signing secret').inputValue();
      const id = await page.getByLabel('Endpoint ID').inputValue();
      assert.match(secret, /^whsec_/);
      t.diagnostic(`screenshot: ${await saveScreenshot(page, 'admin-webhook-secret')}`);

      await page.getByRole('link', { name: 'Done', exact: true }).click();
      await page.waitForURL(`${baseURL}/admin/webhooks/${id}`);
      assert.equal(await page.getByText(secret).count(), 0, 'the secret is not shown again');
      await page.getByText('Nothing has been sent to this endpoint yet.').waitFor();

      // A real action: an admin creates a user.
      const result = await services.admin.createUser({ email: 'new@example.com', name: 'New Person', password: PASSWORD }, { actorUserId: null, ip: null, userAgent: null });
      assert.ok(result.ok);
      const request = await receiver.waitFor(1);
      assert.deepEqual(verifyWithLibrary(request, secret).data.userId, result.user.id);
      for (let i = 0; i < 50 && (await services.webhooks.listDeliveries(id))![0]!.status !== 'delivered'; i++) await new Promise((resolve) => setTimeout(resolve, 100));

      await page.reload();
      const row = page.locator('tr.delivery');
      assert.equal(await row.count(), 1);
      assert.match(await row.innerText(), /user\.created\s+delivered\s+1\s+204/);
      await page.getByRole('button', { name: 'Redeliver', exact: true }).click();
      await page.waitForURL((url) => url.searchParams.get('notice') === 'WEBHOOK_REDELIVERED');
      await page.getByText('queued to be sent again').waitFor();
      await receiver.waitFor(2);
      t.diagnostic(`screenshot: ${await saveScreenshot(page, 'admin-webhook-deliveries')}`);
      assert.deepEqual(problems, []);
    });
  });
});
