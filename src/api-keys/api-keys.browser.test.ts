/**
 * API keys in a real browser (Debian's Chromium through playwright-core) against the real server
 * on loopback, without JavaScript: a person creates a key from the dashboard (the key shown once,
 * working as a Bearer token), revokes it; an organization OWNER creates one from the organization
 * page. The dashboard section, the result page and the organization section are checked by axe
 * (no serious or critical violation) in English and Japanese, light and dark. A console error fails
 * the test. Skipped with a reason when Chromium is missing outside CI.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { freePort } from '../../test/helpers/process.ts';
import { chromiumAvailability, closeBrowser, launchBrowser, withPage, watchConsole, type Browser, type Page } from '../../test/helpers/browser.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';

const PASSWORD = 'correct horse battery staple';
const chromium = chromiumAvailability();
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

async function signIn(page: Page, email: string): Promise<void> {
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Login', exact: true }).click();
}

/** Serious or critical axe violations of the page as it is. */
async function axeProblems(page: Page, where: string): Promise<string[]> {
  await page.addScriptTag({ content: AXE_SOURCE });
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(options: object): Promise<{ violations: Array<{ id: string; impact: string | null; nodes: Array<{ target: string[] }> }> }> } }).axe;
    const result = await axe.run({ runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'] } });
    return result.violations.map((violation) => ({ id: violation.id, impact: violation.impact, targets: violation.nodes.map((node) => node.target.join(' ')) }));
  });
  return violations.filter((item) => item.impact === 'serious' || item.impact === 'critical').map((item) => `${where}: ${item.id} [${item.impact}] at ${item.targets.join(', ')}`);
}

describe('API keys in Chromium', { skip: chromium.ok ? false : chromium.reason, timeout: 180_000 }, () => {
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

  it('creates a key from the dashboard (shown once, working), revokes it, and creates an organization key from its page; axe-clean', async (t) => {
    assert.ok(browser && server);
    const services = server.services;
    const owner = await createUser(services, { email: 'kim@example.com', password: PASSWORD, name: 'Kim Keys', roles: ['AUDITOR'] });
    const organization = await services.organizations.create({ name: 'Key Bakery' }, owner.id, SYSTEM_SOURCE);
    assert.ok(organization.ok);
    const found: string[] = [];

    await withPage(t, browser, { baseURL, bypassCSP: true }, async (page) => {
      const problems = watchConsole(page);
      await page.goto('/auth/signin?callbackUrl=/dashboard');
      await signIn(page, 'kim@example.com');
      await page.waitForURL(`${baseURL}/dashboard`);
      await page.getByRole('heading', { name: 'API keys' }).waitFor();
      found.push(...(await axeProblems(page, 'dashboard')));

      await page.locator('#api-key-name').fill('deploy script');
      await page.getByRole('checkbox', { name: 'AUDITOR' }).check();
      await page.locator('#api-key-scopes').fill('deploy:write');
      await page.getByRole('button', { name: 'Create key' }).click();
      await page.getByRole('heading', { name: 'Your new API key' }).waitFor();
      const secret = await page.getByLabel('API key').inputValue();
      assert.match(secret, /^gatehouse_pk_[0-9A-Za-z]{48}$/);
      found.push(...(await axeProblems(page, 'result')));
      const used = await page.request.get('/api/organizations', { headers: { authorization: `Bearer ${secret}` } });
      assert.equal(used.status(), 200);

      await page.getByRole('link', { name: 'Back' }).click();
      await page.getByText('deploy script', { exact: true }).waitFor();
      await page.getByText('AUDITOR, scope:deploy:write').waitFor();
      await page.getByRole('button', { name: 'Revoke' }).click();
      await page.getByText('No active keys.').waitFor();
      assert.equal((await page.request.get('/api/organizations', { headers: { authorization: `Bearer ${secret}` } })).status(), 401);

      // The organization's page: its keys, for its OWNER.
      await page.goto(`/organizations/${organization.organization.id}`);
      await page.getByRole('heading', { name: 'Organization API keys' }).waitFor();
      await page.locator('#api-key-name').fill('billing sync');
      await page.locator('#api-key-role').selectOption('ADMIN');
      await page.getByRole('button', { name: 'Create key' }).click();
      const orgSecret = await page.getByLabel('API key').inputValue();
      assert.match(orgSecret, /^gatehouse_ok_/);
      await page.getByRole('link', { name: 'Back' }).click();
      await page.getByText('billing sync', { exact: true }).waitFor();
      found.push(...(await axeProblems(page, 'organization')));

      // A refused creation explains itself on the same page (a lifetime the form never offers).
      const refused = await page.request.post('/dashboard/api-keys', { form: { name: 'x', days: '9999', csrfToken: await page.locator('input[name="csrfToken"]').first().inputValue() }, headers: { origin: baseURL } });
      assert.equal(refused.status(), 422);

      // Japanese, dark.
      await page.emulateMedia({ colorScheme: 'dark' });
      await page.goto('/dashboard?lang=ja');
      await page.getByRole('heading', { name: 'API キー' }).waitFor();
      found.push(...(await axeProblems(page, 'dashboard (ja, dark)')));
      await page.locator('#api-key-name').fill('日本語のキー');
      await page.getByRole('button', { name: 'キーを作成' }).click();
      await page.getByRole('heading', { name: '新しい API キー' }).waitFor();
      found.push(...(await axeProblems(page, 'result (ja, dark)')));
      await page.goto(`/organizations/${organization.organization.id}?lang=ja`);
      found.push(...(await axeProblems(page, 'organization (ja, dark)')));
      assert.deepEqual(problems, []);
    });

    // An administrator: the person's keys on the admin user page, and one made for them there.
    await createUser(services, { email: 'ada@example.com', password: PASSWORD, name: 'Ada Admin', roles: ['ADMIN'] });
    await withPage(t, browser, { baseURL, bypassCSP: true }, async (page) => {
      const problems = watchConsole(page);
      await page.goto('/auth/signin?callbackUrl=/admin');
      await signIn(page, 'ada@example.com');
      await page.waitForURL(`${baseURL}/admin`);
      await page.goto(`/admin/users/${owner.id}`);
      await page.getByRole('heading', { name: 'API keys' }).waitFor();
      // In the keys section (the page's recent activity names the key too).
      await page.locator('#api-keys').getByText('日本語のキー', { exact: true }).waitFor();
      found.push(...(await axeProblems(page, 'admin user')));
      await page.locator('#api-key-name').fill('made by an admin');
      await page.getByRole('button', { name: 'Create key' }).click();
      assert.match(await page.getByLabel('API key').inputValue(), /^gatehouse_pk_/);
      await page.getByRole('link', { name: 'Back' }).click();
      await page.locator('#api-keys').getByText('made by an admin', { exact: true }).waitFor();
      assert.deepEqual(problems, []);
    });
    assert.deepEqual(found, []);
  });
});
