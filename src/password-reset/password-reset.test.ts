/**
 * Password reset and change end to end, on every backend, with mail delivered by the running
 * outbox worker to a real SMTP server on loopback: ask -> the mail arrives -> its link's token
 * validates -> the reset sets the password -> the old one fails, the new one works, every old
 * session is dead, nobody is signed in, and the notice mail arrives. Also: the same answer (and
 * timing) for unknown and disabled addresses, single use, expiry, a newer link replacing an older,
 * a token resetting only its owner, links from AUTH_URL whatever Host / X-Forwarded-Host say, an
 * SMTP outage, refused passwords leaving the token usable, concurrent use of one token, the jwt
 * strategy's immediate revocation, the signed-in change; and the real server process at
 * LOG_LEVEL=info in production writing no token or link.
 */
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { backends, createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { startSmtpServer, type TestSmtpServer, smtpEnv } from '../../test/helpers/smtp.ts';
import { MAIL_WAIT_MS, mailTo, resetLink, tokenOf } from '../../test/helpers/mail-links.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { hiddenValue } from '../../test/helpers/pages.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';
import { FORGOT_PASSWORD_MIN_RESPONSE_MS } from './password-reset.service.ts';
import { FORGOT_PASSWORD_MESSAGE } from './password.routes.ts';

const AUTH_URL = 'https://auth.example.test';
const PASSWORD = 'correct horse battery staple';
const NEW_PASSWORD = 'violet harbour lantern mosaic';
const RESET_SUBJECT = 'Reset your Gatehouse password';
const NOTICE_SUBJECT = 'Your Gatehouse password was changed';

/** Real time plus an offset the test moves: timers keep running, expiries can be reached. */
function offsetClock() {
  let offsetMs = 0;
  return Object.assign(() => Date.now() + offsetMs, {
    advance(ms: number) {
      offsetMs += ms;
    },
  });
}

const mailsTo = (smtp: TestSmtpServer, to: string) => smtp.messages.filter((m) => m.rcptTo.includes(to));

function postJson(t: TestApp, url: string, body: unknown, headers: Record<string, string> = {}) {
  return t.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', ...headers }, payload: JSON.stringify(body) });
}

async function signIn(t: TestApp, email: string, password: string): Promise<LightMyRequestResponse> {
  return postJson(t, '/api/auth', { email, password });
}

async function bearerOf(t: TestApp, email: string, password: string): Promise<string> {
  const response = await signIn(t, email, password);
  assert.equal(response.statusCode, 200, response.body);
  return (response.json() as { token: string }).token;
}

const sessionStatus = async (t: TestApp, token: string) =>
  (await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: { authorization: `Bearer ${token}` } })).statusCode;

function assertAccepted(response: LightMyRequestResponse, label: string): void {
  assert.equal(response.statusCode, 202, `${label}: ${response.body}`);
  assert.deepEqual(response.json(), { ok: true, message: FORGOT_PASSWORD_MESSAGE }, label);
  assert.equal(response.headers['cache-control'], 'no-store', label);
  assert.equal(response.headers['set-cookie'], undefined, `${label}: no cookie`);
}

function assertError(response: LightMyRequestResponse, status: number, code: string, label = code): void {
  assert.equal(response.statusCode, status, `${label}: ${response.body}`);
  assert.equal(response.json().error, code, label);
}

