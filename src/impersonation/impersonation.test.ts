/**
 * Audited impersonation end to end, over the real app (SQLite and PostgreSQL): an ADMIN who used a
 * second factor starts acting as a user from the admin user page; the browser's session is then the
 * user's, its tokens carry `act`, every page shows the banner, step-up routes are refused, "Stop"
 * or the time limit ends it with an audit event and a mail to the user. Refused: a non-admin, an
 * admin without a second factor, another ADMIN as the target.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../../test/helpers/databases.ts';
import { createUser, useTestApp } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { enrolTotp, totpCode } from '../../test/helpers/totp.ts';
import { formBrowser, postForm, type CookieJar } from '../../test/helpers/cookie-jar.ts';
import { cookieNames } from '../sessions/session-cookie.ts';

const PASSWORD = 'correct horse battery staple';
const payloadOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;

for (const backend of await backends()) {
  for (const strategy of ['database', 'jwt'] as const) {
    describe(`impersonation (${strategy} strategy, ${backend.name})`, { skip: backend.skip }, () => {
      const clock = fakeClock();
      const t = useTestApp(backend, { env: { SESSION_STRATEGY: strategy }, clock });
      const email = (name: string) => `${name}-${strategy}-${backend.name}@example.com`;

      async function signedInBrowser(address: string) {
        const browser = await formBrowser(t.app);
        const origin = new URL(t.config.authUrl).origin;
        const signedIn = await postForm(t.app, browser, '/api/auth/signin', { email: address, password: PASSWORD }, origin);
        assert.equal(signedIn.statusCode, 303, signedIn.body);
        await refreshCsrf(browser);
        return { browser, origin };
      }
      async function refreshCsrf(browser: { jar: CookieJar; csrfToken: string }) {
        const response = await t.app.inject({ method: 'GET', url: '/api/auth/csrf', headers: { cookie: browser.jar.header() } });
        browser.jar.store(response);
        browser.csrfToken = response.json().csrfToken;
      }
      async function events(type: string, userId: string) {
        const rows = await sql<{ reason: string | null; actor_user_id: string | null; details: string | null }>`select reason, actor_user_id, details from audit_events where type = ${type} and user_id = ${userId}`.execute(t.services.storage.db);
        return rows.rows.map((row) => ({ ...row, details: typeof row.details === 'string' ? JSON.parse(row.details) : row.details }));
      }
      const cookieOf = (jar: CookieJar) => jar.get(cookieNames(t.config).access)!;

      it('refuses a non-admin, an admin without a second factor and an ADMIN as the target', async () => {
        await createUser(t.services, { email: email('nofactor-admin'), password: PASSWORD, roles: ['ADMIN'] });
        await createUser(t.services, { email: email('plain'), password: PASSWORD });
        const target = await createUser(t.services, { email: email('target-1'), password: PASSWORD });
        const other = await createUser(t.services, { email: email('other-admin'), password: PASSWORD, roles: ['ADMIN'] });

        const plain = await signedInBrowser(email('plain'));
        const byPlain = await postForm(t.app, plain.browser, `/admin/users/${target.id}/impersonate`, { reason: 'help', minutes: '15' }, plain.origin);
        assert.equal(byPlain.statusCode, 403);

        const admin = await signedInBrowser(email('nofactor-admin'));
        const page = await t.app.inject({ method: 'GET', url: `/admin/users/${target.id}`, headers: { cookie: admin.browser.jar.header() } });
        assert.match(page.body, new RegExp(`action="/admin/users/${target.id}/impersonate"`));
        const noFactor = await postForm(t.app, admin.browser, `/admin/users/${target.id}/impersonate`, { reason: 'help', minutes: '15' }, admin.origin);
        assert.equal(noFactor.statusCode, 403);
        assert.match(noFactor.body, /IMPERSONATION_SECOND_FACTOR_REQUIRED|second factor/);

        const adminPage = await t.app.inject({ method: 'GET', url: `/admin/users/${other.id}`, headers: { cookie: admin.browser.jar.header() } });
        assert.doesNotMatch(adminPage.body, /\/impersonate"/, 'no form for an ADMIN');
        assert.deepEqual(await events('impersonation.started', target.id), []);
      });

      it('starts with a recent second factor: act in the token, the banner, refused step-up routes, Stop, the audit and the mail', async () => {
        const admin = await createUser(t.services, { email: email('admin'), password: PASSWORD, roles: ['ADMIN'] });
        const target = await createUser(t.services, { email: email('target-2'), password: PASSWORD });
        const other = await createUser(t.services, { email: email('other-admin-2'), password: PASSWORD, roles: ['ADMIN'] });
        const { browser, origin } = await signedInBrowser(email('admin'));
        const secret = await enrolTotp(t.services as never, admin, clock);
        const stepUp = await t.app.inject({
          method: 'POST',
          url: '/api/auth/mfa/step-up',
          headers: { cookie: browser.jar.header(), origin, 'x-csrf-token': browser.csrfToken, 'content-type': 'application/json' },
          payload: JSON.stringify({ code: totpCode(secret, clock()) }),
        });
        assert.equal(stepUp.statusCode, 200, stepUp.body);
        browser.jar.store(stepUp);

        const ofAdmin = await postForm(t.app, browser, `/admin/users/${other.id}/impersonate`, { reason: 'help', minutes: '15' }, origin);
        assert.equal(ofAdmin.statusCode, 403);
        assert.match(ofAdmin.body, /IMPERSONATION_NOT_ALLOWED|cannot be impersonated/);
        const tooLong = await postForm(t.app, browser, `/admin/users/${target.id}/impersonate`, { reason: 'help', minutes: '600' }, origin);
        assert.equal(tooLong.statusCode, 422);
        const noReason = await postForm(t.app, browser, `/admin/users/${target.id}/impersonate`, { reason: ' ', minutes: '15' }, origin);
        assert.equal(noReason.statusCode, 422);

        const started = await postForm(t.app, browser, `/admin/users/${target.id}/impersonate`, { reason: 'Ticket <42>', minutes: '15' }, origin);
        assert.equal(started.statusCode, 303, started.body);
        assert.equal(started.headers.location, '/dashboard');
        const impersonationToken = cookieOf(browser.jar);
        const claims = payloadOf(impersonationToken);
        assert.equal(claims.sub, target.id);
        assert.deepEqual(claims.act, { sub: admin.id });
        assert.ok((claims.exp as number) * 1000 <= clock() + 15 * 60_000, 'never outlives the time limit');

        const dashboard = await t.app.inject({ method: 'GET', url: '/dashboard', headers: { cookie: browser.jar.header() } });
        assert.equal(dashboard.statusCode, 200);
        assert.match(dashboard.body, /class="alert alert-error impersonation-banner"/);
        assert.ok(dashboard.body.includes(`acting as ${email('target-2')} (Ticket &lt;42&gt;)`), 'the banner names the user and the reason, escaped');
        assert.match(dashboard.body, /action="\/dashboard\/impersonation\/stop"/);
        const german = await t.app.inject({ method: 'GET', url: '/dashboard?lang=de', headers: { cookie: browser.jar.header() } });
        assert.ok(german.body.includes(`handelt als ${email('target-2')}`));

        const [start] = await events('impersonation.started', target.id);
        assert.equal(start?.actor_user_id, admin.id);
        assert.equal(start?.details.adminId, admin.id);
        assert.equal(start?.details.reason, 'Ticket <42>');
        assert.equal(typeof start?.details.until, 'number');

        // A step-up route is refused to the impersonation session (JSON with the cookie, and the dashboard's form).
        await refreshCsrf(browser);
        const password = await t.app.inject({
          method: 'POST',
          url: '/api/auth/change-password',
          headers: { cookie: browser.jar.header(), origin, 'x-csrf-token': browser.csrfToken, 'content-type': 'application/json' },
          payload: JSON.stringify({ currentPassword: PASSWORD, newPassword: 'another long password 123' }),
        });
        assert.equal(password.statusCode, 403, password.body);
        assert.equal(password.json().error, 'IMPERSONATION_FORBIDDEN_ACTION');
        const deletion = await postForm(t.app, browser, '/dashboard/account/delete', { confirm: 'yes' }, origin);
        // A form route goes back to its page with the code.
        assert.equal(deletion.statusCode, 303);
        assert.match(deletion.headers.location as string, /error=IMPERSONATION_FORBIDDEN_ACTION/);
        assert.ok(await t.services.users.findUserById(target.id));

        // What only the person may do (IN_PERSON), step-up or not: unlink a provider, end their
        // sessions (API and dashboard), let an app act for them (the OpenID Provider's interaction).
        const asJson = (method: 'DELETE' | 'POST', url: string) =>
          t.app.inject({ method, url, headers: { cookie: browser.jar.header(), origin, 'x-csrf-token': browser.csrfToken } });
        for (const [method, url] of [['DELETE', '/api/auth/accounts/github'], ['DELETE', '/api/auth/sessions?keepCurrent=true'], ['DELETE', '/api/auth/sessions/some-session']] as const) {
          const refused = await asJson(method, url);
          assert.equal(refused.statusCode, 403, `${method} ${url}: ${refused.body}`);
          assert.equal(refused.json().error, 'IMPERSONATION_FORBIDDEN_ACTION', url);
        }
        const endOthers = await postForm(t.app, browser, '/dashboard/sessions/end-others', {}, origin);
        assert.equal(endOthers.statusCode, 403);
        const interaction = await t.app.inject({ method: 'GET', url: '/oidc/interaction/some-interaction', headers: { cookie: browser.jar.header() } });
        assert.equal(interaction.statusCode, 403, 'no app is authorized in the person’s name');
        assert.equal((await t.services.sessions.listSessions(target.id)).length >= 1, true);

        const stopped = await postForm(t.app, browser, '/dashboard/impersonation/stop', {}, origin);
        assert.equal(stopped.statusCode, 303, stopped.body);
        assert.match(stopped.headers.location as string, /\/signin\?callbackUrl=\/admin\/users\//);
        const after = await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: { authorization: `Bearer ${impersonationToken}` } });
        assert.equal(after.statusCode, 401);
        const [end] = await events('impersonation.ended', target.id);
        assert.equal(end?.reason, 'STOPPED');
        const mails = (await t.services.mail.listRecent(500)).filter((message) => message.to === email('target-2') && message.template === 'impersonation-ended');
        assert.equal(mails.length, 1);
        assert.match(mails[0]!.text ?? '', /Ticket <42>/);
        assert.equal(await t.services.impersonation.endExpired(), 0, 'recorded once');
      });

      it('ends at the time limit: the session expires, the job records it and mails the user', async () => {
        const admin = await createUser(t.services, { email: email('admin-3'), password: PASSWORD, roles: ['ADMIN'] });
        const target = await createUser(t.services, { email: email('target-3'), password: PASSWORD });
        const source = { actorUserId: admin.id, ip: null, userAgent: null };
        const result = await t.services.impersonation.start({ admin: { userId: admin.id, amr: ['pwd', 'otp', 'mfa'] }, userId: target.id, reason: 'support', minutes: 5, source, ip: null, userAgent: null });
        assert.ok(result.ok);
        const bearer = { authorization: `Bearer ${result.session.accessToken}` };
        assert.equal((await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: bearer })).statusCode, 200);
        assert.equal(result.session.sessionExpiresAt, clock() + 5 * 60_000);
        clock.advance(5 * 60_000 + 1_000);
        assert.equal((await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: bearer })).statusCode, 401);
        assert.equal((await t.services.sessions.refresh(result.session.refreshToken)).ok, false);
        assert.equal(await t.services.impersonation.endExpired(), 1);
        const [end] = await events('impersonation.ended', target.id);
        assert.equal(end?.reason, 'EXPIRED');
        assert.ok((await t.services.mail.listRecent(500)).some((message) => message.to === email('target-3') && message.template === 'impersonation-ended'));
        assert.equal(await t.services.impersonation.endExpired(), 0);
        clock.advance(24 * 3_600_000 + 1_000);
        await t.services.impersonation.endExpired();
        const rows = await sql<{ n: number | string }>`select count(*) as n from impersonations where user_id = ${target.id}`.execute(t.services.storage.db);
        assert.equal(Number(rows.rows[0]!.n), 0, 'the row goes a day after the end');
      });
    });
  }
}
