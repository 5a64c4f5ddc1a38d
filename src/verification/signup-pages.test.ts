/**
 * The sign-up and verification pages through `app.inject()` with a browser's cookies and CSRF
 * token: what each page shows, the form flows (sign up, verify, ask for a new link) and where they
 * land, that opening a verification link never uses it up, escaping of what comes from the URL,
 * and the pages with sign-up turned off. The flow in a real browser is test/flows/signup-browser.test.ts.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { assertHtmlPage, hiddenValue } from '../../test/helpers/pages.ts';

const PASSWORD = 'correct horse battery staple';
const FORM = 'application/x-www-form-urlencoded';

/** The page headers of a page whose URL holds a token: as every page's, but no Referer leaves it. */
function assertLinkPage(response: LightMyRequestResponse, label: string): void {
  assert.equal(response.statusCode, 200, label);
  assert.equal(response.headers['referrer-policy'], 'no-referrer', label);
  assertHtmlPage({ ...response, headers: { ...response.headers, 'referrer-policy': 'same-origin' } } as LightMyRequestResponse, label);
}

describe('sign-up and verification pages', () => {
  let database: TestDatabase;
  let t: TestApp;
  let origin: string;
  let count = 0;
  const freshEmail = () => `pageuser${++count}@example.com`;

  before(async () => {
    database = await createSqliteDatabase();
    t = await createTestApp(database);
    origin = new URL(t.config.authUrl).origin;
  });
  after(async () => {
    await t?.close();
    await database?.drop();
  });

  async function get(url: string, jar?: CookieJar) {
    const response = await t.app.inject({ method: 'GET', url, headers: jar ? { cookie: jar.header() } : {} });
    jar?.store(response);
    return response;
  }

  async function postForm(url: string, jar: CookieJar, fields: Record<string, string>, headers: Record<string, string> = {}) {
    const response = await t.app.inject({ method: 'POST', url, headers: { 'content-type': FORM, origin, cookie: jar.header(), ...headers }, payload: new URLSearchParams(fields).toString() });
    jar.store(response);
    return response;
  }

  /** Fills in the sign-up page's form as a browser would; the answer. */
  async function signUpWithForm(fields: { name: string; email: string; password: string }, jar = new CookieJar()) {
    const page = await get('/auth/signup', jar);
    return postForm('/api/auth/signup', jar, { ...fields, csrfToken: hiddenValue(page.body, 'csrfToken') });
  }

  /** The path and query of the newest verification link mailed to `email`. */
  async function verificationLink(email: string): Promise<string> {
    const mail = (await t.services.mail.listRecent(500)).find((m) => m.to === email && m.template === 'verify-email');
    assert.ok(mail);
    const url = new URL(mail.links[0]!);
    return `${url.pathname}${url.search}`;
  }

  it('renders the sign-up form with its labels, the CSRF token and a button; sign-in links to it', async () => {
    const page = await get('/auth/signup');
    assertHtmlPage(page, '/auth/signup');
    assert.match(page.body, /<form class="form" method="post" action="\/api\/auth\/signup">/);
    for (const [id, label, type] of [['name', 'Name', 'text'], ['email', 'Email', 'email'], ['password', 'Password', 'password']]) {
      assert.match(page.body, new RegExp(`<label for="${id}">${label}</label>`));
      assert.match(page.body, new RegExp(`<input id="${id}" name="${id}" type="${type}"`));
    }
    assert.match(page.body, /autocomplete="new-password"/);
    assert.match(page.body, /<button class="button" type="submit">Create account<\/button>/);
    assert.ok(hiddenValue(page.body, 'csrfToken').length > 20);
    assert.ok(page.cookies.some((c) => c.name === 'gatehouse.csrf' && c.httpOnly));

    const signin = await get('/auth/signin');
    assert.match(signin.body, /<a href="\/auth\/signup">Create an account<\/a>/);
  });

  it('signs up through the form and lands on "check your inbox", the same for a taken address', async () => {
    const email = freshEmail();
    const first = await signUpWithForm({ name: 'Page Person', email, password: PASSWORD });
    assert.equal(first.statusCode, 303);
    assert.equal(first.headers.location, '/auth/check-email');
    assert.ok(await t.services.users.findUserByEmail(email));

    const again = await signUpWithForm({ name: 'Someone Else', email, password: 'another fine long passphrase' });
    assert.equal(again.statusCode, 303);
    assert.equal(again.headers.location, '/auth/check-email');

    const inbox = await get('/auth/check-email');
    assertHtmlPage(inbox, '/auth/check-email');
    assert.match(inbox.body, /<h1>Check your inbox<\/h1>/);
    assert.match(inbox.body, /within 24 hours/);
    assert.match(inbox.body, /action="\/api\/auth\/verify-email\/resend"/);
  });

  it('sends a refused form back with the reason, and nothing typed in the URL', async () => {
    const email = freshEmail();
    const weak = await signUpWithForm({ name: 'Weak Form', email, password: 'short' });
    assert.equal(weak.statusCode, 303);
    assert.equal(weak.headers.location, '/auth/signup?error=VALIDATION_ERROR&reason=TOO_SHORT');
    const shown = await get(String(weak.headers.location));
    assertHtmlPage(shown, 'weak password');
    assert.match(shown.body, /too short: use at least 8 characters/);
    assert.match(shown.body, /<code>VALIDATION_ERROR<\/code>/);

    const common = await signUpWithForm({ name: 'Weak Form', email, password: 'password123' });
    assert.equal(common.headers.location, '/auth/signup?error=VALIDATION_ERROR&reason=TOO_COMMON');

    const badEmail = await signUpWithForm({ name: 'Weak Form', email: 'nope', password: PASSWORD });
    assert.equal(badEmail.statusCode, 303);
    assert.equal(badEmail.headers.location, '/auth/signup?error=VALIDATION_ERROR');
    assert.match((await get(String(badEmail.headers.location))).body, /Enter your name, a valid email address and a password/);

    for (const response of [weak, common, badEmail]) {
      assert.doesNotMatch(String(response.headers.location), /Weak|example\.com|short|password123/);
    }
    assert.equal(await t.services.users.findUserByEmail(email), null);
  });

  it('gives back the name and address after a refusal, never the password, with each problem at its field', async () => {
    const jar = new CookieJar();
    const email = freshEmail();
    const weak = await signUpWithForm({ name: 'Kept Name', email, password: 'shorty' }, jar);
    assert.equal(weak.headers.location, '/auth/signup?error=VALIDATION_ERROR&reason=TOO_SHORT');
    assert.ok(jar.has('gatehouse.form'), 'kept in a cookie');
    const shown = await get(String(weak.headers.location), jar);
    assertHtmlPage(shown, 'sign-up after a refused password');
    assert.match(shown.body, /<input id="name" name="name" type="text" autocomplete="name" maxlength="200" value="Kept Name" required>/);
    assert.match(shown.body, new RegExp(`<input id="email" name="email" type="email" autocomplete="email" value="${email.replace('.', '\\.')}" required>`));
    assert.match(shown.body, /<input id="password" name="password" type="password" autocomplete="new-password" minlength="8" required aria-invalid="true" aria-describedby="password-error password-hint" autofocus>/);
    assert.doesNotMatch(shown.body, /shorty/);
    assert.match(shown.body, /<li><a href="#password">Password<\/a><\/li>/, 'the summary links the field by its label');
    assert.equal(shown.body.split('too short: use at least 8 characters').length - 1, 1, 'the reason once, beside the field');
    assert.match(shown.body, /<p class="field-error" id="password-error"><span class="visually-hidden">Error:<\/span> [^<]*too short/);
    assert.equal(jar.has('gatehouse.form'), false, 'read once');
    assert.match((await get(String(weak.headers.location), jar)).body, /<input id="name" name="name" type="text" autocomplete="name" maxlength="200" value="" required>/);

    // A refused address: the field the server refused is the one marked and linked.
    const badEmail = await signUpWithForm({ name: 'Kept Name', email: 'nope', password: PASSWORD }, jar);
    assert.equal(badEmail.headers.location, '/auth/signup?error=VALIDATION_ERROR');
    const explained = await get(String(badEmail.headers.location), jar);
    assert.match(explained.body, /<input id="email" name="email" type="email" autocomplete="email" value="nope" required aria-invalid="true" aria-describedby="email-error" autofocus>/);
    assert.match(explained.body, /<li><a href="#email">Email<\/a><\/li>/, 'the summary links the field by its label');
    assert.equal(explained.body.split('Enter your name, a valid email address and a password.').length - 1, 1, 'the message once, beside the field');
    assert.doesNotMatch(explained.body, /id="name"[^>]*aria-invalid|id="password"[^>]*aria-invalid/);
    assert.doesNotMatch(explained.body, new RegExp(PASSWORD));

    // Without the cookie (another browser, or it expired) the same URL explains itself, in the summary only.
    const bare = await get('/auth/signup?error=VALIDATION_ERROR');
    assert.match(bare.body, /<li>Enter your name, a valid email address and a password\.<\/li>/);
    assert.doesNotMatch(bare.body, /aria-invalid/);

    const french = await get('/auth/signup?error=VALIDATION_ERROR&reason=TOO_SHORT&lang=fr');
    assertHtmlPage(french, 'French sign-up');
    assert.match(french.body, /<html lang="fr"/);
    assert.match(french.body, /<h2 class="error-summary-title" id="error-summary-title">Un problème est survenu<\/h2>/);
    assert.match(french.body, /data-show="Afficher le mot de passe"/);
  });

  it('refuses a form post without the CSRF token or from another site', async () => {
    const jar = new CookieJar();
    const page = await get('/auth/signup', jar);
    const fields = { name: 'Csrf', email: freshEmail(), password: PASSWORD };
    const missing = await postForm('/api/auth/signup', jar, fields);
    assert.equal(missing.statusCode, 403);
    assert.equal(missing.json().error, 'CSRF_FAILED');
    const foreign = await postForm('/api/auth/signup', jar, { ...fields, csrfToken: hiddenValue(page.body, 'csrfToken') }, { origin: 'https://evil.example' });
    assert.equal(foreign.statusCode, 403);
    assert.equal(await t.services.users.findUserByEmail(fields.email), null);
  });

  it('shows a button for a verification link, never verifies on GET, and verifies on the button', async () => {
    const email = freshEmail();
    await signUpWithForm({ name: 'Link Follower', email, password: PASSWORD });
    const link = await verificationLink(email);
    const token = new URL(link, origin).searchParams.get('token')!;

    const jar = new CookieJar();
    // A mail scanner and then the person both open the link.
    await get(link);
    const page = await get(link, jar);
    assertLinkPage(page, '/auth/verify-email?token=…');
    assert.match(page.body, /<form class="actions" method="post" action="\/api\/auth\/verify-email">/);
    assert.match(page.body, /<button class="button" type="submit">Verify email address<\/button>/);
    assert.equal(hiddenValue(page.body, 'token'), token);
    assert.equal((await t.services.users.findUserByEmail(email))!.emailVerifiedAt, null, 'opening the link verifies nothing');
    assert.deepEqual(await t.services.verification.checkToken(token), { ok: true }, 'and uses nothing up');

    const verified = await postForm('/api/auth/verify-email', jar, { token: hiddenValue(page.body, 'token'), csrfToken: hiddenValue(page.body, 'csrfToken') });
    assert.equal(verified.statusCode, 303);
    assert.equal(verified.headers.location, '/auth/email-verified');
    assert.notEqual((await t.services.users.findUserByEmail(email))!.emailVerifiedAt, null);
    const done = await get('/auth/email-verified');
    assertHtmlPage(done, '/auth/email-verified');
    assert.match(done.body, /your email address is verified/);
    assert.match(done.body, /href="\/auth\/signin"/);

    // The same button again: back to the page with the reason, and a way to get a new link.
    const reused = await postForm('/api/auth/verify-email', jar, { token, csrfToken: hiddenValue(page.body, 'csrfToken') });
    assert.equal(reused.statusCode, 303);
    assert.equal(reused.headers.location, '/auth/verify-email?error=INVALID_TOKEN');
    const explained = await get(String(reused.headers.location));
    assertLinkPage(explained, 'INVALID_TOKEN');
    assert.match(explained.body, /<code>INVALID_TOKEN<\/code>/);
    assert.match(explained.body, /action="\/api\/auth\/verify-email\/resend"/);
    assert.doesNotMatch(explained.body, /name="token"/);

    // Opening the used link shows the same, without a button.
    const stale = await get(link);
    assert.match(stale.body, /<code>INVALID_TOKEN<\/code>/);
    assert.doesNotMatch(stale.body, /Verify email address<\/button>/);
  });

  it('explains an expired link on GET and offers a new one, which the form sends', async () => {
    const email = freshEmail();
    const user = await createUser(t.services, { email, password: PASSWORD });
    await t.services.storage.db.updateTable('users').set({ email_verified_at: null }).where('id', '=', user.id).execute();
    const { token } = await t.services.actionTokens.issue(t.services.storage.db, { userId: user.id, purpose: 'email_verification', ttlSeconds: 60 });
    await t.services.storage.db.updateTable('action_tokens').set({ expires_at: Date.now() - 1 }).where('user_id', '=', user.id).execute();

    const jar = new CookieJar();
    const page = await get(`/auth/verify-email?token=${token}`, jar);
    assertLinkPage(page, 'expired link');
    assert.match(page.body, /<code>TOKEN_EXPIRED<\/code>/);
    assert.match(page.body, /has expired/);
    assert.doesNotMatch(page.body, new RegExp(token), 'the token is not echoed back');

    const resent = await postForm('/api/auth/verify-email/resend', jar, { email, csrfToken: hiddenValue(page.body, 'csrfToken') });
    assert.equal(resent.statusCode, 303);
    assert.equal(resent.headers.location, '/auth/check-email');
    const fresh = await verificationLink(email);
    assert.doesNotMatch(fresh, new RegExp(token));
    assert.deepEqual(await t.services.verification.checkToken(new URL(fresh, origin).searchParams.get('token')), { ok: true });

    const bad = await postForm('/api/auth/verify-email/resend', jar, { email: 'not an address', csrfToken: hiddenValue(page.body, 'csrfToken') });
    assert.equal(bad.headers.location, '/auth/verify-email?error=VALIDATION_ERROR');
    assert.doesNotMatch(String(bad.headers.location), /not/, 'what was typed never goes in the URL');

    // Back on the page: what was typed is in the field, the summary links to it, the message is beside it.
    const refused = await get(String(bad.headers.location), jar);
    assertLinkPage(refused, 'refused resend');
    assert.match(refused.body, /<div class="alert alert-error error-summary" role="alert"/);
    assert.match(refused.body, /<li><a href="#email">[^<]+<\/a><\/li>/);
    assert.match(refused.body, /<code>VALIDATION_ERROR<\/code>/);
    assert.match(refused.body, /<p class="field-error" id="email-error">/);
    const input = /<input id="email"[^>]*>/.exec(refused.body)?.[0] ?? '';
    assert.match(input, /value="not an address"/);
    assert.match(input, / aria-invalid="true"/);
    assert.match(input, / aria-describedby="email-error"/);
    assert.doesNotMatch(refused.body, /Open the link in the message we sent you/, 'the error instead of the general words');
    // Read once: the next visit is a fresh form.
    const again = await get('/auth/verify-email', jar);
    assert.match(/<input id="email"[^>]*>/.exec(again.body)?.[0] ?? '', /value=""/);
    assert.doesNotMatch(again.body, /aria-invalid/);

    // Too many requests concerns no field: the summary only, and the address stays.
    const limited = await get('/auth/verify-email?error=RATE_LIMITED');
    assert.match(limited.body, /<code>RATE_LIMITED<\/code>/);
    assert.match(limited.body, /error-summary-list">\s*<li>[^<]+<\/li>/, 'no link: no field to fix');
    assert.doesNotMatch(limited.body, /aria-invalid|class="field-error"/);
  });

  it('shows the way to a new link without a token, and escapes whatever the URL holds', async () => {
    const bare = await get('/auth/verify-email');
    assertLinkPage(bare, '/auth/verify-email');
    assert.match(bare.body, /Open the link in the message we sent you/);
    assert.match(bare.body, /<label for="email">Email<\/label>/);

    const hostile = '<script>alert(1)</script>';
    for (const url of [`/auth/verify-email?token=${encodeURIComponent(hostile)}`, `/auth/verify-email?error=${encodeURIComponent(hostile)}`, `/auth/signup?error=${encodeURIComponent(hostile)}&reason=${encodeURIComponent(hostile)}`]) {
      const response = await get(url);
      assert.equal(response.statusCode, 200, url);
      assert.doesNotMatch(response.body, /<script>/, url);
    }
    const repeated = await get('/auth/verify-email?token=a&token=b&error=constructor');
    assert.equal(repeated.statusCode, 200);
    assert.match(repeated.body, /That did not work/);
  });

  it('still shows the sign-up page to someone signed in', async () => {
    const email = freshEmail();
    await createUser(t.services, { email, password: PASSWORD });
    const signin = await t.app.inject({ method: 'POST', url: '/api/auth/signin', payload: { email, password: PASSWORD } });
    const jar = new CookieJar().store(signin);
    const page = await get('/auth/signup', jar);
    assertHtmlPage(page, 'signed in');
    assert.match(page.body, /action="\/api\/auth\/signup"/);
  });
});

describe('pages with sign-up turned off', () => {
  let database: TestDatabase;
  let t: TestApp;
  before(async () => {
    database = await createSqliteDatabase();
    t = await createTestApp(database, { env: { ALLOW_SIGNUP: 'false' } });
  });
  after(async () => {
    await t?.close();
    await database?.drop();
  });

  it('says so on the sign-up page, offers no form, and drops the link from sign-in', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/auth/signup' });
    assertHtmlPage(page, 'sign-up off', 403);
    assert.match(page.body, /Sign-up is turned off/);
    assert.match(page.body, /<code>SIGNUP_DISABLED<\/code>/);
    assert.doesNotMatch(page.body, /<form/);
    const signin = await t.app.inject({ method: 'GET', url: '/auth/signin' });
    assert.doesNotMatch(signin.body, /href="\/auth\/signup"/);
  });

  it('sends a form post back to the page with SIGNUP_DISABLED', async () => {
    const jar = new CookieJar();
    const page = await t.app.inject({ method: 'GET', url: '/auth/signin' });
    jar.store(page);
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/auth/signup',
      headers: { 'content-type': FORM, origin: new URL(t.config.authUrl).origin, cookie: jar.header() },
      payload: new URLSearchParams({ name: 'N', email: 'n@example.com', password: PASSWORD, csrfToken: hiddenValue(page.body, 'csrfToken') }).toString(),
    });
    assert.equal(response.statusCode, 303);
    assert.equal(response.headers.location, '/auth/signup?error=SIGNUP_DISABLED');
    assert.equal(await t.services.users.countUsers(), 0);
  });
});
