/**
 * The passwordless pages in a real browser (Debian's Chromium through playwright-core) against the
 * real server on loopback, mail over SMTP on loopback: from the sign-in page's "E-mail me a sign-in
 * link" to the code prompt, the code typed, the dashboard; then a link opened in a fresh browser
 * (its page shows a button; pressing it signs in). Every page is checked with axe-core in the six
 * languages (no serious or critical violation, the page in the language asked for). A console
 * error (a CSP violation, say) fails the test. Skipped with a reason when Chromium is missing outside CI.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createUser, serveTestApp, type ServedTestApp } from '../../test/helpers/app.ts';
import { startSmtpServer, smtpEnv, type TestSmtpServer } from '../../test/helpers/smtp.ts';
import { mailTo } from '../../test/helpers/mail-links.ts';
import { chromiumAvailability, closeBrowser, launchBrowser, newPage, withPage, watchConsole, type Browser, type Page } from '../../test/helpers/browser.ts';
import { DEFAULT_LOCALE, LOCALES } from '../i18n/locales.ts';
import { linkAndCode } from './email-signin.test-helpers.ts';

const PASSWORD = 'correct horse battery staple';
const SUBJECT = 'Your sign-in link for Gatehouse';
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const chromium = chromiumAvailability();

/** The serious and critical axe violations of the page, one line each. */
async function axeViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: AXE_SOURCE });
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(options: object): Promise<{ violations: Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: string[] }> }> }> } }).axe;
    const result = await axe.run({ runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'] } });
    return result.violations.map((violation) => ({ id: violation.id, impact: violation.impact, help: violation.help, targets: violation.nodes.map((node) => node.target.join(' ')) }));
  });
  return violations.filter((item) => item.impact === 'serious' || item.impact === 'critical').map((item) => `${item.id} [${item.impact}] ${item.help} at ${item.targets.join(', ')}`);
}

