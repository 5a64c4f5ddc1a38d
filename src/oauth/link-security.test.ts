/**
 * What a thief who holds a stolen session can do with providers (issue 30, finding 1), against real
 * peers on loopback: linking needs a recent sign-in and, for an account with a second factor, a
 * recent use of it; every link and unlink is mailed to the owner; a password reset lists the linked
 * providers in its notice and on its confirmation page, each removable in one step, and removing
 * one ends the sessions signed in through it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { hiddenValue } from '../../test/helpers/pages.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { totpCode, TOTP_STEP_MS } from '../../test/helpers/totp.ts';
import { peerEnv, startGitHubPeer, startOidcPeer, type GitHubAccount, type GitHubPeer, type OidcPeer } from '../../test/helpers/oauth-peers.ts';

const PASSWORD = 'correct horse battery staple';
const NEW_PASSWORD = 'a brand new passphrase for this';
const AUTH_URL = 'http://localhost:3000';
const ORIGIN = AUTH_URL;
const FORM = 'application/x-www-form-urlencoded';

let counter = 0;
function thiefGitHubAccount(): GitHubAccount {
  counter += 1;
  // The thief's own account at the provider: an address of theirs, not the owner's.
  return { id: 900_000 + counter, login: `thief${counter}`, name: 'Thief', emails: [{ email: `thief${counter}@evil.example`, primary: true, verified: true }] };
}

/** A browser (cookie jar) driving one app through inject(), and the provider's pages over HTTP. */
function browserOf(t: () => TestApp) {
  return {
    async open(): Promise<{ jar: CookieJar; csrfToken: string }> {
      const jar = new CookieJar();
      const csrf = await t().app.inject({ method: 'GET', url: '/api/auth/csrf' });
      jar.store(csrf);
      return { jar, csrfToken: csrf.json().csrfToken as string };
    },
    /** Signs in with the password form; the browser then carries the dashboard's CSRF token. */
    async signIn(email: string, password = PASSWORD): Promise<{ jar: CookieJar; csrfToken: string }> {
      const browser = await this.open();
      const signedIn = await t().app.inject({
        method: 'POST',
        url: '/api/auth/signin',
        headers: { origin: ORIGIN, cookie: browser.jar.header(), 'content-type': FORM },
        payload: new URLSearchParams({ email, password, csrfToken: browser.csrfToken }).toString(),
      });
      assert.equal(signedIn.statusCode, 303, signedIn.body);
      browser.jar.store(signedIn);
      const dashboard = await t().app.inject({ method: 'GET', url: '/dashboard', headers: { cookie: browser.jar.header() } });
      browser.jar.store(dashboard);
      return { jar: browser.jar, csrfToken: hiddenValue(dashboard.body, 'csrfToken') };
    },
    /** The dashboard's "Link …" button. */
    async postLink(browser: { jar: CookieJar; csrfToken: string }, provider: string) {
      const response = await t().app.inject({
        method: 'POST',
        url: `/api/auth/link/${provider}`,
        headers: { origin: ORIGIN, cookie: browser.jar.header(), 'content-type': FORM },
        payload: new URLSearchParams({ csrfToken: browser.csrfToken }).toString(),
      });
      browser.jar.store(response);
      return response;
    },
    /** The rest of a link: the provider's answer, and our callback. */
    async finishAtProvider(browser: { jar: CookieJar }, location: string, headers: Record<string, string> = {}) {
      const authorized = await fetch(location, { redirect: 'manual' });
      const back = new URL(String(authorized.headers.get('location')));
      const response = await t().app.inject({ method: 'GET', url: `${back.pathname}${back.search}`, headers: { cookie: browser.jar.header(), ...headers } });
      browser.jar.store(response);
      return response;
    },
  };
}

