/**
 * Accessibility of the hosted pages, checked by axe-core in Chromium: every page whose texts are in
 * the catalogs, in each of the six languages, in the light and the dark theme, at 375 px and at
 * desktop width. A serious or critical violation fails the test with its rule, element and page.
 * (axe is injected into the page, so this context bypasses the pages' CSP: the pages themselves
 * load no script.) The dashboard and the feature pages join this list as their texts move to the
 * catalogs; keyboard-only flows are test/flows/keyboard.test.ts's job (not written yet).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { serveTestApp, type ServedTestApp } from '../helpers/app.ts';
import { chromiumAvailability, closeBrowser, launchBrowser, newPage, type Browser } from '../helpers/browser.ts';
import { LOCALES } from '../../src/i18n/locales.ts';

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** The pages whose texts are in the catalogs, with a state worth checking where they have one. */
const PAGES = [
  '/',
  '/auth/signin',
  '/auth/signin?error=INVALID_CREDENTIALS',
  '/auth/signout',
  '/auth/error?error=AccessDenied',
  '/auth/forgot-password',
  '/auth/forgot-password?error=RATE_LIMITED',
  '/auth/forgot-password/sent',
  '/auth/reset-password',
  '/auth/reset-password/done',
  '/auth/signup',
  '/auth/signup?error=VALIDATION_ERROR&reason=TOO_SHORT',
  '/auth/check-email',
  '/auth/verify-email',
  '/auth/email-verified',
];

const LOOKS = [
  { name: 'light, desktop', colorScheme: 'light', viewport: { width: 1280, height: 800 } },
  { name: 'dark, 375 px', colorScheme: 'dark', viewport: { width: 375, height: 740 } },
  { name: 'light, 375 px', colorScheme: 'light', viewport: { width: 375, height: 740 } },
  { name: 'dark, desktop', colorScheme: 'dark', viewport: { width: 1280, height: 800 } },
] as const;

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[] }>;
}

const chromium = chromiumAvailability();

describe('accessibility of the hosted pages (axe-core in Chromium)', { skip: chromium.ok ? false : chromium.reason, timeout: 600_000 }, () => {
  let browser: Browser | undefined;
  let server: ServedTestApp | undefined;

  before(async () => {
    browser = await launchBrowser();
    server = await serveTestApp({ ALLOW_SIGNUP: 'true' });
  });
  after(async () => {
    await server?.close();
    await closeBrowser(browser);
  });

  for (const look of LOOKS) {
    it(`has no serious or critical violation, ${look.name}, in every language`, async () => {
      assert.ok(browser);
      const page = await newPage(browser, { baseURL: server!.baseURL, colorScheme: look.colorScheme, viewport: look.viewport, bypassCSP: true });
      const found: string[] = [];
      try {
        for (const locale of LOCALES) {
          for (const path of PAGES) {
            const url = `${path}${path.includes('?') ? '&' : '?'}lang=${locale}`;
            const response = await page.goto(url);
            assert.ok(response !== null && response.status() < 500, `${url}: ${response?.status()}`);
            assert.equal(await page.getAttribute('html', 'lang'), locale, `${url} is in ${locale}`);
            await page.addScriptTag({ content: AXE_SOURCE });
            const violations = await page.evaluate(async () => {
              const axe = (globalThis as unknown as { axe: { run(options: object): Promise<{ violations: AxeViolation[] }> } }).axe;
              const result = await axe.run({ runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'] } });
              return result.violations.map((violation) => ({ id: violation.id, impact: violation.impact, help: violation.help, nodes: violation.nodes.map((node) => ({ target: node.target })) }));
            });
            for (const violation of violations.filter((item) => item.impact === 'serious' || item.impact === 'critical')) {
              found.push(`${url} (${look.name}): ${violation.id} [${violation.impact}] ${violation.help} at ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`);
            }
          }
        }
      } finally {
        await page.context().close();
      }
      assert.deepEqual(found, []);
    });
  }
});
