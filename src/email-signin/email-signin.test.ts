/**
 * Sign-in by e-mail, end to end on SQLite and PostgreSQL, with mail over a real SMTP server on
 * loopback: a link and a code each sign in once and only once (parallel uses: one wins), a mail
 * scanner's GET of the link spends nothing, both expire, wrong codes void the request and count
 * for the address, the second factor is still asked (unless the browser is trusted, until a new
 * password), a first use verifies the address, an unknown
 * address is sent a sign-up link (ALLOW_SIGNUP), the pages' forms work with the browser's cookie.
 * Each test has its own address and client IP, so the limits of one never reach another.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJwt } from 'jose';
import type { LightMyRequestResponse } from 'fastify';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { startSmtpServer, smtpEnv, type TestSmtpServer } from '../../test/helpers/smtp.ts';
import { mailTo } from '../../test/helpers/mail-links.ts';
import { enrolTotp, totpCode } from '../../test/helpers/totp.ts';
import { CookieJar, formBrowser, postForm } from '../../test/helpers/cookie-jar.ts';
import { browserBindingCookieName } from './browser-binding.ts';
import { trustedDeviceCookieName } from '../trusted-devices/trusted-devices.waiver.ts';
import { linkAndCode } from './email-signin.test-helpers.ts';
import { LOCALES } from '../i18n/locales.ts';

const AUTH_URL = 'http://auth.example.test';
const PASSWORD = 'correct horse battery staple';

for (const backend of await backends()) {
  describe(`email sign-in over SMTP on ${backend.name}`, { skip: backend.skip, timeout: 180_000 }, () => {
    let database: TestDatabase;
    let smtp: TestSmtpServer;
    let t: TestApp;
    const clock = fakeClock();
    let count = 0;
    let ipCount = 0;

    before(async () => {
      database = await backend.create();
      smtp = await startSmtpServer();
      t = await createTestApp(database, {
        clock,
        env: {
          AUTH_URL,
          ...smtpEnv(smtp),
          EMAIL_SIGNIN: 'true',
          RATE_LIMIT_EMAIL_SIGNIN_PER_ADDRESS: '3/1h',
          RATE_LIMIT_EMAIL_SIGNIN_PER_IP: '5/1h',
          RATE_LIMIT_EMAIL_SIGNIN_VERIFY_PER_IP: '12/15m',
          RATE_LIMIT_EMAIL_SIGNIN_CODES_PER_ADDRESS: '7/1d',
        },
      });
    });
    after(async () => {
      await t?.close();
      await smtp?.stop();
      await database?.drop();
    });

    /** An account and a client address of its own for each test. */
    async function person(options: { locale?: 'de'; verified?: boolean } = {}) {
      const email = `person${++count}@example.com`;
      const result = await t.services.credentials.createPasswordUser({ email, password: PASSWORD, name: 'Mail Person', emailVerified: options.verified ?? true, locale: options.locale ?? null });
      assert.ok(result.ok);
      return { user: result.user, email, ip: `10.9.${backend.name === 'sqlite' ? 1 : 2}.${++ipCount}` };
    }

    const post = (url: string, payload: object, ip: string, headers: Record<string, string> = {}) => t.app.inject({ method: 'POST', url, payload, remoteAddress: ip, headers });
    const start = (email: string, ip: string) => post('/api/auth/email/start', { email }, ip);
    const verify = (payload: object, ip: string, headers: Record<string, string> = {}) => post('/api/auth/email/verify', payload, ip, headers);
    const mailFor = (email: string, nth = 1) => mailTo(smtp, email, 'Your sign-in link for Gatehouse', nth);
    const statuses = (responses: LightMyRequestResponse[]) => responses.map((response) => response.statusCode).sort();
    const amrOf = (response: LightMyRequestResponse) => decodeJwt(response.json().token as string).amr;

    it('a link signs in once and only once; a scanner fetching it spends nothing', async () => {
      const { user, email, ip } = await person();
      const started = await start(email, ip);
      assert.equal(started.statusCode, 202, started.body);
      const { url, token } = linkAndCode(await mailFor(email));
      assert.equal(url.pathname, '/auth/email-signin/link');

      // A mail scanner (or a preview) fetches the link: a page with a button, nothing spent.
      for (let i = 0; i < 2; i++) {
        const page: LightMyRequestResponse = await t.app.inject({ method: 'GET', url: `${url.pathname}${url.search}`, remoteAddress: '192.0.2.99' });
        assert.equal(page.statusCode, 200);
        assert.ok(page.body.includes('action="/api/auth/email/verify"') && page.body.includes(`value="${token}"`), 'the button posts the token');
        assert.equal(page.headers['referrer-policy'], 'no-referrer');
      }

      const uses = await Promise.all([verify({ token }, ip), verify({ token }, ip), verify({ token }, ip)]);
      assert.deepEqual(statuses(uses), [200, 400, 400], uses.map((response) => response.body).join('\n'));
      const won = uses.find((response) => response.statusCode === 200)!;
      assert.equal(won.json().user.id, user.id);
      assert.deepEqual(amrOf(won), ['email']);
      assert.ok(won.cookies.some((cookie) => cookie.name === 'gatehouse.session'), 'the session cookie');
      for (const lost of uses.filter((response) => response.statusCode === 400)) assert.equal(lost.json().error, 'INVALID_TOKEN');
      assert.equal((await verify({ token }, ip)).json().error, 'INVALID_TOKEN', 'spent');

      const events = await t.services.audit.listEvents({ userId: user.id, limit: 20 });
      const success = events.events.find((event) => event.type === 'signin.success');
      assert.equal(success?.details?.['method'], 'email');
      const requested = events.events.find((event) => event.type === 'email_signin.requested');
      assert.ok(requested);
      assert.equal(JSON.stringify(requested).includes(email), false, 'the start records no address');
    });

    it('a code signs in once and only once, for its own request and address', async () => {
      const { user, email, ip } = await person({ locale: 'de' });
      const { requestId } = (await start(email, ip)).json() as { requestId: string };
      // In the account's own language.
      const mail = await mailTo(smtp, email, 'Ihr Anmeldelink für Gatehouse');
      const { code } = linkAndCode(mail);

      assert.equal((await verify({ email: 'someone-else@example.com', code, requestId }, ip)).json().error, 'INVALID_CODE', 'another address');
      const uses = await Promise.all([verify({ email, code, requestId }, ip), verify({ email, code, requestId }, ip)]);
      assert.deepEqual(statuses(uses), [200, 400], uses.map((response) => response.body).join('\n'));
      const won = uses.find((response) => response.statusCode === 200)!;
      assert.equal(won.json().user.id, user.id);
      assert.deepEqual(amrOf(won), ['email', 'otp']);
      assert.equal(uses.find((response) => response.statusCode === 400)!.json().error, 'INVALID_TOKEN');
    });

    it('a link and a code expire after EMAIL_SIGNIN_TTL', async () => {
      const { email, ip } = await person();
      const { requestId } = (await start(email, ip)).json() as { requestId: string };
      const { token, code } = linkAndCode(await mailFor(email));
      clock.advance(10 * 60_000 + 1_000);
      assert.equal((await verify({ token }, ip)).json().error, 'TOKEN_EXPIRED');
      assert.equal((await verify({ email, code, requestId }, ip)).json().error, 'TOKEN_EXPIRED');
      const page = await t.app.inject({ method: 'GET', url: `/auth/email-signin/link?token=${token}` });
      assert.ok(!page.body.includes(`value="${token}"`), 'no button for an expired link');
    });

    it('a newer request retires the older one', async () => {
      const { email, ip } = await person();
      await start(email, ip);
      const first = linkAndCode(await mailFor(email));
      await start(email, ip);
      const second = linkAndCode(await mailFor(email, 2));
      assert.equal((await verify({ token: first.token }, ip)).json().error, 'INVALID_TOKEN');
      assert.equal((await verify({ token: second.token }, ip)).statusCode, 200);
    });

    it('wrong codes void the request (the right one then fails too) and count for the address', async () => {
      const { user, email, ip } = await person();
      const { requestId } = (await start(email, ip)).json() as { requestId: string };
      const { code, token } = linkAndCode(await mailFor(email));
      const wrong = code === '000000' ? '111111' : '000000';
      // Parallel guesses count at once.
      const guesses = await Promise.all(Array.from({ length: 5 }, () => verify({ email, code: wrong, requestId }, ip)));
      const errors = guesses.map((response) => response.json().error).sort();
      assert.deepEqual(errors, ['EMAIL_SIGNIN_VOIDED', 'INVALID_CODE', 'INVALID_CODE', 'INVALID_CODE', 'INVALID_CODE']);
      assert.equal((await verify({ email, code, requestId }, ip)).json().error, 'EMAIL_SIGNIN_VOIDED', 'the right code no longer works');
      assert.equal((await verify({ token }, ip)).json().error, 'INVALID_TOKEN', 'nor the link');
      const events = await t.services.audit.listEvents({ userId: user.id, limit: 20 });
      assert.equal(events.events.filter((event) => event.type === 'email_signin.voided').length, 1);

      // RATE_LIMIT_EMAIL_SIGNIN_CODES_PER_ADDRESS (7 a day): a new request does not buy more guesses than that.
      const next = (await start(email, ip)).json() as { requestId: string };
      const fresh = linkAndCode(await mailFor(email, 2));
      const other = fresh.code === '000000' ? '111111' : '000000';
      assert.equal((await verify({ email, code: other, requestId: next.requestId }, ip)).json().error, 'INVALID_CODE');
      assert.equal((await verify({ email, code: other, requestId: next.requestId }, ip)).json().error, 'INVALID_CODE');
      const limited = await verify({ email, code: fresh.code, requestId: next.requestId }, ip);
      assert.equal(limited.statusCode, 429, limited.body);
      assert.ok(Number(limited.headers['retry-after']) > 0);
      assert.equal((await verify({ token: fresh.token }, ip)).statusCode, 200, 'the link still works');
    });

    it('limits requests per address and per client, the same for an address with no account', async () => {
      const { email, ip } = await person();
      for (let i = 0; i < 3; i++) assert.equal((await start(email, ip)).statusCode, 202);
      const refused = await start(email, `${ip}9`);
      assert.equal(refused.statusCode, 429, 'per address, from any client');
      const unknown = `nobody${count}@example.com`;
      for (let i = 0; i < 3; i++) assert.equal((await start(unknown, `${ip}8`)).statusCode, 202);
      const refusedUnknown = await start(unknown, `${ip}7`);
      assert.equal(refusedUnknown.statusCode, 429);
      assert.equal(refusedUnknown.body, refused.body, 'the same refusal');

      const client = `${ip}6`;
      for (let i = 0; i < 5; i++) assert.equal((await start(`other${i}-${count}@example.com`, client)).statusCode, 202);
      assert.equal((await start(`other9-${count}@example.com`, client)).statusCode, 429, 'per client');

      const verifier = `${ip}5`;
      for (let i = 0; i < 12; i++) assert.equal((await verify({ token: `bad-${i}` }, verifier)).statusCode, 400);
      assert.equal((await verify({ token: 'bad-x' }, verifier)).statusCode, 429, 'tries per client');
    });

    it('still asks for the second factor of an account that has one', async () => {
      const { user, email, ip } = await person();
      const secret = await enrolTotp(t.services as never, user, clock);
      await start(email, ip);
      const { token } = linkAndCode(await mailFor(email));
      const challenged = await verify({ token }, ip);
      assert.equal(challenged.statusCode, 403, challenged.body);
      assert.equal(challenged.json().error, 'MFA_REQUIRED');
      assert.equal(challenged.cookies.some((cookie) => cookie.name === 'gatehouse.session'), false, 'no session yet');
      const finished = await post('/api/auth/mfa/verify', { mfaToken: challenged.json().mfaToken, code: totpCode(secret, clock()) }, ip);
      assert.equal(finished.statusCode, 200, finished.body);
      assert.deepEqual(amrOf(finished), ['email', 'otp', 'mfa']);
    });

    it('a trusted browser skips the second factor of a sign-in by mail, and is forgotten after a password change', async () => {
      const { email, ip, user } = await person();
      const secret = await enrolTotp(t.services as never, user, clock);
      const device = trustedDeviceCookieName(t.config);
      /** A sign-in by the mailed link from a browser carrying `cookie`. */
      const signInByLink = async (nth: number, cookie?: string) => {
        assert.equal((await start(email, ip)).statusCode, 202);
        const { token } = linkAndCode(await mailFor(email, nth));
        return verify({ token }, ip, cookie === undefined ? {} : { cookie: `${device}=${cookie}` });
      };

      const challenged = await signInByLink(1);
      assert.equal(challenged.json().error, 'MFA_REQUIRED');
      const trusted = await post('/api/auth/mfa/verify', { mfaToken: challenged.json().mfaToken, code: totpCode(secret, clock()), rememberDevice: true }, ip);
      assert.equal(trusted.statusCode, 200, trusted.body);
      const cookie = trusted.cookies.find((item) => item.name === device)?.value;
      assert.ok(cookie, 'the browser is trusted');

      const skipped = await signInByLink(2, cookie);
      assert.equal(skipped.statusCode, 200, skipped.body);
      assert.deepEqual(amrOf(skipped), ['email'], 'the waived sign-in claims no second factor');

      const changed = await post('/api/auth/change-password', { currentPassword: PASSWORD, newPassword: 'a brand new passphrase 42' }, ip, { authorization: `Bearer ${trusted.json().token}` });
      assert.equal(changed.statusCode, 200, changed.body);
      const asked = await signInByLink(3, cookie);
      assert.equal(asked.statusCode, 403, asked.body);
      assert.equal(asked.json().error, 'MFA_REQUIRED', 'forgotten with the old password');
    });

    it('a first sign-in by mail verifies the address, and takes the account back from whoever made it without the mailbox', async () => {
      const { user, email, ip } = await person({ verified: false });
      // Someone signed up with this address first (a squatter): their password and session.
      const squatter = await post('/api/auth', { email, password: PASSWORD }, ip);
      assert.equal(squatter.statusCode, 200);
      await start(email, ip);
      const { token } = linkAndCode(await mailFor(email));
      const owner = await verify({ token }, ip);
      assert.equal(owner.statusCode, 200);
      assert.notEqual((await t.services.users.findUserById(user.id))?.emailVerifiedAt, null);
      const session = (token: string) => t.app.inject({ method: 'GET', url: '/api/auth/session', headers: { authorization: `Bearer ${token}` } });
      assert.equal((await session(squatter.json().token)).statusCode, 401, 'the squatter’s session ended');
      assert.equal((await session(owner.json().token)).statusCode, 200, 'the owner’s is the new one');
      assert.equal((await post('/api/auth', { email, password: PASSWORD }, ip)).json().error, 'INVALID_CREDENTIALS', 'the password set without the mailbox no longer opens it');
      const locked = (await t.services.audit.listEvents({ userId: user.id, type: 'user.password_locked', limit: 5 })).events;
      assert.equal(locked[0]?.reason, 'UNVERIFIED_ADDRESS_PROVED');

      // A verified account keeps its password and its sessions.
      const other = await person();
      const kept = await post('/api/auth', { email: other.email, password: PASSWORD }, other.ip);
      await start(other.email, other.ip);
      assert.equal((await verify({ token: linkAndCode(await mailFor(other.email)).token }, other.ip)).statusCode, 200);
      assert.equal((await session(kept.json().token)).statusCode, 200);
      assert.equal((await post('/api/auth', { email: other.email, password: PASSWORD }, other.ip)).statusCode, 200);
    });

    it('an unknown address gets a sign-up link (ALLOW_SIGNUP), which creates a verified account on first use', async () => {
      const email = `newcomer${++count}@example.com`;
      const ip = `10.9.3.${++ipCount}`;
      const started = await start(email, ip);
      assert.equal(started.statusCode, 202);
      const mail = await mailTo(smtp, email, 'Create your Gatehouse account');
      const { token } = linkAndCode(mail);
      assert.equal(await t.services.users.findUserByEmail(email), null, 'nothing made before the link is used');
      const page = await t.app.inject({ method: 'GET', url: `/auth/email-signin/link?token=${token}` });
      assert.ok(page.body.includes('Create account and log in'), 'the page says what the button does');
      const used = await verify({ token }, ip);
      assert.equal(used.statusCode, 200, used.body);
      const user = await t.services.users.findUserByEmail(email);
      assert.ok(user && user.emailVerifiedAt !== null);
      assert.equal(used.json().user.id, user.id);
    });

    it('the pages: start by form, the code typed in the same browser, and not in another', async () => {
      const { user, email, ip } = await person();
      const browser = await formBrowser(t.app);
      const startPage = await t.app.inject({ method: 'GET', url: '/auth/email-signin?callbackUrl=/dashboard', headers: { cookie: browser.jar.header() } });
      assert.equal(startPage.statusCode, 200);
      const started = await postForm(t.app, browser, '/api/auth/email/start', { email, callbackUrl: '/dashboard' }, AUTH_URL);
      assert.equal(started.statusCode, 303);
      assert.equal(started.headers.location, '/auth/email-signin/code');
      assert.ok(browser.jar.has(browserBindingCookieName(t.config)), 'the browser-binding cookie');
      const codePage = await t.app.inject({ method: 'GET', url: '/auth/email-signin/code', headers: { cookie: browser.jar.header() } });
      assert.ok(codePage.body.includes('name="code"'));
      const { code } = linkAndCode(await mailFor(email));

      // Another browser, with the code: it has no request of its own to type it into.
      const other = await formBrowser(t.app);
      const elsewhere = await postForm(t.app, other, '/api/auth/email/verify', { code }, AUTH_URL);
      assert.equal(elsewhere.headers.location, '/auth/email-signin/code?error=INVALID_TOKEN');

      const wrong = await postForm(t.app, browser, '/api/auth/email/verify', { code: code === '000000' ? '111111' : '000000' }, AUTH_URL);
      assert.equal(wrong.headers.location, '/auth/email-signin/code?error=INVALID_CODE');
      const signedIn = await postForm(t.app, browser, '/api/auth/email/verify', { code }, AUTH_URL);
      assert.equal(signedIn.statusCode, 303, signedIn.body);
      assert.equal(signedIn.headers.location, '/dashboard');
      assert.ok(browser.jar.has('gatehouse.session'));
      assert.equal(browser.jar.has(browserBindingCookieName(t.config)), false, 'the binding is cleared once used');
      const session = await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: { cookie: browser.jar.header() } });
      assert.equal(session.json().user.id, user.id);
      void ip;
    });

    it('shows each error once, beside its field; the summary links to the field by its label, in every language', async () => {
      const browser = await formBrowser(t.app);
      assert.equal((await postForm(t.app, browser, '/api/auth/email/start', { email: `once${++count}@example.com` }, AUTH_URL)).statusCode, 303);
      const pagesWithFieldErrors = [
        { url: '/auth/email-signin?error=VALIDATION_ERROR', field: 'email' },
        { url: '/auth/email-signin/code?error=INVALID_CODE', field: 'code' },
      ];
      for (const locale of LOCALES) {
        for (const { url, field } of pagesWithFieldErrors) {
          const { body } = await t.app.inject({ method: 'GET', url: `${url}&lang=${locale}`, headers: { cookie: browser.jar.header() } });
          const where = `${url} (${locale})`;
          const message = new RegExp(`<p class="field-error" id="${field}-error"><span class="visually-hidden">[^<]*</span> ?([^<]+)</p>`).exec(body)?.[1];
          assert.ok(message, `${where}: the message beside the field`);
          assert.equal(body.split(message).length - 1, 1, `${where}: "${message}" is said once`);
          const label = new RegExp(`<label for="${field}">([^<]+)</label>`).exec(body)?.[1];
          assert.ok(label, `${where}: the field's label`);
          assert.match(body, new RegExp(`<ul class="error-summary-list">\\s*<li><a href="#${field}">${label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}</a></li>`), `${where}: the summary links to the field by its label`);
        }
      }
      // No request of this browser's: no code field, so the summary says the message, with no link.
      const elsewhere = await t.app.inject({ method: 'GET', url: '/auth/email-signin/code?error=INVALID_CODE' });
      assert.match(elsewhere.body, /<ul class="error-summary-list">\s*<li>[^<]+<\/li>/);
      assert.doesNotMatch(elsewhere.body, /href="#code"/);
    });

    it('answers bad input with a 4xx and a code, never a 500', async () => {
      const ip = `10.9.4.${++ipCount}`;
      const cases: Array<[object, number, string]> = [
        [{}, 422, 'VALIDATION_ERROR'],
        [{ token: 'x', code: '123456' }, 422, 'VALIDATION_ERROR'],
        [{ code: '123456' }, 422, 'VALIDATION_ERROR'],
        [{ code: '123456', requestId: 'r' }, 422, 'VALIDATION_ERROR'],
        [{ token: 'x'.repeat(513) }, 422, 'VALIDATION_ERROR'],
        [{ token: 42 }, 422, 'VALIDATION_ERROR'],
        [{ email: 'a@example.com', code: '123456', requestId: 'no-such-request' }, 400, 'INVALID_TOKEN'],
        [{ email: 'a@example.com', code: '\u202e12', requestId: "'; drop table users; --" }, 400, 'INVALID_TOKEN'],
        // Input hygiene refuses NUL anywhere in a body.
        [{ email: 'a@example.com', code: '\u0000', requestId: 'r' }, 400, 'BAD_REQUEST'],
        [{ token: 'not-a-token' }, 400, 'INVALID_TOKEN'],
      ];
      for (const [payload, status, code] of cases) {
        const response = await verify(payload, ip);
        assert.equal(response.statusCode, status, `${JSON.stringify(payload)}: ${response.body}`);
        assert.equal(response.json().error, code);
      }
      for (const payload of [{}, { email: 'not an address' }, { email: 'a@example.com', callbackUrl: 'x'.repeat(3000) }]) {
        assert.equal((await post('/api/auth/email/start', payload, ip)).statusCode, 422, JSON.stringify(payload));
      }
    });

    it('the sign-in page offers the choice, with its callbackUrl', async () => {
      const page = await t.app.inject({ method: 'GET', url: '/auth/signin?callbackUrl=/dashboard' });
      assert.ok(page.body.includes('href="/auth/email-signin?callbackUrl=%2Fdashboard"'), page.body);
      assert.ok(page.body.includes('E-mail me a sign-in link'));
      const jar = new CookieJar();
      assert.equal((await t.app.inject({ method: 'GET', url: '/auth/email-signin/code', headers: { cookie: jar.header() } })).body.includes('name="code"'), false, 'no request in this browser');
    });
  });
}
