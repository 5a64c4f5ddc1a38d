/**
 * API keys end to end, over the real app (SQLite and PostgreSQL): created (the key once, in its
 * documented shape), used (as the owner, narrowed), refused where keys may not go (key management,
 * passwords and factors, pages, the admin area without the admin scope), revoked (refused at once),
 * expired, rate-limited, following the owner's roles now; on SQLite kept between uses only while
 * nothing is committed (a revocation from another process refused at once); organization keys (refused by
 * Gatehouse's own API, active by introspection, surviving their creator); introspection for a
 * confidential client only; the last use written at most once a minute; every creation, failed use
 * and revocation audited and sent as a webhook, never with the key; every authentication with a
 * key counted in the metrics by outcome, and keys made and revoked. (That no key is ever logged, by
 * a real server at debug: test/packages/protect-api-keys.test.ts.)
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DatabaseSync } from 'node:sqlite';
import { sql } from 'kysely';
import { backends, TEST_POOL_SIZE } from '../../test/helpers/databases.ts';
import { createSignedInUser, modulesWithoutJobs, statementsOf, useTestApp, type TestApp } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';
import { API_KEY_SCANNER_REGEX, checksumOf, parseApiKey } from './key-format.ts';
import { parseExposition, valueOf } from '../metrics/exposition.ts';

const PASSWORD = 'correct horse battery staple';
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Making and using keys over `t`'s app. */
function keysOver(t: TestApp) {
  return {
    async createKey(token: string, payload: Record<string, unknown>) {
      const response = await t.app.inject({ method: 'POST', url: '/api/keys', headers: bearer(token), payload });
      assert.equal(response.statusCode, 201, response.body);
      const body = response.json() as { key: { id: string; kind: string; roles: string[]; scopes: string[]; expiresAt: string }; secret: string };
      return { ...body, key: { ...body.key, expiresAt: Date.parse(body.key.expiresAt) } };
    },
    get: (url: string, key: string) => t.app.inject({ method: 'GET', url, headers: bearer(key) }),
  };
}

