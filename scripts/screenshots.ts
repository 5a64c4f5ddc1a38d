/**
 * Regenerates docs/screenshots/: every stop of the page tour (test/helpers/page-tour.ts) in
 * English and German at desktop width, and in English at 375 px, each a full-page PNG, with an
 * index (docs/screenshots/README.md). Runs the real service on loopback with seeded data, and
 * Debian's Chromium.
 *
 *   npm run screenshots
 *
 * Old images are removed first, so what the folder holds is exactly what this run made. Every
 * page's footer names the six languages in their own scripts (日本語 among them), so the run
 * refuses to start without a font that has Japanese glyphs: without one Chromium draws empty boxes
 * (`apt-get install fonts-noto-cjk` on Debian).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { serveTestApp } from '../test/helpers/app.ts';
import { chromiumAvailability, closeBrowser, launchBrowser, newPage } from '../test/helpers/browser.ts';
import { openTourPage, seedTour, setLanguage, signInVisitor, stopsByVisitor, TOUR, TOUR_ENV } from '../test/helpers/page-tour.ts';
import { SHOTS, screenshotFile } from './screenshots.shots.ts';

const OUT_DIR = resolve(import.meta.dirname, '../docs/screenshots');

function indexMarkdown(): string {
  const header = `| Page | ${SHOTS.map((shot) => shot.label).join(' | ')} |\n| --- | ${SHOTS.map(() => '---').join(' | ')} |`;
  const rows = TOUR.map((stop) => `| ${stop.title} | ${SHOTS.map((shot) => `[![${stop.title}, ${shot.label}](${screenshotFile(stop.id, shot)})](${screenshotFile(stop.id, shot)})`).join(' | ')} |`);
  return [
    '# Screenshots of the hosted pages',
    '',
    'Every page of the page tour (`test/helpers/page-tour.ts`, the same list the accessibility test',
    'checks), as the seeded test data shows it, in English and German at desktop width and in English',
    'at 375 px. Made by `npm run screenshots` (the real service on loopback, Chromium); do not edit',
    'these files by hand.',
    '',
    header,
    ...rows,
    '',
  ].join('\n');
}

/** Why the pages would not render every language's name, or null when a font covers Japanese (fontconfig, which Chromium uses). */
function missingFont(): string | null {
  const found = spawnSync('fc-list', [':lang=ja', 'family'], { encoding: 'utf8' });
  if (found.error !== undefined) return `fontconfig's fc-list could not run (${found.error.message}): install fontconfig and fonts-noto-cjk`;
  if (found.stdout.trim() === '') return 'no font with Japanese glyphs is installed, so the footer\'s 日本語 would be drawn as empty boxes: apt-get install fonts-noto-cjk';
  return null;
}

async function main(): Promise<void> {
  const chromium = chromiumAvailability();
  if (!chromium.ok) throw new Error(chromium.reason);
  const font = missingFont();
  if (font !== null) throw new Error(font);
  mkdirSync(OUT_DIR, { recursive: true });
  for (const file of readdirSync(OUT_DIR)) if (file.endsWith('.png')) rmSync(join(OUT_DIR, file));

  const browser = await launchBrowser();
  const server = await serveTestApp(TOUR_ENV);
  try {
    const seed = await seedTour(server);
    for (const shot of SHOTS) {
      for (const { visitor, stops } of stopsByVisitor()) {
        const page = await newPage(browser, { baseURL: seed.baseURL, viewport: shot.viewport, colorScheme: 'light' });
        try {
          await signInVisitor(page, seed, visitor);
          await setLanguage(page.context(), seed, shot.locale);
          for (const stop of stops) {
            await openTourPage(page, seed, stop);
            await page.screenshot({ path: join(OUT_DIR, screenshotFile(stop.id, shot)), fullPage: true, timeout: 20_000 });
            process.stdout.write(`${screenshotFile(stop.id, shot)}\n`);
          }
        } finally {
          await page.context().close();
        }
      }
    }
    writeFileSync(join(OUT_DIR, 'README.md'), indexMarkdown());
  } finally {
    await server.close();
    await closeBrowser(browser);
  }
}

await main();