for (const backend of await backends()) {
  describe(`linking a provider with a stolen session, on ${backend.name}`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let t: TestApp;
    let github: GitHubPeer;
    let oidc: OidcPeer;
    let google: OidcPeer;
    const clock = fakeClock();
    const browsers = browserOf(() => t);

    before(async () => {
      [github, oidc, google] = await Promise.all([startGitHubPeer(), startOidcPeer({ clientId: 'acme-client' }), startOidcPeer({ clientId: 'google-client' })]);
      database = await backend.create();
      t = await createTestApp(database, { env: { AUTH_URL, ...peerEnv({ github, oidc, google }) }, clock });
    });
    after(async () => {
      await t?.close();
      await database?.drop();
      await Promise.all([github?.close(), oidc?.close(), google?.close()]);
    });

    it('regression (issue 30.1): a session signed in longer ago than REAUTH_WINDOW cannot link a provider, by cookie or Bearer; a fresh one can', async () => {
      const user = await createUser(t.services, { email: `stale${++counter}@example.com`, password: PASSWORD });
      const stolen = await browsers.signIn(user.email);
      const bearer = (await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: user.email, password: PASSWORD } })).json().token as string;
      clock.advance(t.config.mfa.reauthWindowSeconds * 1000 + 1_000);

      const refused = await browsers.postLink(stolen, 'github');
      assert.equal(refused.statusCode, 303);
      assert.equal(refused.headers.location, '/dashboard?error=REAUTH_REQUIRED');
      assert.equal(stolen.jar.has('gatehouse.oauth'), false, 'no flow was started');
      const page = await t.app.inject({ method: 'GET', url: '/dashboard?error=REAUTH_REQUIRED', headers: { cookie: stolen.jar.header() } });
      assert.match(page.body, /This change needs a recent sign-in/);
      const byBearer = await t.app.inject({ method: 'POST', url: '/api/auth/link/github', headers: { authorization: `Bearer ${bearer}` }, payload: {} });
      assert.equal(byBearer.statusCode, 403);
      assert.deepEqual(byBearer.json(), { error: 'REAUTH_REQUIRED', message: byBearer.json().message });

      const fresh = await browsers.signIn(user.email);
      const started = await browsers.postLink(fresh, 'github');
      assert.equal(started.statusCode, 303);
      assert.equal(new URL(String(started.headers.location)).origin, github.url, 'a fresh sign-in goes to the provider');
    });

    it('regression (issue 30.1): an account with a second factor links only from a session that used it within REAUTH_WINDOW', async () => {
      const user = await createUser(t.services, { email: `factor${++counter}@example.com`, password: PASSWORD });
      // Signed in before the factor existed: fresh, but it never used the factor.
      const before = await browsers.signIn(user.email);
      const enrolling = (await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: user.email, password: PASSWORD } })).json().token as string;
      const setup = await t.app.inject({ method: 'POST', url: '/api/auth/mfa/totp/setup', headers: { authorization: `Bearer ${enrolling}` }, payload: {} });
      const enabled = await t.app.inject({ method: 'POST', url: '/api/auth/mfa/totp/enable', headers: { authorization: `Bearer ${enrolling}` }, payload: { code: totpCode(setup.json().secret, clock()) } });
      assert.equal(enabled.statusCode, 200, enabled.body);
      clock.advance(TOTP_STEP_MS);

      const refused = await browsers.postLink(before, 'github');
      assert.equal(refused.headers.location, '/dashboard?error=REAUTH_REQUIRED');
      const byBearer = await t.app.inject({ method: 'POST', url: '/api/auth/link/github', headers: { authorization: `Bearer ${enrolling}` }, payload: {} });
      assert.equal(byBearer.statusCode, 303, 'the session that set the factor up used it');
      const stepUp = await t.app.inject({ method: 'POST', url: '/api/auth/mfa/step-up', headers: { cookie: before.jar.header(), origin: ORIGIN, 'x-csrf-token': before.csrfToken }, payload: { code: totpCode(setup.json().secret, clock()) } });
      assert.equal(stepUp.statusCode, 200, stepUp.body);
      before.jar.store(stepUp);
      const afterStepUp = await browsers.postLink(before, 'github');
      assert.equal(new URL(String(afterStepUp.headers.location)).origin, github.url, 'after a step-up it may link');
    });
  });
}

