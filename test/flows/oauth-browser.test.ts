/**
 * Sign-in with a provider in a real browser (Debian's Chromium through playwright-core): the sign-in
 * page's "Sign in with GitHub" / "Sign in with Google" buttons, the provider on loopback (it
 * approves at once), the callback, and the dashboard, where the other provider is then linked with
 * its "Link" button. The pages' CSP must allow the redirect to the provider (`form-action`); any
 * console error or CSP violation fails the test. Screenshots go to test-artifacts/screenshots/.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createSqliteDatabase, type TestDatabase } from '../helpers/databases.ts';
import { freePort } from '../helpers/process.ts';
import { createTestApp, type TestApp } from '../helpers/app.ts';
import { chromiumAvailability, closeBrowser, launchBrowser, saveScreenshot, withPage, type Browser, type Page, watchConsole } from '../helpers/browser.ts';
import { peerEnv, startGitHubPeer, startOidcPeer, type GitHubPeer, type OidcPeer } from '../helpers/oauth-peers.ts';

const chromium = chromiumAvailability();

describe('provider sign-in in Chromium', { skip: chromium.ok ? false : chromium.reason, timeout: 120_000 }, () => {
  let browser: Browser | undefined;
  let database: TestDatabase | undefined;
  let server: TestApp | undefined;
  let github: GitHubPeer | undefined;
  let google: OidcPeer | undefined;
  let baseURL = '';

  before(async () => {
    [browser, github, google] = await Promise.all([launchBrowser(), startGitHubPeer(), startOidcPeer()]);
    database = await createSqliteDatabase();
    const port = await freePort();
    baseURL = `http://127.0.0.1:${port}`;
    server = await createTestApp(database, {
      env: {
        AUTH_URL: baseURL,
        ...peerEnv({ github, google }),
      },
    });
    await server.app.listen({ port, host: '127.0.0.1' });
  });
  after(async () => {
    await closeBrowser(browser);
    await server?.close();
    await database?.drop();
    await Promise.all([github?.close(), google?.close()]);
  });

  it('clicks "Sign in with GitHub" through to the dashboard, then links Google there', async (t) => {
    assert.ok(browser && server && github && google);
    github.signInAs({ id: 4242, login: 'grace', name: 'Grace Hopper', emails: [{ email: 'grace@example.com', primary: true, verified: true }] });
    google.signInAs({ sub: 'google-grace', email: 'grace.h@example.com', email_verified: true, name: 'Grace H.' });
    const liveGoogle = google;
    await withPage(t, browser, { baseURL }, async (page) => {
      const problems = watchConsole(page);
      await page.goto('/auth/signin');
      t.diagnostic(`screenshot: ${await saveScreenshot(page, 'ui-signin-providers')}`);
      await page.getByRole('button', { name: 'Log in with GitHub' }).click();
      await page.waitForURL(`${baseURL}/dashboard`);
      await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
      const main = await page.locator('main').innerText();
      assert.match(main, /Grace Hopper/);
      assert.match(main, /grace@example\.com/);

      // GitHub is linked; Google can be linked with its button.
      const providers = page.locator('li.provider');
      assert.match(await providers.filter({ hasText: 'GitHub' }).innerText(), /Linked/);
      await page.getByRole('button', { name: 'Link Google' }).click();
      await page.waitForURL((url) => url.pathname === '/dashboard' && url.searchParams.get('notice') === 'PROVIDER_LINKED');
      assert.match(await page.locator('div.alert[role="status"]').innerText(), /linked/);
      assert.match(await providers.filter({ hasText: 'Google' }).innerText(), /Linked/);
      assert.equal(liveGoogle.authorizeRequests.length, 1);
      t.diagnostic(`screenshot: ${await saveScreenshot(page, 'ui-dashboard-providers')}`);

      // Signed out, Google now signs the same person in.
      await page.goto('/auth/signout');
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL(`${baseURL}/`);
      await page.goto('/auth/signin');
      await page.getByRole('button', { name: 'Log in with Google' }).click();
      await page.waitForURL(`${baseURL}/dashboard`);
      assert.match(await page.locator('main').innerText(), /grace@example\.com/);

      assert.deepEqual(problems, [], 'no console errors (e.g. a CSP form-action violation)');
    });
  });
});
