/**
 * The hosted pages through `app.inject()`: what each page shows, escaping of everything that comes
 * from a URL or a user, the page headers (CSP and friends), and the HTML form flows (sign in, see
 * the dashboard, end sessions) with their CSRF checks. Pages do not touch storage beyond sessions
 * and users, so SQLite is enough here; the browser flow is in test/flows/browser.test.ts.
 */
import { describe, it, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { assertHtmlPage, hiddenValue } from '../../test/helpers/pages.ts';
import { OPENAPI_PATH } from '../app.ts';
import { DASHBOARD_ERROR_CODES, DASHBOARD_NOTICE_CODES } from './pages.messages.ts';

const PASSWORD = 'correct horse battery staple';
const FORM = 'application/x-www-form-urlencoded';
const FOREIGN_ORIGIN = 'https://evil.example';

/** A browser's cookie store, enough for these tests: set, replace, and clear by expiry. */
class CookieJar {
  readonly #cookies = new Map<string, string>();

  store(response: LightMyRequestResponse): void {
    for (const cookie of response.cookies) {
      const expired = cookie.maxAge === 0 || (cookie.expires !== undefined && cookie.expires.getTime() <= Date.now());
      if (expired || cookie.value === '') this.#cookies.delete(cookie.name);
      else this.#cookies.set(cookie.name, cookie.value);
    }
  }

  has(name: string): boolean {
    return this.#cookies.has(name);
  }

  header(): string {
    return [...this.#cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }
}

describe('hosted pages', () => {
  let database: TestDatabase;
  let t: TestApp;
  let origin: string;
  let alice: { id: string; email: string; name: string };
  /** The app's clock runs this far from the real one (a session started "3 hours ago"). */
  let clockOffsetMs = 0;

  before(async () => {
    database = await createSqliteDatabase();
    t = await createTestApp(database, { clock: () => Date.now() + clockOffsetMs });
    origin = new URL(t.config.authUrl).origin;
    alice = await createUser(t.services, { email: 'alice@example.com', password: PASSWORD, name: 'Alice Example', roles: ['ADMIN'] });
  });
  after(async () => {
    await t?.close();
    await database?.drop();
  });
  // Each test counts the sessions it makes.
  beforeEach(() => t.services.sessions.endAllSessions(alice.id).then(() => undefined));

  const get = (url: string, jar?: CookieJar, headers: Record<string, string> = {}) =>
    t.app.inject({ method: 'GET', url, headers: { ...(jar && { cookie: jar.header() }), ...headers } });

  function postForm(url: string, jar: CookieJar, fields: Record<string, string>, headers: Record<string, string> = {}) {
    return t.app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': FORM, origin, cookie: jar.header(), ...headers },
      payload: new URLSearchParams(fields).toString(),
    });
  }

  /** Signs in through the sign-in page's form, as a browser would; returns the browser's cookies. */
  async function signInWithForm(email = 'alice@example.com', userAgent = 'PageBrowser/1.0'): Promise<CookieJar> {
    const jar = new CookieJar();
    const page = await get('/auth/signin?callbackUrl=/dashboard', jar, { 'user-agent': userAgent });
    jar.store(page);
    const response = await postForm(
      '/api/auth/signin',
      jar,
      { email, password: PASSWORD, csrfToken: hiddenValue(page.body, 'csrfToken'), callbackUrl: hiddenValue(page.body, 'callbackUrl') },
      { 'user-agent': userAgent },
    );
    assert.equal(response.statusCode, 303, response.body);
    assert.equal(response.headers.location, '/dashboard');
    jar.store(response);
    assert.ok(jar.has('gatehouse.session') && jar.has('gatehouse.refresh'), 'session cookies set');
    return jar;
  }

  /** A second session for the same user, as an API client would start it. */
  async function signInWithJson(userAgent: string) {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/auth',
      headers: { 'content-type': 'application/json', 'user-agent': userAgent },
      payload: JSON.stringify({ email: 'alice@example.com', password: PASSWORD }),
    });
    assert.equal(response.statusCode, 200);
    const { token, refreshToken } = response.json() as { token: string; refreshToken: string };
    return { token, refreshToken, sessionId: refreshToken.split('.')[0]! };
  }

  const bearerSession = (token: string) => get('/api/auth/session', undefined, { authorization: `Bearer ${token}` });

  /** A CSRF token for this browser from a page that always has a form. */
  const csrfTokenOf = async (jar: CookieJar) => hiddenValue((await get('/auth/signout', jar)).body, 'csrfToken');

  it('renders each public page with its labels and buttons', async () => {
    const home = await get('/');
    assertHtmlPage(home, '/');
    assert.match(home.body, /href="\/auth\/signin"/);
    assert.match(home.body, /href="\/dashboard"/);

    const signin = await get('/auth/signin');
    assertHtmlPage(signin, '/auth/signin');
    assert.match(signin.body, /<form class="form" method="post" action="\/api\/auth\/signin">/);
    assert.match(signin.body, /<label for="email">Email<\/label>/);
    assert.match(signin.body, /<input id="email" name="email" type="email"/);
    assert.match(signin.body, /<label for="password">Password<\/label>/);
    assert.match(signin.body, /<input id="password" name="password" type="password"/);
    assert.match(signin.body, /<button class="button" type="submit">Login<\/button>/);
    assert.ok(hiddenValue(signin.body, 'csrfToken').length > 20);
    assert.equal(hiddenValue(signin.body, 'callbackUrl'), '/dashboard');
    assert.ok(signin.cookies.some((c) => c.name === 'gatehouse.csrf' && c.httpOnly), 'the CSRF cookie comes with the form');

    const signout = await get('/auth/signout');
    assertHtmlPage(signout, '/auth/signout');
    assert.match(signout.body, /Are you sure you want to sign out\?/);
    assert.match(signout.body, /<form class="actions" method="post" action="\/api\/auth\/signout">/);
    assert.match(signout.body, /<button class="button" type="submit">Sign out<\/button>/);
    assert.match(signout.body, /<a class="button button-secondary" href="\/dashboard">Cancel<\/a>/);
    assert.ok(hiddenValue(signout.body, 'csrfToken').length > 20);

    const error = await get('/auth/error?error=Configuration');
    assertHtmlPage(error, '/auth/error');
    assert.match(error.body, /problem with the server configuration/);
    assert.match(error.body, /problem when trying to authenticate/);
    assert.match(error.body, /contact support/);
    assert.match(error.body, /<code>Configuration<\/code>/);
  });

  it('shows a message and the code for each sign-in error; an unknown code only the general message', async () => {
    const codes = ['INVALID_CREDENTIALS', 'ACCOUNT_DISABLED', 'VALIDATION_ERROR', 'CSRF_FAILED', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE', 'SessionRequired'];
    const messages = new Set<string>();
    for (const code of codes) {
      const response = await get(`/auth/signin?error=${code}`);
      assertHtmlPage(response, code);
      assert.match(response.body, new RegExp(`<code>${code}</code>`));
      // A field's problem is said at the field (the summary links to it by its label); the others in the summary.
      messages.add((/<p class="field-error" id="[\w-]+"><span class="visually-hidden">[^<]*<\/span> ([^<]+)/.exec(response.body) ?? /<ul class="error-summary-list">\s*<li>([^<]+)/.exec(response.body))![1]!);
    }
    const unknown = await get('/auth/signin?error=SOMETHING_ELSE');
    assertHtmlPage(unknown, 'unknown code');
    assert.doesNotMatch(unknown.body, /SOMETHING_ELSE|<code>/, 'what the URL says is not shown back');
    messages.add(/<ul class="error-summary-list">\s*<li>([^<]+)/.exec(unknown.body)![1]!);
    assert.equal(messages.size, codes.length + 1, 'a distinct message per code, and a default');
    for (const url of ['/auth/signin', '/auth/signin?error=']) assert.doesNotMatch((await get(url)).body, /role="alert"/, `${url}: no error, no alert`);
  });

  it('explains each error-page code, and never shows an unknown one back', async () => {
    const codes = ['Configuration', 'AccessDenied', 'Verification', 'OAuthSignin', 'OAuthCallback', 'OAuthAccountNotLinked', 'AccountNotFound', 'EmailNotVerified', 'RateLimited', 'SessionRequired'];
    const messages = new Set<string>();
    for (const code of codes) {
      const response = await get(`/auth/error?error=${code}`);
      assertHtmlPage(response, code);
      assert.match(response.body, new RegExp(`<code>${code}</code>`));
      messages.add(/role="alert">\s*<p>([^<]+)<\/p>/.exec(response.body)![1]!);
    }
    assert.equal(messages.size, codes.length, 'a distinct explanation per code');

    const unknown = await get(`/auth/error?error=${encodeURIComponent('<img src=x onerror=alert(1)>')}`);
    assertHtmlPage(unknown, 'hostile code');
    assert.doesNotMatch(unknown.body, /img|onerror|<code>/, 'the input is not echoed, escaped or not');

    // Names of Object.prototype members are unknown codes like any other.
    const fallback = /role="alert">\s*<p>([^<]+)<\/p>/.exec(unknown.body)![1];
    for (const code of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
      const response = await get(`/auth/error?error=${code}`);
      assertHtmlPage(response, code);
      assert.equal(/role="alert">\s*<p>([^<]+)<\/p>/.exec(response.body)![1], fallback, code);
    }

    const long = await get(`/auth/error?error=${'A'.repeat(5000)}`);
    assertHtmlPage(long, 'long code');
    assert.doesNotMatch(long.body, /AAAA/, 'not echoed');

    for (const url of ['/auth/error', '/auth/error?error=', '/auth/error?error=a&error=b']) assertHtmlPage(await get(url), url);
  });

  it('escapes a hostile error and callbackUrl on the sign-in page', async () => {
    const hostile = '"><script>alert(1)</script>';
    const response = await get(`/auth/signin?error=${encodeURIComponent(hostile)}&callbackUrl=${encodeURIComponent(`/x${hostile}`)}`);
    assertHtmlPage(response, 'hostile sign-in page');
    assert.doesNotMatch(response.body, /alert\(1\)<|&lt;script|<code>/, 'the unknown error is not shown back');
    // A same-origin path stays, percent-encoded the way a browser would resolve it.
    assert.equal(hiddenValue(response.body, 'callbackUrl'), '/x%22%3E%3Cscript%3Ealert(1)%3C/script%3E');
  });

  it('honours only same-origin callbackUrls', async () => {
    const refused = [
      '//evil.com',
      '/\\evil.com',
      '\\\\evil.com',
      'https://evil.com',
      'http://localhost:3000.evil.com/',
      'javascript:alert(1)',
      'JaVaScRiPt:alert(1)',
      'data:text/html,<script>alert(1)</script>',
      '/\t/evil.com',
      ' //evil.com',
      'evil.com',
      `/${'a'.repeat(3000)}`,
    ];
    for (const value of refused) {
      const response = await get(`/auth/signin?callbackUrl=${encodeURIComponent(value)}`);
      assertHtmlPage(response, value);
      // A refused value lands on the public home page, never anywhere it names.
      assert.equal(hiddenValue(response.body, 'callbackUrl'), '/', value);
    }
    // Asking for nowhere in particular lands on the dashboard.
    assert.equal(hiddenValue((await get('/auth/signin')).body, 'callbackUrl'), '/dashboard');
    const kept: Array<[string, string]> = [
      ['/dashboard', '/dashboard'],
      ['/dashboard/sessions?tab=all#top', '/dashboard/sessions?tab=all#top'],
      // Encoded slashes are a path segment, not a host: the browser stays on this origin.
      ['/%2F%2Fevil.com', '/%2F%2Fevil.com'],
      ['/%5Cevil.com', '/%5Cevil.com'],
    ];
    for (const [value, expected] of kept) {
      const response = await get(`/auth/signin?callbackUrl=${encodeURIComponent(value)}`);
      assert.equal(hiddenValue(response.body, 'callbackUrl'), expected, value);
    }
    // Repeated parameters render the page (first value wins) instead of failing validation.
    const repeated = await get('/auth/signin?callbackUrl=//evil.com&callbackUrl=/dashboard&error=RATE_LIMITED&error=CSRF_FAILED');
    assertHtmlPage(repeated, 'repeated parameters');
    assert.equal(hiddenValue(repeated.body, 'callbackUrl'), '/', 'the first, refused value decides');
    assert.match(repeated.body, /<code>RATE_LIMITED<\/code>/);
  });

  it('redirects /dashboard without a session to sign-in, with a callbackUrl back', async () => {
    for (const cookie of [undefined, 'gatehouse.session=not-a-token; gatehouse.refresh=nor-this']) {
      const response = await get('/dashboard', undefined, cookie === undefined ? {} : { cookie });
      assert.equal(response.statusCode, 303);
      assert.equal(response.headers.location, '/auth/signin?callbackUrl=/dashboard');
      assert.equal(response.headers['cache-control'], 'no-store');
    }
  });

  it('signs in through the form and shows who you are and your sessions', async () => {
    const jar = await signInWithForm();
    const other = await signInWithJson('OtherDevice/2.0');

    const dashboard = await get('/dashboard', jar);
    assertHtmlPage(dashboard, '/dashboard');
    assert.match(dashboard.body, /<dd>Alice Example<\/dd>/);
    assert.match(dashboard.body, /<dd>alice@example\.com<\/dd>/);
    assert.match(dashboard.body, /<dd>ADMIN<\/dd>/);
    assert.match(dashboard.body, /href="\/auth\/signout"/);
    // The device as people read it (device-label.ts): an unknown client by its product token.
    assert.match(dashboard.body, /<p class="session-agent">PageBrowser <span class="badge">This device<\/span>/);
    assert.match(dashboard.body, /<p class="session-agent">OtherDevice<\/p>/);
    assert.match(dashboard.body, /<dt>IP address<\/dt><dd>127\.0\.0\.1<\/dd>/);
    // Told from now, with the date and time (UTC) in the title.
    assert.match(dashboard.body, /<dt>Logged in<\/dt><dd><time datetime="\d{4}-\d\d-\d\dT[\d:.]+Z" title="[A-Z][a-z]{2} \d{1,2}, \d{4}, \d{1,2}:\d\d [AP]M UTC">now<\/time><\/dd>/);
    assert.match(dashboard.body, /<dt>Last seen<\/dt><dd><time datetime="[^"]+" title="[^"]+">now<\/time><\/dd>/);
    assert.match(dashboard.body, /<html lang="en"/);
    assert.match(dashboard.body, /<h1>Dashboard<\/h1>/);
    // Its navigation: in-page links (no script) to each group with something in it, each link's target there.
    const nav = /<nav class="dashboard-nav" aria-label="Account sections">([\s\S]*?)<\/nav>/.exec(dashboard.body)![1]!;
    const targets = [...nav.matchAll(/<a href="#([\w-]+)">([^<]+)<\/a>/g)].map((match) => [match[1], match[2]]);
    assert.deepEqual(targets.slice(0, 3), [['dashboard-profile', 'Profile'], ['dashboard-security', 'Security'], ['dashboard-sessions', 'Sessions']]);
    for (const [id] of targets) assert.match(dashboard.body, new RegExp(`<div class="dashboard-group" id="${id}">`), `${id} is on the page`);
    assert.match(dashboard.body, /id="dashboard-sessions">\s*<section aria-labelledby="sessions-heading">/);
    assert.match(dashboard.body, /<h2 id="sessions-heading">Your sessions<\/h2>/);
    assert.equal((dashboard.body.match(/<span class="badge">This device<\/span>/g) ?? []).length, 1, 'one session is this device');
    // An End button for the other session only, and one to end all others.
    assert.match(dashboard.body, new RegExp(`name="sessionId" value="${other.sessionId}"`));
    assert.equal((dashboard.body.match(/name="sessionId"/g) ?? []).length, 1);
    assert.match(dashboard.body, />End<\/button>/);
    assert.match(dashboard.body, />End all other sessions<\/button>/);

    // Signed in, the sign-in page says so and links to the dashboard.
    const signin = await get('/auth/signin', jar);
    assertHtmlPage(signin, 'signed-in sign-in page');
    assert.match(signin.body, /already logged in as <strong>alice@example\.com<\/strong>/);
  });

  it('shows the sessions of one device as one card with their count, each still there to end', async () => {
    const jar = await signInWithForm();
    const scripted = [await signInWithJson('NightlyScript/1.0'), await signInWithJson('NightlyScript/1.0'), await signInWithJson('NightlyScript/1.0')];
    const dashboard = await get('/dashboard', jar);
    assertHtmlPage(dashboard, 'grouped sessions');
    assert.equal((dashboard.body.match(/<p class="session-agent">NightlyScript/g) ?? []).length, 1, 'one card');
    assert.match(dashboard.body, /<p class="session-agent">NightlyScript <span class="badge badge-muted">3 sessions<\/span><\/p>/);
    assert.match(dashboard.body, /<details class="session-each">\s*<summary>Show each session<\/summary>/);
    for (const session of scripted) assert.match(dashboard.body, new RegExp(`name="sessionId" value="${session.sessionId}"`));
    const german = await get('/dashboard?lang=de', jar);
    assert.match(german.body, /<span class="badge badge-muted">3 Sitzungen<\/span>/);
    // Ending one from the card leaves two.
    const page = await get('/dashboard', jar);
    const ended = await postForm('/dashboard/sessions/end', jar, { csrfToken: hiddenValue(page.body, 'csrfToken'), sessionId: scripted[0]!.sessionId });
    assert.equal(ended.statusCode, 303);
    assert.match((await get('/dashboard', jar)).body, /<span class="badge badge-muted">2 sessions<\/span>/);
  });

  it('ends another session with its End button', async () => {
    const jar = await signInWithForm();
    const other = await signInWithJson('EndMe/1.0');
    assert.equal((await bearerSession(other.token)).statusCode, 200);

    const dashboard = await get('/dashboard', jar);
    const response = await postForm('/dashboard/sessions/end', jar, { csrfToken: hiddenValue(dashboard.body, 'csrfToken'), sessionId: other.sessionId });
    assert.equal(response.statusCode, 303);
    assert.equal(response.headers.location, '/dashboard');
    assert.equal(response.headers['cache-control'], 'no-store');

    assert.equal((await bearerSession(other.token)).statusCode, 401, 'the other session is gone');
    const refresh = await t.app.inject({ method: 'POST', url: '/api/auth/refresh', headers: { 'content-type': 'application/json' }, payload: { refreshToken: other.refreshToken } });
    assert.equal(refresh.statusCode, 401);
    const after = await get('/dashboard', jar);
    assert.equal(after.statusCode, 200, 'this session is untouched');
    assert.doesNotMatch(after.body, /EndMe\/1\.0/);
  });

  it('ends all other sessions, keeping this one', async () => {
    const jar = await signInWithForm();
    const others = [await signInWithJson('A/1'), await signInWithJson('B/1')];
    const dashboard = await get('/dashboard', jar);
    const response = await postForm('/dashboard/sessions/end-others', jar, { csrfToken: hiddenValue(dashboard.body, 'csrfToken') });
    assert.equal(response.statusCode, 303);
    assert.equal(response.headers.location, '/dashboard');
    for (const other of others) assert.equal((await bearerSession(other.token)).statusCode, 401);

    const after = await get('/dashboard', jar);
    assert.equal(after.statusCode, 200);
    assert.equal((after.body.match(/<li class="session">/g) ?? []).length, 1);
    assert.doesNotMatch(after.body, /End all other sessions/, 'nothing left to end');
  });

  it('refuses the session forms without a CSRF token or from a foreign origin', async () => {
    const jar = await signInWithForm();
    const other = await signInWithJson('Victim/1.0');
    const csrfToken = hiddenValue((await get('/dashboard', jar)).body, 'csrfToken');

    const attempts = [
      postForm('/dashboard/sessions/end', jar, { sessionId: other.sessionId }),
      postForm('/dashboard/sessions/end', jar, { sessionId: other.sessionId, csrfToken: 'forged' }),
      postForm('/dashboard/sessions/end', jar, { sessionId: other.sessionId, csrfToken }, { origin: FOREIGN_ORIGIN }),
      postForm('/dashboard/sessions/end', jar, { sessionId: other.sessionId, csrfToken }, { origin: 'null' }),
      postForm('/dashboard/sessions/end-others', jar, {}),
      postForm('/dashboard/sessions/end-others', jar, { csrfToken }, { origin: FOREIGN_ORIGIN }),
    ];
    for (const response of await Promise.all(attempts)) {
      assert.equal(response.statusCode, 403);
      assert.equal(response.json().error, 'CSRF_FAILED');
    }
    // Cross-site without Origin: Sec-Fetch-Site decides.
    const crossSite = await t.app.inject({
      method: 'POST',
      url: '/dashboard/sessions/end-others',
      headers: { 'content-type': FORM, cookie: jar.header(), 'sec-fetch-site': 'cross-site' },
      payload: new URLSearchParams({ csrfToken }).toString(),
    });
    assert.equal(crossSite.statusCode, 403);
    assert.equal((await bearerSession(other.token)).statusCode, 200, 'the other session survived every attempt');
  });

  it('sends a session form without a session to sign-in', async () => {
    const jar = new CookieJar();
    const page = await get('/auth/signin', jar);
    jar.store(page);
    const response = await postForm('/dashboard/sessions/end-others', jar, { csrfToken: hiddenValue(page.body, 'csrfToken') });
    assert.equal(response.statusCode, 303);
    // Not back to the form's target, which answers only POST; sign-in lands on the dashboard.
    assert.equal(response.headers.location, '/auth/signin');
  });

  it('returns to the dashboard with a notice for an unknown session or a missing field', async () => {
    const jar = await signInWithForm();
    const csrfToken = await csrfTokenOf(jar);

    const unknown = await postForm('/dashboard/sessions/end', jar, { csrfToken, sessionId: 'no-such-session' });
    assert.equal(unknown.statusCode, 303);
    assert.equal(unknown.headers.location, '/dashboard?error=NOT_FOUND');
    const notice = await get('/dashboard?error=NOT_FOUND', jar);
    assertHtmlPage(notice, 'notice');
    assert.match(notice.body, /role="alert"[\s\S]*<code>NOT_FOUND<\/code>/);

    const missing = await postForm('/dashboard/sessions/end', jar, { csrfToken });
    assert.equal(missing.statusCode, 303);
    assert.equal(missing.headers.location, '/dashboard?error=VALIDATION_ERROR');
  });

  it('signs out when the End form names this very session', async () => {
    const jar = await signInWithForm();
    const dashboard = await get('/dashboard', jar);
    const ownId = /<input type="hidden" name="sessionId" value="([^"]+)">/.exec(dashboard.body);
    assert.equal(ownId, null, 'no End button for this device');
    const [current, ...others] = await t.services.sessions.listSessions(alice.id);
    assert.deepEqual(others, []);
    const response = await postForm('/dashboard/sessions/end', jar, { csrfToken: await csrfTokenOf(jar), sessionId: current!.id });
    assert.equal(response.statusCode, 303);
    assert.equal(response.headers.location, '/');
    jar.store(response);
    assert.equal(jar.has('gatehouse.session'), false, 'cookies cleared');
    assert.equal((await get('/dashboard', jar)).statusCode, 303);
  });

  it('signs out with the confirmation form', async () => {
    const jar = await signInWithForm();
    const page = await get('/auth/signout', jar);
    const response = await postForm('/api/auth/signout', jar, { csrfToken: hiddenValue(page.body, 'csrfToken') });
    assert.equal(response.statusCode, 303);
    assert.equal(response.headers.location, '/');
    jar.store(response);
    assert.equal((await get('/dashboard', jar)).statusCode, 303);
    assert.deepEqual(await t.services.sessions.listSessions(alice.id), []);
  });

  it('escapes user data on the dashboard', async () => {
    await createUser(t.services, { email: 'mallory@example.com', password: PASSWORD, name: '<img src=x onerror=alert(1)>' });
    const jar = await signInWithForm('mallory@example.com', '<script>alert("ua")</script>');
    const dashboard = await get('/dashboard', jar);
    assertHtmlPage(dashboard, 'hostile dashboard');
    assert.match(dashboard.body, /<dd>&lt;img src=x onerror=alert\(1\)&gt;<\/dd>/);
    assert.doesNotMatch(dashboard.body, /<script>alert|alert\(&quot;ua/, 'a hostile User-Agent is not shown, escaped or not');
    assert.match(dashboard.body, /<p class="session-agent">Unknown device <span class="badge">This device<\/span>/);
    const notice = await get(`/dashboard?error=${encodeURIComponent('<b>x</b>')}&notice=${encodeURIComponent('<i>y</i>')}`, jar);
    assertHtmlPage(notice, 'hostile notice');
    assert.match(notice.body, /role="alert">\s*<p>That did not work\. Please try again\.<\/p>\s*<\/div>/, 'the general message');
    assert.doesNotMatch(notice.body, /&lt;[bi]&gt;|<b>x|<i>y|<code>|alert-info/, 'neither code is shown back, escaped or not');
  });

  it('has a message for each dashboard code, shows a known code, and neither an unknown code nor an unknown notice', async () => {
    const jar = await signInWithForm();
    const messages = new Set<string>();
    for (const code of DASHBOARD_ERROR_CODES) {
      const page = await get(`/dashboard?error=${code}`, jar);
      assertHtmlPage(page, code);
      assert.match(page.body, new RegExp(`<p class="code">Error code: <code>${code}</code></p>`), code);
      // The change-password form's codes are at their field (its error summary links there by the field's label); the others in the page's alert.
      const message = (/role="alert">\s*<p>([^<]+)<\/p>/.exec(page.body) ?? /<p class="field-error" id="[\w-]+"><span class="visually-hidden">[^<]*<\/span> ([^<]+)/.exec(page.body))![1]!;
      assert.doesNotMatch(message, /pages\.dashboard/, `${code}: a text, not its key`);
      messages.add(message);
    }
    const unknown = await get('/dashboard?error=NO_SUCH_CODE&notice=NO_SUCH_NOTICE', jar);
    assertHtmlPage(unknown, 'unknown codes');
    assert.doesNotMatch(unknown.body, /NO_SUCH|<code>|alert-info/);
    messages.add(/role="alert">\s*<p>([^<]+)<\/p>/.exec(unknown.body)![1]!);
    assert.equal(messages.size, DASHBOARD_ERROR_CODES.size + 1, 'a distinct message per code, and a default');

    // A new password the policy refused: the policy's reason, with the form's code.
    const refused = await get('/dashboard?error=VALIDATION_ERROR&reason=TOO_SHORT', jar);
    assert.match(refused.body, /<li><a href="#new-password">New password<\/a><\/li>/);
    assert.match(refused.body, new RegExp(`id="new-password-error"><span class="visually-hidden">Error:</span> That password is too short[^<]*${t.config.passwords.minLength}`));
    for (const code of DASHBOARD_NOTICE_CODES) {
      const page = await get(`/dashboard?notice=${code}`, jar);
      assert.match(page.body, /<div class="alert alert-info" role="status">\s*<p>[^<]+<\/p>/, code);
      assert.doesNotMatch(page.body, /pages\.dashboard|alert-error/, code);
    }
  });

  it('renders the dashboard in German and in Japanese: texts, device names and times', async () => {
    const CHROME_ON_LINUX = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
    clockOffsetMs = -3 * 3_600_000 - 60_000;
    try {
      await signInWithJson(CHROME_ON_LINUX);
    } finally {
      clockOffsetMs = 0;
    }
    const jar = await signInWithForm();

    const german = await get('/dashboard?lang=de&error=NO_SUCH_CODE&notice=NO_SUCH_NOTICE', jar);
    assertHtmlPage(german, 'German dashboard');
    assert.match(german.body, /<html lang="de"/);
    assert.match(german.body, /<title>Übersicht/);
    assert.match(german.body, /<h1>Übersicht<\/h1>/);
    assert.match(german.body, /<h2 id="account-heading">Ihr Konto<\/h2>/);
    assert.match(german.body, /<h2 id="password-heading">Passwort ändern<\/h2>/);
    assert.match(german.body, /<label for="current-password">Aktuelles Passwort<\/label>/);
    assert.match(german.body, /<h2 id="sessions-heading">Ihre Sitzungen<\/h2>/);
    assert.match(german.body, /<p class="session-agent">PageBrowser <span class="badge">Dieses Gerät<\/span>/);
    assert.match(german.body, /<p class="session-agent">Chrome unter Linux<\/p>/);
    assert.match(german.body, /<dt>Angemeldet<\/dt><dd><time datetime="[^"]+" title="\d{1,2}\. [^"]+ \d{4}, \d\d:\d\d UTC">vor 3 Stunden<\/time>/);
    assert.match(german.body, /<dt>Angemeldet<\/dt><dd><time datetime="[^"]+" title="[^"]+">jetzt<\/time>/);
    assert.match(german.body, />Alle anderen Sitzungen beenden<\/button>/);
    assert.match(german.body, /role="alert">\s*<p>Das hat nicht geklappt\. Bitte versuchen Sie es erneut\.<\/p>/);
    assert.doesNotMatch(german.body, /NO_SUCH|<code>|alert-info/, 'unknown codes are not shown back');
    const ownSections = german.body.slice(0, german.body.indexOf('<section aria-labelledby="password-heading">')) + german.body.slice(german.body.indexOf('<section aria-labelledby="sessions-heading">'));
    assert.doesNotMatch(ownSections, /Your |This device|Signed in|Logged in|Last seen|Chrome on Linux|End/, 'no English left in the page’s own parts');

    const changed = await get('/dashboard?lang=de&notice=PASSWORD_CHANGED', jar);
    assert.match(changed.body, /role="status">\s*<p>Ihr Passwort wurde geändert\./);
    // The change-password form's errors: a summary linking to the field, the message at the field, the field marked.
    const wrong = await get('/dashboard?lang=de&error=INVALID_CREDENTIALS', jar);
    assert.match(wrong.body, /class="alert alert-error error-summary" role="alert"[\s\S]*?<a href="#current-password">Aktuelles Passwort<\/a>[\s\S]*?<p class="code">Fehlercode: <code>INVALID_CREDENTIALS<\/code><\/p>/);
    assert.match(wrong.body, /<p class="field-error" id="current-password-error">[\s\S]*?Ihr aktuelles Passwort stimmt nicht/);
    assert.match(wrong.body, /<input id="current-password" name="currentPassword" type="password" autocomplete="current-password" required aria-invalid="true" aria-describedby="current-password-error" autofocus>/);
    assert.match(wrong.body, /<input id="new-password" [^>]*aria-describedby="new-password-hint">/);
    assert.doesNotMatch(wrong.body, /<input id="new-password" [^>]*aria-invalid/);
    const refused = await get('/dashboard?error=VALIDATION_ERROR&reason=TOO_SHORT', jar);
    assert.match(refused.body, /<a href="#new-password">/);
    assert.match(refused.body, /<input id="new-password" [^>]*aria-invalid="true" aria-describedby="new-password-error new-password-hint"/);
    assert.doesNotMatch(refused.body, /<input id="current-password" [^>]*aria-invalid/);
    assert.match(refused.body, /data-password-field/, 'the show-password toggle is offered on both fields');

    const japanese = await get('/dashboard?error=NO_SUCH_CODE', jar, { 'accept-language': 'ja,en;q=0.5' });
    assertHtmlPage(japanese, 'Japanese dashboard');
    assert.match(japanese.body, /<html lang="ja"/);
    assert.match(japanese.body, /<h1>ダッシュボード<\/h1>/);
    assert.match(japanese.body, /<h2 id="sessions-heading">セッション<\/h2>/);
    assert.match(japanese.body, /<span class="badge">このデバイス<\/span>/);
    assert.match(japanese.body, /<p class="session-agent">Chrome（Linux）<\/p>/);
    assert.match(japanese.body, /<dt>サインイン<\/dt><dd><time datetime="[^"]+" title="\d{4}年\d{1,2}月\d{1,2}日 \d{1,2}:\d\d UTC">3 時間前<\/time>/);
    assert.match(japanese.body, /role="alert">\s*<p>うまくいきませんでした。もう一度お試しください。<\/p>/);
    assert.doesNotMatch(japanese.body, /NO_SUCH|<code>/);
  });

  it('serves the stylesheet as CSS with a cache header and an ETag', async () => {
    const response = await get('/assets/gatehouse.css');
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['content-type'], 'text/css; charset=utf-8');
    assert.match(String(response.headers['cache-control']), /^public, max-age=\d+$/);
    assert.equal(response.headers['x-content-type-options'], 'nosniff');
    assert.match(response.body, /\.button/);
    const etag = String(response.headers.etag);
    const revalidated = await get('/assets/gatehouse.css', undefined, { 'if-none-match': etag });
    assert.equal(revalidated.statusCode, 304);
    assert.equal(revalidated.body, '');
    assert.equal((await get('/assets/gatehouse.css', undefined, { 'if-none-match': '"other"' })).statusCode, 200);
  });

  it('keeps the pages out of the OpenAPI document', async () => {
    const paths = Object.keys((await get(OPENAPI_PATH)).json().paths);
    assert.ok(paths.includes('/api/auth/signin'));
    // Besides the API: the SSO protocol endpoints identity providers and browsers are sent to (SP
    // metadata, SAML ACS, OIDC callback, the start redirect), documented for the IdP's administrator.
    const protocol = /^\/sso\/(\{connectionId\}\/start|saml\/\{connectionId\}\/(acs|metadata)|oidc\/\{connectionId\}\/callback)$/;
    for (const path of paths) assert.ok(path.startsWith('/api/') || path.startsWith('/.well-known/') || protocol.test(path), path);
    assert.ok(!paths.some((path) => path === '/sso/discover' || path === '/sso/setup'), 'the SSO pages stay out');
  });
});
