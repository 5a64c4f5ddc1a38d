/**
 * Hostile input that must change nothing: fields a client may not set (mass assignment), deep
 * nesting, over-long passwords (refused before any hashing), and e-mail spellings that must always
 * reach the same one account, never another.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';

const PASSWORD = 'correct horse battery staple';

describe('input hardening', () => {
  let database: TestDatabase;
  let t: TestApp;
  let hashesVerified = 0;

  before(async () => {
    database = await createSqliteDatabase();
    t = await createTestApp(database);
    // Count every verification the hasher does, dummy ones included.
    const { hasher } = t.services;
    const verify = hasher.verify.bind(hasher);
    const verifyDummy = hasher.verifyDummy.bind(hasher);
    hasher.verify = async (hash, password) => ((hashesVerified += 1), verify(hash, password));
    hasher.verifyDummy = async (password, address) => ((hashesVerified += 1), verifyDummy(password, address));
  });
  after(async () => {
    await t?.close();
    await database?.drop();
  });

  it('ignores fields nobody may set through a body: roles, emailVerified, id, disabled', async () => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/auth/signup',
      payload: { email: 'mallory@example.com', password: 'an unusual passphrase of mine', name: 'Mallory', roles: ['ADMIN'], role: 'ADMIN', emailVerified: true, emailVerifiedAt: 1, id: 'chosen-id', disabledAt: null },
    });
    assert.equal(response.statusCode, 202, response.body);
    const user = (await t.services.users.findUserByEmail('mallory@example.com'))!;
    assert.deepEqual(user.roles, []);
    assert.equal(user.emailVerifiedAt, null);
    assert.notEqual(user.id, 'chosen-id');

    const admin = await createUser(t.services, { email: 'root@example.com', password: PASSWORD, roles: ['ADMIN'] });
    const token = (await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: admin.email, password: PASSWORD } })).json().token;
    const patch = await t.app.inject({
      method: 'PATCH',
      url: `/api/admin/users/${user.id}`,
      headers: { authorization: `Bearer ${token}` },
      payload: { name: 'Mallory M.', email: 'root@example.com', passwordHash: 'x', id: 'other', emailVerified: true },
    });
    assert.equal(patch.statusCode, 200, patch.body);
    const after = (await t.services.users.findUserById(user.id))!;
    assert.equal(after.name, 'Mallory M.');
    assert.equal(after.email, 'mallory@example.com');
    assert.equal(after.emailVerifiedAt, null);
    const row = await t.services.storage.db.selectFrom('users').select('password_hash').where('id', '=', user.id).executeTakeFirstOrThrow();
    assert.notEqual(row.password_hash, 'x');
  });

  it('answers deep nesting and prototype keys with a 4xx, never a 500', async () => {
    const bodies = [
      '['.repeat(8_000) + ']'.repeat(8_000),
      '{"email":'.repeat(1_500) + '1' + '}'.repeat(1_500),
      `{"email":"a@b.example","password":${'['.repeat(5_000)}${']'.repeat(5_000)}}`,
      '{"constructor":{"prototype":{"isAdmin":true}},"email":"a@b.example","password":"x"}',
      '{"__proto__":{"roles":["ADMIN"]},"email":"a@b.example","password":"x"}',
    ];
    for (const payload of bodies) {
      const response = await t.app.inject({ method: 'POST', url: '/api/auth', headers: { 'content-type': 'application/json' }, payload });
      assert.ok(response.statusCode >= 400 && response.statusCode < 500, `${payload.slice(0, 40)}: ${response.statusCode}`);
      assert.doesNotMatch(response.body, /\sat\s|\.ts:\d/);
    }
    assert.equal(({} as Record<string, unknown>).isAdmin, undefined, 'no prototype was polluted');
  });

  it('refuses very long passwords before any hashing', async () => {
    await createUser(t.services, { email: 'long@example.com', password: PASSWORD });
    const before = hashesVerified;
    const huge = 'p'.repeat(4_097);
    const signIn = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: 'long@example.com', password: huge } });
    assert.equal(signIn.statusCode, 422);
    assert.equal(signIn.json().errors[0].field, 'password');
    const signup = await t.app.inject({ method: 'POST', url: '/api/auth/signup', payload: { email: 'longer@example.com', password: huge, name: 'L' } });
    assert.equal(signup.statusCode, 422);
    assert.equal(hashesVerified, before, 'nothing was hashed');
    assert.equal(await t.services.users.findUserByEmail('longer@example.com'), null);
  });

  it('routes every spelling of an address to its one account, and a NUL nowhere', async () => {
    await createUser(t.services, { email: 'alice@example.com', password: PASSWORD });
    const aliceId = (await t.services.users.findUserByEmail('alice@example.com'))!.id;
    for (const spelling of ['Alice@Example.COM', '  alice@example.com\t', 'ａｌｉｃｅ@ｅｘａｍｐｌｅ.ｃｏｍ']) {
      const response = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: spelling, password: PASSWORD } });
      assert.equal(response.statusCode, 200, spelling);
      assert.equal(response.json().user.id, aliceId, spelling);
    }
    // Signing up with another spelling is the existing account: nothing new, the owner is mailed.
    const signup = await t.app.inject({ method: 'POST', url: '/api/auth/signup', payload: { email: 'ALICE@example.com', password: 'an unusual passphrase of mine', name: 'Eve' } });
    assert.equal(signup.statusCode, 202);
    assert.equal(await t.services.users.countUsers(), (await t.services.users.listUsers({ limit: 200 })).users.length);
    const mails = await t.services.storage.db.selectFrom('mail_outbox').select(['to_address', 'template']).where('template', '=', 'signup-existing-account').execute();
    assert.deepEqual(mails.map((m) => m.to_address), ['alice@example.com'], 'to the stored address, not the one typed');
    for (const hostile of ['alice@example.com\u0000', 'alice@example.com\u0000evil@example.com']) {
      const response = await t.app.inject({ method: 'POST', url: '/api/auth/forgot-password', payload: { email: hostile } });
      assert.equal(response.statusCode, 400, JSON.stringify(hostile));
    }
    // Look-alikes that are not the same address stay different accounts.
    for (const other of ['alice@example.com.evil', 'alice+x@example.com', 'alıce@example.com']) {
      const response = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: other, password: PASSWORD } });
      // Never alice's account: refused as a wrong address (401) or not an address at all (422).
      assert.ok(response.statusCode === 401 || response.statusCode === 422, `${other}: ${response.statusCode}`);
    }
  });
});
