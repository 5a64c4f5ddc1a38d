/**
 * The dashboard's "Download your data" in Chromium (playwright-core) against the real server on
 * loopback: the section is there, axe-clean (a serious or critical violation fails), in English and
 * German; its button downloads the export file (named gatehouse-export-<date>.json, the signed-in
 * user's document); once the sign-in is no longer recent, the button sends the browser to sign in
 * again and, signed in, back to the download. Skipped with a reason when Chromium is missing.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { freePort } from '../../test/helpers/process.ts';
import { chromiumAvailability, closeBrowser, launchBrowser, watchConsole, withPage, type Browser, type Page } from '../../test/helpers/browser.ts';
import { EXPORT_FORMAT } from './data-export.service.ts';

const PASSWORD = 'correct horse battery staple';
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const chromium = chromiumAvailability();

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[] }>;
}

/** The serious and critical axe violations of the page, as lines. */
async function seriousViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: AXE_SOURCE });
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(options: object): Promise<{ violations: AxeViolation[] }> } }).axe;
    const result = await axe.run({ runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'] } });
    return result.violations.map((violation) => ({ id: violation.id, impact: violation.impact, help: violation.help, nodes: violation.nodes.map((node) => ({ target: node.target })) }));
  });
  return violations
    .filter((item) => item.impact === 'serious' || item.impact === 'critical')
    .map((violation) => `${violation.id} [${violation.impact}] ${violation.help} at ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`);
}

describe('data export in Chromium', { skip: chromium.ok ? false : chromium.reason, timeout: 180_000 }, () => {
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
    server = await createTestApp(database, { env: { AUTH_URL: baseURL, REAUTH_WINDOW: '5m' }, clock });
    await server.app.listen({ port, host: '127.0.0.1' });
  });
  after(async () => {
    await closeBrowser(browser);
    await server?.close();
    await database?.drop();
  });

  it('downloads the export from the dashboard; a stale sign-in signs in again first', async (t) => {
    assert.ok(browser && server);
    const user = await createUser(server.services, { email: 'dora@example.com', password: PASSWORD, name: 'Dora Download' });

    await withPage(t, browser, { baseURL, acceptDownloads: true, bypassCSP: true }, async (page) => {
      const problems = watchConsole(page);
      const signIn = async () => {
        await page.getByLabel('Email').fill('dora@example.com');
        await page.getByLabel('Password').fill(PASSWORD);
        await page.getByRole('button', { name: 'Login', exact: true }).click();
      };
      await page.goto('/auth/signin?callbackUrl=/dashboard');
      await signIn();
      await page.waitForURL(`${baseURL}/dashboard`);

      const section = page.locator('#data-export');
      await section.getByRole('heading', { name: 'Download your data' }).waitFor();
      assert.deepEqual(await seriousViolations(page), []);

      const [download] = await Promise.all([page.waitForEvent('download'), section.getByRole('link', { name: 'Download your data' }).click()]);
      assert.match(download.suggestedFilename(), /^gatehouse-export-\d{4}-\d{2}-\d{2}\.json$/);
      const document = JSON.parse(readFileSync((await download.path())!, 'utf8')) as { format: string; user: { id: string; email: string }; modules: Record<string, unknown> };
      assert.equal(document.format, EXPORT_FORMAT);
      assert.equal(document.user.id, user.id);
      assert.ok('sessions' in document.modules && 'audit' in document.modules);

      // In German too (the section's words, axe-clean).
      await page.goto('/dashboard?lang=de');
      await section.getByRole('heading', { name: 'Ihre Daten herunterladen' }).waitFor();
      assert.deepEqual(await seriousViolations(page), []);

      // Past REAUTH_WINDOW, the button asks for a sign-in, then downloads.
      clock.advance(6 * 60_000);
      await page.goto('/dashboard?lang=en');
      await section.getByRole('link', { name: 'Download your data' }).click();
      await page.waitForURL(/\/auth\/signin\?callbackUrl=\/dashboard\/account\/export/);
      const [again] = await Promise.all([page.waitForEvent('download'), signIn()]);
      assert.match(again.suggestedFilename(), /^gatehouse-export-/);
      assert.deepEqual(problems, []);
    });
  });
});