describe('passwordless sign-in in Chromium', { skip: chromium.ok ? false : chromium.reason, timeout: 300_000 }, () => {
  let browser: Browser | undefined;
  let server: ServedTestApp | undefined;
  let smtp: TestSmtpServer | undefined;
  let baseURL = '';

  before(async () => {
    browser = await launchBrowser();
    smtp = await startSmtpServer();
    // A provider too: the sign-in page then offers it, passkeys and a mailed link, under one "or".
    server = await serveTestApp({ ...smtpEnv(smtp), EMAIL_SIGNIN: 'true', GITHUB_CLIENT_ID: 'gh-id', GITHUB_CLIENT_SECRET: 'gh-secret' });
    baseURL = server.baseURL;
  });
  after(async () => {
    await closeBrowser(browser);
    await server?.close();
    await smtp?.stop();
  });

  it('signs in by the code typed in the browser that asked, and by the link in another', async (t) => {
    assert.ok(browser && server && smtp);
    await createUser(server.services, { email: 'pat@example.com', password: PASSWORD, name: 'Pat' });

    let link = '';
    await withPage(t, browser, { baseURL }, async (page) => {
      const problems = watchConsole(page);
      await page.goto('/auth/signin?callbackUrl=/dashboard');
      await page.getByRole('link', { name: 'E-mail me a sign-in link' }).click();
      await page.waitForURL(`${baseURL}/auth/email-signin?callbackUrl=%2Fdashboard`);
      await page.getByLabel('Email').fill('pat@example.com');
      await page.getByRole('button', { name: 'E-mail me a link' }).click();
      await page.waitForURL(`${baseURL}/auth/email-signin/code`);
      const mail = linkAndCode(await mailTo(smtp!, 'pat@example.com', SUBJECT));
      link = mail.url.toString();
      await page.getByLabel('Code from the message').fill(mail.code);
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.waitForURL(`${baseURL}/dashboard`);
      assert.deepEqual(problems, []);
    });
    // That request is spent: its link no longer works, in any browser.
    await withPage(t, browser, { baseURL }, async (page) => {
      await page.goto(link);
      await page.getByRole('alert').filter({ hasText: 'This sign-in link does not work' }).waitFor();
    });

    await withPage(t, browser, { baseURL }, async (page) => {
      const problems = watchConsole(page);
      await page.goto('/auth/email-signin');
      await page.getByLabel('Email').fill('pat@example.com');
      await page.getByRole('button', { name: 'E-mail me a link' }).click();
      await page.waitForURL(`${baseURL}/auth/email-signin/code`);
      assert.deepEqual(problems, []);
    });
    const second = linkAndCode(await mailTo(smtp, 'pat@example.com', SUBJECT, 2));
    // Another browser (a phone's mail app, say): the link's page, then its button.
    await withPage(t, browser, { baseURL }, async (page) => {
      const problems = watchConsole(page);
      await page.goto(second.url.toString());
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.waitForURL(`${baseURL}/dashboard`);
      assert.deepEqual(problems, []);
    });
  });

  it('says "or" once, between the password form and the alternatives (a provider, passkeys, a mailed link)', async (t) => {
    assert.ok(browser && server);
    await withPage(t, browser, { baseURL }, async (page) => {
      for (const locale of ['en', 'ja']) {
        await page.goto(`/auth/signin?lang=${locale}`);
        const shown = await page.evaluate(() => {
          const visible = (element: Element) => (element as HTMLElement).offsetParent !== null;
          const everything = [...document.querySelectorAll('main .divider, main .button-provider')].filter(visible);
          return everything.map((element) => (element.classList.contains('divider') ? 'or' : 'choice'));
        });
        assert.ok(shown.filter((kind) => kind === 'choice').length >= 2, `${locale}: a provider and a mailed link at least: ${shown.join(', ')}`);
        assert.deepEqual(shown.slice(0, 1), ['or'], `${locale}: the "or" comes first`);
        assert.equal(shown.filter((kind) => kind === 'or').length, 1, `${locale}: one "or": ${shown.join(', ')}`);
      }
    });
  });

  // axe in English here: the page tour (test/flows/accessibility.test.ts) checks these pages in
  // every language and look; what is this module's own, each error said once, in every language.
  it('has no serious or critical accessibility violation on its pages, and says each error once in every language', async () => {
    assert.ok(browser && server && smtp);
    await createUser(server.services, { email: 'axe@example.com', password: PASSWORD, name: 'Axe' });
    const page = await newPage(browser, { baseURL, bypassCSP: true });
    try {
      // A request of this browser's (the code page shows its form), and a live link.
      await page.goto('/auth/email-signin');
      await page.getByLabel('Email').fill('axe@example.com');
      await page.getByRole('button', { name: 'E-mail me a link' }).click();
      await page.waitForURL(`${baseURL}/auth/email-signin/code`);
      const { url } = linkAndCode(await mailTo(smtp, 'axe@example.com', SUBJECT));
      const stops = [
        '/auth/signin',
        '/auth/email-signin',
        '/auth/email-signin?error=VALIDATION_ERROR',
        '/auth/email-signin/code',
        '/auth/email-signin/code?error=INVALID_CODE',
        `${url.pathname}${url.search}`,
        '/auth/email-signin/link?error=TOKEN_EXPIRED',
      ];
      const found: string[] = [];
      for (const locale of LOCALES) {
        for (const stop of stops) {
          await page.goto(`${stop}${stop.includes('?') ? '&' : '?'}lang=${locale}`);
          const lang = await page.getAttribute('html', 'lang');
          if (lang !== locale) found.push(`${stop} (${locale}): the page is in ${lang}`);
          if (locale === DEFAULT_LOCALE) for (const violation of await axeViolations(page)) found.push(`${stop} (${locale}): ${violation}`);
          // Each error said once: beside its field; the summary only links to the field.
          const said = await page.evaluate(() =>
            [...document.querySelectorAll('.field-error')].map((error) => {
              const message = [...error.childNodes].filter((node) => node.nodeType === Node.TEXT_NODE).map((node) => node.textContent).join('').trim();
              return { message, times: document.querySelector('main')!.innerText.split(message).length - 1 };
            }),
          );
          for (const { message, times } of said) if (times !== 1) found.push(`${stop} (${locale}): "${message}" is said ${times} times`);
          if (stop.includes('?error=') && !stop.includes('/link') && said.length === 0) found.push(`${stop} (${locale}): no message beside the field`);
        }
      }
      assert.deepEqual(found, []);
    } finally {
      await page.context().close();
    }
  });
});