for (const backend of await backends()) {
  describe(`a provider linked by a thief, after the owner's password reset, on ${backend.name}`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let t: TestApp;
    let github: GitHubPeer;
    let oidc: OidcPeer;
    let google: OidcPeer;
    const browsers = browserOf(() => t);

    before(async () => {
      [github, oidc, google] = await Promise.all([startGitHubPeer(), startOidcPeer({ clientId: 'acme-client' }), startOidcPeer({ clientId: 'google-client' })]);
      database = await backend.create();
      t = await createTestApp(database, { env: { AUTH_URL, ...peerEnv({ github, oidc, google }), OIDC_NAME: 'Acme SSO' } });
    });
    after(async () => {
      await t?.close();
      await database?.drop();
      await Promise.all([github?.close(), oidc?.close(), google?.close()]);
    });

    async function mailsTo(address: string) {
      return (await t.services.mail.listRecent(200)).filter((mail) => mail.to === address);
    }

    /** Signs in with the thief's GitHub account: the session it gets, if any. */
    async function signInWithGitHub(account: GitHubAccount) {
      github.signInAs(account);
      const browser = await browsers.open();
      const started = await t.app.inject({
        method: 'POST',
        url: '/api/auth/signin/github',
        headers: { origin: ORIGIN, cookie: browser.jar.header(), 'content-type': FORM },
        payload: new URLSearchParams({ csrfToken: browser.csrfToken }).toString(),
      });
      browser.jar.store(started);
      await browsers.finishAtProvider(browser, String(started.headers.location));
      return browser.jar;
    }

    /** The owner asks for a reset link and sets a new password with the reset page's form. */
    async function resetThroughPages(email: string) {
      const owner = await browsers.open();
      await t.app.inject({ method: 'POST', url: '/api/auth/forgot-password', payload: { email } });
      const resetMail = (await mailsTo(email)).find((mail) => mail.template === 'password-reset');
      const resetToken = new URL(resetMail!.links.find((link) => link.includes('/auth/reset-password'))!).searchParams.get('token')!;
      const reset = await t.app.inject({
        method: 'POST',
        url: '/api/auth/reset-password',
        headers: { origin: ORIGIN, cookie: owner.jar.header(), 'content-type': FORM },
        payload: new URLSearchParams({ token: resetToken, password: NEW_PASSWORD, csrfToken: owner.csrfToken }).toString(),
      });
      return { owner, reset };
    }

    const sessionOf = (jar: CookieJar) => t.app.inject({ method: 'GET', url: '/api/auth/session', headers: { cookie: jar.header() } });

    it('regression (issue 30.1): each link and unlink is mailed to the owner, in their language, and audited', async () => {
      const user = await createUser(t.services, { email: `owner${++counter}@example.com`, password: PASSWORD });
      const thief = thiefGitHubAccount();
      github.signInAs(thief);
      const stolen = await browsers.signIn(user.email);
      const started = await browsers.postLink(stolen, 'github');
      const linked = await browsers.finishAtProvider(stolen, String(started.headers.location), { 'accept-language': 'de' });
      assert.equal(linked.headers.location, '/dashboard?notice=PROVIDER_LINKED');
      const [notice] = (await mailsTo(user.email)).filter((mail) => mail.template === 'security-notice');
      assert.ok(notice, 'the owner is mailed');
      assert.equal(notice.subject, 'GitHub wurde mit Ihrem Konto bei Gatehouse verknüpft');

      const unlinked = await t.app.inject({ method: 'DELETE', url: '/api/auth/accounts/github', headers: { cookie: stolen.jar.header(), origin: ORIGIN, 'x-csrf-token': stolen.csrfToken, 'accept-language': 'de' } });
      assert.equal(unlinked.statusCode, 200, unlinked.body);
      const subjects = (await mailsTo(user.email)).filter((mail) => mail.template === 'security-notice').map((mail) => mail.subject);
      assert.equal(subjects.length, 2);
      assert.ok(subjects.some((subject) => subject !== null && /^Die Verknüpfung mit GitHub wurde/.test(subject)), subjects.join(' | '));
      const events = await t.services.audit.listEvents({ userId: user.id, limit: 50 });
      assert.deepEqual(events.events.filter((event) => event.type.startsWith('oauth.')).map((event) => event.type).sort(), ['oauth.linked', 'oauth.unlinked']);
    });

    it('regression (issue 30.1): the reset lists the linked providers in its mail and on its confirmation page; removing one ends the thief\'s way in', async () => {
      const user = await createUser(t.services, { email: `victim${++counter}@example.com`, password: PASSWORD });
      const thief = thiefGitHubAccount();
      github.signInAs(thief);
      const stolen = await browsers.signIn(user.email);
      const started = await browsers.postLink(stolen, 'github');
      assert.equal((await browsers.finishAtProvider(stolen, String(started.headers.location))).headers.location, '/dashboard?notice=PROVIDER_LINKED');

      // The owner takes the account back by a reset, through the pages.
      const { owner, reset } = await resetThroughPages(user.email);
      assert.equal(reset.statusCode, 303, reset.body);
      const done = new URL(String(reset.headers.location), AUTH_URL);
      assert.equal(done.pathname, '/auth/reset-password/done');
      const reviewToken = done.searchParams.get('token');
      assert.ok(reviewToken, 'the confirmation carries the review');
      assert.equal((await sessionOf(stolen.jar)).statusCode, 401, 'the reset ended the stolen session');

      // Its mail names the provider and links to the page that removes it.
      const changed = (await mailsTo(user.email)).find((mail) => mail.template === 'password-changed');
      assert.match(changed!.text!, /These providers can still log in to your account: GitHub\./);
      const reviewLink = changed!.links.find((link) => link.startsWith(`${AUTH_URL}/auth/linked-accounts?`));
      assert.ok(reviewLink, changed!.links.join());
      assert.equal(new URL(reviewLink).searchParams.get('token'), reviewToken);

      // Until removed, the thief's provider still signs in as the owner.
      const thiefJar = await signInWithGitHub(thief);
      assert.equal((await sessionOf(thiefJar)).json().user.id, user.id);

      // The confirmation page lists it with a button; one post removes it.
      const page = await t.app.inject({ method: 'GET', url: `${done.pathname}${done.search}`, headers: { cookie: owner.jar.header() } });
      assert.equal(page.headers['referrer-policy'], 'no-referrer');
      assert.match(page.body, />Remove GitHub<\/button>/);
      owner.jar.store(page);
      const removed = await t.app.inject({
        method: 'POST',
        url: '/api/auth/linked-accounts/remove',
        headers: { origin: ORIGIN, cookie: owner.jar.header(), 'content-type': FORM },
        payload: new URLSearchParams({ token: reviewToken, provider: 'github', csrfToken: hiddenValue(page.body, 'csrfToken') }).toString(),
      });
      assert.equal(removed.statusCode, 303, removed.body);
      assert.equal(removed.headers.location, `/auth/linked-accounts?${new URLSearchParams({ token: reviewToken, notice: 'PROVIDER_UNLINKED' })}`);
      assert.equal((await sessionOf(thiefJar)).statusCode, 401, 'the session the thief started through it ended');
      assert.equal((await t.services.oauth.listLinkedAccounts(user.id)).length, 0);
      const again = await signInWithGitHub(thief);
      assert.notEqual((await sessionOf(again)).json().user?.id, user.id, 'the thief\'s provider no longer signs in as the owner');
      assert.ok((await mailsTo(user.email)).some((mail) => mail.template === 'security-notice' && mail.subject === 'GitHub was unlinked from your Gatehouse account'));

      // The review page shows what is left; the same removal again is NOT_FOUND; a dead token INVALID_TOKEN.
      const review = await t.app.inject({ method: 'GET', url: removed.headers.location as string });
      assert.equal(review.headers['referrer-policy'], 'no-referrer');
      assert.match(review.body, /The provider was removed/);
      assert.doesNotMatch(review.body, /Remove GitHub/);
      const twice = await t.app.inject({ method: 'POST', url: '/api/auth/linked-accounts/remove', payload: { token: reviewToken, provider: 'github' } });
      assert.equal(twice.statusCode, 404);
      assert.equal(twice.json().error, 'NOT_FOUND');
      const forged = await t.app.inject({ method: 'POST', url: '/api/auth/linked-accounts/remove', payload: { token: 'A'.repeat(43), provider: 'github' } });
      assert.equal(forged.statusCode, 400);
      assert.equal(forged.json().error, 'INVALID_TOKEN');

      // A provider the owner links after the reset is not the review's to remove.
      const ownerSession = await browsers.signIn(user.email, NEW_PASSWORD);
      google.signInAs({ sub: `owner-google-${counter}`, email: user.email, email_verified: true, name: 'Owner' });
      const linkGoogle = await browsers.postLink(ownerSession, 'google');
      assert.equal((await browsers.finishAtProvider(ownerSession, String(linkGoogle.headers.location))).headers.location, '/dashboard?notice=PROVIDER_LINKED');
      const later = await t.app.inject({ method: 'POST', url: '/api/auth/linked-accounts/remove', payload: { token: reviewToken, provider: 'google' } });
      assert.equal(later.statusCode, 404);
      assert.equal((await sessionOf(ownerSession.jar)).statusCode, 200, 'nothing ended');
    });

    it('a reset of an account with no linked provider lists nothing and carries no review', async () => {
      const user = await createUser(t.services, { email: `plain${++counter}@example.com`, password: PASSWORD });
      const { owner, reset } = await resetThroughPages(user.email);
      assert.equal(reset.headers.location, '/auth/reset-password/done');
      const changed = (await mailsTo(user.email)).find((mail) => mail.template === 'password-changed');
      assert.doesNotMatch(changed!.text!, /providers/);
      assert.ok(!changed!.links.some((link) => link.includes('/auth/linked-accounts')));
    });
  });
}
