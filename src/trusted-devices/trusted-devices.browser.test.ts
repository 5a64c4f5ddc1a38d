/**
 * Trusted devices in a real browser (Debian's Chromium through playwright-core) against the real
 * server on loopback: the second-factor page's "Don't ask again on this browser for 30 days"
 * checkbox, the next sign-in going straight through, the dashboard's Trusted browsers section and
 * its Forget button, after which the factor is asked again; the same box beside "Use a passkey"
 * when the second factor is a passkey (Chromium's virtual authenticator, as in
 * test/flows/passkeys-browser.test.ts), ticked or not. axe-core finds no serious or critical
 * violation on the prompt (with the checkbox) and on the dashboard (with the section) in the six
 * languages, nor on the admin's page of a user; a console error (a CSP violation, say) fails the
 * test. Skipped with a reason when Chromium is missing outside CI.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import { createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { freePort } from '../../test/helpers/process.ts';
import { enrolTotp, totpCode, TOTP_STEP_MS } from '../../test/helpers/totp.ts';
import { addVirtualAuthenticator, chromiumAvailability, closeBrowser, launchBrowser, withPage, watchConsole, type Browser } from '../../test/helpers/browser.ts';
import { trustedDeviceCookieName } from './trusted-devices.waiver.ts';
import { LOCALES } from '../i18n/locales.ts';

const PASSWORD = 'correct horse battery staple';
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const chromium = chromiumAvailability();

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[] }>;
}

/** The serious and critical axe violations of the page as it is (axe injected, so the page runs under a context that bypasses its CSP only for that). */
async function axeViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: AXE_SOURCE });
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(options: object): Promise<{ violations: AxeViolation[] }> } }).axe;
    const result = await axe.run({ runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'] } });
    return result.violations.map((violation) => ({ id: violation.id, impact: violation.impact, help: violation.help, targets: violation.nodes.map((node) => node.target.join(' ')) }));
  });
  return violations.filter((item) => item.impact === 'serious' || item.impact === 'critical').map((item) => `${item.id} [${item.impact}] ${item.help} at ${item.targets.join(', ')}`);
}

