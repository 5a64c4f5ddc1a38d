/**
 * Organization domains in a real browser (Debian's Chromium through playwright-core) against the
 * real server on loopback, without JavaScript, with a stub DNS server (DOMAINS_DNS_SERVER): an
 * OWNER adds a domain on the organization page and sees the TXT record to publish; verifying before
 * publishing explains why it failed; once the record is there, it is verified; then removed. The
 * section and the result pages are checked by axe (no serious or critical violation) in English
 * and Japanese, light and dark; a MEMBER sees no Domains section. A console error fails the test.
 * Skipped with a reason when Chromium is missing outside CI.
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
import { startStubDnsServer, type StubDnsServer } from './test-dns-server.ts';

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

describe('organization domains in Chromium', { skip: chromium.ok ? false : chromium.reason, timeout: 180_000 }, () => {
  let browser: Browser | undefined;
  let database: TestDatabase | undefined;
  let server: TestApp | undefined;
  let dns: StubDnsServer | undefined;
  let baseURL = '';

  before(async () => {
    browser = await launchBrowser();
    dns = await startStubDnsServer();
    database = await createSqliteDatabase();
    const port = await freePort();
    baseURL = `http://127.0.0.1:${port}`;
    server = await createTestApp(database, { env: { AUTH_URL: baseURL, DOMAINS_DNS_SERVER: dns.address } });
    await server.app.listen({ port, host: '127.0.0.1' });
  });
  after(async () => {
    await closeBrowser(browser);
    await server?.close();
    await database?.drop();
    await dns?.close();
  });

  it('adds a domain from the organization page, shows the record, verifies it once published and removes it; axe-clean', async (t) => {
    assert.ok(browser && server && dns);
    const services = server.services;
    const owner = await createUser(services, { email: 'olga@example.com', password: PASSWORD, name: 'Olga Owner' });
    const member = await createUser(services, { email: 'mo@example.com', password: PASSWORD, name: 'Mo Member' });
    const created = await services.organizations.create({ name: 'Domain Bakery' }, owner.id, SYSTEM_SOURCE);
    assert.ok(created.ok);
    const orgId = created.organization.id;
    await services.organizations.addMember(orgId, member.id, 'MEMBER', SYSTEM_SOURCE);
    const found: string[] = [];

    await withPage(t, browser, { baseURL, bypassCSP: true }, async (page) => {
      const problems = watchConsole(page);
      await page.goto(`/auth/signin?callbackUrl=/organizations/${orgId}`);
      await signIn(page, 'olga@example.com');
      await page.waitForURL(`${baseURL}/organizations/${orgId}`);
      await page.getByRole('heading', { name: 'Domains', exact: true }).waitFor();
      await page.getByText('No domains yet.').waitFor();
      found.push(...(await axeProblems(page, 'organization, empty')));

      await page.getByLabel('Domain', { exact: true }).fill('Bakery.Example');
      await page.getByRole('button', { name: 'Add domain' }).click();
      await page.getByText('_gatehouse-challenge.bakery.example', { exact: true }).waitFor();
      const value = await page.locator('code', { hasText: 'gatehouse-domain-verification=' }).first().textContent();
      assert.match(value ?? '', /^gatehouse-domain-verification=[A-Za-z0-9_-]{32}$/);
      found.push(...(await axeProblems(page, 'organization, pending')));

      // Verified too early: the page says why, and what to publish.
      await page.getByRole('button', { name: 'Verify with DNS' }).click();
      await page.getByRole('heading', { name: 'The domain was not changed' }).waitFor();
      await page.getByText('The verification record was not found.', { exact: false }).waitFor();
      await page.getByText('DOMAIN_RECORD_NOT_FOUND').waitFor();
      found.push(...(await axeProblems(page, 'result, refused')));

      dns!.records.set('_gatehouse-challenge.bakery.example', { TXT: [value!] });
      await page.getByRole('link', { name: 'Back to the organization' }).click();
      await page.getByText('DOMAIN_RECORD_NOT_FOUND').waitFor();
      await page.getByRole('button', { name: 'Verify with DNS' }).click();
      await page.getByRole('heading', { name: 'Domain verified' }).waitFor();
      found.push(...(await axeProblems(page, 'result, verified')));
      assert.equal((await services.orgDomains.findVerifiedForEmail('someone@bakery.example'))?.organizationId, orgId);

      await page.getByRole('link', { name: 'Back to the organization' }).click();
      await page.getByText('Verified', { exact: false }).first().waitFor();
      assert.equal(await page.getByRole('button', { name: 'Verify with DNS' }).count(), 0);

      // Japanese, dark.
      await page.emulateMedia({ colorScheme: 'dark' });
      await page.goto(`/organizations/${orgId}?lang=ja`);
      await page.getByRole('heading', { name: 'ドメイン', exact: true }).waitFor();
      found.push(...(await axeProblems(page, 'organization (ja, dark)')));
      await page.emulateMedia({ colorScheme: 'light' });
      await page.goto(`/organizations/${orgId}?lang=en`);

      await page.locator('#domains').getByRole('button', { name: 'Remove' }).click();
      await page.getByText('No domains yet.').waitFor();
      assert.equal(await services.orgDomains.findVerified('bakery.example'), null);
      // The refused verification was answered 422 on purpose (the browser reports it): nothing else.
      assert.deepEqual(problems.filter((line) => !(line.includes('422') && line.includes('/domains/verify'))), []);
    });

    // A MEMBER sees the organization, not its domains.
    await withPage(t, browser, { baseURL }, async (page) => {
      await page.goto(`/auth/signin?callbackUrl=/organizations/${orgId}`);
      await signIn(page, 'mo@example.com');
      await page.waitForURL(`${baseURL}/organizations/${orgId}`);
      await page.getByRole('heading', { name: 'Domain Bakery' }).waitFor();
      assert.equal(await page.getByRole('heading', { name: 'Domains', exact: true }).count(), 0);
      const csrfToken = await page.locator('input[name="csrfToken"]').first().inputValue();
      const refused = await page.request.post(`/organizations/${orgId}/domains`, { form: { domain: 'member.example', csrfToken }, headers: { origin: baseURL } });
      assert.equal(refused.status(), 403);
      assert.match(await refused.text(), /ORGANIZATION_ROLE_REQUIRED/);
    });
    assert.deepEqual(found, []);
  });
});
