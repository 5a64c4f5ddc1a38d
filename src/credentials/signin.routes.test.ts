import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createLocalJWKSet, decodeJwt, jwtVerify } from 'jose';
import { hash, parseOptions, type Algorithm } from '@node-rs/argon2';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';

const PASSWORD = 'correct horse battery staple';

function postJson(app: TestApp['app'], url: string, body: unknown, headers: Record<string, string> = {}) {
  return app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/json', ...headers },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

for (const backend of await backends()) {
  describe(`sign-in on ${backend.name}`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let t: TestApp;
    let alice: { id: string; email: string; name: string };

    before(async () => {
      database = await backend.create();
      t = await createTestApp(database);
      alice = await createUser(t.services, { email: 'alice@example.com', password: PASSWORD, name: 'Alice' });
    });
    after(async () => {
      await t?.close();
      await database?.drop();
    });

    for (const url of ['/api/auth', '/api/auth/signin']) {
      it(`${url} returns a signed token, the user summary and a refresh token`, async () => {
        const response = await postJson(t.app, url, { email: 'alice@example.com', password: PASSWORD });
        assert.equal(response.statusCode, 200);
        assert.equal(response.headers['cache-control'], 'no-store');
        const body = response.json();
        assert.deepEqual(Object.keys(body).sort(), ['expiresAt', 'refreshToken', 'token', 'user']);
        assert.deepEqual(body.user, { id: alice.id, email: 'alice@example.com', name: 'Alice' });
        assert.match(body.refreshToken, /^[\w-]{22}\.0\.[\w-]{43}$/);

        const jwks = (await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json();
        const { payload, protectedHeader } = await jwtVerify(body.token, createLocalJWKSet(jwks), {
          issuer: t.config.tokens.issuer,
          audience: t.config.tokens.audience,
          algorithms: ['EdDSA'],
          typ: 'at+jwt',
        });
        assert.equal(protectedHeader.kid, jwks.keys.find((key: { alg: string }) => key.alg === 'EdDSA').kid, 'signed with the Ed25519 key');
        assert.equal(payload.sub, alice.id);
        assert.deepEqual(payload.roles, []);
        assert.deepEqual(Object.keys(payload).sort(), ['amr', 'aud', 'auth_time', 'exp', 'iat', 'iss', 'jti', 'roles', 'sid', 'sub']);
        assert.deepEqual(payload.amr, ['pwd'], 'RFC 8176: a password');
        assert.equal(payload.auth_time, payload.iat, 'authenticated when the token was issued');
        assert.ok(!JSON.stringify(payload).includes('alice'), 'no personal data in claims');
        assert.equal(new Date(body.expiresAt).getTime(), payload.exp! * 1000);
        assert.equal(payload.sid, body.refreshToken.split('.')[0]);
      });
    }

    it('writes a session row with the client address and user agent', async () => {
      const response = await postJson(t.app, '/api/auth', { email: 'alice@example.com', password: PASSWORD }, { 'user-agent': 'test-agent/1.0' });
      const sid = decodeJwt(response.json().token).sid as string;
      const row = await t.services.storage.db.selectFrom('sessions').selectAll().where('id', '=', sid).executeTakeFirstOrThrow();
      assert.equal(row.user_id, alice.id);
      assert.equal(row.user_agent, 'test-agent/1.0');
      assert.equal(row.ip, '127.0.0.1');
      assert.equal(row.revoked_at, null);
      assert.equal(row.expires_at - row.created_at, t.config.sessions.maxAgeSeconds * 1000);
      assert.equal(row.refresh_generation, 0);
      const stored = JSON.stringify(row);
      assert.ok(!stored.includes(response.json().refreshToken.split('.')[2]), 'the token itself is not stored');
    });

    it('normalises the submitted e-mail like stored ones', async () => {
      for (const email of ['  ALICE@Example.COM ', 'ａｌｉｃｅ@example.com']) {
        const response = await postJson(t.app, '/api/auth', { email, password: PASSWORD });
        assert.equal(response.statusCode, 200, email);
        assert.equal(response.json().user.id, alice.id);
      }
    });

    it('answers a wrong password and an unknown e-mail identically, and spends a hash on both', async () => {
      let dummyVerifies = 0;
      const original = t.services.hasher.verifyDummy;
      t.services.hasher.verifyDummy = async (password, address) => {
        dummyVerifies++;
        return original(password, address);
      };
      try {
        const wrong = await postJson(t.app, '/api/auth', { email: 'alice@example.com', password: 'not the password' });
        const unknown = await postJson(t.app, '/api/auth', { email: 'nobody@example.com', password: 'not the password' });
        for (const response of [wrong, unknown]) {
          assert.equal(response.statusCode, 401);
          assert.deepEqual(response.json(), { error: 'INVALID_CREDENTIALS', message: response.json().message });
          assert.equal(response.headers['set-cookie'], undefined);
        }
        assert.equal(wrong.body, unknown.body);
        const comparable = (headers: Record<string, unknown>) => {
          const { date: _d, 'x-request-id': _r, ...rest } = headers;
          return rest;
        };
        assert.deepEqual(comparable(wrong.headers), comparable(unknown.headers));
        assert.equal(dummyVerifies, 1, 'the unknown address was checked against the dummy hash');
      } finally {
        t.services.hasher.verifyDummy = original;
      }
    });

    it('refuses a user without a password (OAuth-only) like an unknown one', async () => {
      await t.services.users.createUser({ email: 'oauth-only@example.com', name: 'O', passwordHash: null });
      const response = await postJson(t.app, '/api/auth', { email: 'oauth-only@example.com', password: 'anything at all' });
      assert.equal(response.statusCode, 401);
      assert.equal(response.json().error, 'INVALID_CREDENTIALS');
    });

    it('tells a disabled account only after a correct password', async () => {
      const bob = await createUser(t.services, { email: 'bob@example.com', password: PASSWORD });
      await t.services.storage.db.updateTable('users').set({ disabled_at: Date.now() }).where('id', '=', bob.id).execute();
      const right = await postJson(t.app, '/api/auth', { email: 'bob@example.com', password: PASSWORD });
      assert.equal(right.statusCode, 403);
      assert.equal(right.json().error, 'ACCOUNT_DISABLED');
      const wrong = await postJson(t.app, '/api/auth', { email: 'bob@example.com', password: 'wrong password!' });
      assert.equal(wrong.statusCode, 401);
      assert.equal(wrong.json().error, 'INVALID_CREDENTIALS');
    });

    it('carries the user roles in the token', async () => {
      await createUser(t.services, { email: 'root@example.com', password: PASSWORD, roles: ['ADMIN', 'EDITOR'] });
      const response = await postJson(t.app, '/api/auth', { email: 'root@example.com', password: PASSWORD });
      assert.deepEqual(decodeJwt(response.json().token).roles, ['ADMIN', 'EDITOR']);
    });

    it('ignores extra keys such as role, and rejects prototype pollution', async () => {
      const extra = await postJson(t.app, '/api/auth', { email: 'alice@example.com', password: PASSWORD, role: 'ADMIN', roles: ['ADMIN'], id: 'x' });
      assert.equal(extra.statusCode, 200);
      assert.deepEqual(decodeJwt(extra.json().token).roles, []);
      assert.equal(extra.json().user.id, alice.id);

      for (const raw of [
        `{"email":"alice@example.com","password":"${PASSWORD}","__proto__":{"roles":["ADMIN"]}}`,
        `{"email":"alice@example.com","password":"${PASSWORD}","constructor":{"prototype":{"roles":["ADMIN"]}}}`,
      ]) {
        const response = await postJson(t.app, '/api/auth', raw);
        assert.equal(response.statusCode, 400);
        assert.equal(response.json().error, 'MALFORMED_JSON');
      }
      assert.equal(({} as Record<string, unknown>).roles, undefined);
    });

    it('upgrades a hash made with older parameters at the next successful sign-in', async () => {
      const user = await createUser(t.services, { email: 'legacy@example.com', password: PASSWORD });
      const legacy = await hash(PASSWORD, { algorithm: 2 as Algorithm, memoryCost: 4096, timeCost: 3, parallelism: 1 });
      await t.services.users.setPasswordHash(user.id, legacy);

      const wrong = await postJson(t.app, '/api/auth', { email: 'legacy@example.com', password: 'wrong password!' });
      assert.equal(wrong.statusCode, 401);
      const unchanged = await t.services.storage.db.selectFrom('users').select('password_hash').where('id', '=', user.id).executeTakeFirstOrThrow();
      assert.equal(unchanged.password_hash, legacy, 'a failed sign-in changes nothing');

      const right = await postJson(t.app, '/api/auth', { email: 'legacy@example.com', password: PASSWORD });
      assert.equal(right.statusCode, 200);
      const row = await t.services.storage.db.selectFrom('users').select('password_hash').where('id', '=', user.id).executeTakeFirstOrThrow();
      const upgraded = parseOptions(row.password_hash!);
      assert.equal(upgraded.memoryCost, t.config.passwords.argon2.memoryKib);
      assert.equal(upgraded.timeCost, t.config.passwords.argon2.iterations);
      assert.equal((await postJson(t.app, '/api/auth', { email: 'legacy@example.com', password: PASSWORD })).statusCode, 200);
    });

    it('sets the session cookie on /api/auth/signin only', async () => {
      const signin = await postJson(t.app, '/api/auth/signin', { email: 'alice@example.com', password: PASSWORD });
      const cookie = signin.cookies.find((c) => c.name === 'gatehouse.session');
      assert.ok(cookie);
      assert.equal(cookie.value, signin.json().token);
      assert.equal(cookie.httpOnly, true);
      assert.equal(cookie.sameSite, 'Lax');
      assert.equal(cookie.path, '/');
      assert.equal(cookie.secure, undefined);
      assert.ok(cookie.maxAge! > 0);

      const api = await postJson(t.app, '/api/auth', { email: 'alice@example.com', password: PASSWORD });
      assert.equal(api.headers['set-cookie'], undefined);
    });

    it('answers 500 INTERNAL_ERROR revealing nothing when something unexpected fails', async () => {
      const original = t.services.users.findCredentialsByEmail;
      t.services.users.findCredentialsByEmail = async () => {
        throw new Error('secret internal detail at /srv/db.ts:42');
      };
      try {
        const response = await postJson(t.app, '/api/auth', { email: 'alice@example.com', password: PASSWORD });
        assert.equal(response.statusCode, 500);
        assert.deepEqual(Object.keys(response.json()).sort(), ['error', 'message']);
        assert.equal(response.json().error, 'INTERNAL_ERROR');
        assert.ok(!response.body.includes('secret internal detail'));
        assert.ok(!response.body.includes('db.ts'));
      } finally {
        t.services.users.findCredentialsByEmail = original;
      }
    });
  });
}

describe('sign-in request validation', () => {
  let database: TestDatabase;
  let t: TestApp;
  before(async () => {
    const [sqlite] = await backends();
    database = await sqlite!.create();
    t = await createTestApp(database);
  });
  after(async () => {
    await t?.close();
    await database?.drop();
  });

  const invalidBodies: Array<[string, unknown, Record<string, string>]> = [
    ['an empty object', {}, { email: 'is required', password: 'is required' }],
    ['a missing password', { email: 'a@example.com' }, { password: 'is required' }],
    ['a missing e-mail', { password: 'x' }, { email: 'is required' }],
    ['non-string fields', { email: 42, password: true }, { email: 'must be a string', password: 'must be a string' }],
    ['null fields', { email: null, password: null }, { email: 'must be a string', password: 'must be a string' }],
    ['an address without @', { email: 'alice.example.com', password: 'x' }, { email: 'must be an e-mail address' }],
    ['an empty e-mail and password', { email: '  ', password: '' }, { email: 'is required', password: 'is required' }],
    ['an over-long e-mail', { email: `${'a'.repeat(250)}@example.com`, password: 'x' }, { email: 'must be at most 254 characters' }],
    ['an over-long password', { email: 'a@example.com', password: 'x'.repeat(5000) }, { password: 'must be at most 4096 characters' }],
    ['an array', [], { body: 'must be a JSON object' }],
    ['a string', '"hello"', { body: 'must be a JSON object' }],
    ['null', 'null', { body: 'must be a JSON object' }],
  ];
  for (const url of ['/api/auth', '/api/auth/signin']) {
    for (const [name, body, fields] of invalidBodies) {
      it(`${url}: 422 for ${name}, naming every bad field`, async () => {
        const response = await postJson(t.app, url, body);
        assert.equal(response.statusCode, 422);
        const json = response.json();
        assert.equal(json.error, 'VALIDATION_ERROR');
        assert.equal(typeof json.message, 'string');
        assert.deepEqual(
          Object.fromEntries(json.errors.map((e: { field: string; message: string }) => [e.field, e.message])),
          fields,
        );
      });
    }

    it(`${url}: 400 for malformed or empty JSON`, async () => {
      for (const payload of ['{"email":', '{bad json}', '']) {
        const response = await postJson(t.app, url, payload);
        assert.equal(response.statusCode, 400, JSON.stringify(payload));
        assert.deepEqual(Object.keys(response.json()).sort(), ['error', 'message']);
        assert.equal(response.json().error, 'MALFORMED_JSON');
      }
    });

    it(`${url}: 415 for a body that is not JSON${url === '/api/auth/signin' ? ' or a form' : ''}`, async () => {
      const formsAccepted = url === '/api/auth/signin';
      for (const contentType of ['text/plain', 'multipart/form-data; boundary=x', 'application/xml', ...(formsAccepted ? [] : ['application/x-www-form-urlencoded'])]) {
        const response = await t.app.inject({ method: 'POST', url, headers: { 'content-type': contentType }, payload: 'email=a&password=b' });
        assert.equal(response.statusCode, 415, contentType);
        assert.equal(response.json().error, 'UNSUPPORTED_MEDIA_TYPE');
      }
    });

    it(`${url}: 413 above the 16 KiB body limit`, async () => {
      const response = await postJson(t.app, url, { email: 'a@example.com', password: 'x'.repeat(17 * 1024) });
      assert.equal(response.statusCode, 413);
      assert.equal(response.json().error, 'PAYLOAD_TOO_LARGE');
    });
  }

  it('answers unknown routes with a JSON 404 (under /api, only once signed in: the guard comes first)', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/nope' });
    assert.equal(response.statusCode, 404);
    assert.equal(response.json().error, 'NOT_FOUND');
    assert.equal((await t.app.inject({ method: 'GET', url: '/api/nope' })).statusCode, 401);
  });
});

