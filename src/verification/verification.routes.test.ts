/**
 * E-mail verification on every backend: `POST /api/auth/verify-email` with the token from the
 * mail (single use, expiry on a fake clock, only its own user, newer tokens ending older ones),
 * `POST /api/auth/verify-email/resend`, and sign-in under REQUIRE_EMAIL_VERIFICATION. Mail goes to
 * the dev outbox here; test/flows/signup.test.ts delivers it over real SMTP.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, TEST_SECRET, type TestApp } from '../../test/helpers/app.ts';
import { runCli } from '../../test/helpers/process.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { hiddenValue } from '../../test/helpers/pages.ts';
import { bootstrapAdmin } from '../credentials/bootstrap-admin.ts';
import { RESEND_ACCEPTED_MESSAGE } from './verification.routes.ts';

const PASSWORD = 'correct horse battery staple';
const WRONG_PASSWORD = 'wrong horse battery staple';
const HOUR_MS = 3_600_000;

function fakeClock() {
  let now = Date.now();
  return Object.assign(() => now, {
    advance(ms: number) {
      now += ms;
    },
  });
}

function postJson(t: TestApp, url: string, body: unknown, headers: Record<string, string> = {}) {
  return t.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', ...headers }, payload: JSON.stringify(body) });
}

/** Signs up through the API; the user's id. */
async function signUp(t: TestApp, email: string, password = PASSWORD): Promise<string> {
  const response = await postJson(t, '/api/auth/signup', { email, password, name: 'Vera Verifier' });
  assert.equal(response.statusCode, 202, response.body);
  return (await t.services.users.findUserByEmail(email))!.id;
}

/** The token in the newest verification mail to `email` (read from the dev outbox, as a person reads their inbox). */
async function latestToken(t: TestApp, email: string): Promise<string> {
  const mail = (await t.services.mail.listRecent(500)).find((m) => m.to === email && m.template === 'verify-email');
  assert.ok(mail, `a verification mail to ${email}`);
  const link = new URL(mail.links[0]!);
  assert.equal(`${link.origin}${link.pathname}`, `${t.config.authUrl}/auth/verify-email`);
  return link.searchParams.get('token')!;
}

const verify = (t: TestApp, token: unknown) => postJson(t, '/api/auth/verify-email', { token });
const isVerified = async (t: TestApp, userId: string) => (await t.services.users.findUserById(userId))!.emailVerifiedAt !== null;
const INVALID_TOKEN = { error: 'INVALID_TOKEN', message: 'The token is invalid or has expired.' };

