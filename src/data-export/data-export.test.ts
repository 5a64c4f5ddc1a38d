/**
 * The data export on every backend: a user with data in every module (sessions, a linked
 * provider, a passkey, TOTP and recovery codes, an organization, a connected app, audit events)
 * downloads it from `GET /api/auth/account/export`; the document has the stable shape and each
 * module's part, and a scan of the whole of it finds none of the secrets created for them (the
 * password hash, the TOTP secret, tokens, refresh seeds, recovery codes, the client secret, the
 * passkey's key). Refused without a recent sign-in, while an administrator acts as the user, too
 * often, and for another user (there is no parameter to name one). An administrator exports a
 * user (audited with them as actor); `gatehouse users export` writes the same document.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { backends } from '../../test/helpers/databases.ts';
import { createSignedInUser, createUser, TEST_SECRET, useTestApp } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { enrolTotp } from '../../test/helpers/totp.ts';
import { SoftAuthenticator } from '../../test/helpers/webauthn.ts';
import { runCli, type RegisterCleanup } from '../../test/helpers/process.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';
import { insertAccount } from '../oauth/oauth-account.store.ts';
import { rememberConsent } from '../oidc-provider/consents.store.ts';
import { EXPORT_FORMAT } from './data-export.service.ts';
import { EXPORTS_PER_HOUR } from './data-export.routes.ts';

const PASSWORD = 'correct horse battery staple';
const ORIGIN = 'http://localhost:3000';

type Json = Record<string, unknown>;

for (const backend of await backends()) {
  describe(`data export (${backend.name})`, { skip: backend.skip, timeout: 120_000 }, () => {
    const clock = fakeClock();
    const t = useTestApp(backend, { clock, env: { AUTH_URL: ORIGIN, REAUTH_WINDOW: '5m' } });
    const db = () => t.services.storage.db;
    let count = 0;
    const email = (label: string) => `${label}-${++count}@example.com`;
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
    const exportOf = (token: string) => t.app.inject({ method: 'GET', url: '/api/auth/account/export', headers: bearer(token) });
    const events = async (type: string, userId: string) =>
      db().selectFrom('audit_events').select(['actor_user_id', 'details']).where('type', '=', type).where('user_id', '=', userId).execute();

    /** A signed-in user with something in every module; the secrets created for them. */
    async function userWithEverything() {
      const address = email('everything');
      const user = await createSignedInUser(t, { email: address, password: PASSWORD });
      const signIn = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: address, password: PASSWORD } });
      const refreshToken = signIn.json().refreshToken as string;

      // A passkey (through the API, while the sign-in is recent), then TOTP (which issues recovery codes).
      const options = await t.app.inject({ method: 'POST', url: '/api/auth/passkeys/register/options', headers: bearer(user.token), payload: {} });
      assert.equal(options.statusCode, 200, options.body);
      const registered = await t.app.inject({ method: 'POST', url: '/api/auth/passkeys/register/verify', headers: bearer(user.token), payload: { response: new SoftAuthenticator({ origin: ORIGIN }).register(options.json()), name: 'Work laptop' } });
      assert.equal(registered.statusCode, 200, registered.body);
      const recoveryCodes = (registered.json().recoveryCodes ?? []) as string[];
      assert.ok(recoveryCodes.length > 0, 'the first second factor gave recovery codes');
      const totpSecret = await enrolTotp(t.services as never, (await t.services.users.findUserById(user.id))!, clock);

      await insertAccount(db(), { id: randomUUID().replaceAll('-', ''), user_id: user.id, provider: 'github', provider_user_id: String(++count), email: address, created_at: clock(), last_used_at: clock() });
      const organization = await t.services.organizations.create({ name: 'Exported Org' }, user.id, SYSTEM_SOURCE);
      assert.ok(organization.ok);
      const app = await t.services.oidcClients.create({ name: 'Connected App', redirectUris: ['https://app.example/cb'] }, SYSTEM_SOURCE);
      assert.ok(app.ok);
      await rememberConsent(db(), user.id, { clientId: app.client.id, scopes: new Set(['openid', 'email']), resources: {} }, clock());

      const secrets = [
        ...recoveryCodes,
        user.token,
        refreshToken,
        totpSecret,
        ...(app.clientSecret === undefined ? [] : [app.clientSecret]),
        (await db().selectFrom('users').select('password_hash').where('id', '=', user.id).executeTakeFirstOrThrow()).password_hash!,
        ...(await db().selectFrom('sessions').select('refresh_seed').where('user_id', '=', user.id).execute()).map((row) => row.refresh_seed),
        ...(await db().selectFrom('mfa_recovery_codes').select('code_hash').where('user_id', '=', user.id).execute()).map((row) => row.code_hash),
        ...(await db().selectFrom('mfa_totp').select('secret_box').where('user_id', '=', user.id).execute()).flatMap((row) => (row.secret_box === null ? [] : [row.secret_box])),
        ...(await db().selectFrom('passkeys').select(['public_key', 'credential_id']).where('user_id', '=', user.id).execute()).flatMap((row) => [row.public_key, row.credential_id]),
        ...(await db().selectFrom('action_tokens').select('token_hash').where('user_id', '=', user.id).execute()).map((row) => row.token_hash),
      ];
      return { ...user, email: address, secrets, clientId: app.client.id };
    }

    it('a user downloads everything every module holds of them, and no secret', async () => {
      const user = await userWithEverything();
      const response = await exportOf(user.token);
      assert.equal(response.statusCode, 200, response.body);
      assert.match(response.headers['content-type'] as string, /^application\/json/);
      assert.match(response.headers['content-disposition'] as string, /^attachment; filename="gatehouse-export-\d{4}-\d{2}-\d{2}\.json"$/);
      assert.equal(response.headers['cache-control'], 'no-store');

      const document = response.json() as { format: string; exportedAt: string; user: Json; modules: Record<string, Json> };
      assert.equal(document.format, EXPORT_FORMAT);
      assert.equal(document.exportedAt, new Date(clock()).toISOString());
      assert.equal(document.user.email, user.email);
      assert.equal(document.user.id, user.id);
      const { modules } = document;
      assert.ok(!('users' in modules), 'the account is under user');
      assert.ok((modules.sessions!.sessions as unknown[]).length >= 2);
      assert.deepEqual((modules.credentials!.password as Json).isSet, true);
      assert.deepEqual((modules.oauth!.linkedAccounts as Json[]).map((account) => account.provider), ['github']);
      assert.deepEqual((modules.passkeys!.passkeys as Json[]).map((passkey) => passkey.name), ['Work laptop']);
      assert.equal(modules.mfa!.totp, true);
      assert.equal(typeof modules.mfa!.recoveryCodesLeft, 'number');
      assert.deepEqual((modules.organizations!.memberships as Json[]).map(({ name, role }) => ({ name, role })), [{ name: 'Exported Org', role: 'OWNER' }]);
      assert.deepEqual((modules['oidc-provider']!.connectedApps as Json[]).map((app) => app.clientId), [user.clientId]);
      const audit = modules.audit!;
      const types = (audit.events as Json[]).map((event) => event.type);
      for (const type of ['signin.success', 'mfa.totp_enabled', 'passkey.added', 'organization.created']) assert.ok(types.includes(type), `${type} in ${types.join(' ')}`);
      assert.equal(audit.limit, 1_000);
      assert.equal(audit.more, false);
      const times = (audit.events as Json[]).map((event) => String(event.createdAt));
      assert.deepEqual(times, times.toSorted().toReversed(), 'newest first');

      for (const secret of user.secrets) assert.ok(!response.body.includes(secret), `the export holds a secret: ${secret.slice(0, 12)}…`);
      assert.ok(user.secrets.length >= 18, `${user.secrets.length} secrets checked`);

      const recorded = await events('account.exported', user.id);
      assert.equal(recorded.length, 1);
      assert.equal(recorded[0]!.actor_user_id, user.id);
    });

    it('holds the newest 1000 audit events, newest first, and says there are more', async () => {
      const user = await createSignedInUser(t, { email: email('chatty'), password: PASSWORD });
      const start = clock();
      for (let i = 0; i < 1_005; i++) {
        clock.advance(1);
        await t.services.audit.record({ type: 'account.exported', userId: user.id, source: SYSTEM_SOURCE, details: { seq: i } });
      }
      clock.advance(1);
      const audit = (await exportOf(user.token)).json().modules.audit as { events: Json[]; limit: number; more: boolean };
      assert.equal(audit.events.length, 1_000);
      assert.equal(audit.more, true);
      assert.deepEqual(audit.events[0]!.details, { seq: 1_004 }, 'the newest first');
      assert.deepEqual(audit.events.at(-1)!.details, { seq: 5 });
      assert.ok((audit.events.at(-1)!.createdAt as number) > start);
    });

    it('is refused without a recent sign-in, while an administrator acts as the user, and too often', async () => {
      const user = await createSignedInUser(t, { email: email('stale'), password: PASSWORD });
      clock.advance(6 * 60_000);
      const stale = await exportOf(user.token);
      assert.equal(stale.statusCode, 403, stale.body);
      assert.equal(stale.json().error, 'REAUTH_REQUIRED');
      const page = await t.app.inject({ method: 'GET', url: '/dashboard/account/export', headers: bearer(user.token) });
      assert.equal(page.statusCode, 303, 'the dashboard’s button: sign in again, and back');
      assert.equal(page.headers.location, '/auth/signin?callbackUrl=/dashboard/account/export');

      const adminAddress = email('admin');
      const admin = await createUser(t.services, { email: adminAddress, password: PASSWORD, roles: ['ADMIN'] });
      await enrolTotp(t.services as never, admin, clock);
      const target = await createUser(t.services, { email: email('target'), password: PASSWORD });
      const started = await t.services.impersonation.start({ admin: { userId: admin.id, amr: ['pwd', 'mfa'] }, userId: target.id, reason: 'help', minutes: 15, source: SYSTEM_SOURCE, ip: null, userAgent: null });
      assert.ok(started.ok, JSON.stringify(started));
      const impersonated = await exportOf(started.session.accessToken);
      assert.equal(impersonated.statusCode, 403, impersonated.body);
      assert.equal(impersonated.json().error, 'IMPERSONATION_FORBIDDEN_ACTION');
      assert.deepEqual(await events('account.exported', target.id), []);

      const busy = await createSignedInUser(t, { email: email('busy'), password: PASSWORD });
      for (let i = 0; i < EXPORTS_PER_HOUR; i++) assert.equal((await exportOf(busy.token)).statusCode, 200);
      const limited = await exportOf(busy.token);
      assert.equal(limited.statusCode, 429, limited.body);
    });

    it('exports only the caller’s own data: no way to name another user', async () => {
      const owner = await createSignedInUser(t, { email: email('owner'), password: PASSWORD });
      const other = await createSignedInUser(t, { email: email('other'), password: PASSWORD });
      const response = await t.app.inject({ method: 'GET', url: `/api/auth/account/export?userId=${other.id}`, headers: bearer(owner.token) });
      assert.equal(response.statusCode, 200, response.body);
      assert.equal(response.json().user.id, owner.id);
      assert.ok(!response.body.includes(other.email) && !response.body.includes(other.id));
      assert.equal((await t.app.inject({ method: 'GET', url: '/api/auth/account/export' })).statusCode, 401);
      // Not an administrator: the admin route refuses.
      assert.equal((await t.app.inject({ method: 'GET', url: `/api/admin/users/${other.id}/export`, headers: bearer(owner.token) })).statusCode, 403);
    });

    it('an administrator exports a user (audited with them as actor); unknown users are 404', async () => {
      const admin = await createSignedInUser(t, { email: email('exporting-admin'), password: PASSWORD, roles: ['ADMIN'] });
      const user = await userWithEverything();
      const response = await t.app.inject({ method: 'GET', url: `/api/admin/users/${user.id}/export`, headers: bearer(admin.token) });
      assert.equal(response.statusCode, 200, response.body);
      assert.match(response.headers['content-disposition'] as string, /^attachment; filename="gatehouse-export-/);
      assert.equal(response.json().user.id, user.id);
      for (const secret of user.secrets) assert.ok(!response.body.includes(secret));
      const recorded = await events('account.exported', user.id);
      assert.deepEqual(recorded.map((event) => event.actor_user_id), [admin.id]);
      assert.equal((await t.app.inject({ method: 'GET', url: '/api/admin/users/no-such-user/export', headers: bearer(admin.token) })).statusCode, 404);
    });

    it('gatehouse users export writes the same document, to a file or standard output', async (context) => {
      const user = await userWithEverything();
      const dir = mkdtempSync(join(tmpdir(), 'gatehouse-export-'));
      context.after(() => rmSync(dir, { recursive: true, force: true }));
      const env = { NODE_ENV: 'development', LOG_LEVEL: 'warn', AUTH_SECRET: TEST_SECRET, DATA_DIR: dir, DATABASE_URL: t.database.url, AUTH_URL: ORIGIN };
      const cleanup: RegisterCleanup = (fn) => context.after(fn);
      const file = join(dir, 'export.json');
      const written = await runCli(['users', 'export', '--email', user.email, '--output', file], { env, timeoutMs: 60_000, cleanup });
      assert.equal(written.code, 0, written.stderr);
      assert.equal(statSync(file).mode & 0o777, 0o600);
      const fromFile = JSON.parse(readFileSync(file, 'utf8')) as { format: string; user: Json; modules: Record<string, Json> };
      const fromApi = (await exportOf(user.token)).json() as typeof fromFile;
      assert.equal(fromFile.format, EXPORT_FORMAT);
      assert.deepEqual(Object.keys(fromFile.modules), Object.keys(fromApi.modules));
      assert.deepEqual(fromFile.modules.passkeys, fromApi.modules.passkeys);
      assert.deepEqual(fromFile.user, fromApi.user);
      const text = readFileSync(file, 'utf8');
      for (const secret of user.secrets) assert.ok(!text.includes(secret));

      const again = await runCli(['users', 'export', '--email', user.email, '--output', file], { env, timeoutMs: 60_000, cleanup });
      assert.equal(again.code, 1);
      assert.match(again.stderr, /exists already/);
      const printed = await runCli(['users', 'export', '--email', user.email], { env, timeoutMs: 60_000, cleanup });
      assert.equal(printed.code, 0, printed.stderr);
      assert.equal((JSON.parse(printed.stdout) as { user: Json }).user.id, user.id);
      const unknown = await runCli(['users', 'export', '--email', 'nobody@example.com'], { env, timeoutMs: 60_000, cleanup });
      assert.equal(unknown.code, 1);
      assert.equal((await events('account.exported', user.id)).length, 4, 'three at the command line, one through the API');
    });
  });
}
