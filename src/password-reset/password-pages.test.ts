/**
 * The password pages and forms through `app.inject()`, as a browser without JavaScript uses them:
 * forgot-password (the same landing page for every address), the reset page (the token checked
 * before the form is shown, `Referrer-Policy: no-referrer`, the token in a hidden field), its form
 * (303s to the next page, or back with the reason, keeping the link), the sign-in page's link, and
 * the dashboard's change-password form. CSRF applies to every form post. Mail goes to the dev
 * outbox, where the links are read back. The flows over SMTP are in test/flows/password-reset.test.ts.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { assertHtmlPage, hiddenValue } from '../../test/helpers/pages.ts';

const PASSWORD = 'correct horse battery staple';
const NEW_PASSWORD = 'violet harbour lantern mosaic';
const FORM = 'application/x-www-form-urlencoded';

/** Real time plus an offset the test moves. */
function offsetClock() {
  let offsetMs = 0;
  return Object.assign(() => Date.now() + offsetMs, {
    advance(ms: number) {
      offsetMs += ms;
    },
  });
}

/** The reset page's headers are the pages' own, except that no Referer at all may leave it. */
function assertResetPage(response: LightMyRequestResponse, label: string): void {
  assert.equal(response.headers['referrer-policy'], 'no-referrer', label);
  assertHtmlPage({ ...response, headers: { ...response.headers, 'referrer-policy': 'same-origin' } } as LightMyRequestResponse, label);
  // Nothing from another origin: the only resource is our stylesheet.
  assert.doesNotMatch(response.body, /(src|href)="(https?:)?\/\//, `${label}: no third-party resource`);
}

/** The first message of the page's alert: its form's error summary, or the dashboard's alert paragraph. */
/** What the page says went wrong: a field's message at the field (the summary links there by its label), else the summary's or the alert's text. */
const alertText = (html: string) =>
  (/<p class="field-error" id="[\w-]+"><span class="visually-hidden">[^<]*<\/span> ([^<]+)/.exec(html) ?? /role="alert"[^>]*>\s*(?:<h2[^>]*>[^<]*<\/h2>\s*<ul class="error-summary-list">\s*<li>(?:<a href="#[a-z-]+">)?|<p>)([^<]+)/.exec(html))?.[1];

describe('password pages', () => {
  let database: TestDatabase;
  let t: TestApp;
  let origin: string;
  const clock = offsetClock();
  let count = 0;

  before(async () => {
    database = await createSqliteDatabase();
    t = await createTestApp(database, { clock });
    origin = new URL(t.config.authUrl).origin;
  });
  after(async () => {
    await t?.close();
    await database?.drop();
  });

  async function newUser() {
    const email = `page${++count}@example.com`;
    return { ...(await createUser(t.services, { email, password: PASSWORD, name: 'Page Person' })), email };
  }

  const get = (url: string, jar?: CookieJar) => t.app.inject({ method: 'GET', url, headers: jar ? { cookie: jar.header() } : {} });

  function postForm(url: string, jar: CookieJar, fields: Record<string, string>, headers: Record<string, string> = { origin }) {
    return t.app.inject({ method: 'POST', url, headers: { 'content-type': FORM, cookie: jar.header(), ...headers }, payload: new URLSearchParams(fields).toString() });
  }

  /** Opens a page in the browser `jar`, keeping its cookies. */
  async function open(url: string, jar: CookieJar): Promise<LightMyRequestResponse> {
    const response = await get(url, jar);
    jar.store(response);
    return response;
  }

  /** Asks for a link through the forgot-password form; returns the reset link's path and query from the outbox. */
  async function requestLinkWithForm(email: string): Promise<string> {
    const jar = new CookieJar();
    const page = await open('/auth/forgot-password', jar);
    const response = await postForm('/api/auth/forgot-password', jar, { email, csrfToken: hiddenValue(page.body, 'csrfToken') });
    assert.equal(response.statusCode, 303, response.body);
    assert.equal(response.headers.location, '/auth/forgot-password/sent');
    const message = (await t.services.mail.listRecent(20)).find((m) => m.to === email && m.template === 'password-reset');
    assert.ok(message, `a reset mail to ${email}`);
    const link = new URL(message.links.find((l) => l.includes('/auth/reset-password?token='))!);
    assert.equal(link.origin, origin);
    return `${link.pathname}${link.search}`;
  }

  it('links the sign-in page to /auth/forgot-password, which asks for the address', async () => {
    const signin = await get('/auth/signin');
    assert.match(signin.body, /<a href="\/auth\/forgot-password">Forgot password\?<\/a>/);
    const page = await get('/auth/forgot-password');
    assertHtmlPage(page, '/auth/forgot-password');
    assert.match(page.body, /<form class="form" method="post" action="\/api\/auth\/forgot-password">/);
    assert.match(page.body, /<input id="email" name="email" type="email"/);
    assert.match(page.body, /<button class="button" type="submit">Send reset link<\/button>/);
    assert.ok(hiddenValue(page.body, 'csrfToken').length > 20);
    assert.doesNotMatch(page.body, /role="alert"/);
  });

  it('lands every address on the same page, and mails only a real account', async () => {
    const user = await newUser();
    const outcomes: Array<{ status: number; location: string | undefined; cookies: number }> = [];
    const nobody = `nobody${++count}@example.com`;
    for (const email of [user.email, nobody]) {
      const jar = new CookieJar();
      const page = await open('/auth/forgot-password', jar);
      const response = await postForm('/api/auth/forgot-password', jar, { email, csrfToken: hiddenValue(page.body, 'csrfToken') });
      outcomes.push({ status: response.statusCode, location: response.headers.location as string | undefined, cookies: response.cookies.length });
    }
    assert.deepEqual(outcomes[0], outcomes[1]);
    assert.deepEqual(outcomes[0], { status: 303, location: '/auth/forgot-password/sent', cookies: 0 });
    const recipients = (await t.services.mail.listRecent(50)).map((m) => m.to);
    assert.ok(recipients.includes(user.email));
    assert.ok(!recipients.includes(nobody));
    const sent = await get('/auth/forgot-password/sent');
    assertHtmlPage(sent, '/auth/forgot-password/sent');
    assert.match(sent.body, /If an account exists for that address, we have sent it a link/);
    assert.match(sent.body, /within 30 minutes/);
  });

  it('sends a bad address back to the form with VALIDATION_ERROR, and refuses a post without the CSRF token', async () => {
    const jar = new CookieJar();
    const page = await open('/auth/forgot-password', jar);
    const bad = await postForm('/api/auth/forgot-password', jar, { email: 'not-an-address', csrfToken: hiddenValue(page.body, 'csrfToken') });
    assert.equal(bad.statusCode, 303);
    assert.equal(bad.headers.location, '/auth/forgot-password?error=VALIDATION_ERROR');
    jar.store(bad);
    const shown = await open(bad.headers.location as string, jar);
    assertHtmlPage(shown, 'forgot-password with an error');
    // The summary links to the field by its label; the field has the message beside it and what was typed, once.
    assert.match(shown.body, /<li><a href="#email">Email<\/a><\/li>/);
    assert.match(shown.body, /<p class="field-error" id="email-error">(?:(?!<\/p>)[\s\S])*Enter a valid email address\./);
    assert.equal(shown.body.split('Enter a valid email address.').length - 1, 1, 'the message once');
    assert.match(shown.body, /<input id="email" name="email" type="email" autocomplete="username" value="not-an-address" required aria-invalid="true" aria-describedby="email-error" autofocus>/);
    assert.match((await open(bad.headers.location as string, jar)).body, /<input id="email" name="email" type="email" autocomplete="username" value="" required aria-invalid="true"/, 'read once');
    // Too many requests concern no field: the summary says it, without a link, and the field is not marked.
    const limited = await get('/auth/forgot-password?error=RATE_LIMITED');
    assert.match(limited.body, /<li>Too many requests\. Wait a moment, then try again\.<\/li>/);
    assert.doesNotMatch(limited.body, /aria-invalid|href="#email"/);
    const forged = await postForm('/api/auth/forgot-password', jar, { email: 'someone@example.com' });
    assert.equal(forged.statusCode, 403);
    assert.equal(forged.json().error, 'CSRF_FAILED');
    const foreign = await postForm('/api/auth/forgot-password', jar, { email: 'someone@example.com', csrfToken: hiddenValue(page.body, 'csrfToken') }, { origin: 'https://evil.example' });
    assert.equal(foreign.statusCode, 403);
  });

  it('shows the reset form only for a live link: no-referrer, the token hidden, the account named', async () => {
    const user = await newUser();
    const path = await requestLinkWithForm(user.email);
    const token = new URLSearchParams(path.split('?')[1]).get('token')!;
    const page = await get(path);
    assertResetPage(page, 'live link');
    assert.match(page.body, /<form class="form" method="post" action="\/api\/auth\/reset-password">/);
    assert.equal(hiddenValue(page.body, 'token'), token);
    assert.ok(hiddenValue(page.body, 'csrfToken').length > 20);
    assert.match(page.body, /<input id="password" name="password" type="password" autocomplete="new-password" minlength="8"/);
    assert.match(page.body, new RegExp(`<strong>${user.email}</strong>`));
    assert.doesNotMatch(page.body, /role="alert"/);
    assert.equal((await get(path)).statusCode, 200, 'opening the link again still shows the form: looking uses nothing');
    assert.match((await get(path)).body, /name="token"/);

    for (const [url, code] of [
      ['/auth/reset-password', 'INVALID_TOKEN'],
      ['/auth/reset-password?token=', 'INVALID_TOKEN'],
      [`/auth/reset-password?token=${'A'.repeat(43)}`, 'INVALID_TOKEN'],
      ['/auth/reset-password?token=a&token=b', 'INVALID_TOKEN'],
    ] as const) {
      const dead = await get(url);
      assertResetPage(dead, url);
      assert.doesNotMatch(dead.body, /name="token"/, `${url}: no form`);
      assert.match(dead.body, new RegExp(`<code>${code}</code>`), url);
      assert.match(dead.body, /href="\/auth\/forgot-password">Ask for a new link/);
    }
  });

  it('explains an expired link', async () => {
    const user = await newUser();
    const path = await requestLinkWithForm(user.email);
    clock.advance(t.config.accounts.resetTokenTtlSeconds * 1000 + 1_000);
    const page = await get(path);
    assertResetPage(page, 'expired link');
    assert.doesNotMatch(page.body, /name="token"/);
    assert.match(page.body, /<code>TOKEN_EXPIRED<\/code>/);
    assert.match(alertText(page.body)!, /expired/);
  });

  it('sets the password through the form: a refusal comes back to the same link with its reason; success lands on the sign-in prompt', async () => {
    const user = await newUser();
    const other = (await t.services.sessions.startSession({ userId: user.id, roles: [], verifiedPasswordHash: null, amr: ['pwd'], ip: null, userAgent: null }))!;
    const path = await requestLinkWithForm(user.email);
    const jar = new CookieJar();
    const page = await open(path, jar);
    const fields = (password: string) => ({ csrfToken: hiddenValue(page.body, 'csrfToken'), token: hiddenValue(page.body, 'token'), password });

    const weak = await postForm('/api/auth/reset-password', jar, fields('short'));
    assert.equal(weak.statusCode, 303);
    const back = new URL(weak.headers.location as string, origin);
    assert.equal(back.pathname, '/auth/reset-password');
    assert.deepEqual(Object.fromEntries(back.searchParams), { token: hiddenValue(page.body, 'token'), error: 'VALIDATION_ERROR', reason: 'TOO_SHORT' });
    assert.ok(!weak.cookies.some((c) => c.name.includes('form')), 'nothing is kept: the form holds only the password');
    const again = await open(`${back.pathname}${back.search}`, jar);
    assertResetPage(again, 'refused password');
    assert.match(again.body, /name="token"/, 'the form is still there');
    // The refusal is the password field's: linked from the summary by its label, said beside it (once), and described by it before its hint.
    assert.match(again.body, /<li><a href="#password">New password<\/a><\/li>/);
    assert.match(again.body, /<p class="field-error" id="password-error">(?:(?!<\/p>)[\s\S])*too short: use at least 8 characters/);
    assert.equal(again.body.split('too short: use at least 8 characters').length - 1, 1, 'the reason once');
    assert.match(again.body, /<input id="password" name="password" type="password" autocomplete="new-password" minlength="8" required aria-invalid="true" aria-describedby="password-error password-hint" autofocus>/);
    assert.match(again.body, /<div class="field" data-password-field>/, 'with the show-password button once the script runs');

    // Chromium posts from a no-referrer page with Origin: null and Sec-Fetch-Site: same-origin.
    const done = await postForm('/api/auth/reset-password', jar, fields(NEW_PASSWORD), { origin: 'null', 'sec-fetch-site': 'same-origin' });
    assert.equal(done.statusCode, 303, done.body);
    assert.equal(done.headers.location, '/auth/reset-password/done');
    assert.ok(!done.cookies.some((c) => c.name.includes('session') || c.name.includes('refresh')), 'nobody is signed in');
    const landing = await get('/auth/reset-password/done');
    assertHtmlPage(landing, '/auth/reset-password/done');
    assert.match(landing.body, /Log in again with your new password/);
    assert.match(landing.body, /<a class="button" href="\/auth\/signin">Log in<\/a>/);
    assert.equal(await t.services.sessions.authenticate(other.accessToken), null, 'the other session ended');

    const reused = await postForm('/api/auth/reset-password', jar, fields('another fine passphrase here'));
    assert.equal(reused.statusCode, 303);
    assert.equal(reused.headers.location, '/auth/reset-password?error=INVALID_TOKEN');
    const explained = await get(reused.headers.location as string);
    assert.match(alertText(explained.body)!, /used already/);
  });

  it('refuses a reset form post from a null origin that is not our own page', async () => {
    const user = await newUser();
    const path = await requestLinkWithForm(user.email);
    const jar = new CookieJar();
    const page = await open(path, jar);
    const fields = { csrfToken: hiddenValue(page.body, 'csrfToken'), token: hiddenValue(page.body, 'token'), password: NEW_PASSWORD };
    const refused: Array<Record<string, string>> = [{ origin: 'null' }, { origin: 'null', 'sec-fetch-site': 'cross-site' }, { origin: 'https://evil.example' }];
    for (const headers of refused) {
      const response = await postForm('/api/auth/reset-password', jar, fields, headers);
      assert.equal(response.statusCode, 403, JSON.stringify(headers));
    }
    assert.equal((await get(path)).body.includes('name="token"'), true, 'the link still works');
  });

  it('never shows back what a link puts in error and reason', async () => {
    const hostile = '"><script>alert(1)</script>';
    const page = await get(`/auth/reset-password?error=${encodeURIComponent(hostile)}&reason=${encodeURIComponent(hostile)}`);
    assertResetPage(page, 'hostile error');
    assert.doesNotMatch(page.body, /<script>|alert\(1\)|<code>/, 'an unknown code gets the general message, and no code');
    assert.match(page.body, /That did not work\. Open the link from your email again\./);
    const forgot = await get(`/auth/forgot-password?error=${encodeURIComponent(hostile)}`);
    assertHtmlPage(forgot, 'hostile forgot error');
    assert.doesNotMatch(forgot.body, /<script>|alert\(1\)|<code>|aria-invalid/);
    assert.equal(alertText(forgot.body), 'That did not work. Please try again.');
  });

  it('shows a form’s problems and its password field’s texts in the page’s language', async () => {
    const forgot = await get('/auth/forgot-password?error=VALIDATION_ERROR&lang=de');
    assertHtmlPage(forgot, 'German forgot-password');
    assert.match(forgot.body, /<html lang="de"/);
    assert.match(forgot.body, /<h2 class="error-summary-title" id="error-summary-title">Es gibt ein Problem<\/h2>/);
    assert.match(forgot.body, /<span class="visually-hidden">Fehler:<\/span>/);
    const path = await requestLinkWithForm((await newUser()).email);
    const reset = await get(`${path}&lang=ja`);
    assert.match(reset.body, /<html lang="ja"/);
    assert.match(reset.body, /<script data-show="パスワードを表示" data-hide="パスワードを隠す" data-caps-lock="Caps Lock がオンになっています">/);
    assertResetPage(reset, 'Japanese reset page');
  });

  describe('the dashboard’s change-password form', () => {
    async function signedInBrowser(email: string): Promise<{ jar: CookieJar; csrfToken: string }> {
      const jar = new CookieJar();
      const page = await open('/auth/signin', jar);
      const response = await postForm('/api/auth/signin', jar, { email, password: PASSWORD, csrfToken: hiddenValue(page.body, 'csrfToken'), callbackUrl: '/dashboard' });
      assert.equal(response.statusCode, 303);
      jar.store(response);
      const dashboard = await open('/dashboard', jar);
      assertHtmlPage(dashboard, '/dashboard');
      return { jar, csrfToken: hiddenValue(dashboard.body, 'csrfToken') };
    }

    it('shows the form, and comes back with the reason for a wrong current or a refused new password', async () => {
      const user = await newUser();
      const { jar, csrfToken } = await signedInBrowser(user.email);
      const dashboard = await get('/dashboard', jar);
      assert.match(dashboard.body, /<form class="form" method="post" action="\/api\/auth\/change-password">/);
      assert.match(dashboard.body, /<input id="current-password" name="currentPassword" type="password" autocomplete="current-password" required>/);
      assert.match(dashboard.body, /<input id="new-password" name="newPassword" type="password" autocomplete="new-password"/);

      const wrong = await postForm('/api/auth/change-password', jar, { currentPassword: 'not the password', newPassword: NEW_PASSWORD, csrfToken });
      assert.equal(wrong.statusCode, 303);
      assert.equal(wrong.headers.location, '/dashboard?error=INVALID_CREDENTIALS');
      assert.match(alertText((await get(wrong.headers.location as string, jar)).body)!, /current password is not correct/);

      const weak = await postForm('/api/auth/change-password', jar, { currentPassword: PASSWORD, newPassword: 'password123', csrfToken });
      assert.equal(weak.statusCode, 303);
      assert.equal(weak.headers.location, '/dashboard?error=VALIDATION_ERROR&reason=TOO_COMMON');
      assert.match(alertText((await get(weak.headers.location as string, jar)).body)!, /lists of passwords attackers try first/);

      const forged = await postForm('/api/auth/change-password', jar, { currentPassword: PASSWORD, newPassword: NEW_PASSWORD });
      assert.equal(forged.statusCode, 403, 'no CSRF token');
      assert.equal((await t.app.inject({ method: 'POST', url: '/api/auth', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ email: user.email, password: PASSWORD }) })).statusCode, 200, 'unchanged');
    });

    it('changes the password: back to the dashboard with a notice, this browser signed in, the others not', async () => {
      const user = await newUser();
      const other = await signedInBrowser(user.email);
      const { jar, csrfToken } = await signedInBrowser(user.email);
      const response = await postForm('/api/auth/change-password', jar, { currentPassword: PASSWORD, newPassword: NEW_PASSWORD, csrfToken });
      assert.equal(response.statusCode, 303, response.body);
      assert.equal(response.headers.location, '/dashboard?notice=PASSWORD_CHANGED');
      jar.store(response);
      const dashboard = await get(response.headers.location as string, jar);
      assertHtmlPage(dashboard, 'dashboard after the change');
      assert.match(dashboard.body, /<div class="alert alert-info" role="status">\s*<p>Your password has been changed\./);
      assert.equal((dashboard.body.match(/<li class="session">/g) ?? []).length, 1, 'only this session is left');
      const otherDashboard = await get('/dashboard', other.jar);
      assert.equal(otherDashboard.statusCode, 303, 'the other browser is signed out');
      assert.match(String(otherDashboard.headers.location), /^\/auth\/signin/);
      // An unknown notice shows nothing.
      assert.doesNotMatch((await get('/dashboard?notice=SOMETHING', jar)).body, /<div class="alert alert-info" role="status">/);
    });
  });
});