for (const backend of await backends()) {
  describe(`e-mail verification on ${backend.name}`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let t: TestApp;
    const clock = fakeClock();
    let count = 0;
    const freshEmail = () => `verifier${++count}@example.com`;

    before(async () => {
      database = await backend.create();
      t = await createTestApp(database, { clock });
    });
    after(async () => {
      await t?.close();
      await database?.drop();
    });

    it('verifies the address with the token from the mail, once, with an email.verified event', async () => {
      const email = freshEmail();
      const userId = await signUp(t, email);
      const token = await latestToken(t, email);
      assert.equal(await isVerified(t, userId), false);

      const response = await verify(t, token);
      assert.equal(response.statusCode, 200);
      assert.deepEqual(response.json(), { ok: true });
      assert.equal(response.headers['cache-control'], 'no-store');
      assert.equal((await t.services.users.findUserById(userId))!.emailVerifiedAt, clock());
      const { events } = await t.services.audit.listEvents({ userId, type: 'email.verified', limit: 5 });
      assert.equal(events.length, 1);
      assert.equal(events[0]!.actorUserId, null);

      const again = await verify(t, token);
      assert.equal(again.statusCode, 400);
      assert.deepEqual(again.json(), INVALID_TOKEN);
    });

    it('refuses an expired token with TOKEN_EXPIRED and leaves the address unverified', async () => {
      const email = freshEmail();
      const userId = await signUp(t, email);
      const token = await latestToken(t, email);
      clock.advance(t.config.accounts.verificationTokenTtlSeconds * 1000 + 1_000);
      const response = await verify(t, token);
      assert.equal(response.statusCode, 400);
      assert.deepEqual(response.json(), { error: 'TOKEN_EXPIRED', message: 'This link has expired. Ask for a new one.' });
      assert.equal(await isVerified(t, userId), false);
    });

    it('sends a new link on request, which ends the older one', async () => {
      const email = freshEmail();
      const userId = await signUp(t, email);
      const first = await latestToken(t, email);
      clock.advance(HOUR_MS);

      const resend = await postJson(t, '/api/auth/verify-email/resend', { email: email.toUpperCase() });
      assert.equal(resend.statusCode, 202);
      assert.deepEqual(resend.json(), { ok: true, message: RESEND_ACCEPTED_MESSAGE });
      const second = await latestToken(t, email);
      assert.notEqual(second, first);

      assert.deepEqual((await verify(t, first)).json(), INVALID_TOKEN, 'the first link is dead');
      assert.equal(await isVerified(t, userId), false);
      assert.equal((await verify(t, second)).statusCode, 200);
      assert.equal(await isVerified(t, userId), true);
    });

    it('answers every resend the same and mails only an unverified, enabled account', async () => {
      const unverified = freshEmail();
      await signUp(t, unverified);
      const verified = freshEmail();
      await createUser(t.services, { email: verified, password: PASSWORD });
      const disabled = freshEmail();
      const disabledId = await signUp(t, disabled);
      await t.services.users.updateUser(disabledId, { disabled: true });

      const outboxSize = async () => (await t.services.storage.db.selectFrom('mail_outbox').select('id').execute()).length;
      const bodies = new Set<string>();
      for (const [email, mails] of [[unverified, 1], [verified, 0], [disabled, 0], ['nobody@example.com', 0]] as const) {
        const before = await outboxSize();
        const response = await postJson(t, '/api/auth/verify-email/resend', { email });
        assert.equal(response.statusCode, 202, email);
        bodies.add(response.body);
        assert.equal((await outboxSize()) - before, mails, email);
      }
      assert.equal(bodies.size, 1);
      const invalid = await postJson(t, '/api/auth/verify-email/resend', { email: 'not an address' });
      assert.equal(invalid.statusCode, 422);
      assert.equal(invalid.json().errors[0].field, 'email');
    });

    it('verifies only the owner of the token', async () => {
      const [a, b] = [freshEmail(), freshEmail()];
      const [aId, bId] = [await signUp(t, a), await signUp(t, b)];
      const bToken = await latestToken(t, b);
      assert.equal((await verify(t, bToken)).statusCode, 200);
      assert.equal(await isVerified(t, bId), true);
      assert.equal(await isVerified(t, aId), false, 'the other user is untouched');
      assert.equal((await verify(t, await latestToken(t, a))).statusCode, 200, 'and their own token still works');
    });

    it('refuses made-up, malformed and wrong-purpose tokens with 400, and a missing one with 422', async () => {
      const email = freshEmail();
      const userId = await signUp(t, email);
      const { token: resetToken } = await t.services.actionTokens.issue(t.services.storage.db, { userId, purpose: 'password_reset', ttlSeconds: 600 });
      const real = await latestToken(t, email);
      for (const token of ['x', 'A'.repeat(43), resetToken, `${real}=`, `${real.slice(0, -1)}%`, '💥'.repeat(20)]) {
        const response = await verify(t, token);
        assert.equal(response.statusCode, 400, token);
        assert.deepEqual(response.json(), INVALID_TOKEN);
      }
      for (const body of [{}, { token: '' }, { token: 42 }, { token: 'a'.repeat(513) }]) {
        const response = await postJson(t, '/api/auth/verify-email', body);
        assert.equal(response.statusCode, 422, JSON.stringify(body));
        assert.equal(response.json().errors[0].field, 'token');
      }
      assert.equal(await isVerified(t, userId), false);
      assert.equal((await verify(t, real)).statusCode, 200, 'none of that used the real token up');
    });

    it('lets exactly one of several simultaneous uses of a token through', async () => {
      const email = freshEmail();
      await signUp(t, email);
      const token = await latestToken(t, email);
      const responses = await Promise.all(Array.from({ length: 5 }, () => verify(t, token)));
      assert.deepEqual(responses.map((r) => r.statusCode).sort(), [200, 400, 400, 400, 400]);
    });

    it('lets an unverified user sign in while REQUIRE_EMAIL_VERIFICATION is off (the default)', async () => {
      const email = freshEmail();
      await signUp(t, email);
      assert.equal((await postJson(t, '/api/auth', { email, password: PASSWORD })).statusCode, 200);
    });
  });

  describe(`sign-in with REQUIRE_EMAIL_VERIFICATION=true on ${backend.name}`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let t: TestApp;
    let count = 0;
    const freshEmail = () => `pending${++count}@example.com`;

    before(async () => {
      database = await backend.create();
      t = await createTestApp(database, {
        env: { REQUIRE_EMAIL_VERIFICATION: 'true', ADMIN_EMAIL: 'root@example.com', ADMIN_PASSWORD: PASSWORD },
      });
    });
    after(async () => {
      await t?.close();
      await database?.drop();
    });

    it('answers EMAIL_NOT_VERIFIED only after the right password, on both endpoints, until the address is verified', async () => {
      const email = freshEmail();
      const userId = await signUp(t, email);
      const sessionsBefore = (await t.services.sessions.listSessions(userId)).length;

      const unknown = await postJson(t, '/api/auth', { email: 'nobody@example.com', password: WRONG_PASSWORD });
      for (const url of ['/api/auth', '/api/auth/signin']) {
        const wrong = await postJson(t, url, { email, password: WRONG_PASSWORD });
        assert.equal(wrong.statusCode, 401, url);
        assert.equal(wrong.body, unknown.body, 'a wrong password says nothing about verification');

        const right = await postJson(t, url, { email, password: PASSWORD });
        assert.equal(right.statusCode, 403, url);
        assert.deepEqual(right.json(), { error: 'EMAIL_NOT_VERIFIED', message: 'Verify your e-mail address before signing in.' });
        assert.deepEqual(right.cookies.filter((c) => c.name.includes('session') || c.name.includes('refresh')), [], 'no session cookie');
      }
      assert.equal((await t.services.sessions.listSessions(userId)).length, sessionsBefore, 'no session started');
      const { events } = await t.services.audit.listEvents({ userId, type: 'signin.failure', limit: 10 });
      assert.deepEqual(events.map((e) => e.reason).sort(), ['EMAIL_NOT_VERIFIED', 'EMAIL_NOT_VERIFIED', 'INVALID_CREDENTIALS', 'INVALID_CREDENTIALS']);

      assert.equal((await verify(t, await latestToken(t, email))).statusCode, 200);
      assert.equal((await postJson(t, '/api/auth', { email, password: PASSWORD })).statusCode, 200);
      assert.equal((await postJson(t, '/api/auth/signin', { email, password: PASSWORD })).statusCode, 200);
    });

    it('sends the sign-in form back with ?error=EMAIL_NOT_VERIFIED and a way to get a new link', async () => {
      const email = freshEmail();
      await signUp(t, email);
      const jar = new CookieJar();
      const page = await t.app.inject({ method: 'GET', url: '/auth/signin' });
      jar.store(page);
      const origin = new URL(t.config.authUrl).origin;
      const response = await t.app.inject({
        method: 'POST',
        url: '/api/auth/signin',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin, cookie: jar.header() },
        payload: new URLSearchParams({ email, password: PASSWORD, csrfToken: hiddenValue(page.body, 'csrfToken'), callbackUrl: '/dashboard' }).toString(),
      });
      assert.equal(response.statusCode, 303);
      assert.equal(response.headers.location, '/auth/signin?error=EMAIL_NOT_VERIFIED&callbackUrl=%2Fdashboard');
      const shown = await t.app.inject({ method: 'GET', url: String(response.headers.location) });
      assert.match(shown.body, /<code>EMAIL_NOT_VERIFIED<\/code>/);
      assert.match(shown.body, /href="\/auth\/verify-email"/);
    });

    it('counts users made by the CLI, the admin API and the bootstrap admin as verified', async (test) => {
      assert.equal(await bootstrapAdmin({ config: t.config, users: t.services.users, credentials: t.services.credentials, audit: t.services.audit }), 'created');
      const admin = await postJson(t, '/api/auth', { email: 'root@example.com', password: PASSWORD });
      assert.equal(admin.statusCode, 200, 'the bootstrap admin');

      const cliUser = freshEmail();
      const cli = await runCli(['users', 'create', '--email', cliUser, '--name', 'Made By CLI', '--password-stdin'], {
        env: { NODE_ENV: 'test', AUTH_SECRET: TEST_SECRET, DATA_DIR: t.config.dataDir, DATABASE_URL: database.url },
        stdin: PASSWORD,
        timeoutMs: 30_000,
        cleanup: (fn) => test.after(fn),
      });
      assert.equal(cli.code, 0, cli.stderr);
      assert.equal((await postJson(t, '/api/auth', { email: cliUser, password: PASSWORD })).statusCode, 200, 'a user made by `gatehouse users create`');

      const adminMade = freshEmail();
      const created = await postJson(t, '/api/admin/users', { email: adminMade, name: 'Made By Admin', password: PASSWORD }, { authorization: `Bearer ${admin.json().token}` });
      assert.equal(created.statusCode, 201, created.body);
      assert.equal((await postJson(t, '/api/auth', { email: adminMade, password: PASSWORD })).statusCode, 200, 'a user made by an admin');
    });
  });
}
