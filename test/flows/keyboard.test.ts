/**
 * The hosted pages with a keyboard alone, in Chromium against the real server on loopback: sign-up
 * (through the mailed verification link), sign-in, a password reset (through the mailed link), a
 * sign-in with a second factor, and sign-out. No mouse and no `click()`: only Tab, Shift+Tab,
 * typing, Enter and Space. Every control a flow needs must be reachable by Tab, in an order that
 * follows the form, and show where the focus is (`:focus-visible` with an outline or a shadow).
 * Mails go through a real SMTP server on loopback.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { serveTestApp, createUser, type ServedTestApp } from '../helpers/app.ts';
import { chromiumAvailability, closeBrowser, launchBrowser, withPage, watchConsole, type Browser, type Page } from '../helpers/browser.ts';
import { smtpEnv, startSmtpServer, type TestSmtpServer } from '../helpers/smtp.ts';
import { resetLink, verificationLink, waitFor } from '../helpers/mail-links.ts';
import { enrolTotp, totpCode, TOTP_STEP_MS } from '../helpers/totp.ts';
import { SYSTEM_SOURCE } from '../../src/audit/audit.service.ts';
import { OPERATOR } from '../../src/organizations/organizations.model.ts';

const PASSWORD = 'correct horse battery staple';
const NEW_PASSWORD = 'violet tractor under the moon';

/** The element that has the focus, as the test needs to recognise it. */
interface Focused {
  tag: string;
  id: string;
  name: string | null;
  type: string | null;
  text: string;
  href: string | null;
  isFocusVisible: boolean;
  hasIndicator: boolean;
}

/** The little of the DOM `focused` reads in the page (the project's types have no DOM library). */
interface PageElement {
  tagName: string;
  id: string;
  textContent: string | null;
  getAttribute(name: string): string | null;
  matches(selector: string): boolean;
}
interface PageWindow {
  document: { activeElement: PageElement | null; body: PageElement };
  getComputedStyle(element: PageElement): { outlineStyle: string; outlineWidth: string; boxShadow: string };
}

function focused(page: Page): Promise<Focused | null> {
  return page.evaluate(() => {
    const window = globalThis as unknown as PageWindow;
    const element = window.document.activeElement;
    if (element === null || element === window.document.body) return null;
    const style = window.getComputedStyle(element);
    return {
      tag: element.tagName.toLowerCase(),
      id: element.id,
      name: element.getAttribute('name'),
      type: element.getAttribute('type'),
      text: (element.textContent ?? '').trim().replace(/\s+/g, ' '),
      href: element.getAttribute('href'),
      isFocusVisible: element.matches(':focus-visible'),
      hasIndicator: (style.outlineStyle !== 'none' && style.outlineWidth !== '0px') || style.boxShadow !== 'none',
    };
  });
}

const describeFocus = (element: Focused | null) => (element === null ? 'nothing' : `<${element.tag}${element.id ? ` id=${element.id}` : ''}${element.name ? ` name=${element.name}` : ''}> "${element.text.slice(0, 40)}"`);

/**
 * Presses Tab (or Shift+Tab) until `matches` holds for the focused element; fails naming what was
 * passed on the way if it takes more than `limit` presses. The element reached must show its focus.
 */
async function tabTo(page: Page, matches: (element: Focused) => boolean, what: string, options: { backwards?: boolean; limit?: number } = {}): Promise<Focused> {
  const passed: string[] = [];
  for (let presses = 0; presses < (options.limit ?? 25); presses += 1) {
    await page.keyboard.press(options.backwards ? 'Shift+Tab' : 'Tab');
    const element = await focused(page);
    if (element !== null && matches(element)) {
      assert.ok(element.isFocusVisible && element.hasIndicator, `${what} shows that it has the focus (${describeFocus(element)})`);
      return element;
    }
    passed.push(describeFocus(element));
  }
  throw new Error(`Tab did not reach ${what}; it passed: ${passed.join(' → ')}`);
}

