/**
 * Finding: "A stranger's words in genuine mails". Anyone may sign up with an address they do not
 * own and a "name" carrying a phishing text, a URL or bidi overrides; the real owner's
 * password-reset mail and "you already have an account" mail then greeted them with it. Now a mail
 * greets by name only a confirmed name (`users.name_confirmed_at`: given by an administrator, the
 * CLI or a provider that verified the address, or accepted by the owner when they followed the
 * verification link; a password reset proves the address but not the name), otherwise "Hello,".
 * And every way of setting a name refuses control characters, format characters (bidi overrides,
 * zero-width characters) and U+2028/U+2029, with the one rule of users/name.ts.
 *
 * Mail is delivered by the running outbox worker to a real SMTP server on loopback; both backends.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, TEST_SECRET, type TestApp } from '../../test/helpers/app.ts';
import { startSmtpServer, type ReceivedMail, type TestSmtpServer, smtpEnv } from '../../test/helpers/smtp.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { hiddenValue } from '../../test/helpers/pages.ts';
import { runCli } from '../../test/helpers/process.ts';
import { peerEnv, startOidcPeer, type OidcPeer } from '../../test/helpers/oauth-peers.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';
import { bootstrapAdmin } from '../credentials/bootstrap-admin.ts';
import { toValidName } from './name.ts';

const AUTH_URL = 'https://auth.example.test';
const PASSWORD = 'correct horse battery staple';
const NEW_PASSWORD = 'another horse battery staple';
const MAIL_WAIT_MS = 10_000;
const FORM = 'application/x-www-form-urlencoded';

/** What a stranger types as the "name" when signing up with someone else's address. */
const STRANGER_NAME = 'URGENT your account is suspended call +1 555 0100 or visit https://evil.example/unlock';
/** Words of it that must appear in no mail to the owner. */
const STRANGER_WORDS = ['URGENT', 'suspended', '555 0100', 'evil.example'];

/** Forbidden in names, each inside an otherwise ordinary name (trimming cannot remove it). */
const FORBIDDEN: Array<[string, string]> = [
  ['U+202E RIGHT-TO-LEFT OVERRIDE', 'Ada \u202Eelpmaxe.live\u202C Lovelace'],
  ['U+200B ZERO WIDTH SPACE', 'Ada\u200BLovelace'],
  ['U+2028 LINE SEPARATOR', 'Ada\u2028Visit https://evil.example'],
  ['a control character (BEL)', 'Ada\u0007Lovelace'],
];

function assertNoStrangerWords(mail: ReceivedMail, label: string): void {
  for (const word of STRANGER_WORDS) {
    assert.ok(!mail.text.includes(word), `${label}: the text part holds "${word}":\n${mail.text}`);
    assert.ok(!mail.html.includes(word), `${label}: the HTML part holds "${word}"`);
  }
  assert.ok(mail.text.startsWith('Hello,\n'), `${label}: a neutral greeting:\n${mail.text}`);
  assert.ok(mail.html.includes('>Hello,</p>'), `${label}: a neutral greeting in the HTML part`);
}

function assertGreets(mail: ReceivedMail, name: string, label: string): void {
  assert.ok(mail.text.startsWith(`Hello ${name},\n`), `${label}: greets by name:\n${mail.text}`);
  assert.ok(mail.html.includes(`>Hello ${name},</p>`), `${label}: greets by name in the HTML part`);
}

