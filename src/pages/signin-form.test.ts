/**
 * The sign-in form after an error, through `app.inject()` as a browser without JavaScript uses it:
 * what was typed comes back once (never the password, never in the URL), each problem sits at its
 * field and in the summary, an unknown code is never shown back, and the page's one inline script
 * (the password field's) is allowed by its hash, next to the passkey section's nonce.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { assertHtmlPage, hiddenValue, scriptHashSource } from '../../test/helpers/pages.ts';
import { PASSWORD_FIELD_SCRIPT } from '../web/render.ts';

const PASSWORD = 'correct horse battery staple';
const WRONG_PASSWORD = 'Tr0ub4dor&3 wrong one';
const FORM = 'application/x-www-form-urlencoded';
const FORM_COOKIE = 'gatehouse.form';

describe('the sign-in form after an error', () => {
  let database: TestDatabase;
  let t: TestApp;
  let origin: string;

  before(async () => {
    database = await createSqliteDatabase();
    t = await createTestApp(database);
    origin = new URL(t.config.authUrl).origin;
    await createUser(t.services, { email: 'kept@example.com', password: PASSWORD });
  });
  after(async () => {
    await t?.close();
    await database?.drop();
  });

  async function open(url: string, jar: CookieJar) {
    const response = await t.app.inject({ method: 'GET', url, headers: { cookie: jar.header() } });
    jar.store(response);
    return response;
  }

  /** Posts the sign-in form from a fresh page; the answer (its cookies kept in `jar`). */
  async function signIn(jar: CookieJar, fields: { email: string; password: string }) {
    const page = await open('/auth/signin?callbackUrl=/dashboard', jar);
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/auth/signin',
      headers: { 'content-type': FORM, origin, cookie: jar.header() },
      payload: new URLSearchParams({ ...fields, csrfToken: hiddenValue(page.body, 'csrfToken'), callbackUrl: hiddenValue(page.body, 'callbackUrl') }).toString(),
    });
    jar.store(response);
    return response;
  }

  it('gives back the address after a wrong password, once, and never the password', async () => {
    const jar = new CookieJar();
    const refused = await signIn(jar, { email: 'kept@example.com', password: WRONG_PASSWORD });
    assert.equal(refused.statusCode, 303);
    assert.equal(refused.headers.location, '/auth/signin?error=INVALID_CREDENTIALS&callbackUrl=%2Fdashboard', 'nothing typed in the URL');
    const setCookie = String(refused.headers['set-cookie']);
    assert.match(setCookie, new RegExp(`${FORM_COOKIE}=[^;]+; Max-Age=300; Path=/; HttpOnly; SameSite=Lax`));
    assert.doesNotMatch(setCookie, /Tr0ub4dor|wrong one/);
    assert.doesNotMatch(Buffer.from(jar.get(FORM_COOKIE)!.split('.')[0]!, 'base64url').toString('utf8'), /Tr0ub4dor|password/);

    const page = await open(String(refused.headers.location), jar);
    assertHtmlPage(page, 'sign-in after a wrong password');
    assert.match(page.body, /<input id="email" name="email" type="email" autocomplete="username" value="kept@example\.com" required aria-invalid="true" aria-describedby="email-error">/);
    // The password is empty, marked, described by the same message, and where the cursor goes.
    assert.match(page.body, /<input id="password" name="password" type="password" autocomplete="current-password" required aria-invalid="true" aria-describedby="email-error" autofocus>/);
    assert.doesNotMatch(page.body, /Tr0ub4dor|wrong one/);
    assert.ok(page.cookies.some((c) => c.name === FORM_COOKIE && c.maxAge === 0 && c.path === '/'), 'read once: cleared');
    assert.equal(jar.has(FORM_COOKIE), false);

    const reloaded = await open(String(refused.headers.location), jar);
    assert.match(reloaded.body, /<input id="email" name="email" type="email" autocomplete="username" value="" required/, 'gone after one read');
  });

  it('puts a wrong e-mail or password in the summary, linked to the first field, and beside it; other problems in the summary only', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/auth/signin?error=INVALID_CREDENTIALS' });
    assert.match(page.body, /<div class="alert alert-error error-summary" role="alert" aria-labelledby="error-summary-title">\s*<h2 class="error-summary-title" id="error-summary-title">There is a problem<\/h2>\s*<ul class="error-summary-list">\s*<li><a href="#email">Email<\/a><\/li>\s*<\/ul>\s*<p class="code">Error code: <code>INVALID_CREDENTIALS<\/code><\/p>/);
    assert.match(page.body, /<p class="field-error" id="email-error"><span class="visually-hidden">Error:<\/span> The email or password is incorrect\. Check them and try again\.<\/p>\s*<input id="email"/);
    assert.equal((page.body.match(/class="field-error"/g) ?? []).length, 1, 'said once, at the first field');
    // The heading order holds: h1, then the summary's h2.
    assert.match(page.body, /<h1>Log in<\/h1>\s*<div class="alert alert-error error-summary"/);

    for (const code of ['RATE_LIMITED', 'ACCOUNT_DISABLED', 'EMAIL_NOT_VERIFIED', 'CSRF_FAILED', 'SERVICE_UNAVAILABLE', 'SessionRequired']) {
      const response = await t.app.inject({ method: 'GET', url: `/auth/signin?error=${code}` });
      assertHtmlPage(response, code);
      assert.match(response.body, /<ul class="error-summary-list">\s*<li>[^<]+<\/li>/, `${code}: in the summary, without a link`);
      assert.doesNotMatch(response.body, /aria-invalid|field-error/, `${code}: no field is marked`);
      assert.match(response.body, new RegExp(`<code>${code}</code>`));
    }
    const fresh = await t.app.inject({ method: 'GET', url: '/auth/signin' });
    assert.doesNotMatch(fresh.body, /error-summary|aria-invalid|field-error/);
    assert.match(fresh.body, /<input id="email" name="email" type="email" autocomplete="username" value="" required autofocus>/);
  });

  it('never shows back an unknown code, and fills nothing in from a cookie it did not sign', async () => {
    for (const code of ['NOPE', '<img src=x onerror=alert(1)>', 'constructor']) {
      const response = await t.app.inject({ method: 'GET', url: `/auth/signin?error=${encodeURIComponent(code)}` });
      assertHtmlPage(response, code);
      assert.doesNotMatch(response.body, /NOPE|onerror|<code>|aria-invalid/, code);
      assert.match(response.body, /<li>Logging in failed\. Please try again\.<\/li>/, code);
    }
    const forged = Buffer.from(JSON.stringify({ p: '/auth/signin', x: 9_999_999_999, v: { email: 'planted@example.com' }, i: [] })).toString('base64url');
    for (const value of [forged, `${forged}.c2lnbmF0dXJl`, 'x'.repeat(6000)]) {
      const response = await t.app.inject({ method: 'GET', url: '/auth/signin?error=INVALID_CREDENTIALS', headers: { cookie: `${FORM_COOKIE}=${value}` } });
      assertHtmlPage(response, 'forged form cookie');
      assert.doesNotMatch(response.body, /planted@example\.com/);
      assert.ok(response.cookies.some((c) => c.name === FORM_COOKIE && c.maxAge === 0), 'cleared');
    }
    // A cookie kept for another form (sign-up's) does not fill this one.
    const jar = new CookieJar();
    const signupPage = await open('/auth/signup', jar);
    const signup = await t.app.inject({
      method: 'POST',
      url: '/api/auth/signup',
      headers: { 'content-type': FORM, origin, cookie: jar.header() },
      payload: new URLSearchParams({ name: 'Other Form', email: 'other-form@example.com', password: 'short', csrfToken: hiddenValue(signupPage.body, 'csrfToken') }).toString(),
    });
    jar.store(signup);
    assert.ok(jar.has(FORM_COOKIE));
    assert.doesNotMatch((await open('/auth/signin?error=INVALID_CREDENTIALS', jar)).body, /other-form@example\.com/);
  });

  it('marks the password field for its script, which the CSP allows by the hash of exactly what the page carries', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/auth/signin' });
    assertHtmlPage(page, 'sign-in page with its script');
    assert.match(page.body, /<div class="field" data-password-field>\s*<label for="password">/);
    const inline = /<script data-show="Show password" data-hide="Hide password" data-caps-lock="Caps Lock is on">([\s\S]*?)<\/script>/.exec(page.body);
    assert.ok(inline, 'the script, with its texts');
    const csp = String(page.headers['content-security-policy']);
    assert.equal(scriptHashSource(inline[1]!), PASSWORD_FIELD_SCRIPT.hash);
    assert.ok(csp.includes(PASSWORD_FIELD_SCRIPT.hash), csp);
    assert.doesNotMatch(csp, /unsafe-inline/);
    // The passkey section's file comes under a nonce: both are allowed, side by side.
    const nonce = /<script src="[^"]+" nonce="([^"]+)" defer><\/script>/.exec(page.body)?.[1];
    assert.ok(nonce, 'the passkey section loads its script under a nonce');
    assert.ok(csp.includes(`script-src 'nonce-${nonce}' ${PASSWORD_FIELD_SCRIPT.hash}`), csp);

    const german = await t.app.inject({ method: 'GET', url: '/auth/signin?error=INVALID_CREDENTIALS&lang=de' });
    assertHtmlPage(german, 'German sign-in');
    assert.match(german.body, /<html lang="de"/);
    assert.match(german.body, /<h2 class="error-summary-title" id="error-summary-title">Es gibt ein Problem<\/h2>/);
    assert.match(german.body, /data-show="Passwort anzeigen" data-hide="Passwort verbergen" data-caps-lock="Die Feststelltaste ist aktiviert"/);
  });

  it('says a wrong e-mail or password once in every language: at the field, the summary linking to it by its label', async () => {
    for (const lang of ['en', 'de', 'es', 'fr', 'ja', 'pt-BR']) {
      const page = await t.app.inject({ method: 'GET', url: `/auth/signin?error=INVALID_CREDENTIALS&lang=${lang}` });
      assertHtmlPage(page, lang);
      const label = /<label for="email">([^<]+)<\/label>/.exec(page.body)![1]!;
      const message = /<p class="field-error" id="email-error"><span class="visually-hidden">[^<]*<\/span> ?([^<]+)<\/p>/.exec(page.body)![1]!;
      assert.ok(page.body.includes(`<li><a href="#email">${label}</a></li>`), `${lang}: the summary links to the field by its label`);
      assert.equal(page.body.split(message).length - 1, 1, `${lang}: the message is said once`);
    }
  });

  it('sets no form cookie when signing in works', async () => {
    const jar = new CookieJar();
    const response = await signIn(jar, { email: 'kept@example.com', password: PASSWORD });
    assert.equal(response.statusCode, 303);
    assert.equal(response.headers.location, '/dashboard');
    assert.ok(!response.cookies.some((c) => c.name === FORM_COOKIE));
  });
});
