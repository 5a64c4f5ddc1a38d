/**
 * The admin pages in a real browser (Debian's Chromium through playwright-core), against the real
 * server on loopback, for both session strategies: an ADMIN signs in through the page, follows the
 * dashboard's Admin link, searches a user, adds a role, disables the user (whose own browser is
 * signed out on its next page load), and reads the audit log; a non-admin gets the 403 page. The
 * pages' CSP forbids every script, so this also proves the admin forms work without JavaScript; a
 * CSP violation or any other console error fails the test. Screenshots go to
 * test-artifacts/screenshots/. Skipped with a reason when Chromium is missing outside CI.
 */
import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createSqliteDatabase, type TestDatabase } from '../helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../helpers/app.ts';
import { freePort } from '../helpers/process.ts';
import { chromiumAvailability, closeBrowser, launchBrowser, saveScreenshot, withPage, type Browser, type Page, watchConsole } from '../helpers/browser.ts';

const PASSWORD = 'correct horse battery staple';
const ADMIN = { email: 'ada@example.com', password: PASSWORD, name: 'Ada Admin', roles: ['ADMIN'] };
const TARGET = { email: 'tess@example.com', password: PASSWORD, name: 'Tess Target', roles: ['SUPPORT'] };
const PLAIN = { email: 'nora@example.com', password: PASSWORD, name: 'Nora Nonadmin' };
const STRATEGIES = ['database', 'jwt'] as const;

/**
 * How far right of its table cell's start each element matching `selector` begins, in px: a reflowed
 * cell's value parts (a link, a badge, a checkbox) begin beside its label's column, never under it.
 */
async function partOffsets(page: Page, selector: string): Promise<number[]> {
  // Runs in the page (this project's TypeScript has no DOM types).
  type Part = { getBoundingClientRect(): { left: number }; closest(selector: string): Part };
  return page.evaluate((within) => {
    const dom = globalThis as unknown as { document: { querySelectorAll(selector: string): Iterable<Part> } };
    return [...dom.document.querySelectorAll(within)].map((part) => Math.round(part.getBoundingClientRect().left - part.closest('td').getBoundingClientRect().left));
  }, selector);
}

/**
 * The words of the visible text in the page's table cells that the browser broke across lines
 * (each word of each text node measured as a range: more than one line box means it was split),
 * by how many px each table's scroller is narrower than its table, and the columns' widths (to say why).
 */
async function tableWordBreaks(page: Page): Promise<{ broken: string[]; overflow: number[]; columns: string[] }> {
  // Runs in the page (this project's TypeScript has no DOM types).
  type Rect = { width: number; top: number };
  type Text = { data: string; parentElement: { checkVisibility(): boolean } };
  type Dom = {
    document: {
      querySelectorAll(selector: string): Iterable<{ scrollWidth: number; clientWidth: number; textContent: string; getBoundingClientRect(): Rect }>;
      createTreeWalker(root: unknown, show: number): { nextNode(): Text | null };
      createRange(): { setStart(node: Text, offset: number): void; setEnd(node: Text, offset: number): void; getClientRects(): Iterable<Rect> };
    };
  };
  return page.evaluate(() => {
    const { document } = globalThis as unknown as Dom;
    const broken: string[] = [];
    for (const cell of document.querySelectorAll('table.table tbody td')) {
      const texts = document.createTreeWalker(cell, 4 /* NodeFilter.SHOW_TEXT */);
      for (let text = texts.nextNode(); text !== null; text = texts.nextNode()) {
        if (!text.parentElement.checkVisibility()) continue;
        for (const word of text.data.matchAll(/\S+/g)) {
          const range = document.createRange();
          range.setStart(text, word.index);
          range.setEnd(text, word.index + word[0].length);
          const lines = new Set([...range.getClientRects()].filter((rect) => rect.width > 0).map((rect) => Math.round(rect.top)));
          if (lines.size > 1) broken.push(word[0]);
        }
      }
    }
    const overflow = [...document.querySelectorAll('.table-scroll')].map((scroller) => scroller.scrollWidth - scroller.clientWidth);
    const columns = [...document.querySelectorAll('table.table thead th')].map((th) => `${th.textContent.trim()} ${Math.round(th.getBoundingClientRect().width)}`);
    return { broken, overflow, columns };
  });
}

async function screenshot(t: TestContext, page: Page, name: string): Promise<void> {
  t.diagnostic(`screenshot: ${await saveScreenshot(page, name)}`);
}