for (const backend of await backends()) {
  describe(`password reset over SMTP on ${backend.name}`, { skip: backend.skip, timeout: 180_000 }, () => {
    let database: TestDatabase;
    let smtp: TestSmtpServer;
    let t: TestApp;
    const clock = offsetClock();
    let count = 0;

    before(async () => {
      database = await backend.create();
      smtp = await startSmtpServer();
      t = await createTestApp(database, {
        clock,
        env: {
          AUTH_URL,
          ...smtpEnv(smtp),
        },
      });
    });
    after(async () => {
      await t?.close();
      await smtp?.stop();
      await database?.drop();
    });
    beforeEach(async () => {
      smtp.refuse(null);
      if (smtp.port === 0) await smtp.start();
    });

    /** A password user of its own for each test, so mails and sessions never mix. */
    async function newUser(name = 'Reset Person') {
      const email = `person${++count}@example.com`;
      const user = await createUser(t.services, { email, password: PASSWORD, name });
      return { ...user, email };
    }

    const forgot = (email: string, headers: Record<string, string> = {}) => postJson(t, '/api/auth/forgot-password', { email }, headers);
    const validate = (token: string) => postJson(t, '/api/auth/reset-password/validate', { token });
    const reset = (token: string, password: string, extra: Record<string, unknown> = {}) => postJson(t, '/api/auth/reset-password', { token, password, ...extra });
    const eventsOf = (userId: string | null, type: string) =>
      t.services.storage.db.selectFrom('audit_events').selectAll().where('type', '=', type).where('user_id', userId === null ? 'is' : '=', userId).execute();

    it('resets end to end: mail, link, validate, reset; old password and sessions dead, nobody signed in, notice mailed', async () => {
      const user = await newUser();
      const oldSessions = [await bearerOf(t, user.email, PASSWORD), await bearerOf(t, user.email, PASSWORD)];

      assertAccepted(await forgot(user.email.toUpperCase()), 'known address, other case');
      const mail = await mailTo(smtp, user.email, RESET_SUBJECT);
      assert.equal(mail.to, user.email);
      assert.ok(mail.text.startsWith('Hello Reset Person,'), mail.text);
      assert.ok(mail.text.includes('within 30 minutes'), 'RESET_TOKEN_TTL, in words');
      const link = resetLink(mail);
      assert.equal(link.origin, AUTH_URL);
      assert.equal(link.pathname, '/auth/reset-password');
      const token = tokenOf(mail);
      assert.match(token, /^[\w-]{43}$/);
      // Storage keeps only a hash of the token.
      const stored = JSON.stringify(await t.services.storage.db.selectFrom('action_tokens').selectAll().where('user_id', '=', user.id).execute());
      assert.ok(!stored.includes(token));

      const validated = await validate(token);
      assert.equal(validated.statusCode, 200);
      assert.deepEqual(validated.json(), { valid: true });
      assert.equal((await validate(token)).statusCode, 200, 'validating does not use the token up');

      const done = await reset(token, NEW_PASSWORD);
      assert.equal(done.statusCode, 200, done.body);
      assert.deepEqual(done.json(), { ok: true });
      assert.equal(done.headers['set-cookie'], undefined, 'the reset signs nobody in');
      assert.equal(done.headers['cache-control'], 'no-store');

      assertError(await signIn(t, user.email, PASSWORD), 401, 'INVALID_CREDENTIALS', 'old password');
      assert.equal((await signIn(t, user.email, NEW_PASSWORD)).statusCode, 200, 'new password');
      for (const session of oldSessions) assert.equal(await sessionStatus(t, session), 401, 'an old session is dead');

      const notice = await mailTo(smtp, user.email, NOTICE_SUBJECT);
      assert.ok(notice.text.includes(`${AUTH_URL}/auth/forgot-password`), notice.text);
      assert.ok(!notice.text.includes(token));

      assert.equal((await eventsOf(user.id, 'password.reset_requested')).length, 1);
      const [resetEvent] = await eventsOf(user.id, 'password.reset');
      assert.equal(resetEvent?.actor_user_id, null);
      assert.deepEqual(JSON.parse(resetEvent!.details!), { sessionsEnded: 2 });
      const [ended] = await eventsOf(user.id, 'user.sessions_ended');
      assert.equal(ended?.reason, 'PASSWORD_RESET');
    });

    it('answers an unknown address exactly like a known one, and mails nothing', async () => {
      const unknown = `nobody${++count}@example.com`;
      const outboxBefore = await t.services.storage.db.selectFrom('mail_outbox').select('id').execute();
      const response = await forgot(unknown);
      assertAccepted(response, 'unknown address');
      const known = await forgot((await newUser()).email);
      assertAccepted(known, 'known address');
      assert.equal(response.body, known.body);
      assert.deepEqual(Object.keys(response.headers).sort(), Object.keys(known.headers).sort());

      const outboxAfter = await t.services.storage.db.selectFrom('mail_outbox').select(['id', 'to_address']).execute();
      assert.equal(outboxAfter.length, outboxBefore.length + 1, 'one message: the known address’s');
      assert.ok(!outboxAfter.some((row) => row.to_address === unknown));
      await t.services.mail.runOnce();
      assert.deepEqual(mailsTo(smtp, unknown), []);
      const [event] = await t.services.storage.db.selectFrom('audit_events').selectAll().where('type', '=', 'password.reset_requested').where('reason', '=', 'UNKNOWN_EMAIL').execute();
      assert.equal(event?.user_id, null);
    });

    it('takes the same time for a known, an unknown and a disabled address: no sooner than the fixed minimum', async () => {
      const known = (await newUser()).email;
      const disabled = await newUser();
      await t.services.admin.updateUser(disabled.id, { disabled: true }, SYSTEM_SOURCE);
      const timings: Record<string, number[]> = { known: [], unknown: [], disabled: [] };
      for (let round = 0; round < 8; round++) {
        for (const [kind, email] of [['known', known], ['unknown', `ghost${++count}@example.com`], ['disabled', disabled.email]] as const) {
          const started = performance.now();
          assertAccepted(await forgot(email), kind);
          timings[kind]!.push(performance.now() - started);
        }
      }
      // The lower quartile of each: a busy machine only ever adds time, so a difference the code
      // makes shows in the fastest answers too, while a neighbour's load spikes do not.
      const lowerQuartile = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 4)]!;
      for (const [kind, values] of Object.entries(timings)) {
        assert.ok(Math.min(...values) >= FORGOT_PASSWORD_MIN_RESPONSE_MS - 1, `${kind}: ${values.join(', ')}`);
      }
      const quartiles = Object.values(timings).map(lowerQuartile);
      assert.ok(Math.max(...quartiles) - Math.min(...quartiles) < 40, `lower quartiles of ${JSON.stringify(timings)}`);
      // The disabled account got no mail, and said so only in the audit log.
      await t.services.mail.runOnce();
      assert.deepEqual(mailsTo(smtp, disabled.email), []);
      assert.equal((await eventsOf(disabled.id, 'password.reset_requested'))[0]?.reason, 'ACCOUNT_DISABLED');
    });

    it('refuses a value that is not an address with 422', async () => {
      for (const email of ['not-an-address', '', 'a@', 42]) {
        const response = await postJson(t, '/api/auth/forgot-password', { email });
        assertError(response, 422, 'VALIDATION_ERROR', JSON.stringify(email));
        assert.equal(response.json().errors[0].field, 'email');
      }
      assertError(await postJson(t, '/api/auth/forgot-password', {}), 422, 'VALIDATION_ERROR', 'no email');
    });

    it('lets an account without a password (it signs in with a provider) set one', async () => {
      const email = `oauth${++count}@example.com`;
      const created = await t.services.users.createUser({ email, name: 'Provider Person', passwordHash: null, emailVerified: true });
      assert.ok(created.ok);
      assertAccepted(await forgot(email), 'passwordless account');
      const token = tokenOf(await mailTo(smtp, email, RESET_SUBJECT));
      assert.equal((await reset(token, NEW_PASSWORD)).statusCode, 200);
      assert.equal((await signIn(t, email, NEW_PASSWORD)).statusCode, 200);
    });

    it('uses a token once: a second reset, or a validate, with it is 400 INVALID_TOKEN', async () => {
      const user = await newUser();
      await forgot(user.email);
      const token = tokenOf(await mailTo(smtp, user.email, RESET_SUBJECT));
      assert.equal((await reset(token, NEW_PASSWORD)).statusCode, 200);
      assertError(await reset(token, 'another quite fine passphrase'), 400, 'INVALID_TOKEN', 'reuse');
      assertError(await validate(token), 400, 'INVALID_TOKEN', 'validate after use');
      assert.equal((await signIn(t, user.email, NEW_PASSWORD)).statusCode, 200, 'the first reset stands');
    });

    it('expires a token after RESET_TOKEN_TTL: 400 TOKEN_EXPIRED', async () => {
      const user = await newUser();
      await forgot(user.email);
      const token = tokenOf(await mailTo(smtp, user.email, RESET_SUBJECT));
      clock.advance(t.config.accounts.resetTokenTtlSeconds * 1000 + 1_000);
      assertError(await validate(token), 400, 'TOKEN_EXPIRED');
      assertError(await reset(token, NEW_PASSWORD), 400, 'TOKEN_EXPIRED');
      assert.equal((await signIn(t, user.email, PASSWORD)).statusCode, 200, 'the password is unchanged');
    });

    it('refuses made-up, malformed and wrong-purpose tokens with 400, never 500', async () => {
      for (const token of ['', 'x', 'A'.repeat(43), 'A'.repeat(500), '../../etc/passwd', '\u{1F600}'.repeat(43)]) {
        assertError(await validate(token), 400, 'INVALID_TOKEN', JSON.stringify(token).slice(0, 40));
        assertError(await reset(token, NEW_PASSWORD), 400, 'INVALID_TOKEN', JSON.stringify(token).slice(0, 40));
      }
      for (const token of [42, null, ['x']]) assertError(await postJson(t, '/api/auth/reset-password/validate', { token }), 422, 'VALIDATION_ERROR');
      // An e-mail verification token is not a reset token.
      const user = await newUser();
      const { token } = await t.services.storage.db.transaction().execute((trx) =>
        t.services.actionTokens.issue(trx, { userId: user.id, purpose: 'email_verification', ttlSeconds: 600 }),
      );
      assertError(await reset(token, NEW_PASSWORD), 400, 'INVALID_TOKEN', 'verification token');
    });

    it('resets only the token’s owner, whatever e-mail the request names', async () => {
      const alice = await newUser('Alice');
      const bob = await newUser('Bob');
      await forgot(alice.email);
      const token = tokenOf(await mailTo(smtp, alice.email, RESET_SUBJECT));
      assert.equal((await reset(token, NEW_PASSWORD, { email: bob.email, userId: bob.id })).statusCode, 200);
      assert.equal((await signIn(t, alice.email, NEW_PASSWORD)).statusCode, 200, 'Alice has the new password');
      assert.equal((await signIn(t, bob.email, PASSWORD)).statusCode, 200, 'Bob keeps his');
      assertError(await signIn(t, bob.email, NEW_PASSWORD), 401, 'INVALID_CREDENTIALS');
    });

    it('ends an older link when a newer one is sent', async () => {
      const user = await newUser();
      await forgot(user.email);
      const first = tokenOf(await mailTo(smtp, user.email, RESET_SUBJECT, 1));
      await forgot(user.email);
      const second = tokenOf(await mailTo(smtp, user.email, RESET_SUBJECT, 2));
      assert.notEqual(first, second);
      assertError(await validate(first), 400, 'INVALID_TOKEN', 'the first link');
      assertError(await reset(first, NEW_PASSWORD), 400, 'INVALID_TOKEN', 'the first link');
      assert.equal((await reset(second, NEW_PASSWORD)).statusCode, 200, 'the newest link works');
    });

    it('builds the link from AUTH_URL, whatever Host, X-Forwarded-Host or Forwarded say', async () => {
      const user = await newUser();
      const response = await forgot(user.email, {
        host: 'evil.example',
        'x-forwarded-host': 'evil.example',
        'x-forwarded-proto': 'http',
        'x-forwarded-port': '8080',
        forwarded: 'host=evil.example;proto=http',
        origin: 'https://evil.example',
      });
      assertAccepted(response, 'poisoned headers');
      const mail = await mailTo(smtp, user.email, RESET_SUBJECT);
      assert.equal(resetLink(mail).origin, AUTH_URL);
      assert.ok(!mail.raw.includes('evil.example'), 'the attacker’s host is nowhere in the mail');
    });

    it('answers 202 while SMTP is down, and the mail arrives after it is back', async () => {
      const user = await newUser();
      await smtp.stop();
      assertAccepted(await forgot(user.email), 'SMTP down');
      // The worker tried, failed, and keeps the message for a retry. Wait for the failure to be
      // recorded (the row unlocked, with its error), not just the claim: the retry time is set
      // from the clock when the failure is recorded, so moving the clock before then would miss it.
      await waitForOutbox(user.email, (row) => row.attempts >= 1 && row.status === 'pending' && row.locked_by === null && row.last_error !== null);
      assertAccepted(await forgot(`ghost${++count}@example.com`), 'SMTP still down');
      assert.deepEqual(mailsTo(smtp, user.email), []);
      await smtp.start();
      clock.advance(60_000); // past the retry delay
      const mail = await mailTo(smtp, user.email, RESET_SUBJECT);
      assert.equal((await validate(tokenOf(mail))).statusCode, 200, 'its link works');
    });

    async function waitForOutbox(
      to: string,
      predicate: (row: { attempts: number; status: string; locked_by: string | null; last_error: string | null }) => boolean,
    ): Promise<void> {
      const deadline = Date.now() + MAIL_WAIT_MS;
      for (;;) {
        const rows = await t.services.storage.db.selectFrom('mail_outbox').select(['attempts', 'status', 'locked_by', 'last_error']).where('to_address', '=', to).execute();
        if (rows.some(predicate)) return;
        if (Date.now() > deadline) throw new Error(`outbox row for ${to} never matched: ${JSON.stringify(rows)}`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    }

    it('refuses a weak password with 422 and its reason, checks the token first, and leaves the token usable', async () => {
      const user = await newUser('Robin Weaksworth');
      await forgot(user.email);
      const token = tokenOf(await mailTo(smtp, user.email, RESET_SUBJECT));
      const cases: Array<[string, string]> = [
        ['short', 'TOO_SHORT'],
        ['password123', 'TOO_COMMON'],
        [`${user.email.split('@')[0]}weaksworth`, 'CONTAINS_IDENTITY'],
        ['', 'TOO_SHORT'],
      ];
      for (const [password, reason] of cases) {
        const response = await reset(token, password);
        assertError(response, 422, 'VALIDATION_ERROR', password);
        const [error, ...rest] = response.json().errors;
        assert.deepEqual(rest, []);
        assert.equal(error.field, 'password');
        assert.equal(error.reason, reason, password);
        assert.ok(error.message.length > 0);
      }
      // A bad token is a 400 whatever the password.
      assertError(await reset('A'.repeat(43), 'short'), 400, 'INVALID_TOKEN', 'bad token, weak password');
      assert.equal((await validate(token)).statusCode, 200, 'the refusals did not use the token');
      assert.equal((await reset(token, NEW_PASSWORD)).statusCode, 200);
    });

    it('lets exactly one of several concurrent resets with one token succeed', async () => {
      const user = await newUser();
      const session = await bearerOf(t, user.email, PASSWORD);
      await forgot(user.email);
      const token = tokenOf(await mailTo(smtp, user.email, RESET_SUBJECT));
      const passwords = ['amber quartz meadow river', 'cobalt lantern orchard frost', 'silent walnut harbor ember', 'golden maple canyon drift', 'velvet thunder prairie moss'];
      const responses = await Promise.all(passwords.map((password) => reset(token, password)));
      const statuses = responses.map((r) => r.statusCode);
      assert.equal(statuses.filter((s) => s === 200).length, 1, JSON.stringify(statuses));
      assert.equal(statuses.filter((s) => s === 400).length, passwords.length - 1, JSON.stringify(statuses));
      for (const response of responses.filter((r) => r.statusCode === 400)) assert.equal(response.json().error, 'INVALID_TOKEN');
      const winner = passwords[statuses.indexOf(200)]!;
      for (const password of passwords) assert.equal((await signIn(t, user.email, password)).statusCode, password === winner ? 200 : 401, password);
      assert.equal(await sessionStatus(t, session), 401);
      assert.equal((await eventsOf(user.id, 'password.reset')).length, 1);
      await mailTo(smtp, user.email, NOTICE_SUBJECT);
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(mailsTo(smtp, user.email).filter((m) => m.subject === NOTICE_SUBJECT).length, 1, 'one notice');
    });

    it('refuses the link of a user disabled after it was sent', async () => {
      const user = await newUser();
      await forgot(user.email);
      const token = tokenOf(await mailTo(smtp, user.email, RESET_SUBJECT));
      await t.services.admin.updateUser(user.id, { disabled: true }, SYSTEM_SOURCE);
      assertError(await validate(token), 400, 'INVALID_TOKEN');
      assertError(await reset(token, NEW_PASSWORD), 400, 'INVALID_TOKEN');
    });

    describe('change-password (signed in)', () => {
      const change = (body: Record<string, unknown>, headers: Record<string, string>) => postJson(t, '/api/auth/change-password', body, headers);

      it('refuses without a session (401 UNAUTHENTICATED) and with a wrong current password (401 INVALID_CREDENTIALS)', async () => {
        const user = await newUser();
        assertError(await change({ currentPassword: PASSWORD, newPassword: NEW_PASSWORD }, {}), 401, 'UNAUTHENTICATED');
        const token = await bearerOf(t, user.email, PASSWORD);
        const auth = { authorization: `Bearer ${token}` };
        assertError(await change({ currentPassword: 'not my password at all', newPassword: NEW_PASSWORD }, auth), 401, 'INVALID_CREDENTIALS');
        const weak = await change({ currentPassword: PASSWORD, newPassword: 'short' }, auth);
        assertError(weak, 422, 'VALIDATION_ERROR');
        assert.deepEqual(weak.json().errors.map((e: { field: string; reason: string }) => [e.field, e.reason]), [['newPassword', 'TOO_SHORT']]);
        assert.equal((await signIn(t, user.email, PASSWORD)).statusCode, 200, 'nothing changed');
        assert.deepEqual(mailsTo(smtp, user.email), []);
      });

      it('changes the password, ends the other sessions, keeps this one, and mails the notice', async () => {
        const user = await newUser();
        // A reset link sent earlier must die with the old password.
        const { token: outstanding } = await t.services.actionTokens.issue(t.services.storage.db, { userId: user.id, purpose: 'password_reset', ttlSeconds: 1800 });
        const current = await bearerOf(t, user.email, PASSWORD);
        const others = [await bearerOf(t, user.email, PASSWORD), await bearerOf(t, user.email, PASSWORD)];
        const response = await change({ currentPassword: PASSWORD, newPassword: NEW_PASSWORD }, { authorization: `Bearer ${current}` });
        assert.equal(response.statusCode, 200, response.body);
        assert.deepEqual(response.json(), { ok: true });
        assert.equal(await sessionStatus(t, current), 200, 'this session stays');
        for (const other of others) assert.equal(await sessionStatus(t, other), 401, 'another session ended');
        assertError(await signIn(t, user.email, PASSWORD), 401, 'INVALID_CREDENTIALS');
        assert.equal((await signIn(t, user.email, NEW_PASSWORD)).statusCode, 200);
        await mailTo(smtp, user.email, NOTICE_SUBJECT);
        const [event] = await eventsOf(user.id, 'password.changed');
        assert.equal(event?.actor_user_id, user.id);
        assert.deepEqual(JSON.parse(event!.details!), { sessionsEnded: 2 });
        assert.deepEqual(await t.services.actionTokens.check(t.services.storage.db, outstanding, 'password_reset'), { ok: false, reason: 'INVALID_TOKEN' });
      });

      it('needs the CSRF token when the session comes from a cookie', async () => {
        const user = await newUser();
        const jar = new CookieJar();
        const page = await t.app.inject({ method: 'GET', url: '/auth/signin' });
        jar.store(page);
        const signedIn = await t.app.inject({
          method: 'POST',
          url: '/api/auth/signin',
          headers: { 'content-type': 'application/json', cookie: jar.header() },
          payload: JSON.stringify({ email: user.email, password: PASSWORD }),
        });
        assert.equal(signedIn.statusCode, 200);
        jar.store(signedIn);
        const body = { currentPassword: PASSWORD, newPassword: NEW_PASSWORD };
        assertError(await change(body, { cookie: jar.header() }), 403, 'CSRF_FAILED');
        // Signing in replaced the CSRF secret: the sign-in page's token is void, the next page's works.
        assertError(await change(body, { cookie: jar.header(), 'x-csrf-token': hiddenValue(page.body, 'csrfToken'), origin: AUTH_URL }), 403, 'CSRF_FAILED');
        const dashboard = await t.app.inject({ method: 'GET', url: '/dashboard', headers: { cookie: jar.header() } });
        jar.store(dashboard);
        const withToken = await change(body, { cookie: jar.header(), 'x-csrf-token': hiddenValue(dashboard.body, 'csrfToken'), origin: AUTH_URL });
        assert.equal(withToken.statusCode, 200, withToken.body);
      });
    });
  });
}

