/**
 * Multi-factor sign-in through the API, on SQLite and PostgreSQL, with both session strategies:
 * enrolment, the second-factor challenge and its answer, recovery codes, removal, and the hostile
 * cases (a replayed code, guessing, a spent, exhausted, expired or stale mfaToken, enrolment
 * without a recent sign-in, CSRF). TOTP codes are computed by the test from the secret.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJwt } from 'jose';
import { backends } from '../../test/helpers/databases.ts';
import { createUser, TEST_SECRET, useTestApp } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { totpCode, TOTP_STEP_MS } from '../../test/helpers/totp.ts';
import { createMfaService } from './mfa.service.ts';
import { cookieNames } from '../sessions/session-cookie.ts';

const PASSWORD = 'correct horse battery staple';

for (const backend of await backends()) {
  for (const strategy of ['database', 'jwt'] as const) {
    describe(`multi-factor sign-in, ${strategy} strategy, on ${backend.name}`, { skip: backend.skip }, () => {
      const clock = fakeClock();
      const t = useTestApp(backend, { clock, env: { SESSION_STRATEGY: strategy, SIGNIN_DELAY_AFTER_FAILURES: '8' } });
      let count = 0;

      const post = (url: string, payload: object, token?: string) =>
        t.app.inject({ method: 'POST', url, payload, headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });

      async function signIn(email: string, password = PASSWORD) {
        return t.app.inject({ method: 'POST', url: '/api/auth', payload: { email, password } });
      }

      /** A user with an authenticator app enrolled: their secret, recovery codes and a fresh token. */
      async function enrolledUser() {
        const email = `mfa${++count}@example.com`;
        const user = await createUser(t.services, { email, password: PASSWORD });
        const token = (await signIn(email)).json().token as string;
        // A session from before the factor: enrolling proves the factor in its own session only.
        const olderToken = (await signIn(email)).json().token as string;
        const setup = await post('/api/auth/mfa/totp/setup', {}, token);
        assert.equal(setup.statusCode, 200, setup.body);
        const { secret } = setup.json();
        const enabled = await post('/api/auth/mfa/totp/enable', { code: totpCode(secret, clock()) }, token);
        assert.equal(enabled.statusCode, 200, enabled.body);
        // The enabling code's step is spent: the next code comes from the next step.
        clock.advance(TOTP_STEP_MS);
        return { user, email, secret, token, olderToken, recoveryCodes: enabled.json().recoveryCodes as string[] };
      }

      async function challenge(email: string) {
        const response = await signIn(email);
        assert.equal(response.statusCode, 403, response.body);
        assert.equal(response.json().error, 'MFA_REQUIRED');
        return response.json().mfaToken as string;
      }

      it('enrols an authenticator app: a pending secret, then a code from it turns it on and gives ten recovery codes once', async () => {
        const email = `mfa${++count}@example.com`;
        await createUser(t.services, { email, password: PASSWORD });
        const token = (await signIn(email)).json().token as string;
        assert.deepEqual((await t.app.inject({ method: 'GET', url: '/api/auth/mfa', headers: { authorization: `Bearer ${token}` } })).json(), { totp: false, passkeys: [], recoveryCodesLeft: 0 });

        const setup = await post('/api/auth/mfa/totp/setup', {}, token);
        assert.equal(setup.statusCode, 200);
        assert.equal(setup.headers['cache-control'], 'no-store');
        const { secret, otpauthUrl, qrSvg } = setup.json();
        assert.match(secret, /^[A-Z2-7]{32}$/);
        const url = new URL(otpauthUrl);
        assert.equal(url.protocol, 'otpauth:');
        assert.equal(url.searchParams.get('secret'), secret);
        assert.match(qrSvg, /^<svg[^>]*viewBox/);
        assert.equal((await signIn(email)).statusCode, 200, 'a pending setup is not a factor yet');

        const wrong = await post('/api/auth/mfa/totp/enable', { code: totpCode(secret, clock(), 5) }, token);
        assert.equal(wrong.statusCode, 400);
        assert.equal(wrong.json().error, 'INVALID_CODE');
        const enabled = await post('/api/auth/mfa/totp/enable', { code: totpCode(secret, clock()) }, token);
        assert.equal(enabled.statusCode, 200, enabled.body);
        const codes = enabled.json().recoveryCodes as string[];
        assert.equal(codes.length, 10);
        assert.equal(new Set(codes).size, 10);
        for (const code of codes) assert.match(code, /^[0-9a-z]{5}-[0-9a-z]{5}$/);
        const stored = await t.services.storage.db.selectFrom('mfa_recovery_codes').select('code_hash').execute();
        assert.ok(!stored.some((row) => codes.some((code) => row.code_hash.includes(code.replace('-', '')))), 'only hashes are kept');
        const box = await t.services.storage.db.selectFrom('mfa_totp').select('secret_box').executeTakeFirstOrThrow();
        assert.ok(!box.secret_box!.includes(secret), 'the secret is sealed');

        assert.deepEqual((await t.app.inject({ method: 'GET', url: '/api/auth/mfa', headers: { authorization: `Bearer ${token}` } })).json(), { totp: true, passkeys: [], recoveryCodesLeft: 10 });
        assert.equal((await post('/api/auth/mfa/totp/setup', {}, token)).json().error, 'TOTP_ALREADY_ENABLED', 'enabling proved the factor in this session');
        const mails = await t.services.storage.db.selectFrom('mail_outbox').select(['to_address', 'template']).where('template', '=', 'security-notice').execute();
        assert.ok(mails.some((mail) => mail.to_address === email), 'the owner is told');
      });

      it('asks for the second factor after a right password only, then gives exactly the usual sign-in answer', async () => {
        const { user, email, secret } = await enrolledUser();
        const wrongPassword = await signIn(email, 'not the password at all');
        assert.equal(wrongPassword.statusCode, 401, 'a wrong password says nothing about factors');
        assert.equal(wrongPassword.json().error, 'INVALID_CREDENTIALS');

        const browser = await t.app.inject({ method: 'POST', url: '/api/auth/signin', payload: { email, password: PASSWORD } });
        assert.equal(browser.statusCode, 403);
        assert.equal(browser.cookies.length, 0, 'no session, no cookie');
        const body = browser.json();
        assert.deepEqual(Object.keys(body).sort(), ['error', 'message', 'methods', 'mfaToken']);
        assert.deepEqual(body.methods, ['totp', 'recovery_code']);

        const mfaToken = await challenge(email);
        const verified = await post('/api/auth/mfa/verify', { mfaToken, code: totpCode(secret, clock()) });
        assert.equal(verified.statusCode, 200, verified.body);
        assert.deepEqual(Object.keys(verified.json()).sort(), ['expiresAt', 'refreshToken', 'token', 'user']);
        assert.deepEqual(verified.json().user, { id: user.id, email, name: 'Test User' });
        assert.deepEqual(decodeJwt(verified.json().token).amr, ['pwd', 'otp', 'mfa']);
        const session = await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: { authorization: `Bearer ${verified.json().token}` } });
        assert.deepEqual(session.json().session.amr, ['pwd', 'otp', 'mfa']);
        assert.equal((await post('/api/auth/refresh', { refreshToken: verified.json().refreshToken })).statusCode, 200);

        const again = await post('/api/auth/mfa/verify', { mfaToken, code: totpCode(secret, clock() + TOTP_STEP_MS) });
        assert.equal(again.statusCode, 401, 'the token was spent');
        assert.equal(again.json().error, 'INVALID_TOKEN');
      });

      it('finishes a cookie-mode sign-in into the cookies POST /api/auth/signin sets, under its CSRF rules; a token-mode one into none', async () => {
        const { user, email, secret } = await enrolledUser();
        const names = cookieNames(t.config);
        const origin = new URL(t.config.authUrl).origin;
        const auditCount = async () => (await t.services.storage.db.selectFrom('audit_events').select('id').where('type', '=', 'signin.success').where('user_id', '=', user.id).execute()).length;

        // Token mode: the body, no cookie, as before.
        const tokensChallenge = await challenge(email);
        const tokens = await post('/api/auth/mfa/verify', { mfaToken: tokensChallenge, code: totpCode(secret, clock()) });
        assert.equal(tokens.statusCode, 200, tokens.body);
        assert.deepEqual(tokens.cookies, [], 'a challenge from POST /api/auth is finished into no cookie');
        clock.advance(TOTP_STEP_MS);

        // Cookie mode, in a browser that is signed in as someone else already (the case CSRF protects).
        const other = `other${++count}@example.com`;
        await createUser(t.services, { email: other, password: PASSWORD });
        const jar = new CookieJar().store(await t.app.inject({ method: 'POST', url: '/api/auth/signin', payload: { email: other, password: PASSWORD } }));
        const csrf = await t.app.inject({ method: 'GET', url: '/api/auth/csrf', headers: { cookie: jar.header() } });
        jar.store(csrf);
        const asked = await t.app.inject({ method: 'POST', url: '/api/auth/signin', payload: { email, password: PASSWORD }, headers: { cookie: jar.header(), origin, 'x-csrf-token': csrf.json().csrfToken } });
        assert.equal(asked.statusCode, 403, asked.body);
        assert.deepEqual(asked.cookies, [], 'no session, no cookie until the second factor');
        const { mfaToken } = asked.json();
        const code = totpCode(secret, clock());
        const verify = (headers: Record<string, string>) => t.app.inject({ method: 'POST', url: '/api/auth/mfa/verify', payload: { mfaToken, code }, headers: { cookie: jar.header(), ...headers } });
        // The same rules as the sign-in: another origin, or no token, is refused before the code is looked at.
        assert.equal((await verify({ origin: 'https://evil.example' })).json().error, 'CSRF_FAILED');
        assert.equal((await verify({ origin })).json().error, 'CSRF_FAILED');
        const before = await auditCount();
        const finished = await verify({ origin, 'x-csrf-token': csrf.json().csrfToken });
        assert.equal(finished.statusCode, 200, finished.body);
        assert.deepEqual(Object.keys(finished.json()).sort(), ['expiresAt', 'refreshToken', 'token', 'user']);
        assert.equal(finished.headers['cache-control'], 'no-store');
        const set = new Map(finished.cookies.map((cookie) => [cookie.name, cookie]));
        for (const name of [names.access, names.refresh, names.csrf]) assert.ok(set.has(name), `sets ${name} (the CSRF secret is replaced with the session)`);
        assert.equal(set.get(names.access)!.httpOnly, true);
        assert.equal(set.get(names.access)!.sameSite, 'Lax');
        jar.store(finished);
        const session = await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: { cookie: jar.header() } });
        assert.equal(session.statusCode, 200, session.body);
        assert.equal(session.json().user.id, user.id);
        assert.deepEqual(session.json().session.amr, ['pwd', 'otp', 'mfa']);
        assert.equal(await auditCount(), before + 1, 'one signin.success, as in token mode');
        const otherId = (await t.services.users.findUserByEmail(other))!.id;
        assert.deepEqual(await t.services.sessions.listSessions(otherId), [], "the browser's previous session was ended, as a sign-in there does");
      });

      it('accepts a TOTP code once: replayed with a new sign-in it is refused', async () => {
        const { email, secret } = await enrolledUser();
        const code = totpCode(secret, clock());
        assert.equal((await post('/api/auth/mfa/verify', { mfaToken: await challenge(email), code })).statusCode, 200);
        const replay = await post('/api/auth/mfa/verify', { mfaToken: await challenge(email), code });
        assert.equal(replay.statusCode, 401);
        assert.equal(replay.json().error, 'INVALID_CODE');
      });

      it('accepts each recovery code once, in any case and spacing', async () => {
        const { email, token, recoveryCodes } = await enrolledUser();
        const typed = ` ${recoveryCodes[0]!.toUpperCase().replace('-', ' ')} `;
        const first = await post('/api/auth/mfa/verify', { mfaToken: await challenge(email), recoveryCode: typed });
        assert.equal(first.statusCode, 200, first.body);
        const reused = await post('/api/auth/mfa/verify', { mfaToken: await challenge(email), recoveryCode: recoveryCodes[0] });
        assert.equal(reused.json().error, 'INVALID_CODE');
        const status = await t.app.inject({ method: 'GET', url: '/api/auth/mfa', headers: { authorization: `Bearer ${token}` } });
        assert.equal(status.json().recoveryCodesLeft, 9);
      });

      it('kills an mfaToken after 5 wrong codes, and after 5 minutes', async () => {
        const { email, secret } = await enrolledUser();
        const mfaToken = await challenge(email);
        for (let i = 0; i < 5; i++) {
          const wrong = await post('/api/auth/mfa/verify', { mfaToken, code: totpCode(secret, clock(), 10 + i) });
          assert.equal(wrong.json().error, 'INVALID_CODE', `wrong code ${i + 1}`);
        }
        const right = await post('/api/auth/mfa/verify', { mfaToken, code: totpCode(secret, clock()) });
        assert.equal(right.json().error, 'INVALID_TOKEN', 'out of tries, even with the right code');

        const slow = await challenge(email);
        clock.advance(5 * 60_000);
        const late = await post('/api/auth/mfa/verify', { mfaToken: slow, code: totpCode(secret, clock()) });
        assert.equal(late.json().error, 'INVALID_TOKEN');
        const events = await t.services.audit.listEvents({ type: 'signin.failure', limit: 50 });
        assert.ok(events.events.some((event) => event.reason === 'INVALID_CODE' && event.email === email), 'wrong codes are audited');
      });

      it('checks at most 5 codes per mfaToken, even when they arrive together', async () => {
        const { email, secret } = await enrolledUser();
        const mfaToken = await challenge(email);
        const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => post('/api/auth/mfa/verify', { mfaToken, code: totpCode(secret, clock(), 40 + i) })));
        const checked = answers.filter((answer) => answer.statusCode === 401 && answer.json().error === 'INVALID_CODE').length;
        assert.ok(checked <= 5, `${checked} codes were checked against one mfaToken`);
        assert.ok(answers.every((answer) => answer.statusCode < 500));
        clock.advance(60 * 60_000);
      });

      it('counts codes against the account throttle, across mfaTokens: 429 with Retry-After', async () => {
        const { email, secret } = await enrolledUser();
        // Wrong codes, each time with a fresh token (5 per token): retyping the right password in
        // between must not clear the account's failures.
        let wrongCodes = 0;
        let limited;
        for (let round = 0; round < 30 && limited === undefined; round++) {
          const signedIn = await signIn(email);
          if (signedIn.statusCode === 429) limited = signedIn;
          else {
            const response = await post('/api/auth/mfa/verify', { mfaToken: signedIn.json().mfaToken, code: totpCode(secret, clock(), 20 + round) });
            if (response.statusCode === 429) limited = response;
            else wrongCodes++;
          }
        }
        assert.ok(limited !== undefined, 'guessing is slowed down');
        assert.equal(limited.json().error, 'RATE_LIMITED');
        assert.ok(Number(limited.headers['retry-after']) >= 1);
        assert.ok(wrongCodes >= 8, `not before SIGNIN_DELAY_AFTER_FAILURES wrong codes (${wrongCodes})`);
        assert.ok(wrongCodes <= 10, `but soon after (${wrongCodes})`);
      });

      it('refuses the token of a sign-in whose password changed before it was finished', async () => {
        const { user, email, secret } = await enrolledUser();
        const mfaToken = await challenge(email);
        const hash = await t.services.hasher.hash('another correct horse battery staple');
        await t.services.users.setPasswordHash(user.id, hash);
        const verified = await post('/api/auth/mfa/verify', { mfaToken, code: totpCode(secret, clock()) });
        assert.equal(verified.statusCode, 401);
        assert.equal(verified.json().error, 'INVALID_TOKEN');
      });

      it('keeps the factors through a password reset: a mailbox alone must not defeat the second factor', async () => {
        const { user, email } = await enrolledUser();
        const { token } = await t.services.actionTokens.issue(t.services.storage.db, { userId: user.id, purpose: 'password_reset', ttlSeconds: 600 });
        const newPassword = 'a completely new horse battery staple';
        const reset = await t.app.inject({ method: 'POST', url: '/api/auth/reset-password', payload: { token, password: newPassword } });
        assert.equal(reset.statusCode, 200, reset.body);
        const signIn = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email, password: newPassword } });
        assert.equal(signIn.statusCode, 403);
        assert.equal(signIn.json().error, 'MFA_REQUIRED');
      });

      it('asks a user with a second factor to use it before changing the password (step-up), within REAUTH_WINDOW', async () => {
        const { secret, olderToken: token } = await enrolledUser();
        const change = (newPassword: string, with_: string) => post('/api/auth/change-password', { currentPassword: PASSWORD, newPassword }, with_);
        const refused = await change('yet another horse battery staple', token);
        assert.equal(refused.statusCode, 403, 'this session never used the second factor');
        assert.equal(refused.json().error, 'REAUTH_REQUIRED');
        const stepped = await post('/api/auth/mfa/step-up', { code: totpCode(secret, clock()) }, token);
        assert.equal(stepped.statusCode, 200, stepped.body);
        assert.deepEqual(decodeJwt(stepped.json().token).amr, ['pwd', 'otp', 'mfa']);
        assert.equal((await change('yet another horse battery staple', stepped.json().token)).statusCode, 200);
      });

      it('treats a secret sealed under another AUTH_SECRET as one no code matches, never a 500', async () => {
        const { user, secret } = await enrolledUser();
        const { storage, users, audit, mail, signInThrottle } = t.services;
        const codeAttempts = t.services.rateLimiters.create('mfa-codes-rotated-test', { points: 20, durationSeconds: 60 });
        const rotated = createMfaService({ db: storage.db, clock, users, audit, mail, throttle: signInThrottle, codeAttempts, config: t.config.mfa, authSecret: 'another-secret-that-is-long-enough-0123456789' });
        assert.deepEqual(await rotated.checkCode(user, totpCode(secret, clock()), null), { ok: false, reason: 'INVALID_CODE' });
        assert.deepEqual(await rotated.disableTotp(user, totpCode(secret, clock()), { actorUserId: user.id, ip: null, userAgent: null }), { ok: false, reason: 'MFA_NOT_ENABLED' });
      });

      it('limits codes per account since the last right one, and a password reset does not clear that', async () => {
        const { user, secret } = await enrolledUser();
        const { storage, users, audit, mail, signInThrottle } = t.services;
        const codeAttempts = t.services.rateLimiters.create(`mfa-codes-limit-test-${user.id}`, { points: 3, durationSeconds: 3_600 });
        const mfa = createMfaService({ db: storage.db, clock, users, audit, mail, throttle: signInThrottle, codeAttempts, config: t.config.mfa, authSecret: TEST_SECRET });
        for (let i = 0; i < 3; i++) assert.deepEqual(await mfa.checkCode(user, '000000', null), { ok: false, reason: 'INVALID_CODE' });
        const limited = await mfa.checkCode(user, totpCode(secret, clock()), null);
        assert.equal(limited.ok, false);
        assert.equal(!limited.ok && limited.reason, 'RATE_LIMITED', 'even the right code waits');
        await signInThrottle.clearAccount(user.email); // what a password reset does
        const afterReset = await mfa.checkCode(user, totpCode(secret, clock()), null);
        assert.equal(!afterReset.ok && afterReset.reason, 'RATE_LIMITED', 'a password reset gives no new guesses');
      });

      it('refuses malformed answers with 4xx, never 500', async () => {
        for (const payload of [{}, { mfaToken: 'x' }, { mfaToken: 'x', code: '123456', recoveryCode: 'aaaaa-bbbbb' }, { mfaToken: 'x'.repeat(500), code: '1' }, { mfaToken: 7, code: [] }]) {
          const response = await post('/api/auth/mfa/verify', payload);
          assert.ok(response.statusCode >= 400 && response.statusCode < 500, `${JSON.stringify(payload)}: ${response.statusCode}`);
        }
        const unknown = await post('/api/auth/mfa/verify', { mfaToken: 'not-a-token', code: '123456' });
        assert.equal(unknown.json().error, 'INVALID_TOKEN');
      });

      it('needs a sign-in within REAUTH_WINDOW to enrol or remove a factor', async () => {
        const { secret, token, recoveryCodes } = await enrolledUser();
        clock.advance(11 * 60_000);
        for (const [url, payload] of [
          ['/api/auth/mfa/totp/setup', {}],
          ['/api/auth/mfa/totp/disable', { code: totpCode(secret, clock()) }],
          ['/api/auth/mfa/recovery-codes', { code: recoveryCodes[1] }],
        ] as const) {
          const response = await post(url, payload, token);
          assert.equal(response.statusCode, 403, url);
          assert.equal(response.json().error, 'REAUTH_REQUIRED', url);
        }
        assert.equal((await t.app.inject({ method: 'GET', url: '/api/auth/mfa', headers: { authorization: `Bearer ${token}` } })).statusCode, 200, 'reading is fine');
      });

      it('renews recovery codes (the old set dies) and removes the app with a code; then sign-in needs the password only', async () => {
        const { email, secret, token, recoveryCodes } = await enrolledUser();
        const renewed = await post('/api/auth/mfa/recovery-codes', { code: totpCode(secret, clock()) }, token);
        assert.equal(renewed.statusCode, 200, renewed.body);
        const fresh = renewed.json().recoveryCodes as string[];
        assert.equal(fresh.length, 10);
        const old = await post('/api/auth/mfa/verify', { mfaToken: await challenge(email), recoveryCode: recoveryCodes[2] });
        assert.equal(old.json().error, 'INVALID_CODE', 'the old set died');

        const wrong = await post('/api/auth/mfa/totp/disable', { code: '000000' }, token);
        assert.equal(wrong.statusCode, 400);
        const removed = await post('/api/auth/mfa/totp/disable', { code: fresh[0] }, token);
        assert.equal(removed.statusCode, 200, removed.body);
        assert.equal((await signIn(email)).statusCode, 200);
        assert.deepEqual((await t.app.inject({ method: 'GET', url: '/api/auth/mfa', headers: { authorization: `Bearer ${token}` } })).json(), { totp: false, passkeys: [], recoveryCodesLeft: 0 });
        assert.equal((await post('/api/auth/mfa/totp/disable', { code: '123456' }, token)).json().error, 'MFA_NOT_ENABLED');
      });

      it('refuses a cookie-authenticated enrolment without the CSRF token', async () => {
        const email = `mfa${++count}@example.com`;
        await createUser(t.services, { email, password: PASSWORD });
        const jar = new CookieJar().store(await t.app.inject({ method: 'POST', url: '/api/auth/signin', payload: { email, password: PASSWORD } }));
        const origin = new URL(t.config.authUrl).origin;
        for (const url of ['/api/auth/mfa/totp/setup', '/api/auth/mfa/totp/enable', '/api/auth/mfa/totp/disable', '/api/auth/mfa/recovery-codes']) {
          const response = await t.app.inject({ method: 'POST', url, payload: { code: '123456' }, headers: { cookie: jar.header(), origin } });
          assert.equal(response.statusCode, 403, url);
          assert.equal(response.json().error, 'CSRF_FAILED', url);
        }
      });

      it('requires authentication', async () => {
        for (const [method, url] of [['GET', '/api/auth/mfa'], ['POST', '/api/auth/mfa/totp/setup'], ['POST', '/api/auth/mfa/totp/enable']] as const) {
          const response = await t.app.inject({ method, url, payload: method === 'POST' ? { code: '123456' } : undefined });
          assert.equal(response.statusCode, 401, url);
        }
      });
    });
  }
}