describe('sign-in under a burst beyond hashing capacity', () => {
  let database: TestDatabase;
  let t: TestApp;
  before(async () => {
    const [sqlite] = await backends();
    database = await sqlite!.create();
    t = await createTestApp(database, { env: { HASH_CONCURRENCY: '1', HASH_QUEUE_MAX: '1' } });
    await createUser(t.services, { email: 'alice@example.com', password: PASSWORD });
  });
  after(async () => {
    await t?.close();
    await database?.drop();
  });

  it('refuses the excess with 503 and Retry-After, never a crash or a 500', async () => {
    const responses = await Promise.all(
      Array.from({ length: 12 }, () => postJson(t.app, '/api/auth', { email: 'alice@example.com', password: PASSWORD })),
    );
    const statuses = responses.map((r) => r.statusCode);
    assert.ok(statuses.includes(200), `some succeed: ${statuses}`);
    assert.ok(statuses.includes(503), `the excess is refused: ${statuses}`);
    assert.deepEqual([...new Set(statuses)].sort(), [200, 503]);
    for (const response of responses.filter((r) => r.statusCode === 503)) {
      assert.equal(response.json().error, 'SERVICE_UNAVAILABLE');
      assert.ok(Number(response.headers['retry-after']) >= 1);
    }
    // Capacity comes back once the burst has passed.
    assert.equal((await postJson(t.app, '/api/auth', { email: 'alice@example.com', password: PASSWORD })).statusCode, 200);
  });
});

describe('sign-in cookie on https', () => {
  let database: TestDatabase;
  let t: TestApp;
  before(async () => {
    const [sqlite] = await backends();
    database = await sqlite!.create();
    t = await createTestApp(database, { env: { AUTH_URL: 'https://auth.example.com' } });
    await createUser(t.services, { email: 'alice@example.com', password: PASSWORD });
  });
  after(async () => {
    await t?.close();
    await database?.drop();
  });

  it('uses the __Host- prefix and Secure', async () => {
    const response = await postJson(t.app, '/api/auth/signin', { email: 'alice@example.com', password: PASSWORD });
    assert.equal(response.statusCode, 200);
    const cookie = response.cookies.find((c) => c.name === '__Host-gatehouse.session');
    assert.ok(cookie, JSON.stringify(response.cookies));
    assert.equal(cookie.secure, true);
    assert.equal(cookie.path, '/');
    assert.equal(cookie.domain, undefined);
    assert.equal(decodeJwt(response.json().token).iss, 'https://auth.example.com');
  });
});