const field = (name: string) => (element: Focused) => (element.tag === 'input' || element.tag === 'textarea') && element.name === name;
const submitButton = (element: Focused) => element.tag === 'button' && element.type === 'submit';
const link = (path: string) => (element: Focused) => element.tag === 'a' && element.href === path;

/** Moves the focus to the field named `name`: it may have it already (autofocus), else Tab gets there. */
async function focusField(page: Page, name: string): Promise<void> {
  if ((await focused(page))?.name === name) return;
  await tabTo(page, field(name), `the ${name} field`, { limit: 30 });
}

/** Types into the focused field (the field must have the focus already). */
async function type(page: Page, text: string): Promise<void> {
  await page.keyboard.type(text);
}

async function waitForPath(page: Page, path: string): Promise<void> {
  await page.waitForURL((url) => url.pathname === path);
}

/** Signs in with the sign-in form by keyboard alone: the address, Tab, the password, Enter; resolves on the page it lands on (`landing`). */
async function signInByKeyboard(page: Page, email: string, landing: string): Promise<void> {
  await page.goto('/auth/signin');
  await focusField(page, 'email');
  await type(page, email);
  await tabTo(page, field('password'), 'the password field');
  await type(page, PASSWORD);
  await page.keyboard.press('Enter');
  await waitForPath(page, landing);
}

const chromium = chromiumAvailability();

