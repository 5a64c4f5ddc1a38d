/**
 * Accessibility of every hosted page, checked by axe-core in Chromium: each stop of the page tour
 * (test/helpers/page-tour.ts: signed out, signed in, at the second-factor prompt, administrator,
 * the OpenID Provider's pages), in each of the six languages and in each look (light and dark theme,
 * 375 px and desktop width): English in every look, each other language in one (`languagesOf`;
 * `TOUR_GRID=full` checks every pair). A serious or critical violation fails the test with its rule,
 * element and page; so does a page that is not in the language asked for. (axe is injected into the
 * page, so these contexts bypass the pages' CSP.) Keyboard-only flows: test/flows/keyboard.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { serveTestApp, type ServedTestApp } from '../helpers/app.ts';
import { chromiumAvailability, closeBrowser, launchBrowser, newPage, saveScreenshot, type Browser } from '../helpers/browser.ts';
import type { Page } from 'playwright-core';
import { openTourPage, seedTour, setLanguage, signInVisitor, stopsByVisitor, TOUR_ENV, type TourSeed } from '../helpers/page-tour.ts';
import { DEFAULT_LOCALE, LOCALES, type Locale } from '../../src/i18n/locales.ts';

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const LOOKS = [
  { name: 'light, desktop', colorScheme: 'light', viewport: { width: 1280, height: 800 } },
  { name: 'dark, 375 px', colorScheme: 'dark', viewport: { width: 375, height: 740 } },
  { name: 'light, 375 px', colorScheme: 'light', viewport: { width: 375, height: 740 } },
  { name: 'dark, desktop', colorScheme: 'dark', viewport: { width: 1280, height: 800 } },
] as const;

/**
 * The languages each look is checked in. Every stop is checked in every look and in every language,
 * not in every pair of them: English in each look, each other language in one look, turn about
 * (German and Japanese, the longest words and the other script, at 375 px). A look's violations
 * (contrast, target size) do not change with the language, nor a language's (lang, labels) with
 * the look; the whole grid, four times the pages, is `TOUR_GRID=full`.
 */
const TURNS: ReadonlyArray<readonly Locale[]> = [['fr'], ['de', 'ja'], ['pt-BR'], ['es']];
// A language added to LOCALES but to no look's turn would be checked only in the full grid.
const unchecked = LOCALES.filter((locale) => locale !== DEFAULT_LOCALE && !TURNS.flat().includes(locale));
if (unchecked.length > 0 || TURNS.length !== LOOKS.length) throw new Error(`accessibility tour: give each look a turn and each language a look (${unchecked.join(', ')})`);

function languagesOf(lookIndex: number): readonly Locale[] {
  return process.env.TOUR_GRID === 'full' ? LOCALES : [DEFAULT_LOCALE, ...TURNS[lookIndex]!];
}

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: Array<{ target: string[] }>;
}

const chromium = chromiumAvailability();

describe('accessibility of the hosted pages (axe-core in Chromium)', { skip: chromium.ok ? false : chromium.reason, timeout: 1_800_000 }, () => {
  let browser: Browser | undefined;
  let server: ServedTestApp | undefined;
  let seed: TourSeed | undefined;

  before(async () => {
    browser = await launchBrowser();
    server = await serveTestApp(TOUR_ENV);
    seed = await seedTour(server);
  });
  after(async () => {
    await server?.close();
    await closeBrowser(browser);
  });

  // One test per look, visitor and language (a few pages each, far from the per-test timeout on
  // two busy cores); a visitor signs in once per look, in a context its tests share.
  LOOKS.forEach((look, lookIndex) => {
    for (const { visitor, stops } of stopsByVisitor()) {
      describe(`${look.name}, as ${visitor}: ${stops.map((stop) => stop.id).join(', ')}`, () => {
        let page: Page | undefined;
        before(async () => {
          assert.ok(browser && seed);
          page = await newPage(browser, { baseURL: seed.baseURL, colorScheme: look.colorScheme, viewport: look.viewport, bypassCSP: true });
          await signInVisitor(page, seed, visitor);
        });
        after(async () => {
          await page?.context().close();
        });

        for (const locale of languagesOf(lookIndex)) {
          it(`no serious or critical violation, in ${locale}`, async () => {
            assert.ok(page && seed);
            const found: string[] = [];
            await setLanguage(page.context(), seed, locale);
            for (const stop of stops) {
              await openTourPage(page, seed, stop);
              const where = `${stop.id} (${new URL(page.url()).pathname}, ${locale}, ${look.name})`;
              const lang = await page.getAttribute('html', 'lang');
              if (lang !== locale) {
                found.push(`${where}: the page is not in ${locale} (<html lang="${lang}">)`);
                continue;
              }
              await page.addScriptTag({ content: AXE_SOURCE });
              const violations = await page.evaluate(async () => {
                const axe = (globalThis as unknown as { axe: { run(options: object): Promise<{ violations: AxeViolation[] }> } }).axe;
                const result = await axe.run({ runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'] } });
                return result.violations.map((violation) => ({ id: violation.id, impact: violation.impact, help: violation.help, nodes: violation.nodes.map((node) => ({ target: node.target })) }));
              });
              const serious = violations.filter((item) => item.impact === 'serious' || item.impact === 'critical');
              for (const violation of serious) found.push(`${where}: ${violation.id} [${violation.impact}] ${violation.help} at ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`);
              if (serious.length > 0) await saveScreenshot(page, `axe-${stop.id}-${locale}-${look.name}`);
            }
            assert.deepEqual(found, []);
          });
        }
      });
    }
  });
});
