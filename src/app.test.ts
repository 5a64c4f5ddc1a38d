import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { backends, type TestDatabase } from '../test/helpers/databases.ts';
import { createTestApp, type TestApp } from '../test/helpers/app.ts';
import { OPENAPI_PATH } from './app.ts';

for (const backend of await backends()) {
  describe(`operations endpoints on ${backend.name}`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let t: TestApp;
    before(async () => {
      database = await backend.create();
      t = await createTestApp(database);
    });
    after(async () => {
      await t?.close();
      await database?.drop();
    });

    it('GET /api/health answers 200 while storage answers', async () => {
      const response = await t.app.inject({ method: 'GET', url: '/api/health' });
      assert.equal(response.statusCode, 200);
      assert.deepEqual(response.json(), { status: 'ok' });
    });

    it('GET /.well-known/jwks.json serves public keys only, cacheable', async () => {
      const response = await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' });
      assert.equal(response.statusCode, 200);
      assert.match(String(response.headers['cache-control']), /max-age=\d+/);
      const { keys } = response.json() as { keys: Array<Record<string, string>> };
      assert.deepEqual(keys.map((key) => key.alg).sort(), ['EdDSA', 'RS256'], 'an Ed25519 key and an RSA key');
      assert.deepEqual(Object.keys(keys.find((key) => key.alg === 'EdDSA')!).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x']);
      assert.deepEqual(Object.keys(keys.find((key) => key.alg === 'RS256')!).sort(), ['alg', 'e', 'kid', 'kty', 'n', 'use'], 'no private member');
    });

    it('answers an undecodable URL with our 400 body, not Fastify\'s', async () => {
      const response = await t.app.inject({ method: 'DELETE', url: '/api/auth/sessions/%ZZ' });
      assert.equal(response.statusCode, 400);
      assert.deepEqual(Object.keys(response.json()).sort(), ['error', 'message']);
      assert.equal(response.json().error, 'BAD_REQUEST');
    });

    // Regression (review): NUL characters in admin fields were a 500 on PostgreSQL.
    it('refuses NUL characters anywhere with 400, before any handler or query', async () => {
      const cases = [
        t.app.inject({ method: 'GET', url: '/api/admin/users?query=%00' }),
        t.app.inject({ method: 'GET', url: '/api/health?x=%00' }),
        t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: 'a@example.com', password: 'pass\u0000word' } }),
        t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: 'a@example.com', password: 'password', nested: { 'k\u0000': 1 } } }),
      ];
      for (const response of await Promise.all(cases)) {
        assert.equal(response.statusCode, 400, response.body);
        assert.equal(response.json().error, 'BAD_REQUEST');
      }
    });

    it('answers with a request id on every response', async () => {
      const response = await t.app.inject({ method: 'GET', url: '/api/health' });
      assert.match(String(response.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    });

    it('GET /api/health answers 503 SERVICE_UNAVAILABLE when storage does not', async () => {
      const original = t.services.storage.ping;
      t.services.storage.ping = async () => {
        throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      };
      try {
        const response = await t.app.inject({ method: 'GET', url: '/api/health' });
        assert.equal(response.statusCode, 503);
        assert.equal(response.json().error, 'SERVICE_UNAVAILABLE');
        assert.ok(Number(response.headers['retry-after']) > 0);
      } finally {
        t.services.storage.ping = original;
      }
    });
  });
}

describe('OpenAPI document', () => {
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

  it('is OpenAPI 3.1 and describes every public endpoint from the zod schemas', async () => {
    const response = await t.app.inject({ method: 'GET', url: OPENAPI_PATH });
    assert.equal(response.statusCode, 200);
    const document = response.json();
    assert.equal(document.openapi, '3.1.0');
    for (const path of ['/api/auth', '/api/auth/signin', '/api/health', '/.well-known/jwks.json']) {
      assert.ok(document.paths[path], `${path} is documented`);
    }
    const signIn = document.paths['/api/auth'].post;
    assert.deepEqual(Object.keys(signIn.responses).sort(), ['200', '400', '401', '403', '413', '415', '422', '429', '500', '503']);
    assert.ok(!(OPENAPI_PATH in document.paths), 'the document does not list itself');
    const serialized = JSON.stringify(document);
    assert.ok(serialized.includes('"email"') && serialized.includes('"password"'));
  });
});