describe('keyboard-only flows in Chromium', { skip: chromium.ok ? false : chromium.reason, timeout: 300_000 }, () => {
  let browser: Browser | undefined;
  let smtp: TestSmtpServer | undefined;
  let server: ServedTestApp | undefined;

  before(async () => {
    browser = await launchBrowser();
    smtp = await startSmtpServer();
    server = await serveTestApp({ ALLOW_SIGNUP: 'true', ...smtpEnv(smtp) });
  });
  after(async () => {
    await server?.close();
    await smtp?.stop();
    await closeBrowser(browser);
  });

  /** The mail to `to` whose text holds a link matching `pattern`, once it has arrived. */
  function mailWith(to: string, pattern: RegExp) {
    return waitFor(() => smtp!.messages.find((mail) => mail.rcptTo.includes(to) && pattern.test(mail.text)), `a mail to ${to} matching ${pattern}`);
  }

  it('signs up and verifies the address, then signs in and out', async (t) => {
    assert.ok(browser && server);
    const email = 'kim.keys@example.com';
    await withPage(t, browser, { baseURL: server.baseURL }, async (page) => {
      const problems = watchConsole(page);
      await page.goto('/auth/signup');
      // The first field has the focus when the page opens.
      assert.equal((await focused(page))?.name, 'name', 'the name field has the focus first');
      await type(page, 'Kim Keys');
      await tabTo(page, field('email'), 'the email field');
      await type(page, email);
      await tabTo(page, field('password'), 'the password field');
      await type(page, PASSWORD);
      await tabTo(page, submitButton, 'the create-account button');
      await page.keyboard.press('Enter');
      await waitForPath(page, '/auth/check-email');

      // The mailed link, opened as a person would (typed into the address bar is the same as this).
      const verify = verificationLink(await mailWith(email, /verify-email\?token=/));
      await page.goto(verify.pathname + verify.search);
      await tabTo(page, submitButton, 'the verify button');
      await page.keyboard.press('Space');
      await waitForPath(page, '/auth/email-verified');

      // Sign in from the link on that page.
      await tabTo(page, (element) => element.tag === 'a' && (element.href ?? '').startsWith('/auth/signin'), 'the sign-in link');
      await page.keyboard.press('Enter');
      await waitForPath(page, '/auth/signin');
      assert.equal((await focused(page))?.name, 'email', 'the email field has the focus first');
      await type(page, email);
      await tabTo(page, field('password'), 'the password field');
      await type(page, PASSWORD);
      await page.keyboard.press('Enter');
      await waitForPath(page, '/dashboard');

      // Sign out: the dashboard's link, then the confirmation's button.
      await tabTo(page, link('/auth/signout'), 'the sign-out link');
      await page.keyboard.press('Enter');
      await waitForPath(page, '/auth/signout');
      await tabTo(page, submitButton, 'the sign-out button');
      await page.keyboard.press('Enter');
      await page.waitForURL((url) => url.pathname !== '/auth/signout');
      assert.ok(!(await page.context().cookies()).some((cookie) => cookie.name === 'gatehouse.session'), 'signed out: no session cookie');
      assert.deepEqual(problems, []);
    });
  });

  it('resets a forgotten password through the mailed link', async (t) => {
    assert.ok(browser && server);
    const user = await createUser(server.services, { email: 'rey.reset@example.com', password: PASSWORD, name: 'Rey Reset' });
    await withPage(t, browser, { baseURL: server.baseURL }, async (page) => {
      const problems = watchConsole(page);
      await page.goto('/auth/signin');
      await tabTo(page, link('/auth/forgot-password'), 'the forgot-password link');
      await page.keyboard.press('Enter');
      await waitForPath(page, '/auth/forgot-password');
      assert.equal((await focused(page))?.name, 'email');
      await type(page, user.email);
      await page.keyboard.press('Enter');
      await waitForPath(page, '/auth/forgot-password/sent');

      const reset = resetLink(await mailWith(user.email, /reset-password\?token=/));
      await page.goto(reset.pathname + reset.search);
      assert.equal((await focused(page))?.name, 'password', 'the new password field has the focus first');
      await type(page, NEW_PASSWORD);
      await tabTo(page, submitButton, 'the set-password button');
      await page.keyboard.press('Space');
      await waitForPath(page, '/auth/reset-password/done');

      await tabTo(page, link('/auth/signin'), 'the sign-in link');
      await page.keyboard.press('Enter');
      await waitForPath(page, '/auth/signin');
      await focusField(page, 'email');
      await type(page, user.email);
      await tabTo(page, field('password'), 'the password field');
      await type(page, NEW_PASSWORD);
      await tabTo(page, submitButton, 'the sign-in button');
      await page.keyboard.press('Enter');
      await waitForPath(page, '/dashboard');
      assert.deepEqual(problems, []);
    });
  });

  it('signs in with a second factor, after a wrong code', async (t) => {
    assert.ok(browser && server);
    const user = await createUser(server.services, { email: 'max.mfa@example.com', password: PASSWORD, name: 'Max Factor' });
    // The real clock: the browser's sign-in checks codes against it. The setup's step is spent, so
    // the sign-in uses the next step's code (accepted within the allowed drift).
    const clock = Object.assign(() => Date.now(), { advance: () => undefined });
    const secret = await enrolTotp(server.services, user, clock);
    await withPage(t, browser, { baseURL: server.baseURL }, async (page) => {
      const problems = watchConsole(page);
      await signInByKeyboard(page, user.email, '/auth/mfa');
      assert.equal((await focused(page))?.name, 'code', 'the code field has the focus first');
      await type(page, '000000');
      await page.keyboard.press('Enter');
      await page.waitForURL((url) => url.pathname === '/auth/mfa' && url.searchParams.has('error'));
      // After the error, the field has the focus again (or Tab reaches it) and the code is typed anew.
      await focusField(page, 'code');
      await type(page, totpCode(secret, Date.now() + TOTP_STEP_MS));
      await tabTo(page, submitButton, 'the verify button');
      await page.keyboard.press('Enter');
      await waitForPath(page, '/dashboard');
      assert.deepEqual(problems, []);
    });
  });

  it('an administrator adds a user, finds them, disables them and reads their audit trail', async (t) => {
    assert.ok(browser && server);
    await createUser(server.services, { email: 'ada.keys@example.com', password: PASSWORD, name: 'Ada Keys', roles: ['ADMIN'] });
    await withPage(t, browser, { baseURL: server.baseURL }, async (page) => {
      const problems = watchConsole(page);
      await signInByKeyboard(page, 'ada.keys@example.com', '/dashboard');

      await page.goto('/admin');
      await tabTo(page, link('/admin/users/new'), 'the Add user link');
      await page.keyboard.press('Enter');
      await waitForPath(page, '/admin/users/new');
      await focusField(page, 'email');
      await type(page, 'kai.added@example.com');
      await tabTo(page, field('name'), 'the name field');
      await type(page, 'Kai Added');
      await tabTo(page, submitButton, 'the add button');
      await page.keyboard.press('Enter');
      await page.waitForURL((url) => url.searchParams.get('notice') === 'USER_INVITED');
      const kai = await server!.services.users.findUserByEmail('kai.added@example.com');
      assert.ok(kai);

      await page.goto('/admin');
      await focusField(page, 'query');
      await type(page, 'kai.added');
      await page.keyboard.press('Enter');
      await page.waitForURL((url) => url.searchParams.get('query') === 'kai.added');
      await tabTo(page, link(`/admin/users/${kai.id}`), 'the found user', { limit: 40 });
      await page.keyboard.press('Enter');
      await waitForPath(page, `/admin/users/${kai.id}`);
      await tabTo(page, (element) => element.tag === 'button' && element.text === 'Disable account', 'the disable button', { limit: 40 });
      await page.keyboard.press('Enter');
      await page.waitForURL((url) => url.searchParams.get('notice') === 'USER_DISABLED');
      assert.notEqual((await server!.services.users.findUserById(kai.id))?.disabledAt, null);

      await tabTo(page, link(`/admin/events?email=${encodeURIComponent('kai.added@example.com')}`), 'the audit trail link', { limit: 60 });
      await page.keyboard.press('Enter');
      await waitForPath(page, '/admin/events');
      const text = await page.locator('table.table-events').innerText();
      assert.match(text, /Account disabled/);
      assert.match(text, /Account created/);
      assert.match(text, /ada\.keys@example\.com/, 'who did it, by address');
      assert.deepEqual(problems, []);
    });
  });

  it('an administrator creates an organization’s SSO setup link, reads it once, and revokes it', async (t) => {
    assert.ok(browser && server);
    const admin = await createUser(server.services, { email: 'ada.sso@example.com', password: PASSWORD, name: 'Ada Sso', roles: ['ADMIN'] });
    const owner = await createUser(server.services, { email: 'olga.owner@example.com', password: PASSWORD, name: 'Olga Owner' });
    const created = await server.services.organizations.create({ name: 'Globex' }, owner.id, SYSTEM_SOURCE);
    assert.ok(created.ok);
    const organizationPath = `/admin/organizations/${created.organization.id}`;
    await withPage(t, browser, { baseURL: server.baseURL }, async (page) => {
      const problems = watchConsole(page);
      await signInByKeyboard(page, 'ada.sso@example.com', '/dashboard');

      await page.goto(organizationPath);
      await tabTo(page, field('days'), 'the days field', { limit: 40 });
      await tabTo(page, (element) => element.tag === 'button' && element.text === 'Create a setup link', 'the create button');
      await page.keyboard.press('Enter');
      await waitForPath(page, `${organizationPath}/sso-setup-links`);
      const url = await page.locator('#sso-setup-link-url').inputValue();
      assert.match(url, /\/sso\/setup\?token=[\w-]{43}$/, 'the link, shown once');
      await tabTo(page, link(`${organizationPath}#sso-setup-links-heading`), 'the way back', { limit: 40 });
      await page.keyboard.press('Enter');
      await waitForPath(page, organizationPath);

      await tabTo(page, (element) => element.tag === 'button' && element.text === 'Revoke', 'the Revoke button', { limit: 40 });
      await page.keyboard.press('Enter');
      await page.waitForURL((next) => next.pathname === organizationPath && next.hash === '#sso-setup-links-heading');
      await page.locator('#sso-setup-links-heading').waitFor();
      assert.match(await page.locator('#sso-setup-links').innerText(), /No live setup links\./);
      const listed = await server!.services.sso.setup.list(created.organization.id, OPERATOR);
      assert.ok(listed.ok);
      assert.deepEqual(listed.links.map((one) => one.status), ['revoked']);
      const { events } = await server!.services.audit.listEvents({ type: 'sso.setup_link_revoked', limit: 5 });
      assert.equal(events[0]?.actorUserId, admin.id, 'audited with the administrator as actor');
      assert.deepEqual(problems, []);
    });
  });
});