for (const backend of await backends()) {
  describe(`a stranger's words in genuine mails (${backend.name})`, { skip: backend.skip, timeout: 180_000 }, () => {
    let database: TestDatabase;
    let smtp: TestSmtpServer;
    let google: OidcPeer;
    let t: TestApp;
    let count = 0;
    const freshEmail = (label: string) => `${label}${++count}@example.com`;

    before(async () => {
      database = await backend.create();
      smtp = await startSmtpServer();
      google = await startOidcPeer({ clientId: 'google-client' });
      t = await createTestApp(database, {
        env: {
          ...peerEnv({ google }),
          AUTH_URL,
          ...smtpEnv(smtp),
        },
      });
    });
    after(async () => {
      await t?.close();
      await smtp?.stop();
      await google?.close();
      await database?.drop();
    });

    const postJson = (url: string, body: unknown, headers: Record<string, string> = {}) =>
      t.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', ...headers }, payload: JSON.stringify(body) });

    /** The first mail to `to` with `subject` not seen before (each mail is taken once). */
    const taken = new Set<ReceivedMail>();
    async function nextMail(to: string, subject: string): Promise<ReceivedMail> {
      const deadline = Date.now() + MAIL_WAIT_MS;
      for (;;) {
        const mail = smtp.messages.find((m) => !taken.has(m) && m.rcptTo.includes(to) && m.subject === subject);
        if (mail !== undefined) {
          taken.add(mail);
          return mail;
        }
        if (Date.now() > deadline) assert.fail(`no mail "${subject}" to ${to}`);
        await smtp.waitForMessages(smtp.messages.length + 1, 500).catch(() => {});
      }
    }
    const RESET = 'Reset your Gatehouse password';
    const CHANGED = 'Your Gatehouse password was changed';
    const EXISTING = 'You already have a Gatehouse account';
    const VERIFY = 'Confirm your e-mail address for Gatehouse';

    const signUp = async (email: string, name: string) => {
      const response = await postJson('/api/auth/signup', { email, password: PASSWORD, name });
      assert.equal(response.statusCode, 202, response.body);
    };
    const forgot = async (email: string) => assert.equal((await postJson('/api/auth/forgot-password', { email })).statusCode, 202);
    const tokenOf = (mail: ReceivedMail, path: string) => {
      const link = mail.text.match(new RegExp(`https?://\\S+${path}\\?token=[\\w-]+`))?.[0];
      assert.ok(link, mail.text);
      return new URL(link).searchParams.get('token')!;
    };

    it('the unverified owner’s password-reset mail does not greet them with the name a stranger signed up with', async () => {
      const owner = freshEmail('owner');
      await signUp(owner, STRANGER_NAME);
      await forgot(owner);
      assertNoStrangerWords(await nextMail(owner, RESET), 'reset mail');
    });

    it('nor does the “you already have an account” mail sent to the unverified owner', async () => {
      const owner = freshEmail('owner');
      await signUp(owner, STRANGER_NAME);
      // Anyone (the stranger again, or the owner) tries to sign up with the address once more.
      await signUp(owner, 'Another Name');
      const mail = await nextMail(owner, EXISTING);
      assertNoStrangerWords(mail, 'existing-account mail');
      assert.ok(!mail.text.includes('Another Name'), 'nor the name in the new request');
    });

    it('nor do the mails after the owner resets the password with the link: a reset proves the address, not the name', async () => {
      const owner = freshEmail('owner');
      await signUp(owner, STRANGER_NAME);
      await forgot(owner);
      const reset = await postJson('/api/auth/reset-password', { token: tokenOf(await nextMail(owner, RESET), '/auth/reset-password'), password: NEW_PASSWORD });
      assert.equal(reset.statusCode, 200, reset.body);
      assert.notEqual((await t.services.users.findUserByEmail(owner))!.emailVerifiedAt, null, 'the reset verified the address');
      assertNoStrangerWords(await nextMail(owner, CHANGED), 'password-changed notice');
      await forgot(owner);
      assertNoStrangerWords(await nextMail(owner, RESET), 'the next reset mail');
      await signUp(owner, 'Another Name');
      assertNoStrangerWords(await nextMail(owner, EXISTING), 'the next existing-account mail');
    });

    it('a verified user’s name still greets them: reset, password-changed and existing-account mails', async () => {
      const email = freshEmail('ada');
      await createUser(t.services, { email, password: PASSWORD, name: 'Ada Lovelace' });
      await forgot(email);
      const resetMail = await nextMail(email, RESET);
      assertGreets(resetMail, 'Ada Lovelace', 'reset mail');
      assert.equal((await postJson('/api/auth/reset-password', { token: tokenOf(resetMail, '/auth/reset-password'), password: NEW_PASSWORD })).statusCode, 200);
      assertGreets(await nextMail(email, CHANGED), 'Ada Lovelace', 'password-changed notice');
      await signUp(email, STRANGER_NAME);
      const existing = await nextMail(email, EXISTING);
      assertGreets(existing, 'Ada Lovelace', 'existing-account mail');
      assert.ok(!existing.text.includes('evil.example'));
    });

    it('a user who signed up and followed the verification link is greeted by the name they chose', async () => {
      const email = freshEmail('sam');
      await signUp(email, 'Sam Signup');
      const verifyMail = await nextMail(email, VERIFY);
      assert.ok(verifyMail.text.startsWith('Hello,\n'), 'the verification mail itself never carries the name');
      assert.equal((await postJson('/api/auth/verify-email', { token: tokenOf(verifyMail, '/auth/verify-email') })).statusCode, 200);
      await forgot(email);
      assertGreets(await nextMail(email, RESET), 'Sam Signup', 'reset mail after verification');
    });

    it('a name an administrator sets is confirmed, even on an unverified account', async () => {
      const email = freshEmail('renamed');
      await signUp(email, STRANGER_NAME);
      const user = (await t.services.users.findUserByEmail(email))!;
      const renamed = await t.services.admin.updateUser(user.id, { name: 'Grace Hopper' }, SYSTEM_SOURCE);
      assert.ok(renamed.ok);
      await forgot(email);
      assertGreets(await nextMail(email, RESET), 'Grace Hopper', 'reset mail after an admin rename');
    });

    it('a stored name the rule refuses (written before it) is never put in a mail, confirmed or not', async () => {
      const email = freshEmail('legacy');
      const user = await createUser(t.services, { email, password: PASSWORD, name: 'Ada Lovelace' });
      await t.services.storage.db.updateTable('users').set({ name: 'Ada \u202Eelpmaxe.live\u202C' }).where('id', '=', user.id).execute();
      await forgot(email);
      const mail = await nextMail(email, RESET);
      assert.ok(mail.text.startsWith('Hello,\n'), mail.text);
      assert.ok(!mail.text.includes('\u202E') && !mail.html.includes('\u202E'));
    });

    describe('every way of setting a name refuses U+202E, U+200B, U+2028 and control characters', () => {
      let adminToken: string;
      before(async () => {
        const email = freshEmail('admin');
        await createUser(t.services, { email, password: PASSWORD, roles: ['ADMIN'] });
        adminToken = (await postJson('/api/auth', { email, password: PASSWORD })).json().token;
      });
      const admin = (method: 'POST' | 'PATCH', url: string, payload: object) =>
        t.app.inject({ method, url, headers: { authorization: `Bearer ${adminToken}` }, payload });
      const assertRefusesName = (response: { statusCode: number; body: string; json(): { error: string; errors: Array<{ field: string; message: string }> } }, label: string) => {
        assert.equal(response.statusCode, 422, `${label}: ${response.body}`);
        assert.equal(response.json().error, 'VALIDATION_ERROR', label);
        assert.deepEqual(response.json().errors.map((e) => e.field), ['name'], label);
      };

      for (const [what, name] of FORBIDDEN) {
        it(`the sign-up API: ${what} -> 422 VALIDATION_ERROR on name, nobody created`, async () => {
          const email = freshEmail('api');
          assertRefusesName(await postJson('/api/auth/signup', { email, password: PASSWORD, name }), what);
          assert.equal(await t.services.users.findUserByEmail(email), null);
        });

        it(`the sign-up form: ${what} -> back to the form with VALIDATION_ERROR, nobody created`, async () => {
          const email = freshEmail('form');
          const jar = new CookieJar();
          const page = await t.app.inject({ method: 'GET', url: '/auth/signup' });
          jar.store(page);
          const submit = (fields: { name: string }) =>
            t.app.inject({
              method: 'POST',
              url: '/api/auth/signup',
              headers: { 'content-type': FORM, origin: AUTH_URL, cookie: jar.header() },
              payload: new URLSearchParams({ ...fields, email, password: PASSWORD, csrfToken: hiddenValue(page.body, 'csrfToken') }).toString(),
            });
          const response = await submit({ name });
          assert.equal(response.statusCode, 303, response.body);
          assert.equal(response.headers.location, '/auth/signup?error=VALIDATION_ERROR');
          assert.equal(await t.services.users.findUserByEmail(email), null);
          // The same form with a plain name goes through: the name was what it refused.
          const plain = await submit({ name: 'Ada Lovelace' });
          assert.equal(plain.headers.location, '/auth/check-email', plain.body);
        });

        it(`the admin API, creating and renaming: ${what} -> 422 VALIDATION_ERROR on name`, async () => {
          const email = freshEmail('admincreated');
          assertRefusesName(await admin('POST', '/api/admin/users', { email, name, password: PASSWORD }), `create: ${what}`);
          assert.equal(await t.services.users.findUserByEmail(email), null);
          const target = await createUser(t.services, { email, password: PASSWORD, name: 'Plain Name' });
          assertRefusesName(await admin('PATCH', `/api/admin/users/${target.id}`, { name }), `rename: ${what}`);
          assert.equal((await t.services.users.findUserById(target.id))!.name, 'Plain Name');
          assert.equal((await admin('PATCH', `/api/admin/users/${target.id}`, { name: 'Other Name' })).statusCode, 200, 'a plain name goes through');
        });

        it(`gatehouse users create: ${what} -> exit code 1, a message about --name, nobody created`, async (test) => {
          const email = freshEmail('cli');
          const cli = await runCli(['users', 'create', '--email', email, '--name', name, '--password-stdin'], {
            env: { NODE_ENV: 'test', AUTH_SECRET: TEST_SECRET, DATA_DIR: t.config.dataDir, DATABASE_URL: database.url },
            stdin: PASSWORD,
            timeoutMs: 30_000,
            cleanup: (fn) => test.after(fn),
          });
          assert.equal(cli.code, 1, cli.stderr);
          assert.match(cli.stderr, /^gatehouse: --name must not contain control, invisible formatting/);
          assert.equal(await t.services.users.findUserByEmail(email), null);
        });

        it(`ADMIN_NAME: ${what} -> start-up stops with a message naming ADMIN_NAME, nobody created`, async () => {
          const email = freshEmail('bootstrap');
          await assert.rejects(
            bootstrapAdmin({ ...t.services, config: { ...t.config, admin: { email, password: PASSWORD, name } } }),
            /^Error: Cannot create the admin user: ADMIN_NAME must not contain control, invisible formatting/,
          );
          assert.equal(await t.services.users.findUserByEmail(email), null);
        });
      }

      it('a provider’s name cannot be refused: signing up with Google, the forbidden characters are dropped from it', async () => {
        const email = freshEmail('google');
        google.signInAs({ sub: `sub-${email}`, email, email_verified: true, name: 'Ada \u202Eelpmaxe.live\u202C\u200B Lovelace\u2028' });
        const jar = new CookieJar();
        const csrf = await t.app.inject({ method: 'GET', url: '/api/auth/csrf' });
        jar.store(csrf);
        const start = await t.app.inject({
          method: 'POST',
          url: '/api/auth/signin/google',
          headers: { origin: AUTH_URL, cookie: jar.header(), 'content-type': FORM },
          payload: new URLSearchParams({ csrfToken: csrf.json().csrfToken }).toString(),
        });
        assert.equal(start.statusCode, 303, start.body);
        jar.store(start);
        // The provider's authorize endpoint (auto-approving) sends the browser back to our callback.
        const authorized = await fetch(String(start.headers.location), { redirect: 'manual' });
        const back = new URL(String(authorized.headers.get('location')));
        const done = await t.app.inject({ method: 'GET', url: `${back.pathname}${back.search}`, headers: { cookie: jar.header() } });
        assert.equal(done.statusCode, 303, done.body);
        assert.ok(!String(done.headers.location).startsWith('/auth/error'), String(done.headers.location));
        assert.equal((await t.services.users.findUserByEmail(email))?.name, 'Ada elpmaxe.live Lovelace');
      });

      it('toValidName: what a provider gives is cleaned, not refused', () => {
        for (const [what, name] of FORBIDDEN) {
          const cleaned = toValidName(name);
          assert.ok(cleaned !== null && !/[\p{Cc}\p{Cf}\u2028\u2029]/u.test(cleaned), `${what}: ${JSON.stringify(cleaned)}`);
        }
        assert.equal(toValidName('\u202E\u200B'), null);
        assert.equal(toValidName('  Ada\u200B Lovelace '), 'Ada Lovelace');
      });
    });
  });
}
