/**
 * Lazy migration (LEGACY_VERIFY_URL), against a stand-in old system on loopback: an address
 * unknown here signs in with the password the old system accepts, and from then on is a Gatehouse
 * account (argon2id, audited `user.created` via `legacy`; the old system is not asked again); a
 * wrong password, an old system that is down, or one that refuses our secret is a wrong password
 * and creates nothing. Off by default. The config refuses a short secret.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, type TestApp } from '../../test/helpers/app.ts';
import { loadConfig } from '../modules.ts';

const SECRET = 'a-shared-secret-with-the-old-system-0123456789';
const OLD_USERS = new Map([['old@example.com', 'the old password 123']]);

describe('lazy migration from a live old system', () => {
  let database: TestDatabase;
  let t: TestApp;
  let oldSystem: Server;
  const asked: Array<{ email: string; authorization: string | undefined }> = [];
  let down = false;

  before(async () => {
    oldSystem = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk));
      request.on('end', () => {
        const { email, password } = JSON.parse(body) as { email: string; password: string };
        asked.push({ email, authorization: request.headers.authorization });
        if (down) return void request.socket.destroy();
        const ok = request.headers.authorization === `Bearer ${SECRET}` && OLD_USERS.get(email) === password;
        response.writeHead(ok ? 200 : 401).end();
      });
    });
    oldSystem.listen(0, '127.0.0.1');
    await once(oldSystem, 'listening');
    database = await createSqliteDatabase();
    const { port } = oldSystem.address() as AddressInfo;
    t = await createTestApp(database, { env: { LEGACY_VERIFY_URL: `http://127.0.0.1:${port}/verify`, LEGACY_VERIFY_SECRET: SECRET } });
  });
  after(async () => {
    await t.close();
    await database.drop();
    oldSystem.close();
  });

  const signIn = (email: string, password: string) => t.app.inject({ method: 'POST', url: '/api/auth', payload: { email, password } });

  it('a wrong password creates nothing; the right one creates the account, which is then Gatehouse\'s own', async () => {
    assert.equal((await signIn('old@example.com', 'not it')).statusCode, 401);
    assert.equal(await t.services.users.findUserByEmail('old@example.com'), null);
    assert.deepEqual(asked.at(-1), { email: 'old@example.com', authorization: `Bearer ${SECRET}` });

    const signedIn = await signIn('Old@Example.com', 'the old password 123');
    assert.equal(signedIn.statusCode, 200, signedIn.body);
    const credentials = await t.services.users.findCredentialsByEmail('old@example.com');
    assert.match(credentials!.passwordHash!, /^\$argon2id\$/);
    const events = await t.services.storage.db.selectFrom('audit_events').select(['type', 'details']).where('user_id', '=', credentials!.id).where('type', '=', 'user.created').execute();
    assert.equal(events.length, 1);
    assert.match(String(events[0]!.details), /legacy/);

    const before = asked.length;
    assert.equal((await signIn('old@example.com', 'the old password 123')).statusCode, 200);
    assert.equal((await signIn('old@example.com', 'not it')).statusCode, 401);
    assert.equal(asked.length, before, 'an account here is never checked against the old system again');
  });

  it('an old system that is down, or an address it does not know, is a wrong password', async () => {
    assert.equal((await signIn('nobody@example.com', 'whatever it is')).statusCode, 401);
    down = true;
    try {
      OLD_USERS.set('late@example.com', 'another old password');
      assert.equal((await signIn('late@example.com', 'another old password')).statusCode, 401);
      assert.equal(await t.services.users.findUserByEmail('late@example.com'), null);
    } finally {
      down = false;
    }
  });

  it('is off by default, and needs a long secret and an https URL in production', () => {
    const base = { NODE_ENV: 'test', AUTH_SECRET: 'x'.repeat(48), DATABASE_URL: 'sqlite::memory:' };
    assert.equal(loadConfig(base).legacyVerify.url, null);
    assert.throws(() => loadConfig({ ...base, LEGACY_VERIFY_URL: 'https://old.example.com/verify', LEGACY_VERIFY_SECRET: 'short' }), /LEGACY_VERIFY_SECRET must be set/);
    assert.throws(() => loadConfig({ ...base, NODE_ENV: 'production', AUTH_URL: 'https://auth.example.com', LEGACY_VERIFY_URL: 'http://old.example.com/verify', LEGACY_VERIFY_SECRET: SECRET }), /LEGACY_VERIFY_URL/);
  });
});