describe('trusted devices in Chromium', { skip: chromium.ok ? false : chromium.reason, timeout: 180_000 }, () => {
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

  async function signIn(page: Page, email: string, callbackUrl = '/dashboard') {
    await page.goto(`/auth/signin?callbackUrl=${callbackUrl}`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Login', exact: true }).click();
  }
  async function signOut(page: Page) {
    await page.goto('/auth/signout');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${new URL(page.url()).origin}/`);
  }

  it('trusts the browser from the prompt, skips the factor next time, and asks again once forgotten', async (t) => {
    assert.ok(browser && server);
    const user = await createUser(server.services, { email: 'tess@example.com', password: PASSWORD, name: 'Tess Trust' });
    const secret = await enrolTotp(server.services as never, user, clock);

    await withPage(t, browser, { baseURL, bypassCSP: false }, async (page) => {
      const problems = watchConsole(page);
      await signIn(page, 'tess@example.com');
      await page.waitForURL(/\/auth\/mfa/);
      // One in each code form (the app's code, a recovery code): the first is the app's.
      const remember = page.getByLabel("Don't ask again on this browser for 30 days").first();
      await remember.waitFor();
      assert.equal(await remember.isChecked(), false, 'not trusted unless asked');
      await remember.check();
      await page.locator('#mfa-code').fill(totpCode(secret, clock()));
      await page.getByRole('button', { name: 'Verify' }).click();
      await page.waitForURL(`${baseURL}/dashboard`);
      const cookie = (await page.context().cookies()).find((item) => item.name === trustedDeviceCookieName(server!.config));
      assert.ok(cookie, 'the trusted-device cookie is set');
      assert.equal(cookie.httpOnly, true);
      assert.equal(cookie.sameSite, 'Lax');
      await page.getByRole('heading', { name: 'Trusted browsers' }).waitFor();

      await signOut(page);
      clock.advance(TOTP_STEP_MS);
      await signIn(page, 'tess@example.com');
      await page.waitForURL(`${baseURL}/dashboard`);
      await page.getByRole('heading', { name: 'Trusted browsers' }).waitFor();
      await page.getByRole('button', { name: 'Forget', exact: true }).click();
      await page.waitForURL(/\/dashboard/);
      assert.equal(await page.getByRole('heading', { name: 'Trusted browsers' }).count(), 0);

      await signOut(page);
      await signIn(page, 'tess@example.com');
      await page.waitForURL(/\/auth\/mfa/);
      assert.deepEqual(problems, []);
    });
  });

  it("the admin's page of a user shows the section, without a serious axe violation, and Forget all empties it", async (t) => {
    assert.ok(browser && server);
    const services = server.services;
    const admin = await createUser(services, { email: 'ada@example.com', password: PASSWORD, name: 'Ada Admin', roles: ['ADMIN'] });
    const user = await createUser(services, { email: 'uma@example.com', password: PASSWORD, name: 'Uma User' });
    const adminSecret = await enrolTotp(services as never, admin, clock);
    await services.trustedDevices.trust(user, { actorUserId: user.id, ip: '192.0.2.1', userAgent: 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0' });
    await withPage(t, browser, { baseURL, bypassCSP: true }, async (page) => {
      await signIn(page, 'ada@example.com', `/admin/users/${user.id}`);
      await page.locator('#mfa-code').fill(totpCode(adminSecret, clock()));
      await page.getByRole('button', { name: 'Verify' }).click();
      await page.waitForURL(`${baseURL}/admin/users/${user.id}`);
      await page.getByText("1 browser skips this user's second factor.").waitFor();
      assert.deepEqual(await axeViolations(page), []);
      await page.locator('#trusted-devices-admin').getByRole('button', { name: 'Forget all' }).click();
      await page.getByText("No browser skips this user's second factor.").waitFor();
    });
  });

  describe('with a passkey as the second factor', () => {
    // WebAuthn wants a domain for its RP ID: this server's AUTH_URL is http://localhost:<port>.
    let passkeyServer: TestApp | undefined;
    let passkeyDatabase: TestDatabase | undefined;
    let origin = '';
    before(async () => {
      passkeyDatabase = await createSqliteDatabase();
      const port = await freePort();
      origin = `http://localhost:${port}`;
      passkeyServer = await createTestApp(passkeyDatabase, { env: { AUTH_URL: origin } });
      await passkeyServer.app.listen({ port, host: '127.0.0.1' });
    });
    after(async () => {
      await passkeyServer?.close();
      await passkeyDatabase?.drop();
    });

    it('"Don\'t ask again" beside "Use a passkey": ticked, the next sign-in skips the factor; unticked, it is asked', async (t) => {
      assert.ok(browser && passkeyServer);
      const email = 'paula@example.com';
      await createUser(passkeyServer.services, { email, password: PASSWORD, name: 'Paula Passkey' });
      const deviceCookie = trustedDeviceCookieName(passkeyServer.config);
      await withPage(t, browser, { baseURL: origin }, async (page) => {
        const problems = watchConsole(page);
        await addVirtualAuthenticator(page);
        const signInWithPassword = () => signIn(page, email);
        const signOutHere = () => signOut(page);
        /** On the second-factor page: the passkey, with its box ticked or not. */
        const answerWithPasskey = async (remember: boolean) => {
          await page.waitForURL(/\/auth\/mfa/);
          const box = page.locator('[data-passkeys="signin"]');
          const field = box.getByLabel("Don't ask again on this browser for 30 days");
          await field.waitFor();
          assert.equal(await field.isChecked(), false, 'not trusted unless asked');
          if (remember) await field.check();
          await box.getByRole('button', { name: 'Use a passkey' }).click();
          await page.waitForURL(`${origin}/dashboard`);
        };
        const hasDeviceCookie = async () => (await page.context().cookies()).some((cookie) => cookie.name === deviceCookie);

        // A passkey added from the dashboard is the account's second factor from now on.
        await signInWithPassword();
        await page.waitForURL(`${origin}/dashboard`);
        const passkeys = page.getByRole('region', { name: 'Passkeys' });
        await passkeys.getByRole('button', { name: 'Add a passkey' }).click();
        await passkeys.getByRole('button', { name: 'I have saved them' }).click();
        await passkeys.locator('li.passkey').first().waitFor();
        await signOutHere();

        // Ticked: trusted, and the next sign-in from this browser goes straight through.
        await signInWithPassword();
        await answerWithPasskey(true);
        assert.equal(await hasDeviceCookie(), true, 'the trusted-device cookie is set');
        await signOutHere();
        await signInWithPassword();
        await page.waitForURL(`${origin}/dashboard`);
        await page.getByRole('heading', { name: 'Trusted browsers' }).waitFor();

        // Forgotten, then unticked: not trusted, and the next sign-in is asked again.
        await page.getByRole('button', { name: 'Forget', exact: true }).click();
        await page.waitForURL(/\/dashboard/);
        await signOutHere();
        await signInWithPassword();
        await answerWithPasskey(false);
        await signOutHere();
        await signInWithPassword();
        await page.waitForURL(/\/auth\/mfa/);
        assert.deepEqual(problems, [], 'no console errors (e.g. CSP violations) and no failed requests');
      });
    });
  });

  for (const locale of LOCALES) {
    it(`the prompt with its checkbox and the dashboard with its section have no serious axe violation (${locale})`, async (t) => {
      assert.ok(browser && server);
      const email = `axe-${locale}@example.com`;
      const user = await createUser(server.services, { email, password: PASSWORD, name: 'Axel Axe' });
      const secret = await enrolTotp(server.services as never, user, clock);
      await withPage(t, browser, { baseURL, bypassCSP: true, locale }, async (page) => {
        await page.setExtraHTTPHeaders({ 'accept-language': locale });
        await page.goto('/auth/signin?callbackUrl=/dashboard');
        await page.locator('input[name="email"]').fill(email);
        await page.locator('input[name="password"]').fill(PASSWORD);
        await page.locator('form[action="/api/auth/signin"] button[type="submit"]').click();
        await page.waitForURL(/\/auth\/mfa/);
        assert.equal(await page.getAttribute('html', 'lang'), locale);
        await page.locator('#mfa-code-remember-device').waitFor();
        assert.deepEqual(await axeViolations(page), [], 'the prompt');
        await page.locator('#mfa-code-remember-device').check();
        await page.locator('#mfa-code').fill(totpCode(secret, clock()));
        await page.locator('form[action="/auth/mfa"]').first().locator('button[type="submit"]').click();
        await page.waitForURL(`${baseURL}/dashboard`);
        await page.locator('#trusted-devices-heading').waitFor();
        assert.deepEqual(await axeViolations(page), [], 'the dashboard');
      });
    });
  }
});
