/**
 * Trusted devices over the real app, on SQLite and PostgreSQL: a second factor met with
 * `rememberDevice` sets a bound cookie; that browser's next sign-ins skip the second factor (the
 * session's amr claims none, step-up still asks, the audit event says what waived it); a new
 * password, a factor change, "sign out everywhere" and the dashboard forget it; a passkey as the
 * second factor trusts the browser the same way (its prompt offers the box too); another user's
 * sign-in, an altered or expired value, and holders of MFA_REQUIRED_ROLES get no waiver.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { decodeJwt } from 'jose';
import { backends } from '../../test/helpers/databases.ts';
import { createSignedInUser, createUser, useTestApp } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { enrolTotp, totpCode, TOTP_STEP_MS } from '../../test/helpers/totp.ts';
import { formBrowser, postForm } from '../../test/helpers/cookie-jar.ts';
import { SoftAuthenticator } from '../../test/helpers/webauthn.ts';
import { trustedDeviceCookieName } from './trusted-devices.waiver.ts';

const PASSWORD = 'correct horse battery staple';
const NEW_PASSWORD = 'another correct horse battery';
const REQUIRED_ROLE = 'AUDITOR';

for (const backend of await backends()) {
  describe(`trusted devices on ${backend.name}`, { skip: backend.skip }, () => {
    const clock = fakeClock();
    const t = useTestApp(backend, { clock, env: { MFA_REQUIRED_ROLES: REQUIRED_ROLE } });
    let count = 0;
    const cookieName = () => trustedDeviceCookieName(t.config);

    /** A user with an authenticator app; their address and secret. */
    async function userWithFactor(roles: string[] = []) {
      const email = `device${++count}-${backend.name}@example.com`;
      const user = await createUser(t.services, { email, password: PASSWORD, roles });
      const secret = await enrolTotp(t.services as never, user, clock);
      return { user, email, secret };
    }
    const signIn = (email: string, cookie?: string, password = PASSWORD) =>
      t.app.inject({ method: 'POST', url: '/api/auth', payload: { email, password }, headers: cookie === undefined ? {} : { cookie: `${cookieName()}=${cookie}` } });

    /** Signs in with the second factor, asking to be remembered; the device cookie's value and the session's token. */
    async function trustBrowser(email: string, secret: string, rememberDevice: boolean | 'absent' = true) {
      const asked = await signIn(email);
      assert.equal(asked.statusCode, 403, asked.body);
      clock.advance(TOTP_STEP_MS);
      const verified = await t.app.inject({ method: 'POST', url: '/api/auth/mfa/verify', payload: { mfaToken: asked.json().mfaToken, code: totpCode(secret, clock()), ...(rememberDevice !== 'absent' && { rememberDevice }) } });
      assert.equal(verified.statusCode, 200, verified.body);
      return { device: verified.cookies.find((cookie) => cookie.name === cookieName()), token: verified.json().token as string };
    }
    async function events(type: string, userId: string) {
      const rows = await sql<{ details: unknown }>`select details from audit_events where type = ${type} and user_id = ${userId} order by created_at, id`.execute(t.services.storage.db);
      return rows.rows.map((row) => (typeof row.details === 'string' ? JSON.parse(row.details) : row.details) as Record<string, unknown>);
    }

    it('a trusted device skips the second factor and is forgotten after a password change', async () => {
      const { user, email, secret } = await userWithFactor();
      const { device, token } = await trustBrowser(email, secret);
      assert.ok(device, 'the device cookie is set');
      assert.equal(device.httpOnly, true);
      assert.equal(device.sameSite, 'Lax');
      assert.equal(device.path, '/');
      assert.equal(device.maxAge, 30 * 86_400);

      const skipped = await signIn(email, device.value);
      assert.equal(skipped.statusCode, 200, skipped.body);
      // The session proved the password only: no second factor is claimed, and step-up still asks.
      assert.deepEqual(decodeJwt(skipped.json().token).amr, ['pwd']);
      const stepUp = await t.app.inject({ method: 'POST', url: '/api/auth/mfa/totp/setup', headers: { authorization: `Bearer ${skipped.json().token}` }, payload: {} });
      assert.equal(stepUp.statusCode, 403);
      assert.equal(stepUp.json().error, 'REAUTH_REQUIRED');
      const successes = await events('signin.success', user.id);
      const [added] = await events('trusted_device.added', user.id);
      const waived = successes.filter((details) => details.secondFactorWaivedBy !== undefined);
      assert.equal(waived.length, 1, 'the waived sign-in says so; the one with the factor does not');
      assert.equal(waived[0]!.secondFactorWaivedBy, 'trusted-device');
      assert.equal(waived[0]!.trustedDeviceId, added!.deviceId);
      assert.doesNotMatch(JSON.stringify(await events('trusted_device.added', user.id)), new RegExp(device.value.split('.')[1]!), 'no secret in the audit');

      // A new password (by the session that used the factor) forgets every device of the user's.
      const changed = await t.app.inject({ method: 'POST', url: '/api/auth/change-password', headers: { authorization: `Bearer ${token}` }, payload: { currentPassword: PASSWORD, newPassword: NEW_PASSWORD } });
      assert.equal(changed.statusCode, 200, changed.body);
      const asked = await signIn(email, device.value, NEW_PASSWORD);
      assert.equal(asked.statusCode, 403, asked.body);
      assert.equal(asked.json().error, 'MFA_REQUIRED');
      // The change ends the other sessions first (`user.sessions_ended`), then records `password.changed`: one forgets them.
      const forgotten = await events('trusted_device.forgotten', user.id);
      assert.equal(forgotten.length, 1);
      assert.equal(forgotten[0]!.count, 1);
    });

    it('is bound to its user, refuses an altered value, expires, and is not set without rememberDevice', async () => {
      const first = await userWithFactor();
      const second = await userWithFactor();
      assert.equal((await trustBrowser(first.email, first.secret, 'absent')).device, undefined);
      assert.equal((await trustBrowser(first.email, first.secret, false)).device, undefined);
      const { device } = await trustBrowser(first.email, first.secret);
      assert.equal((await signIn(second.email, device!.value)).statusCode, 403, "another user's sign-in in this browser is asked");
      const [header, payload, signature] = device!.value.split('.');
      const altered = `${header}.${payload}.${signature!.startsWith('A') ? 'B' : 'A'}${signature!.slice(1)}`;
      assert.equal((await signIn(first.email, altered)).statusCode, 403);
      assert.equal((await signIn(first.email, 'not-a-token')).statusCode, 403);
      assert.equal((await signIn(first.email, device!.value)).statusCode, 200);
      clock.advance(31 * 86_400_000);
      assert.equal((await signIn(first.email, device!.value)).statusCode, 403, 'expired after MFA_TRUSTED_DEVICE_DAYS');
    });

    it('a factor change and "sign out everywhere" forget the devices', async () => {
      const { user, email, secret } = await userWithFactor();
      const { device, token } = await trustBrowser(email, secret);
      clock.advance(TOTP_STEP_MS);
      const renewed = await t.app.inject({ method: 'POST', url: '/api/auth/mfa/recovery-codes', headers: { authorization: `Bearer ${token}` }, payload: { code: totpCode(secret, clock()) } });
      assert.equal(renewed.statusCode, 200, renewed.body);
      assert.equal((await signIn(email, device!.value)).statusCode, 403);

      const again = await trustBrowser(email, secret);
      const ended = await t.app.inject({ method: 'DELETE', url: '/api/auth/sessions', headers: { authorization: `Bearer ${again.token}` } });
      assert.ok(ended.statusCode < 300, ended.body);
      assert.equal((await signIn(email, again.device!.value)).statusCode, 403);
      assert.deepEqual((await events('trusted_device.forgotten', user.id)).map((details) => details.cause), ['mfa.recovery_codes_renewed', 'user.sessions_ended']);
    });

    it('lists and forgets devices through the API; a second trust from one browser replaces its device', async () => {
      const { email, secret } = await userWithFactor();
      const first = await trustBrowser(email, secret);
      const listed = await t.app.inject({ method: 'GET', url: '/api/auth/trusted-devices', headers: { authorization: `Bearer ${first.token}` } });
      assert.equal(listed.statusCode, 200, listed.body);
      const [shown] = listed.json().devices;
      assert.deepEqual(Object.keys(shown).sort(), ['createdAt', 'createdIp', 'expiresAt', 'id', 'lastUsedAt', 'userAgent']);

      const missing = await t.app.inject({ method: 'DELETE', url: '/api/auth/trusted-devices/nope', headers: { authorization: `Bearer ${first.token}` } });
      assert.equal(missing.statusCode, 404);
      assert.equal(missing.json().error, 'TRUSTED_DEVICE_NOT_FOUND');
      const forgot = await t.app.inject({ method: 'DELETE', url: `/api/auth/trusted-devices/${shown.id}`, headers: { authorization: `Bearer ${first.token}` } });
      assert.equal(forgot.statusCode, 200, forgot.body);
      assert.equal((await signIn(email, first.device!.value)).statusCode, 403);

      const second = await trustBrowser(email, secret);
      const all = await t.app.inject({ method: 'DELETE', url: '/api/auth/trusted-devices', headers: { authorization: `Bearer ${second.token}` } });
      assert.deepEqual(all.json(), { ok: true, forgotten: 1 });
      assert.equal((await signIn(email, second.device!.value)).statusCode, 403);
      assert.equal((await t.app.inject({ method: 'GET', url: '/api/auth/trusted-devices' })).statusCode, 401);
    });

    it("an administrator sees the count on the user's page and forgets them all (audited, the administrator as actor)", async () => {
      const target = await userWithFactor();
      const { device } = await trustBrowser(target.email, target.secret);
      const admin = await userWithFactor(['ADMIN']);
      const { token } = await trustBrowser(admin.email, admin.secret, false);
      const bearer = { authorization: `Bearer ${token}` };
      const page = await t.app.inject({ method: 'GET', url: `/admin/users/${target.user.id}`, headers: bearer });
      assert.equal(page.statusCode, 200, page.body);
      assert.match(page.body, /id="trusted-devices-admin-heading"/);
      assert.match(page.body, /1 browser skips this user&#39;s second factor|1 browser skips this user's second factor/);
      assert.match(page.body, new RegExp(`action="/admin/users/${target.user.id}/trusted-devices/forget-all"`));

      const missing = await t.app.inject({ method: 'POST', url: '/api/admin/users/nobody/trusted-devices/forget-all', headers: bearer });
      assert.equal(missing.statusCode, 404);
      const byUser = await t.app.inject({ method: 'POST', url: `/api/admin/users/${admin.user.id}/trusted-devices/forget-all`, headers: { authorization: `Bearer ${(await trustBrowser(target.email, target.secret, false)).token}` } });
      assert.equal(byUser.statusCode, 403, 'not for a non-admin');
      const forgot = await t.app.inject({ method: 'POST', url: `/api/admin/users/${target.user.id}/trusted-devices/forget-all`, headers: bearer });
      assert.deepEqual(forgot.json(), { ok: true, forgotten: 1 });
      assert.equal((await signIn(target.email, device!.value)).statusCode, 403);
      const rows = await sql<{ actor_user_id: string | null }>`select actor_user_id from audit_events where type = 'trusted_device.forgotten' and user_id = ${target.user.id}`.execute(t.services.storage.db);
      assert.deepEqual(rows.rows.map((row) => row.actor_user_id), [admin.user.id]);
    });

    it(`holders of MFA_REQUIRED_ROLES trust no browser by default`, async () => {
      const { email, secret } = await userWithFactor([REQUIRED_ROLE]);
      const { device } = await trustBrowser(email, secret);
      assert.equal(device, undefined);
    });

    it('a passkey as the second factor trusts the browser with rememberDevice, and not without; the prompt offers the box beside it', async () => {
      const { id, email, token } = await createSignedInUser(t, { email: `passkey${++count}-${backend.name}@example.com`, password: PASSWORD });
      const authenticator = new SoftAuthenticator({ origin: new URL(t.config.authUrl).origin });
      const post = (url: string, payload: object, headers: Record<string, string> = {}) => t.app.inject({ method: 'POST', url, payload, headers });
      const registration = await post('/api/auth/passkeys/register/options', {}, { authorization: `Bearer ${token}` });
      const registered = await post('/api/auth/passkeys/register/verify', { response: authenticator.register(registration.json()) }, { authorization: `Bearer ${token}` });
      assert.equal(registered.statusCode, 200, registered.body);

      /** A password sign-in answered with the passkey; the device cookie it got, if any. */
      async function answerWithPasskey(rememberDevice: boolean | 'absent') {
        const asked = await signIn(email);
        assert.equal(asked.statusCode, 403, asked.body);
        const mfaToken = asked.json().mfaToken as string;
        const options = await post('/api/auth/passkeys/authenticate/options', { mfaToken });
        const verified = await post('/api/auth/passkeys/authenticate/verify', { mfaToken, response: authenticator.assert(options.json()), ...(rememberDevice !== 'absent' && { rememberDevice }) });
        assert.equal(verified.statusCode, 200, verified.body);
        return verified.cookies.find((cookie) => cookie.name === cookieName());
      }
      assert.equal(await answerWithPasskey('absent'), undefined, 'not trusted unless asked');
      assert.equal(await answerWithPasskey(false), undefined);
      const device = await answerWithPasskey(true);
      assert.ok(device, 'the device cookie is set');
      assert.equal(device.httpOnly, true);
      assert.equal(device.maxAge, 30 * 86_400);
      const skipped = await signIn(email, device.value);
      assert.equal(skipped.statusCode, 200, skipped.body);
      assert.deepEqual(decodeJwt(skipped.json().token).amr, ['pwd'], 'the waived sign-in claims no passkey');
      assert.equal((await signIn(email)).statusCode, 403, 'a browser without the cookie is still asked');
      const [added] = await events('trusted_device.added', id);
      assert.ok(added, 'audited');

      const malformed = await post('/api/auth/passkeys/authenticate/verify', { response: authenticator.assert((await post('/api/auth/passkeys/authenticate/options', {})).json()), rememberDevice: 'yes' });
      assert.equal(malformed.statusCode, 422, malformed.body);

      // The page: the box beside "Use a passkey" (the script sends it as `rememberDevice`).
      const browser = await formBrowser(t.app);
      const origin = new URL(t.config.authUrl).origin;
      const started = await postForm(t.app, browser, '/api/auth/signin', { email, password: PASSWORD }, origin);
      assert.equal(started.statusCode, 303);
      const prompt = await t.app.inject({ method: 'GET', url: started.headers.location as string, headers: { cookie: browser.jar.header() } });
      assert.equal(prompt.statusCode, 200);
      const section = /<div data-passkeys="signin"[\s\S]*?data-passkey-status><\/p>/.exec(prompt.body)?.[0] ?? '';
      assert.match(section, /<input id="passkey-remember-device" name="rememberDevice" type="checkbox"/);
    });

    it('the prompt page offers the checkbox and its form sets the cookie; the dashboard forgets', async () => {
      const { email, secret } = await userWithFactor();
      const browser = await formBrowser(t.app);
      const origin = new URL(t.config.authUrl).origin;
      const asked = await postForm(t.app, browser, '/api/auth/signin', { email, password: PASSWORD }, origin);
      assert.equal(asked.statusCode, 303);
      const prompt = await t.app.inject({ method: 'GET', url: asked.headers.location as string, headers: { cookie: browser.jar.header() } });
      assert.equal(prompt.statusCode, 200);
      assert.match(prompt.body, /<input id="mfa-code-remember-device" name="rememberDevice" type="checkbox"/);
      assert.match(prompt.body, /Don&#39;t ask again on this browser for 30 days|Don't ask again on this browser for 30 days/);
      clock.advance(TOTP_STEP_MS);
      const answered = await postForm(t.app, browser, '/auth/mfa', { code: totpCode(secret, clock()), rememberDevice: 'on', callbackUrl: '/dashboard' }, origin);
      assert.equal(answered.statusCode, 303, answered.body);
      assert.ok(browser.jar.has(cookieName()));

      const dashboard = await t.app.inject({ method: 'GET', url: '/dashboard', headers: { cookie: browser.jar.header() } });
      assert.match(dashboard.body, /id="trusted-devices-heading"/);
      browser.csrfToken = /name="csrfToken" value="([^"]+)"/.exec(dashboard.body)![1]!;
      const forgot = await postForm(t.app, browser, '/dashboard/trusted-devices/forget-all', {}, origin);
      assert.equal(forgot.statusCode, 303, forgot.body);
      const after = await t.app.inject({ method: 'GET', url: '/dashboard', headers: { cookie: browser.jar.header() } });
      assert.doesNotMatch(after.body, /id="trusted-devices-heading"/);
    });
  });
}
