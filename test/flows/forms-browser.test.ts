/**
 * The hosted forms in a real browser (Debian's Chromium through playwright-core) against the real
 * server on loopback: the password field's "Show password" button and Caps Lock hint (our one inline
 * script, which the page's CSP allows by its hash: a console error, a CSP violation say, fails the
 * test), and the same forms with JavaScript turned off, where nothing of that exists and a refused
 * form still comes back with what was typed (never the password) and its problems at their fields.
 * Skipped with a reason when Chromium is missing outside CI.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { serveTestApp, createUser, type ServedTestApp } from '../helpers/app.ts';
import { chromiumAvailability, closeBrowser, launchBrowser, withPage, watchConsole, type Browser, type Page } from '../helpers/browser.ts';

const PASSWORD = 'correct horse battery staple';
const EMAIL = 'fern.form@example.com';

const chromium = chromiumAvailability();

/** The password input's type and the accessible name of the button that shows it, if there is one. */
async function passwordState(page: Page, field = '#password'): Promise<{ type: string; toggle: string | null }> {
  const input = page.locator(field);
  const type = (await input.getAttribute('type')) ?? '';
  const toggles = page.locator(`button[aria-controls="${field.slice(1)}"]`);
  return { type, toggle: (await toggles.count()) === 0 ? null : await toggles.innerText() };
}

