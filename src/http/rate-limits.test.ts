/**
 * Rate limits and the per-account sign-in throttle, on SQLite and PostgreSQL (counters in storage),
 * with the limits turned down so a test can reach them. Every refusal is 429 RATE_LIMITED with
 * Retry-After, and the same for an address with an account and one without.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import type { Env } from '../config.ts';

const PASSWORD = 'correct horse battery staple';

let addressCounter = 0;
/** A loopback address of its own for each test, so their per-IP counters never meet. */
function nextIp(): string {
  addressCounter += 1;
  return `127.0.${Math.floor(addressCounter / 250)}.${(addressCounter % 250) + 1}`;
}

for (const backend of await backends()) {
  describe(`rate limits on ${backend.name}`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    const apps: TestApp[] = [];
    const clock = fakeClock();
    let userCounter = 0;

    before(async () => {
      database = await backend.create();
    });
    after(async () => {
      for (const app of apps) await app.close();
      await database?.drop();
    });

    async function appWith(env: Env): Promise<TestApp> {
      const app = await createTestApp(database, { clock, env });
      apps.push(app);
      return app;
    }

    async function newUser(t: TestApp) {
      userCounter += 1;
      const email = `limited${userCounter}@example.com`;
      return { ...(await createUser(t.services, { email, password: PASSWORD })), email };
    }

    function signIn(t: TestApp, email: string, password: string, ip: string) {
      return t.app.inject({ method: 'POST', url: '/api/auth', payload: { email, password }, remoteAddress: ip });
    }

    function assertLimited(response: { statusCode: number; headers: Record<string, unknown>; json(): { error: string; message: string } }, label: string) {
      assert.equal(response.statusCode, 429, label);
      assert.equal(response.json().error, 'RATE_LIMITED', label);
      assert.match(String(response.headers['retry-after']), /^[1-9]\d*$/, `${label}: Retry-After`);
    }

    it('caps all sign-in attempts per IP, right passwords included; other addresses go on', async () => {
      const t = await appWith({ RATE_LIMIT_SIGNIN_PER_IP: '5/1m' });
      const user = await newUser(t);
      const ip = nextIp();
      for (let i = 0; i < 5; i += 1) assert.equal((await signIn(t, user.email, PASSWORD, ip)).statusCode, 200, `attempt ${i + 1}`);
      assertLimited(await signIn(t, user.email, PASSWORD, ip), 'sixth attempt');
      assert.equal((await signIn(t, user.email, PASSWORD, nextIp())).statusCode, 200, 'another client');
      clock.advance(61_000);
      assert.equal((await signIn(t, user.email, PASSWORD, ip)).statusCode, 200, 'a new window');
    });

    it('counts only failed sign-ins against an IP, so an office of people signing in correctly is never slowed', async () => {
      const t = await appWith({ RATE_LIMIT_SIGNIN_FAILURES_PER_IP: '3/15m' });
      const ip = nextIp();
      const colleagues = await Promise.all([newUser(t), newUser(t), newUser(t), newUser(t)]);
      for (let round = 0; round < 5; round += 1) {
        for (const colleague of colleagues) assert.equal((await signIn(t, colleague.email, PASSWORD, ip)).statusCode, 200);
      }
      for (const colleague of colleagues.slice(0, 3)) assert.equal((await signIn(t, colleague.email, 'wrong password', ip)).statusCode, 401);
      assertLimited(await signIn(t, colleagues[3]!.email, PASSWORD, ip), 'after 3 failures from this IP');
      assert.equal((await signIn(t, colleagues[3]!.email, PASSWORD, nextIp())).statusCode, 200, 'other IPs are not affected');
    });

    it('delays an account after consecutive failures, doubling, the same for an unknown address; success resets it', async () => {
      const t = await appWith({ SIGNIN_DELAY_AFTER_FAILURES: '3', SIGNIN_MAX_DELAY: '4s' });
      const user = await newUser(t);
      const unknown = `nobody${userCounter}@example.com`;
      const answers: Record<string, string[]> = {};
      for (const email of [user.email, unknown]) {
        const seen: string[] = [];
        for (let i = 0; i < 3; i += 1) assert.equal((await signIn(t, email, 'wrong password', nextIp())).statusCode, 401);
        // From any address: the delay belongs to the account, not the client.
        let response = await signIn(t, email, PASSWORD, nextIp());
        assertLimited(response, 'right after the third failure');
        seen.push(`${response.statusCode} ${response.headers['retry-after']} ${response.body}`);
        clock.advance(1_000);
        assert.equal((await signIn(t, email, 'wrong password', nextIp())).statusCode, 401, 'the delay has passed');
        response = await signIn(t, email, 'wrong password', nextIp());
        seen.push(`${response.statusCode} ${response.headers['retry-after']} ${response.body}`);
        assert.equal(response.headers['retry-after'], '2', 'doubled');
        clock.advance(2_000);
        await signIn(t, email, 'wrong password', nextIp());
        response = await signIn(t, email, 'wrong password', nextIp());
        assert.equal(response.headers['retry-after'], '4', 'doubled again');
        clock.advance(4_000);
        await signIn(t, email, 'wrong password', nextIp());
        response = await signIn(t, email, 'wrong password', nextIp());
        assert.equal(response.headers['retry-after'], '4', 'capped at SIGNIN_MAX_DELAY');
        seen.push(`${response.statusCode} ${response.headers['retry-after']} ${response.body}`);
        clock.advance(4_000);
        answers[email] = seen;
      }
      assert.deepEqual(answers[user.email], answers[unknown], 'an unknown address is answered exactly like an account');

      // The right password, once the wait is over, clears the count.
      assert.equal((await signIn(t, user.email, PASSWORD, nextIp())).statusCode, 200);
      for (let i = 0; i < 2; i += 1) assert.equal((await signIn(t, user.email, 'wrong password', nextIp())).statusCode, 401);
      assert.equal((await signIn(t, user.email, PASSWORD, nextIp())).statusCode, 200, 'two failures after a success do not delay');
    });

    it('locks the password at the failure ceiling until a password reset, the same for an unknown address', async () => {
      const t = await appWith({ SIGNIN_LOCK_AFTER_FAILURES: '10' });
      const user = await newUser(t);
      const unknown = `ghost${userCounter}@example.com`;
      for (const email of [user.email, unknown]) {
        for (let i = 0; i < 10; i += 1) assert.equal((await signIn(t, email, 'wrong password', nextIp())).statusCode, 401, `failure ${i + 1}`);
        assertLimited(await signIn(t, email, PASSWORD, nextIp()), 'locked, even with the right password');
        clock.advance(30 * 86_400_000);
        assertLimited(await signIn(t, email, PASSWORD, nextIp()), 'still locked a month later');
      }
      const row = await t.services.storage.db.selectFrom('users').select('password_locked_at').where('id', '=', user.id).executeTakeFirstOrThrow();
      assert.ok(row.password_locked_at !== null, 'the lock is recorded on the account');
      const events = await t.services.audit.listEvents({ userId: user.id, type: 'user.password_locked', limit: 5 });
      assert.equal(events.events.length, 1);

      // A locked account can still reset its password, and then sign in.
      const forgot = await t.app.inject({ method: 'POST', url: '/api/auth/forgot-password', payload: { email: user.email }, remoteAddress: nextIp() });
      assert.equal(forgot.statusCode, 202);
      const { token } = await t.services.actionTokens.issue(t.services.storage.db, { userId: user.id, purpose: 'password_reset', ttlSeconds: 600 });
      const reset = await t.app.inject({ method: 'POST', url: '/api/auth/reset-password', payload: { token, password: 'a brand new passphrase here' }, remoteAddress: nextIp() });
      assert.equal(reset.statusCode, 200, reset.body);
      assert.equal((await signIn(t, user.email, 'a brand new passphrase here', nextIp())).statusCode, 200, 'unlocked by the reset');
    });

    it('counts attempts before hashing, so concurrent guesses cannot pass the lock or the per-IP failure limit together', async () => {
      const locked = await appWith({ SIGNIN_LOCK_AFTER_FAILURES: '10' });
      const user = await newUser(locked);
      const guesses = await Promise.all(Array.from({ length: 40 }, (_, i) => signIn(locked, user.email, `wrong ${i}`, nextIp())));
      const tally = (responses: Array<{ statusCode: number }>) => responses.reduce<Record<number, number>>((counts, r) => ({ ...counts, [r.statusCode]: (counts[r.statusCode] ?? 0) + 1 }), {});
      assert.deepEqual(tally(guesses), { 401: 10, 429: 30 }, 'exactly the ceiling was checked');
      assertLimited(await signIn(locked, user.email, PASSWORD, nextIp()), 'and then it is locked');

      const perIp = await appWith({ RATE_LIMIT_SIGNIN_FAILURES_PER_IP: '5/15m' });
      const ip = nextIp();
      const users = await Promise.all(Array.from({ length: 8 }, () => newUser(perIp)));
      const fromOneIp = await Promise.all(users.flatMap((u) => [signIn(perIp, u.email, 'wrong', ip), signIn(perIp, u.email, 'wrong again', ip)]));
      assert.deepEqual(tally(fromOneIp), { 401: 5, 429: 11 });

      const delayed = await appWith({ SIGNIN_DELAY_AFTER_FAILURES: '3' });
      const target = await newUser(delayed);
      for (let i = 0; i < 3; i += 1) await signIn(delayed, target.email, 'wrong', nextIp());
      clock.advance(1_000);
      const burst = await Promise.all(Array.from({ length: 10 }, () => signIn(delayed, target.email, 'wrong', nextIp())));
      assert.deepEqual(tally(burst), { 401: 1, 429: 9 }, 'once delays apply, one attempt per wait');
    });

    it('keys IPv6 clients by their /64 and IPv4-mapped addresses as IPv4', async () => {
      const t = await appWith({ RATE_LIMIT_SIGNIN_PER_IP: '3/1m' });
      const user = await newUser(t);
      for (const ip of ['2001:db8:1:2::1', '2001:db8:1:2:ffff::2', '2001:0db8:0001:0002:abcd:0:0:3']) {
        assert.equal((await signIn(t, user.email, PASSWORD, ip)).statusCode, 200, ip);
      }
      assertLimited(await signIn(t, user.email, PASSWORD, '2001:db8:1:2:dead:beef:0:4'), 'the same /64');
      assert.equal((await signIn(t, user.email, PASSWORD, '2001:db8:1:3::1')).statusCode, 200, 'another /64');
      const v4 = nextIp();
      for (let i = 0; i < 3; i += 1) await signIn(t, user.email, PASSWORD, v4);
      assertLimited(await signIn(t, user.email, PASSWORD, `::ffff:${v4}`), 'IPv4-mapped is the IPv4 address');
    });

    it('throttles a signed-in user guessing their current password, and refuses a locked one', async () => {
      // The token must outlive the two hours of guessing below (the default lifetime is 15 minutes).
      const t = await appWith({ SIGNIN_DELAY_AFTER_FAILURES: '3', SIGNIN_LOCK_AFTER_FAILURES: '10', ACCESS_TOKEN_TTL: '1d' });
      const user = await newUser(t);
      const token = (await signIn(t, user.email, PASSWORD, nextIp())).json().token;
      const change = (currentPassword: string) =>
        t.app.inject({ method: 'POST', url: '/api/auth/change-password', headers: { authorization: `Bearer ${token}` }, payload: { currentPassword, newPassword: 'another long passphrase now' }, remoteAddress: nextIp() });
      for (let i = 0; i < 3; i += 1) assert.equal((await change(`guess ${i}`)).statusCode, 401);
      assertLimited(await change(PASSWORD), 'the same delay as at sign-in');
      assertLimited(await signIn(t, user.email, PASSWORD, nextIp()), 'and it is the same account count');
      for (let i = 0; i < 7; i += 1) {
        clock.advance(15 * 60_000);
        assert.equal((await change(`guess ${i}`)).statusCode, 401);
      }
      clock.advance(15 * 60_000);
      assertLimited(await change(PASSWORD), 'locked after ten: even the right current password');
    });

    it('keys an account by its normalised address: case, spaces and compatibility forms share one count', async () => {
      const t = await appWith({ SIGNIN_DELAY_AFTER_FAILURES: '3' });
      const user = await newUser(t);
      const [local, domain] = user.email.split('@') as [string, string];
      const fullWidth = [...local].map((c) => (/[a-z0-9]/.test(c) ? String.fromCodePoint(c.codePointAt(0)! + 0xfee0) : c)).join('');
      for (const variant of [user.email.toUpperCase(), `  ${user.email}  `, `${fullWidth}@${domain}`]) {
        assert.equal((await signIn(t, variant, 'wrong password', nextIp())).statusCode, 401, variant);
      }
      assertLimited(await signIn(t, user.email, PASSWORD, nextIp()), 'three variants are three failures of one account');
      const other = await newUser(t);
      assert.equal((await signIn(t, other.email, PASSWORD, nextIp())).statusCode, 200, 'a different address is not touched');
      const nul = await signIn(t, `${user.email}\u0000`, 'x', nextIp());
      assert.equal(nul.statusCode, 400, 'a NUL never reaches a counter');
    });

    it('limits forgot-password per address (known or not) and per IP', async () => {
      const t = await appWith({ RATE_LIMIT_MAIL_PER_ADDRESS: '2/1h', RATE_LIMIT_MAIL_PER_IP: '5/1h' });
      const user = await newUser(t);
      const forgot = (email: string, ip: string) => t.app.inject({ method: 'POST', url: '/api/auth/forgot-password', payload: { email }, remoteAddress: ip });
      for (const email of [user.email, `unknown${userCounter}@example.com`]) {
        assert.equal((await forgot(email, nextIp())).statusCode, 202);
        assert.equal((await forgot(email.toUpperCase(), nextIp())).statusCode, 202);
        assertLimited(await forgot(email, nextIp()), `third for ${email}`);
      }
      const ip = nextIp();
      for (let i = 0; i < 5; i += 1) assert.equal((await forgot(`spray${i}-${userCounter}@example.com`, ip)).statusCode, 202);
      assertLimited(await forgot(`spray-last-${userCounter}@example.com`, ip), 'sixth from one IP');
    });

    it('limits sign-up, verification resend, token use, refresh and provider starts per IP', async () => {
      const t = await appWith({
        RATE_LIMIT_SIGNUP_PER_IP: '2/1h',
        RATE_LIMIT_MAIL_PER_IP: '2/1h',
        RATE_LIMIT_TOKEN_PER_IP: '2/15m',
        RATE_LIMIT_REFRESH_PER_IP: '2/1m',
        RATE_LIMIT_OAUTH_PER_IP: '2/1m',
      });
      const cases: Array<[string, () => { url: string; payload?: object }]> = [
        ['/api/auth/signup', () => ({ url: '/api/auth/signup', payload: { email: `new${++userCounter}@example.com`, password: 'a long and unusual passphrase', name: 'New' } })],
        ['/api/auth/verify-email/resend', () => ({ url: '/api/auth/verify-email/resend', payload: { email: `resend${++userCounter}@example.com` } })],
        ['/api/auth/verify-email', () => ({ url: '/api/auth/verify-email', payload: { token: 'x'.repeat(43) } })],
        ['/api/auth/reset-password/validate', () => ({ url: '/api/auth/reset-password/validate', payload: { token: 'x'.repeat(43) } })],
        ['/api/auth/refresh', () => ({ url: '/api/auth/refresh', payload: { refreshToken: 'a.1.b' } })],
        ['/api/auth/signin/github', () => ({ url: '/api/auth/signin/github' })],
      ];
      for (const [label, make] of cases) {
        const ip = nextIp();
        const send = () => t.app.inject({ method: 'POST', ...make(), remoteAddress: ip });
        const first = await send();
        const second = await send();
        assert.notEqual(first.statusCode, 429, label);
        assert.notEqual(second.statusCode, 429, label);
        assertLimited(await send(), `${label}, third`);
      }
    });

    it('reads the client IP from the socket unless TRUST_PROXY trusts the peer: spoofed headers change nothing', async () => {
      const spoofing = await appWith({ RATE_LIMIT_SIGNIN_PER_IP: '3/1m' });
      const user = await newUser(spoofing);
      const peer = nextIp();
      const spoofed = (i: number) => ({
        'x-forwarded-for': `198.51.100.${i}`,
        'x-real-ip': `198.51.100.${i}`,
        forwarded: `for=198.51.100.${i}`,
        'true-client-ip': `198.51.100.${i}`,
        'cf-connecting-ip': `198.51.100.${i}`,
      });
      for (let i = 0; i < 3; i += 1) {
        const response = await spoofing.app.inject({ method: 'POST', url: '/api/auth', payload: { email: user.email, password: PASSWORD }, remoteAddress: peer, headers: spoofed(i) });
        assert.equal(response.statusCode, 200);
      }
      const fourth = await spoofing.app.inject({ method: 'POST', url: '/api/auth', payload: { email: user.email, password: PASSWORD }, remoteAddress: peer, headers: spoofed(9) });
      assertLimited(fourth, 'one socket address, whatever the headers say');

      // Behind a trusted proxy, X-Forwarded-For names the client (and only it).
      const proxied = await appWith({ RATE_LIMIT_SIGNIN_PER_IP: '3/1m', TRUST_PROXY: '10.0.0.0/8' });
      const proxy = '10.1.2.3';
      for (let i = 0; i < 5; i += 1) {
        const response = await proxied.app.inject({ method: 'POST', url: '/api/auth', payload: { email: user.email, password: PASSWORD }, remoteAddress: proxy, headers: { 'x-forwarded-for': `203.0.113.${i}` } });
        assert.equal(response.statusCode, 200, `client ${i} behind the proxy has its own count`);
      }
      // A client cannot pick its key by prepending addresses: the proxy's own entry is the last one.
      for (let i = 0; i < 3; i += 1) {
        await proxied.app.inject({ method: 'POST', url: '/api/auth', payload: { email: user.email, password: PASSWORD }, remoteAddress: proxy, headers: { 'x-forwarded-for': `192.0.2.${i}, 203.0.113.77` } });
      }
      const limited = await proxied.app.inject({ method: 'POST', url: '/api/auth', payload: { email: user.email, password: PASSWORD }, remoteAddress: proxy, headers: { 'x-forwarded-for': '192.0.2.200, 203.0.113.77' } });
      assertLimited(limited, 'the client as the trusted proxy saw it');
      // An untrusted peer's X-Forwarded-For is ignored even with TRUST_PROXY set.
      const direct = nextIp();
      for (let i = 0; i < 3; i += 1) {
        await proxied.app.inject({ method: 'POST', url: '/api/auth', payload: { email: user.email, password: PASSWORD }, remoteAddress: direct, headers: { 'x-forwarded-for': `203.0.113.${100 + i}` } });
      }
      assertLimited(await proxied.app.inject({ method: 'POST', url: '/api/auth', payload: { email: user.email, password: PASSWORD }, remoteAddress: direct, headers: { 'x-forwarded-for': '203.0.113.200' } }), 'untrusted peer');
    });
  });
}