describe('password reset with SESSION_STRATEGY=jwt', { timeout: 60_000 }, () => {
  let database: TestDatabase;
  let t: TestApp;

  before(async () => {
    database = await createSqliteDatabase();
    t = await createTestApp(database, { env: { SESSION_STRATEGY: 'jwt' } });
  });
  after(async () => {
    await t?.close();
    await database?.drop();
  });

  it('refuses the old sessions’ still-unexpired access tokens at once', async () => {
    const email = 'jwt-person@example.com';
    await createUser(t.services, { email, password: PASSWORD });
    const tokens = [await bearerOf(t, email, PASSWORD), await bearerOf(t, email, PASSWORD)];
    for (const token of tokens) assert.equal(await sessionStatus(t, token), 200);
    await postJson(t, '/api/auth/forgot-password', { email });
    // The dev outbox keeps the message readable for development: read the link there.
    const [message] = await t.services.mail.listRecent(1);
    const link = message!.links.find((l) => l.includes('/auth/reset-password?token='))!;
    const token = new URL(link).searchParams.get('token')!;
    assert.equal((await postJson(t, '/api/auth/reset-password', { token, password: NEW_PASSWORD })).statusCode, 200);
    for (const old of tokens) assert.equal(await sessionStatus(t, old), 401, 'revoked, not waiting for expiry');
  });
});