describe('the hosted forms in Chromium', { skip: chromium.ok ? false : chromium.reason, timeout: 180_000 }, () => {
  let browser: Browser | undefined;
  let server: ServedTestApp | undefined;

  before(async () => {
    browser = await launchBrowser();
    server = await serveTestApp({ ALLOW_SIGNUP: 'true' });
    await createUser(server.services, { email: EMAIL, password: PASSWORD, name: 'Fern Form' });
  });
  after(async () => {
    await server?.close();
    await closeBrowser(browser);
  });

  it('shows and hides the password with a real button, by mouse and by keyboard, and hides it again when the form is sent', async (t) => {
    assert.ok(browser && server);
    await withPage(t, browser, { baseURL: server.baseURL }, async (page) => {
      const problems = watchConsole(page);
      await page.goto('/auth/signin');
      await page.getByLabel('Email').fill(EMAIL);
      await page.getByLabel('Password', { exact: true }).fill('typed but wrong');
      assert.deepEqual(await passwordState(page), { type: 'password', toggle: 'Show password' });

      const toggle = page.getByRole('button', { name: 'Show password' });
      assert.equal(await toggle.getAttribute('type'), 'button', 'it sends nothing');
      await toggle.click();
      assert.deepEqual(await passwordState(page), { type: 'text', toggle: 'Hide password' });
      assert.equal(await page.locator('#password').inputValue(), 'typed but wrong', 'the value stays');
      await page.getByRole('button', { name: 'Hide password' }).click();
      assert.deepEqual(await passwordState(page), { type: 'password', toggle: 'Show password' });

      // The keyboard: the button is the next stop after the field, and Space and Enter press it.
      await page.locator('#password').focus();
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate('document.activeElement.getAttribute("aria-controls")'), 'password');
      await page.keyboard.press('Space');
      assert.equal((await passwordState(page)).type, 'text');
      await page.keyboard.press('Enter');
      assert.equal((await passwordState(page)).type, 'password');

      // Shown when sent: the browser gets a password field again; the page that comes back keeps the address only.
      await page.getByRole('button', { name: 'Show password' }).click();
      await Promise.all([page.waitForURL(/error=INVALID_CREDENTIALS/), page.getByRole('button', { name: 'Login', exact: true }).click()]);
      // Said once: at the field; the summary links there by the field's label.
      assert.match(await page.getByRole('alert').innerText(), /There is a problem[\s\S]*Email[\s\S]*INVALID_CREDENTIALS/);
      assert.doesNotMatch(await page.getByRole('alert').innerText(), /incorrect/);
      assert.match(await page.locator('#email-error').innerText(), /The email or password is incorrect/);
      assert.equal(await page.getByLabel('Email').inputValue(), EMAIL);
      assert.equal(await page.locator('#password').inputValue(), '');
      assert.deepEqual(await passwordState(page), { type: 'password', toggle: 'Show password' });
      assert.equal(await page.evaluate('document.activeElement.id'), 'password', 'the field to type again has the focus');
      assert.equal(await page.locator('#password').getAttribute('aria-invalid'), 'true');
      assert.match((await page.locator('#password').getAttribute('aria-describedby')) ?? '', /^email-error password-caps-lock$/);
      assert.deepEqual(problems, [], 'no console error: the script ran under the CSP');
    });
  });

  it('says politely that Caps Lock is on, tied to the field, and stops saying it', async (t) => {
    assert.ok(browser && server);
    await withPage(t, browser, { baseURL: server.baseURL }, async (page) => {
      const problems = watchConsole(page);
      await page.goto('/auth/signup');
      const hint = page.locator('#password-caps-lock');
      assert.equal(await hint.getAttribute('aria-live'), 'polite');
      assert.equal(await page.locator('#password').getAttribute('aria-describedby'), 'password-hint password-caps-lock');
      assert.equal(await hint.innerText(), '');

      // Playwright's keyboard cannot turn Caps Lock on (its modifiers are Alt, Control, Meta and
      // Shift; pressing CapsLock leaves getModifierState('CapsLock') false), so the key events
      // carry the state themselves, as the browser's would.
      await page.locator('#password').focus();
      await page.keyboard.type('ab');
      assert.equal(await hint.innerText(), '', 'nothing while Caps Lock is off');
      await page.locator('#password').dispatchEvent('keydown', { key: 'A', modifierCapsLock: true });
      assert.equal(await hint.innerText(), 'Caps Lock is on');
      await page.locator('#password').dispatchEvent('keyup', { key: 'a', modifierCapsLock: false });
      assert.equal(await hint.innerText(), '', 'off again');
      await page.locator('#password').dispatchEvent('keydown', { key: 'A', modifierCapsLock: true });
      assert.equal(await hint.innerText(), 'Caps Lock is on');
      await page.getByLabel('Name').focus();
      assert.equal(await hint.innerText(), '', 'not said away from the field');
      assert.deepEqual(problems, []);
    });
  });

  it('works without JavaScript: no button, and a refused form comes back with what was typed, never the password', async (t) => {
    assert.ok(browser && server);
    await withPage(t, browser, { baseURL: server.baseURL, javaScriptEnabled: false }, async (page) => {
      const problems = watchConsole(page);
      await page.goto('/auth/signin');
      assert.deepEqual(await passwordState(page), { type: 'password', toggle: null });
      assert.equal(await page.locator('#password-caps-lock').count(), 0);
      await page.getByLabel('Email').fill(EMAIL);
      await page.getByLabel('Password', { exact: true }).fill('not the password');
      await Promise.all([page.waitForURL(/error=INVALID_CREDENTIALS/), page.getByRole('button', { name: 'Login', exact: true }).click()]);
      assert.equal(await page.getByLabel('Email').inputValue(), EMAIL);
      assert.equal(await page.locator('#password').inputValue(), '');
      assert.equal(await page.locator('.error-summary a[href="#email"]').count(), 1);
      assert.doesNotMatch(page.url(), /fern|not%20the|not\+the/);
      // Read once: a reload shows the message again, without the address.
      await page.reload();
      assert.equal(await page.getByLabel('Email').inputValue(), '');

      // And then signs in with the right password, no script needed.
      await page.getByLabel('Email').fill(EMAIL);
      await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
      await Promise.all([page.waitForURL(/\/dashboard$/), page.getByRole('button', { name: 'Login', exact: true }).click()]);

      // Sign-up: a refused password keeps the name and the address.
      await page.context().clearCookies();
      await page.goto('/auth/signup');
      await page.getByLabel('Name').fill('Nora Noscript');
      await page.getByLabel('Email').fill('nora.noscript@example.com');
      await page.getByLabel('Password', { exact: true }).fill('password123');
      await Promise.all([page.waitForURL(/error=VALIDATION_ERROR&reason=TOO_COMMON/), page.getByRole('button', { name: 'Create account' }).click()]);
      assert.equal(await page.getByLabel('Name').inputValue(), 'Nora Noscript');
      assert.equal(await page.getByLabel('Email').inputValue(), 'nora.noscript@example.com');
      assert.equal(await page.locator('#password').inputValue(), '');
      assert.equal(await page.locator('#password').getAttribute('aria-invalid'), 'true');
      assert.match(await page.locator('body').innerText(), /lists of passwords attackers try first/);
      assert.deepEqual(problems, [], 'no console error');
    });
  });
});
