/**
 * The audit log as the features write it, on every backend and strategy: each wired action leaves
 * its event, with who and from where, and no row ever holds a password, token or secret.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJwt } from 'jose';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { bootstrapAdmin } from '../credentials/bootstrap-admin.ts';
import type { AuditEvent } from './audit.service.ts';

const PASSWORD = 'correct horse battery staple';
const WRONG_PASSWORD = 'wrong horse battery staple';
const USER_AGENT = 'audit-test-agent/1.0';

function fakeClock() {
  let now = Date.now();
  return Object.assign(() => now, {
    advance(ms: number) {
      now += ms;
    },
  });
}

for (const backend of await backends()) {
  for (const strategy of ['database', 'jwt'] as const) {
    describe(`audit events, ${strategy} strategy, on ${backend.name}`, { skip: backend.skip }, () => {
      let database: TestDatabase;
      let t: TestApp;
      const clock = fakeClock();
      let count = 0;
      /** Every secret a test handled; none may appear in the audit log. */
      const secrets = new Set<string>([PASSWORD, WRONG_PASSWORD]);

      before(async () => {
        database = await backend.create();
        t = await createTestApp(database, { clock, env: { SESSION_STRATEGY: strategy } });
      });
      after(async () => {
        await t?.close();
        await database?.drop();
      });

      async function newUser() {
        const email = `person${++count}@example.com`;
        return { ...(await createUser(t.services, { email, password: PASSWORD })), email };
      }

      async function signIn(email: string, password = PASSWORD) {
        const response = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email, password }, headers: { 'user-agent': USER_AGENT } });
        if (response.statusCode === 200) {
          const body = response.json();
          secrets.add(body.token);
          secrets.add(body.refreshToken);
          return { status: 200, token: body.token as string, refreshToken: body.refreshToken as string, sessionId: decodeJwt(body.token).sid as string };
        }
        return { status: response.statusCode, token: '', refreshToken: '', sessionId: '' };
      }

      async function eventsOf(userId: string): Promise<AuditEvent[]> {
        return (await t.services.audit.listEvents({ userId, limit: 200 })).events;
      }

      const bearer = (token: string) => ({ authorization: `Bearer ${token}`, 'user-agent': USER_AGENT });

      it('records a successful sign-in with the client, and no address', async () => {
        const user = await newUser();
        const session = await signIn(user.email);
        const [event] = (await eventsOf(user.id)).filter((e) => e.type === 'signin.success');
        assert.ok(event);
        assert.equal(event.ip, '127.0.0.1');
        assert.equal(event.userAgent, USER_AGENT);
        assert.equal(event.email, null);
        assert.equal(event.actorUserId, null);
        // The first factor's kind is recorded by name (issue 31: sign-in kinds are an open vocabulary).
        assert.deepEqual(event.details, { sessionId: session.sessionId, amr: ['pwd'], method: 'password' });
      });

      it('records failures alike for an unknown address and a wrong password, with the normalised address tried', async () => {
        const user = await newUser();
        const { audit, users } = t.services;
        const calls = { record: 0, lookups: 0, userReads: 0 };
        const originals = { record: audit.record, findCredentialsByEmail: users.findCredentialsByEmail, findUserById: users.findUserById };
        audit.record = (...args) => ((calls.record++), originals.record(...args));
        users.findCredentialsByEmail = (...args) => ((calls.lookups++), originals.findCredentialsByEmail(...args));
        users.findUserById = (...args) => ((calls.userReads++), originals.findUserById(...args));
        const work: Array<typeof calls> = [];
        try {
          for (const [email, password] of [['  Nobody.Here@EXAMPLE.com ', PASSWORD], [user.email.toUpperCase(), WRONG_PASSWORD]] as const) {
            Object.assign(calls, { record: 0, lookups: 0, userReads: 0 });
            assert.equal((await signIn(email, password)).status, 401);
            work.push({ ...calls });
          }
        } finally {
          Object.assign(audit, { record: originals.record });
          Object.assign(users, { findCredentialsByEmail: originals.findCredentialsByEmail, findUserById: originals.findUserById });
        }
        assert.deepEqual(work[0], { record: 1, lookups: 1, userReads: 0 }, 'unknown address');
        assert.deepEqual(work[1], work[0], 'wrong password: the same storage work');

        const failures = (await t.services.audit.listEvents({ type: 'signin.failure', limit: 200 })).events;
        const unknown = failures.find((e) => e.email === 'nobody.here@example.com')!;
        assert.equal(unknown.userId, null, 'no account to name');
        assert.equal(unknown.reason, 'INVALID_CREDENTIALS');
        assert.equal(unknown.userAgent, USER_AGENT);
        const wrong = failures.find((e) => e.userId === user.id)!;
        assert.equal(wrong.email, user.email);
        assert.equal(wrong.reason, 'INVALID_CREDENTIALS');
      });

      it('records sign-out, ending one session and ending the others, with the user as actor', async () => {
        const user = await newUser();
        const a = await signIn(user.email);
        const b = await signIn(user.email);
        const c = await signIn(user.email);
        const d = await signIn(user.email);
        assert.equal((await t.app.inject({ method: 'DELETE', url: `/api/auth/sessions/${b.sessionId}`, headers: bearer(a.token) })).statusCode, 200);
        assert.equal((await t.app.inject({ method: 'DELETE', url: '/api/auth/sessions?keepCurrent=true', headers: bearer(a.token) })).json().ended, 2);
        assert.equal((await t.app.inject({ method: 'POST', url: '/api/auth/signout', headers: bearer(a.token) })).statusCode, 200);
        assert.equal((await t.app.inject({ method: 'POST', url: '/api/auth/signout', headers: bearer(a.token) })).statusCode, 200, 'again: nothing to record');

        const events = await eventsOf(user.id);
        const of = (type: string) => events.filter((e) => e.type === type);
        assert.equal(of('signout').length, 1);
        assert.deepEqual(of('signout')[0]!.details, { sessionId: a.sessionId });
        assert.deepEqual(of('session.ended').map((e) => e.details), [{ sessionId: b.sessionId }]);
        assert.deepEqual(of('user.sessions_ended').map((e) => e.details), [{ count: 2, keptSessionId: a.sessionId }]);
        for (const event of [...of('signout'), ...of('session.ended'), ...of('user.sessions_ended')]) {
          assert.equal(event.actorUserId, user.id);
          assert.equal(event.userAgent, USER_AGENT);
        }
        assert.ok([c, d].every((s) => s.sessionId !== a.sessionId));
      });

      it('records a browser replacing its session when it signs in again', async () => {
        const user = await newUser();
        const jar = new CookieJar();
        const first = await t.app.inject({ method: 'POST', url: '/api/auth/signin', payload: { email: user.email, password: PASSWORD } });
        jar.store(first);
        const csrf = await t.app.inject({ method: 'GET', url: '/api/auth/csrf', headers: { cookie: jar.header() } });
        jar.store(csrf);
        secrets.add(first.json().refreshToken);
        const firstSession = decodeJwt(first.json().token).sid;
        const second = await t.app.inject({ method: 'POST', url: '/api/auth/signin', headers: { cookie: jar.header(), 'x-csrf-token': csrf.json().csrfToken }, payload: { email: user.email, password: PASSWORD } });
        assert.equal(second.statusCode, 200, second.body);
        secrets.add(second.json().refreshToken);
        const replaced = (await eventsOf(user.id)).find((e) => e.type === 'session.ended')!;
        assert.equal(replaced.reason, 'REPLACED');
        assert.deepEqual(replaced.details, { sessionId: firstSession });
      });

      it('records refresh-token reuse with the client that presented it', async () => {
        const user = await newUser();
        const stolen = await signIn(user.email);
        const refresh = (token: string, agent: string) =>
          t.app.inject({ method: 'POST', url: '/api/auth/refresh', headers: { 'user-agent': agent }, payload: { refreshToken: token } });
        const next = await refresh(stolen.refreshToken, USER_AGENT);
        secrets.add(next.json().refreshToken);
        secrets.add(next.json().token);
        clock.advance(11_000);
        const reuse = await refresh(stolen.refreshToken, 'thief-agent/6.6');
        assert.equal(reuse.json().error, 'TOKEN_REUSED');
        const [event] = (await eventsOf(user.id)).filter((e) => e.type === 'refresh.reuse_detected');
        assert.ok(event);
        assert.equal(event.reason, 'TOKEN_REUSED');
        assert.equal(event.userAgent, 'thief-agent/6.6');
        assert.deepEqual(event.details, { sessionId: stolen.sessionId });
      });

      it('records the bootstrapped admin as created at start', async () => {
        const env = { SESSION_STRATEGY: strategy, ADMIN_EMAIL: `boot-${strategy}@example.com`, ADMIN_PASSWORD: 'bootstrap-passphrase-42' };
        secrets.add(env.ADMIN_PASSWORD);
        const other = await createTestApp(database, { env });
        try {
          assert.equal(await bootstrapAdmin(other.services), 'created');
          const admin = (await other.services.users.findUserByEmail(env.ADMIN_EMAIL))!;
          const [event] = (await eventsOf(admin.id)).filter((e) => e.type === 'user.created');
          assert.deepEqual(event?.details, { roles: ['ADMIN'], via: 'bootstrap' });
        } finally {
          await other.close();
        }
      });

      it('holds no password, token, password hash or refresh seed in any row', async () => {
        const { db } = t.services.storage;
        for (const row of await db.selectFrom('users').select('password_hash').execute()) if (row.password_hash) secrets.add(row.password_hash);
        for (const row of await db.selectFrom('sessions').select('refresh_seed').execute()) secrets.add(row.refresh_seed);
        const rows = await db.selectFrom('audit_events').selectAll().execute();
        assert.ok(rows.length >= 15, `the tests above wrote events (${rows.length})`);
        const text = JSON.stringify(rows);
        for (const secret of secrets) assert.ok(!text.includes(secret), `a secret (${secret.slice(0, 6)}…) is in the audit log`);
        for (const row of rows) if (row.email !== null) assert.equal(row.type, 'signin.failure');
      });
    });
  }
}