async function signIn(page: Page, email: string, password: string): Promise<void> {
  await submitSignIn(page, email, password);
  await page.waitForURL((url) => url.pathname === '/dashboard');
}

/** A sign-in with a wrong password: the page says so, and the audit log has a failed row. */
async function failSignIn(page: Page, email: string, password: string): Promise<void> {
  await submitSignIn(page, email, `${password}-wrong`);
  await page.getByRole('alert').waitFor();
}

async function submitSignIn(page: Page, email: string, password: string): Promise<void> {
  await page.goto('/auth/signin');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Login', exact: true }).click();
}

/** Submits a form that redirects back with `?notice=` or `?error=`; returns the code it came back with. */
async function submitForm(page: Page, button: string): Promise<string> {
  await page.getByRole('button', { name: button, exact: true }).click();
  await page.waitForURL((url) => url.searchParams.has('notice') || url.searchParams.has('error'));
  await page.waitForLoadState('load');
  const url = new URL(page.url());
  return url.searchParams.get('notice') ?? `error=${url.searchParams.get('error')}`;
}

const chromium = chromiumAvailability();

describe('admin pages in Chromium', { skip: chromium.ok ? false : chromium.reason, timeout: 180_000 }, () => {
  let browser: Browser | undefined;
  before(async () => {
    browser = await launchBrowser();
  });
  after(() => closeBrowser(browser));

  for (const strategy of STRATEGIES) {
    describe(`SESSION_STRATEGY=${strategy}`, () => {
      let database: TestDatabase | undefined;
      let server: TestApp | undefined;
      let baseURL = '';
      let adminId = '';
      let targetId = '';

      before(async () => {
        database = await createSqliteDatabase();
        const port = await freePort();
        baseURL = `http://127.0.0.1:${port}`;
        server = await createTestApp(database, { env: { AUTH_URL: baseURL, SESSION_STRATEGY: strategy } });
        await server.app.listen({ port, host: '127.0.0.1' });
        adminId = (await createUser(server.services, ADMIN)).id;
        targetId = (await createUser(server.services, TARGET)).id;
        await createUser(server.services, PLAIN);
        // Company for the search to tell apart.
        for (const name of ['Tom Other', 'Theo Third']) await createUser(server.services, { email: `${name.split(' ')[0]!.toLowerCase()}@example.com`, password: PASSWORD, name });
      });
      after(async () => {
        await server?.close();
        await database?.drop();
      });

      it('an admin finds a user, adds a role, disables them (signing them out) and reads the audit log', async (t) => {
        assert.ok(browser && server);
        const live = browser;
        const services = server.services;

        // The user, signed in in a browser of their own.
        await withPage(t, live, { baseURL, userAgent: 'TargetBrowser/1.0' }, async (targetPage) => {
          const targetProblems = watchConsole(targetPage);
          await signIn(targetPage, TARGET.email, TARGET.password);
          assert.equal((await services.sessions.listSessions(targetId)).length, 1);

          await withPage(t, live, { baseURL, userAgent: 'AdminBrowser/1.0' }, async (page) => {
            const problems = watchConsole(page);
            await signIn(page, ADMIN.email, ADMIN.password);

            // The dashboard links admins to /admin.
            await page.getByRole('link', { name: 'Admin', exact: true }).click();
            await page.waitForURL(`${baseURL}/admin`);
            await page.getByRole('heading', { name: 'Users' }).waitFor();
            assert.equal(await page.locator('tbody tr').count(), 5);
            await screenshot(t, page, `admin-users-${strategy}`);

            // Search.
            await page.getByLabel('Find users by name or email').fill('tess');
            await page.getByRole('button', { name: 'Search', exact: true }).click();
            await page.waitForURL((url) => url.pathname === '/admin' && url.searchParams.get('query') === 'tess');
            const rows = page.locator('tbody tr');
            assert.equal(await rows.count(), 1);
            assert.match(await rows.innerText(), /Tess Target\s+tess@example\.com\s+SUPPORT\s+Active/);

            // The user's page: add a role.
            await rows.getByRole('link', { name: 'Tess Target' }).click();
            await page.waitForURL(`${baseURL}/admin/users/${targetId}`);
            await page.getByRole('heading', { name: 'Tess Target' }).waitFor();
            assert.match(await page.locator('li.session').innerText(), /TargetBrowser\/1\.0/);
            const roles = page.getByLabel('Role names');
            assert.equal(await roles.inputValue(), 'SUPPORT');
            await roles.fill('SUPPORT, editor');
            assert.equal(await submitForm(page, 'Save roles'), 'error=INVALID_ROLE', 'lower case is refused');
            assert.match(await page.getByRole('alert').innerText(), /Nothing was changed[\s\S]*INVALID_ROLE/);
            await page.getByLabel('Role names').fill('SUPPORT, EDITOR');
            assert.equal(await submitForm(page, 'Save roles'), 'ROLES_SAVED');
            assert.match(await page.getByRole('status').innerText(), /Roles saved/);
            assert.deepEqual((await services.users.findUserById(targetId))?.roles, ['EDITOR', 'SUPPORT']);

            // Disable: the user's sessions end at once.
            assert.equal(await submitForm(page, 'Disable account'), 'USER_DISABLED');
            await page.getByRole('button', { name: 'Enable account' }).waitFor();
            assert.match(await page.locator('main').innerText(), /No active sessions\./);
            await screenshot(t, page, `admin-user-${strategy}`);
            assert.deepEqual(await services.sessions.listSessions(targetId), []);

            // The user's browser is signed out on its next page load.
            await targetPage.goto('/dashboard');
            await targetPage.waitForURL((url) => url.pathname === '/auth/signin');
            assert.deepEqual(targetProblems, []);

            // The audit log, from the user's page, then filtered by type with the form.
            await page.getByRole('link', { name: 'This user’s events in the audit log' }).click();
            await page.waitForURL((url) => url.pathname === '/admin/events' && url.searchParams.get('email') === TARGET.email);
            const log = await page.locator('tbody').innerText();
            // In words, by address, the device named: no ids, no raw JSON.
            for (const what of ['All sessions ended', 'Account disabled', 'Roles changed', 'Signed in']) assert.match(log, new RegExp(what));
            assert.match(log, /AdminBrowser/, 'the acting admin’s client');
            assert.ok(log.includes(ADMIN.email), 'the acting admin, by address');
            assert.ok(!log.includes(adminId), 'no ids in the rows');
            await screenshot(t, page, `admin-events-${strategy}`);
            await page.getByLabel('Type').selectOption('user.disabled');
            await page.getByRole('button', { name: 'Filter', exact: true }).click();
            await page.waitForURL((url) => url.searchParams.get('type') === 'user.disabled' && url.searchParams.get('email') === TARGET.email);
            assert.equal(await page.locator('tbody tr').count(), 1);

            // Enabling lets them back in.
            await page.goto(`/admin/users/${targetId}`);
            assert.equal(await submitForm(page, 'Enable account'), 'USER_ENABLED');
            await signIn(targetPage, TARGET.email, TARGET.password);

            assert.deepEqual(problems, [], 'no console errors (e.g. CSP violations)');
          });
        });
      });

      it('reflows the admin tables on a 375 px screen: label and value per line, nothing wider than the screen', async (t) => {
        assert.ok(browser);
        await withPage(t, browser, { baseURL, viewport: { width: 375, height: 740 } }, async (page) => {
          // A failed sign-in first: its audit row's "what happened" is a text, a badge and a code in one cell.
          await failSignIn(page, ADMIN.email, ADMIN.password);
          await signIn(page, ADMIN.email, ADMIN.password);
          await page.goto('/admin');
          await page.getByRole('heading', { name: 'Users' }).waitFor();
          // Runs in the page (this project's TypeScript has no DOM types).
          type Box = { getBoundingClientRect(): { width: number; height: number } };
          type Dom = {
            document: { documentElement: { scrollWidth: number }; querySelector(selector: string): Box | null };
            getComputedStyle(element: Box, pseudo?: string): { content: string; display: string };
          };
          const layout = await page.evaluate(() => {
            const dom = globalThis as unknown as Dom;
            const cell = dom.document.querySelector('table.table-reflow tbody td[data-label="Email"]')!;
            return {
              pageWidth: dom.document.documentElement.scrollWidth,
              label: dom.getComputedStyle(cell, '::before').content,
              cellDisplay: dom.getComputedStyle(cell).display,
              headerHeight: dom.document.querySelector('table.table-reflow thead')!.getBoundingClientRect().height,
              emailWidth: cell.getBoundingClientRect().width,
            };
          });
          const valueOffsets = await partOffsets(page, 'table.table-reflow tbody td[data-label] *');
          assert.ok(layout.pageWidth <= 375, `the page is ${layout.pageWidth} px wide`);
          assert.equal(layout.label, '"Email"');
          assert.equal(layout.cellDisplay, 'flow-root');
          assert.ok(valueOffsets.length >= 5, 'the parts of the cells are found');
          assert.ok(Math.min(...valueOffsets) >= 100, `every part of a value starts beside its label (offsets ${valueOffsets.join(', ')} px)`);
          assert.ok(layout.headerHeight <= 1, 'the header row is out of sight');
          assert.ok(layout.emailWidth > 300, `a cell takes the row's width (${layout.emailWidth} px)`);
          // Shown as blocks, the table is still a table to assistive technology. Chromium keeps the
          // semantics by itself; WebKit (Safari) has been known to drop them for display: block, hence the
          // explicit ARIA roles in the templates, which this checks do not get in the way.
          const table = page.getByRole('table');
          assert.equal(await table.count(), 1);
          assert.equal(await table.getByRole('columnheader', { name: 'Email', exact: true }).count(), 1);
          assert.equal(await table.getByRole('row').count(), 1 + 5, 'the header row and one row per user');
          // (A cell's name also holds its ::before label, "Email": filter on its text instead.)
          assert.equal(await table.getByRole('cell').filter({ hasText: ADMIN.email }).count(), 1);
          await screenshot(t, page, `admin-users-375-${strategy}`);
          // The audit log: the failed sign-in's cell of several parts keeps every part beside its label.
          await page.goto('/admin/events');
          await page.getByRole('heading', { name: 'Audit log' }).waitFor();
          const failure = await partOffsets(page, 'tr.event-failure td[data-label] *');
          assert.ok(failure.length >= 2, 'the row of the failed sign-in and its badge are found');
          assert.ok(Math.min(...failure) >= 100, `every part of the failed event's cells starts beside its label (offsets ${failure.join(', ')} px)`);
        });
      });

      it('keeps a table cell\'s words whole at desktop width (a role, a reason code, an address), and the tables inside their column', async (t) => {
        assert.ok(browser);
        await withPage(t, browser, { baseURL, viewport: { width: 1280, height: 800 } }, async (page) => {
          // A failed sign-in: its row in the log carries the reason code INVALID_CREDENTIALS.
          await failSignIn(page, TARGET.email, TARGET.password);
          await signIn(page, ADMIN.email, ADMIN.password);
          // The users' roles; the log; a user's trail on its page, the narrowest column of the three. At
          // a desktop's width and at the narrowest that still shows columns (55rem, above the reflow's 54).
          for (const width of [1280, 880]) {
            await page.setViewportSize({ width, height: 800 });
            for (const [path, word] of [['/admin', 'SUPPORT'], ['/admin/events', 'INVALID_CREDENTIALS'], [`/admin/users/${targetId}`, 'INVALID_CREDENTIALS']] as const) {
              await page.goto(path);
              await page.locator('table.table tbody td').first().waitFor();
              assert.ok((await page.locator('table.table tbody').innerText()).includes(word), `${path} shows ${word}`);
              const { broken, overflow, columns } = await tableWordBreaks(page);
              assert.deepEqual(broken, [], `${width} px, ${path}: no word of a table cell is split across lines`);
              assert.ok(overflow.length > 0, `${path}: its tables are found`);
              assert.ok(Math.max(...overflow) <= 0, `${width} px, ${path}: every table fits its column (overflow ${overflow.join(', ')} px; columns ${columns.join(', ')})`);
            }
          }
          await screenshot(t, page, `admin-user-trail-${strategy}`);
        });
      });

      it('shows a non-admin the 403 page at /admin', async (t) => {
        assert.ok(browser);
        await withPage(t, browser, { baseURL }, async (page) => {
          const problems = watchConsole(page);
          await signIn(page, PLAIN.email, PLAIN.password);
          assert.equal(await page.getByRole('link', { name: 'Admin', exact: true }).count(), 0, 'no Admin link');
          const response = await page.goto('/admin');
          assert.equal(response?.status(), 403);
          await page.getByRole('heading', { name: 'Access denied' }).waitFor();
          assert.match(await page.getByRole('alert').innerText(), /FORBIDDEN/);
          await screenshot(t, page, `admin-forbidden-${strategy}`);
          // The footer's language switcher, as on every other page: it loads the page again in German.
          const languages = page.getByRole('navigation', { name: 'Language' });
          await languages.getByRole('link', { name: 'Deutsch', exact: true }).click();
          await page.getByRole('heading', { name: 'Zugriff verweigert' }).waitFor();
          assert.equal(new URL(page.url()).pathname, '/admin');
          // The 403 itself is the expected failure; nothing else may go wrong.
          assert.deepEqual(problems.filter((p) => !p.includes('403')), []);
        });
      });
    });
  }
});