for (const backend of await backends()) {
  describe(`API keys (${backend.name})`, { skip: backend.skip }, () => {
    const clock = fakeClock();
    const t = useTestApp(backend, { clock, env: { API_KEY_DEFAULT_TTL: '30d', API_KEY_MAX_TTL: '90d' } });
    let count = 0;
    const email = (name: string) => `${name}-${++count}-${backend.name}@example.com`;
    const { createKey, get } = keysOver(t);
    async function auditRows(type: string) {
      const rows = await sql<{ reason: string | null; user_id: string | null; details: unknown }>`select reason, user_id, details from audit_events where type = ${type}`.execute(t.services.storage.db);
      return rows.rows.map((row) => ({ ...row, details: typeof row.details === 'string' ? JSON.parse(row.details) : row.details }));
    }

    it('creates a key shown once in the documented shape, which then acts as its owner', async () => {
      const user = await createSignedInUser(t, { email: email('owner'), password: PASSWORD });
      const created = await createKey(user.token, { name: 'deploy script' });
      assert.match(created.secret, new RegExp(API_KEY_SCANNER_REGEX));
      assert.deepEqual(parseApiKey(created.secret), { kind: 'personal', id: created.key.id });
      assert.equal(created.key.expiresAt, clock() + 30 * 86_400_000, 'API_KEY_DEFAULT_TTL');
      // A typo breaks the checksum: refused before any lookup.
      const typo = `${created.secret.slice(0, -1)}${created.secret.endsWith('a') ? 'b' : 'a'}`;
      assert.equal(parseApiKey(typo), null);

      const used = await get('/api/organizations', created.secret);
      assert.equal(used.statusCode, 200, used.body);
      assert.equal((await get('/api/organizations', typo)).statusCode, 401);

      const exported = await t.services.apiKeys.list({ userId: user.id }, 'operator');
      assert.equal(exported?.length, 1);
      const handler = t.services.modules.find((module) => module.name === 'api-keys')!.userData!(t.services, {} as never);
      const data = JSON.stringify(await handler.export!(user.id));
      assert.ok(data.includes(created.key.id) && !data.includes(created.secret) && !data.includes('secret_hash'), 'the export lists the key, never its secret');
      const listed = await t.app.inject({ method: 'GET', url: '/api/keys', headers: bearer(user.token) });
      assert.equal(listed.statusCode, 200);
      assert.ok(!listed.body.includes(created.secret), 'never listed again');
      const stored = await sql<{ secret_hash: string }>`select secret_hash from api_keys where id = ${created.key.id}`.execute(t.services.storage.db);
      assert.match(stored.rows[0]!.secret_hash, /^[0-9a-f]{64}$/);
      assert.ok(!JSON.stringify(stored.rows).includes(created.secret));
    });

    it('refuses a lifetime over API_KEY_MAX_TTL and roles or scopes the owner does not hold', async () => {
      const user = await createSignedInUser(t, { email: email('plain'), password: PASSWORD });
      const tooLong = await t.app.inject({ method: 'POST', url: '/api/keys', headers: bearer(user.token), payload: { name: 'x', expiresInDays: 91 } });
      assert.equal(tooLong.statusCode, 422);
      assert.equal(tooLong.json().error, 'API_KEY_TTL_TOO_LONG');
      for (const payload of [{ name: 'x', scopes: ['admin'] }, { name: 'x', roles: ['ADMIN'] }, { name: 'x', roles: ['AUDITOR'] }]) {
        const refused = await t.app.inject({ method: 'POST', url: '/api/keys', headers: bearer(user.token), payload });
        assert.equal(refused.statusCode, 403, JSON.stringify(payload));
        assert.equal(refused.json().error, 'API_KEY_SCOPE_NOT_ALLOWED');
      }
    });

    it('narrows: an ADMIN’s key without the admin scope is refused at /api/admin; with it, reads; keys never manage keys, passwords or factors', async () => {
      const admin = await createSignedInUser(t, { email: email('admin'), password: PASSWORD, roles: ['ADMIN'] });
      const plainKey = (await createKey(admin.token, { name: 'reporting' })).secret;
      const refused = await get('/api/admin/users', plainKey);
      assert.equal(refused.statusCode, 403, refused.body);
      assert.equal(refused.json().error, 'FORBIDDEN');

      const adminKey = await createKey(admin.token, { name: 'admin reporting', scopes: ['admin', 'write'] });
      assert.deepEqual(adminKey.key.scopes, ['admin', 'write']);
      assert.equal((await get('/api/admin/users', adminKey.secret)).statusCode, 200);

      // Keys cannot make, list or revoke keys.
      const make = await t.app.inject({ method: 'POST', url: '/api/keys', headers: bearer(adminKey.secret), payload: { name: 'child' } });
      assert.equal(make.statusCode, 403);
      assert.equal(make.json().error, 'API_KEY_NOT_ALLOWED');
      for (const [method, url] of [['GET', '/api/keys'], ['DELETE', `/api/keys/${adminKey.key.id}`], ['GET', '/api/admin/keys']] as const) {
        const answer = await t.app.inject({ method, url, headers: bearer(adminKey.secret) });
        assert.equal(answer.statusCode, 403, `${method} ${url}`);
        assert.equal(answer.json().error, 'API_KEY_NOT_ALLOWED');
      }
      // A password change (a step-up route) and a new second factor: refused to every key.
      const password = await t.app.inject({ method: 'POST', url: '/api/auth/change-password', headers: bearer(adminKey.secret), payload: { currentPassword: PASSWORD, newPassword: 'another long passphrase 42' } });
      assert.equal(password.statusCode, 403, password.body);
      assert.equal(password.json().error, 'API_KEY_NOT_ALLOWED');
      const totp = await t.app.inject({ method: 'POST', url: '/api/auth/mfa/totp/setup', headers: bearer(adminKey.secret), payload: {} });
      assert.equal(totp.statusCode, 403, totp.body);
      // An administrator's change (it asks for a recent second factor): refused even with the admin scope.
      const change = await t.app.inject({ method: 'PATCH', url: `/api/admin/users/${admin.id}`, headers: bearer(adminKey.secret), payload: { name: 'Renamed' } });
      assert.equal(change.statusCode, 403, change.body);
      // Pages are for people in a browser.
      const page = await get('/dashboard', adminKey.secret);
      assert.equal(page.statusCode, 403);
      assert.ok((await auditRows('api_key.use_failed')).some((row) => row.reason === 'NOT_ALLOWED' && row.details.keyId === adminKey.key.id));
    });

    it('reads only without the write scope; with it, changes what its owner may (but never a session’s active organization)', async () => {
      const user = await createSignedInUser(t, { email: email('writer'), password: PASSWORD });
      const created = await t.services.organizations.create({ name: 'Writable' }, user.id, SYSTEM_SOURCE);
      assert.ok(created.ok);
      const reader = (await createKey(user.token, { name: 'reader' })).secret;
      const writer = (await createKey(user.token, { name: 'writer', scopes: ['write'] })).secret;
      assert.equal((await get(`/api/organizations/${created.organization.id}`, reader)).statusCode, 200);
      const refused = await t.app.inject({ method: 'DELETE', url: '/api/auth/sessions', headers: bearer(reader) });
      assert.equal(refused.statusCode, 403);
      assert.equal(refused.json().error, 'API_KEY_SCOPE_REQUIRED');
      const activate = await t.app.inject({ method: 'POST', url: `/api/organizations/${created.organization.id}/activate`, headers: bearer(writer) });
      assert.equal(activate.statusCode, 403, `a key has no session to make it active in: ${activate.body}`);
      const renamed = await t.app.inject({ method: 'PATCH', url: `/api/organizations/${created.organization.id}`, headers: bearer(writer), payload: { name: 'Renamed by key' } });
      assert.equal(renamed.statusCode, 200, renamed.body);
      assert.ok((await auditRows('api_key.use_failed')).some((row) => row.reason === 'SCOPE_REQUIRED'));
    });

    it('follows the owner now: demoted, the key loses ADMIN; disabled, it grants nothing', async () => {
      const admin = await createSignedInUser(t, { email: email('demoted'), password: PASSWORD, roles: ['ADMIN', 'AUDITOR'] });
      const key = await createKey(admin.token, { name: 'k', scopes: ['admin'], roles: ['AUDITOR'] });
      assert.equal((await get('/api/admin/users', key.secret)).statusCode, 200);
      assert.ok((await t.services.users.updateUser(admin.id, { roles: ['AUDITOR'] })).ok);
      assert.equal((await get('/api/admin/users', key.secret)).statusCode, 403, 'demoted: no ADMIN');
      assert.equal((await get('/api/organizations', key.secret)).statusCode, 200);
      assert.ok((await t.services.users.updateUser(admin.id, { disabled: true })).ok);
      assert.equal((await get('/api/organizations', key.secret)).statusCode, 401, 'disabled owner');
      assert.ok((await auditRows('api_key.use_failed')).some((row) => row.reason === 'OWNER_DISABLED' && row.details.keyId === key.key.id));
    });

    it('revoked: refused at once; expired: refused; both audited', async () => {
      const user = await createSignedInUser(t, { email: email('revoker'), password: PASSWORD });
      const key = await createKey(user.token, { name: 'short', expiresInDays: 1 });
      const other = await createKey(user.token, { name: 'other' });
      assert.equal((await get('/api/organizations', key.secret)).statusCode, 200);
      const revoked = await t.app.inject({ method: 'DELETE', url: `/api/keys/${other.key.id}`, headers: bearer(user.token) });
      assert.equal(revoked.statusCode, 200, revoked.body);
      assert.equal(revoked.json().key.status, 'revoked');
      assert.equal((await get('/api/organizations', other.secret)).statusCode, 401, 'revoked: refused at once');

      clock.advance(86_400_000 + 1);
      assert.equal((await get('/api/organizations', key.secret)).statusCode, 401, 'expired');
      const failures = await auditRows('api_key.use_failed');
      assert.ok(failures.some((row) => row.reason === 'REVOKED' && row.details.keyId === other.key.id));
      assert.ok(failures.some((row) => row.reason === 'EXPIRED' && row.details.keyId === key.key.id));
      assert.ok((await auditRows('api_key.revoked')).some((row) => row.details.keyId === other.key.id && row.user_id === user.id));
    });

    it('rate-limits each key (its own limit), and writes its last use at most once a minute', async () => {
      const user = await createSignedInUser(t, { email: email('limited'), password: PASSWORD });
      const key = await createKey(user.token, { name: 'limited', rateLimit: { points: 3, windowSeconds: 60 } });
      const lastUse = async () => (await sql<{ last_used_at: number | string | null; last_used_ip: string | null }>`select last_used_at, last_used_ip from api_keys where id = ${key.key.id}`.execute(t.services.storage.db)).rows[0]!;
      assert.equal((await get('/api/organizations', key.secret)).statusCode, 200);
      const first = await lastUse();
      assert.equal(Number(first.last_used_at), clock());
      assert.equal(first.last_used_ip, '127.0.0.1');
      clock.advance(30_000);
      assert.equal((await get('/api/organizations', key.secret)).statusCode, 200);
      assert.equal(Number((await lastUse()).last_used_at), Number(first.last_used_at), 'not written again within the minute');
      assert.equal((await get('/api/organizations', key.secret)).statusCode, 200);
      const limited = await get('/api/organizations', key.secret);
      assert.equal(limited.statusCode, 429);
      assert.equal(limited.json().error, 'RATE_LIMITED');
      assert.ok(Number(limited.headers['retry-after']) > 0);
      clock.advance(61_000);
      assert.equal((await get('/api/organizations', key.secret)).statusCode, 200, 'a new window');
      assert.equal(Number((await lastUse()).last_used_at), clock(), 'written again after a minute');
    });

    it('organization keys: refused by Gatehouse’s own API, active by introspection for a confidential client, surviving their creator', async () => {
      const boss = await createSignedInUser(t, { email: email('org-owner'), password: PASSWORD });
      const creator = await createSignedInUser(t, { email: email('org-admin'), password: PASSWORD });
      const stranger = await createSignedInUser(t, { email: email('stranger'), password: PASSWORD });
      const created = await t.services.organizations.create({ name: 'Acme' }, boss.id, SYSTEM_SOURCE);
      assert.ok(created.ok);
      const organizationId = created.organization.id;
      const invited = await t.services.organizations.invite(organizationId, { userId: boss.id }, { email: creator.email, role: 'ADMIN' }, SYSTEM_SOURCE);
      assert.ok(invited.ok);
      const creatorUser = (await t.services.users.findUserById(creator.id))!;
      assert.ok((await t.services.organizations.acceptInvitation({ invitationId: invited.invitation.id }, creatorUser, SYSTEM_SOURCE)).ok);

      const byStranger = await t.app.inject({ method: 'POST', url: '/api/keys', headers: bearer(stranger.token), payload: { name: 'x', organizationId } });
      assert.equal(byStranger.statusCode, 404, 'not theirs');
      assert.equal(byStranger.json().error, 'ORGANIZATION_NOT_FOUND');
      const ownerRole = await t.app.inject({ method: 'POST', url: '/api/keys', headers: bearer(creator.token), payload: { name: 'x', organizationId, roles: ['OWNER'] } });
      assert.equal(ownerRole.json().error, 'API_KEY_SCOPE_NOT_ALLOWED');
      const key = await createKey(creator.token, { name: 'billing sync', organizationId, roles: ['ADMIN'], scopes: ['billing:read'] });
      assert.equal(key.key.kind, 'organization');
      assert.match(key.secret, /^gatehouse_ok_/);
      assert.equal((await get('/api/organizations', key.secret)).statusCode, 401, 'no person: Gatehouse’s API refuses it');
      const orgList = await t.app.inject({ method: 'GET', url: `/api/keys?organizationId=${organizationId}`, headers: bearer(boss.token) });
      assert.deepEqual(orgList.json().keys.map((listed: { id: string }) => listed.id), [key.key.id]);
      const strangerList = await t.app.inject({ method: 'GET', url: `/api/keys?organizationId=${organizationId}`, headers: bearer(stranger.token) });
      assert.equal(strangerList.statusCode, 404, 'an organization does not exist for a non-member');
      assert.equal(strangerList.json().error, 'ORGANIZATION_NOT_FOUND');

      const client = await t.services.oidcClients.create({ name: 'Billing API', redirectUris: ['https://billing.example/cb'] }, SYSTEM_SOURCE);
      assert.ok(client.ok && client.clientSecret !== undefined);
      const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
      const introspect = (token: string, authorization = basic(client.client.id, client.clientSecret!)) =>
        t.app.inject({ method: 'POST', url: '/api/auth/keys/introspect', headers: { authorization, 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams({ token }).toString() });

      const expected = { active: true, token_type: 'api_key', key_id: key.key.id, kind: 'organization', scope: 'billing:read', roles: ['ADMIN'], org: { id: organizationId, slug: created.organization.slug, roles: ['ADMIN'] }, iat: Math.floor(clock() / 1000), exp: Math.floor(key.key.expiresAt / 1000) };
      const answer = await introspect(key.secret);
      assert.equal(answer.statusCode, 200, answer.body);
      assert.deepEqual(answer.json(), expected);
      const wrongSecret = await introspect(key.secret, basic(client.client.id, 'not-the-secret'));
      assert.equal(wrongSecret.statusCode, 401);
      assert.equal(wrongSecret.json().error, 'INTROSPECTION_CLIENT_INVALID');
      assert.equal((await t.app.inject({ method: 'POST', url: '/api/auth/keys/introspect', payload: { token: key.secret } })).statusCode, 401, 'no client');
      assert.deepEqual((await introspect('gatehouse_pk_nonsense')).json(), { active: false });

      const personal = await createKey(stranger.token, { name: 'mine', scopes: ['reports'] });
      assert.deepEqual((await introspect(personal.secret)).json(), { active: true, token_type: 'api_key', key_id: personal.key.id, kind: 'personal', scope: 'reports', roles: [], sub: stranger.id, iat: Math.floor(clock() / 1000), exp: Math.floor(personal.key.expiresAt / 1000) });

      // The creator leaves, then their account goes: the key keeps working.
      assert.ok((await t.services.organizations.leave(organizationId, creator.id, SYSTEM_SOURCE)).ok);
      assert.deepEqual((await introspect(key.secret)).json(), expected);
      assert.ok((await t.services.accountDeletion.deleteUser(creator.id, SYSTEM_SOURCE)).ok);
      assert.deepEqual((await introspect(key.secret)).json(), expected);

      // Revoked by an administrator: inactive at once.
      const admin = await createSignedInUser(t, { email: email('revoking-admin'), password: PASSWORD, roles: ['ADMIN'] });
      const revokedByAdmin = await t.app.inject({ method: 'DELETE', url: `/api/admin/keys/${personal.key.id}`, headers: bearer(admin.token) });
      assert.equal(revokedByAdmin.statusCode, 200, revokedByAdmin.body);
      assert.deepEqual((await introspect(personal.secret)).json(), { active: false });
    });

    it('an OWNER revokes more of the organization’s keys at once than the pool has connections: each is revoked', async () => {
      const boss = await createSignedInUser(t, { email: email('bulk-owner'), password: PASSWORD });
      const created = await t.services.organizations.create({ name: 'Bulk' }, boss.id, SYSTEM_SOURCE);
      assert.ok(created.ok);
      const actor = { userId: boss.id };
      const keys = [];
      for (let i = 0; i < TEST_POOL_SIZE * 2; i++) {
        const made = await t.services.apiKeys.createForOrganization(created.organization.id, actor, { name: `bulk ${i}` }, SYSTEM_SOURCE);
        assert.ok(made.ok);
        keys.push(made.key.id);
      }
      // Each revocation checks the OWNER's membership; inside its transaction that read needed a
      // second connection, and eight at once on a pool of four waited out the pool's timeout (503).
      const results = await Promise.all(keys.map((id) => t.services.apiKeys.revoke(id, actor, SYSTEM_SOURCE)));
      assert.deepEqual(results.map((result) => result.ok && result.key.revokedAt !== null), keys.map(() => true));
    });

    it('administrators: list every key, create one for a person (never more than they hold), revoke', async () => {
      const admin = await createSignedInUser(t, { email: email('keys-admin'), password: PASSWORD, roles: ['ADMIN'] });
      const person = await createSignedInUser(t, { email: email('keys-person'), password: PASSWORD, roles: ['AUDITOR'] });
      const made = await t.app.inject({ method: 'POST', url: `/api/admin/users/${person.id}/keys`, headers: bearer(admin.token), payload: { name: 'for them', roles: ['AUDITOR'] } });
      assert.equal(made.statusCode, 201, made.body);
      const adminScope = await t.app.inject({ method: 'POST', url: `/api/admin/users/${person.id}/keys`, headers: bearer(admin.token), payload: { name: 'x', scopes: ['admin'] } });
      assert.equal(adminScope.json().error, 'API_KEY_SCOPE_NOT_ALLOWED', 'the person is no ADMIN');
      const listed = await t.app.inject({ method: 'GET', url: `/api/admin/keys?userId=${person.id}`, headers: bearer(admin.token) });
      assert.deepEqual(listed.json().keys.map((key: { id: string }) => key.id), [made.json().key.id]);
      const byPerson = await t.app.inject({ method: 'GET', url: '/api/admin/keys', headers: bearer(person.token) });
      assert.equal(byPerson.statusCode, 403);
    });

    it('never puts a key in the audit log or a webhook', async () => {
      const user = await createSignedInUser(t, { email: email('secretive'), password: PASSWORD });
      const endpoint = await t.services.webhooks.create({ url: 'https://receiver.example/hook', eventTypes: ['api_key.created', 'api_key.revoked', 'api_key.use_failed'] }, SYSTEM_SOURCE);
      assert.ok(endpoint.ok, JSON.stringify(endpoint));
      const key = await createKey(user.token, { name: 'watched' });
      await t.app.inject({ method: 'DELETE', url: `/api/keys/${key.key.id}`, headers: bearer(user.token) });
      await get('/api/organizations', key.secret);
      const audit = await sql<Record<string, unknown>>`select * from audit_events`.execute(t.services.storage.db);
      assert.ok(!JSON.stringify(audit.rows).includes(key.secret));
      assert.ok(!JSON.stringify(audit.rows).includes(key.secret.slice(25)), 'nor any part of its secret');
      const deliveries = await sql<Record<string, unknown>>`select * from webhook_deliveries`.execute(t.services.storage.db);
      const sent = JSON.stringify(deliveries.rows);
      for (const type of ['api_key.created', 'api_key.revoked', 'api_key.use_failed']) assert.ok(sent.includes(type), `${type} sent`);
      assert.ok(sent.includes(key.key.id));
      assert.ok(!sent.includes(key.secret) && !sent.includes(key.secret.slice(25)));
    });
  });

  // The key guard takes the key uses it needs at the first request made with a key (their code is
  // loaded then: lib/deferred-service.ts); that request is guarded as every later one is.
  describe(`API keys: the first request made with a key (${backend.name})`, { skip: backend.skip }, () => {
    const forScope = useTestApp(backend);
    const forPath = useTestApp(backend);

    it('is refused without the write scope, and where keys may not go, each the first of its instance', async () => {
      const cases = [
        { t: forScope, request: { method: 'DELETE', url: '/api/auth/sessions' }, code: 'API_KEY_SCOPE_REQUIRED' },
        { t: forPath, request: { method: 'POST', url: '/api/keys', payload: { name: 'made by a key' } }, code: 'API_KEY_NOT_ALLOWED' },
      ] as const;
      for (const { t, request, code } of cases) {
        const user = await createSignedInUser(t, { email: `first-${code}-${backend.name}@example.com`, password: PASSWORD });
        const key = (await keysOver(t).createKey(user.token, { name: 'first' })).secret;
        const refused = await t.app.inject({ ...request, headers: bearer(key) });
        assert.equal(refused.statusCode, 403, refused.body);
        assert.equal(refused.json().error, code);
      }
    });
  });

  // It counts statements: no module's background jobs (their polls would land in the windows).
  describe(`API keys kept between uses (${backend.name})`, { skip: backend.skip }, () => {
    const clock = fakeClock();
    const t = useTestApp(backend, { clock, modules: modulesWithoutJobs() });
    const { createKey, get } = keysOver(t);

    it('kept between uses on SQLite while nothing is committed (no key or owner read); after any commit, read again; revoked from another connection, refused at once', async () => {
      const user = await createSignedInUser(t, { email: `kept-${backend.name}@example.com`, password: PASSWORD });
      const key = await createKey(user.token, { name: 'kept' });
      const statements = async (run: () => Promise<unknown>) => (await statementsOf(t, run)).length;
      const use = async () => assert.equal((await get('/api/organizations', key.secret)).statusCode, 200);
      /** A commit by another connection (another process: the CLI, another worker). */
      const outsideWrite = async (statement: string) => {
        if (backend.name !== 'sqlite') return void (await sql.raw(statement).execute(t.services.storage.db));
        const outside = new DatabaseSync((t.database.config as { path: string }).path);
        try {
          outside.exec('PRAGMA busy_timeout = 5000');
          outside.exec(statement);
        } finally {
          outside.close();
        }
      };
      // The first uses write the rate-limit leases (at uses 1, 2, 4 and 8: key-rate-lease.ts) and
      // the last use; after ten, the next uses of this minute write nothing.
      for (let i = 0; i < 10; i++) await use();
      const kept = await statements(use);
      assert.equal(await statements(use), kept, 'nothing committed: the same again');
      if (backend.name === 'sqlite') {
        // Kept: judged at once, without a promise (no turn of the queue on the common path)...
        const uses = await t.services.apiKeyUse.syncFirst();
        const judged = uses.find(key.secret, 'api');
        assert.ok(!(judged instanceof Promise), 'a kept key is judged without a promise');
        assert.deepEqual(judged?.row.id, key.key.id);
        // Expiry comes without any commit, so the kept path checks it at every use too.
        const untilExpiry = key.key.expiresAt - clock() + 1;
        clock.advance(untilExpiry);
        const expired = uses.find(key.secret, 'api');
        clock.advance(-untilExpiry);
        assert.equal(await expired, null, 'expired while kept: refused');
        await use(); // the refusal's audit event was a commit: the key is read and kept again
        // ...and the secret is checked at every use: another secret under this key's id, with a valid checksum, grants nothing on the kept path...
        const body = `gatehouse_pk_${key.key.id}${'x'.repeat(30)}`;
        const forged = `${body}${checksumOf(body)}`;
        assert.deepEqual(parseApiKey(forged), { kind: 'personal', id: key.key.id });
        assert.equal(await uses.find(forged, 'api'), null);
        // ...nor over HTTP (judged on a fresh read: the refusal's audit event above was a commit).
        assert.equal((await get('/api/organizations', forged)).statusCode, 401);
      }
      await outsideWrite(`update users set name = 'Renamed' where id = '${user.id}'`);
      const afterCommit = await statements(use);
      assert.equal(afterCommit, backend.name === 'sqlite' ? kept + 3 : kept, 'on SQLite the key, its owner and their roles were kept (three reads), and are read again after a commit');

      await outsideWrite(`update api_keys set revoked_at = ${clock()} where id = '${key.key.id}'`);
      assert.equal((await get('/api/organizations', key.secret)).statusCode, 401, 'revoked: refused at once');
    });

  });

  describe(`API keys in the metrics (${backend.name})`, { skip: backend.skip }, () => {
    const METRICS_TOKEN = 'metrics-token-for-api-key-tests-0123456789';
    const clock = fakeClock();
    const t = useTestApp(backend, { clock, env: { METRICS_TOKEN } });
    const { createKey, get } = keysOver(t);
    async function scrape() {
      const response = await t.app.inject({ method: 'GET', url: '/metrics', headers: bearer(METRICS_TOKEN) });
      assert.equal(response.statusCode, 200);
      return { families: parseExposition(response.body), body: response.body };
    }

    it('counts every authentication by where and outcome, and keys created and revoked; never a key, its id or its owner', async () => {
      const user = await createSignedInUser(t, { email: `counted-${backend.name}@example.com`, password: PASSWORD });
      const reader = await createKey(user.token, { name: 'reader' });
      const limited = await createKey(user.token, { name: 'limited', rateLimit: { points: 1, windowSeconds: 60 } });
      const revoked = await createKey(user.token, { name: 'revoked' });
      const expiring = await createKey(user.token, { name: 'expiring', expiresInDays: 1 });
      assert.equal((await t.app.inject({ method: 'DELETE', url: `/api/keys/${revoked.key.id}`, headers: bearer(user.token) })).statusCode, 200);

      assert.equal((await get('/api/organizations', reader.secret)).statusCode, 200);
      assert.equal((await get('/api/organizations', reader.secret)).statusCode, 200);
      assert.equal((await t.app.inject({ method: 'DELETE', url: '/api/auth/sessions', headers: bearer(reader.secret) })).statusCode, 403, 'no write scope');
      assert.equal((await get('/dashboard', reader.secret)).statusCode, 403, 'a page');
      assert.equal((await get('/api/organizations', `${reader.secret.slice(0, -1)}${reader.secret.endsWith('a') ? 'b' : 'a'}`)).statusCode, 401, 'a typo');
      assert.equal((await get('/api/organizations', revoked.secret)).statusCode, 401);
      assert.equal((await get('/api/organizations', limited.secret)).statusCode, 200);
      assert.equal((await get('/api/organizations', limited.secret)).statusCode, 429);
      assert.equal((await get('/api/organizations', limited.secret)).statusCode, 429, 'each refusal counts, though audited once a minute');

      const client = await t.services.oidcClients.create({ name: 'Reports API', redirectUris: ['https://reports.example/cb'] }, SYSTEM_SOURCE);
      assert.ok(client.ok && client.clientSecret !== undefined);
      const introspect = async (token: string) => {
        const authorization = `Basic ${Buffer.from(`${encodeURIComponent(client.client.id)}:${encodeURIComponent(client.clientSecret!)}`).toString('base64')}`;
        const answer = await t.app.inject({ method: 'POST', url: '/api/auth/keys/introspect', headers: { authorization, 'content-type': 'application/x-www-form-urlencoded' }, payload: new URLSearchParams({ token }).toString() });
        return (answer.json() as { active: boolean }).active;
      };
      assert.equal(await introspect(reader.secret), true);
      assert.equal(await introspect(revoked.secret), false);
      assert.equal(await introspect('gatehouse_pk_nonsense'), false);
      clock.advance(86_400_000 + 1);
      assert.equal((await get('/api/organizations', expiring.secret)).statusCode, 401);

      const { families, body } = await scrape();
      const authentications = (via: string, outcome: string) => valueOf(families, 'gatehouse_api_key_authentications_total', { via, outcome });
      assert.equal(families.get('gatehouse_api_key_authentications_total')?.type, 'counter');
      assert.equal(authentications('api', 'accepted'), 3);
      assert.equal(authentications('api', 'scope'), 1);
      assert.equal(authentications('api', 'not_allowed'), 1);
      assert.equal(authentications('api', 'unknown'), 1);
      assert.equal(authentications('api', 'revoked'), 1);
      assert.equal(authentications('api', 'rate_limited'), 2);
      assert.equal(authentications('api', 'expired'), 1);
      assert.equal(authentications('introspection', 'accepted'), 1);
      assert.equal(authentications('introspection', 'revoked'), 1);
      assert.equal(authentications('introspection', 'unknown'), 1);
      assert.equal(valueOf(families, 'gatehouse_api_key_changes_total', { event: 'created', kind: 'personal' }), 4);
      assert.equal(valueOf(families, 'gatehouse_api_key_changes_total', { event: 'revoked', kind: 'personal' }), 1);
      for (const secret of [reader.secret, revoked.secret]) assert.ok(!body.includes(secret.slice(13)), 'no key in the exposition');
      for (const id of [reader.key.id, user.id]) assert.ok(!body.includes(id), 'no key id or owner in a label');
    });
  });
}
