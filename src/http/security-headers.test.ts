/**
 * The headers every answer carries (helmet and our own), HSTS on https only, and CORS: off by
 * default, and with CORS_ORIGINS only those exact origins, never with credentials.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, type TestApp } from '../../test/helpers/app.ts';
import type { Env } from '../config.ts';

describe('security headers and CORS', () => {
  let database: TestDatabase;
  const apps: TestApp[] = [];

  before(async () => {
    database = await createSqliteDatabase();
  });
  after(async () => {
    for (const app of apps) await app.close();
    await database?.drop();
  });

  async function appWith(env: Env = {}): Promise<TestApp> {
    const app = await createTestApp(database, { env });
    apps.push(app);
    return app;
  }

  function directives(csp: unknown): Map<string, string> {
    return new Map(
      String(csp)
        .split(';')
        .map((part) => part.trim())
        .filter(Boolean)
        .map((part) => {
          const [name, ...values] = part.split(/\s+/);
          return [name!, values.join(' ')] as const;
        }),
    );
  }

  it('sends nosniff, no framing, a referrer policy, a locked-down CSP and no-store on API answers and pages', async () => {
    const t = await appWith();
    for (const url of ['/api/auth/session', '/api/auth/csrf', '/api/auth/providers', '/api/health', '/auth/signin', '/dashboard', '/no/such/path', '/api/admin/users']) {
      const response = await t.app.inject({ method: 'GET', url });
      assert.equal(response.headers['x-content-type-options'], 'nosniff', url);
      assert.equal(response.headers['x-frame-options'], 'DENY', url);
      assert.ok(response.headers['referrer-policy'], url);
      assert.equal(response.headers['x-powered-by'], undefined, url);
      assert.equal(response.headers['cache-control'], 'no-store', url);
      assert.equal(response.headers['strict-transport-security'], undefined, `${url}: no HSTS on http`);
      const csp = directives(response.headers['content-security-policy']);
      assert.equal(csp.get('frame-ancestors'), "'none'", url);
      assert.equal(csp.get('object-src') ?? csp.get('default-src'), "'none'", url);
      assert.equal(csp.get('base-uri'), "'none'", url);
      assert.ok(!String(response.headers['content-security-policy']).includes('unsafe-inline'), `${url}: no unsafe-inline`);
      assert.ok(!(csp.get('script-src') ?? csp.get('default-src') ?? '').includes('*'), url);
    }
    // Refused before any route runs: a NUL in the path, an undecodable path, a body too large.
    const refusals = [
      await t.app.inject({ method: 'GET', url: '/api/auth/session%00' }),
      await t.app.inject({ method: 'GET', url: '/api/%E0%A4%A' }),
      await t.app.inject({ method: 'POST', url: '/api/auth', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ email: 'x'.repeat(20_000) }) }),
    ];
    for (const response of refusals) {
      assert.ok(response.statusCode >= 400 && response.statusCode < 500, `refused with ${response.statusCode}`);
      assert.equal(response.headers['x-content-type-options'], 'nosniff', `${response.statusCode}`);
      assert.equal(response.headers['cache-control'], 'no-store', `${response.statusCode}`);
      assert.match(String(response.headers['x-request-id']), /\S/, `${response.statusCode}`);
    }
    // Public, unchanging documents may be cached.
    const jwks = await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' });
    assert.match(String(jwks.headers['cache-control']), /^public, max-age=\d+$/);
  });

  it('sends HSTS for a year when AUTH_URL is https', async () => {
    const t = await appWith({ AUTH_URL: 'https://auth.example.com' });
    const response = await t.app.inject({ method: 'GET', url: '/api/health' });
    assert.match(String(response.headers['strict-transport-security']), /^max-age=31536000\b/);
  });

  it('has CORS off by default: no origin is ever allowed', async () => {
    const t = await appWith();
    for (const origin of ['https://evil.example', 'http://localhost:3000', 'null']) {
      const simple = await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: { origin } });
      assert.equal(simple.headers['access-control-allow-origin'], undefined, origin);
      const preflight = await t.app.inject({
        method: 'OPTIONS',
        url: '/api/auth',
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
      });
      assert.equal(preflight.headers['access-control-allow-origin'], undefined, origin);
      assert.equal(preflight.headers['access-control-allow-credentials'], undefined, origin);
    }
  });

  it('with CORS_ORIGINS allows exactly those origins, without credentials, preflight included', async () => {
    const t = await appWith({ CORS_ORIGINS: 'https://app.example.com, https://admin.example.com' });
    const allowed = await t.app.inject({ method: 'POST', url: '/api/auth', headers: { origin: 'https://app.example.com' }, payload: { email: 'a@b.example', password: 'x' } });
    assert.equal(allowed.headers['access-control-allow-origin'], 'https://app.example.com');
    assert.equal(allowed.headers['access-control-allow-credentials'], undefined, 'never with credentials');
    const preflight = await t.app.inject({
      method: 'OPTIONS',
      url: '/api/admin/users',
      headers: { origin: 'https://admin.example.com', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
    });
    assert.equal(preflight.statusCode, 204, 'a preflight is answered before the route guard');
    assert.equal(preflight.headers['access-control-allow-origin'], 'https://admin.example.com');
    for (const origin of ['https://evil.example', 'https://app.example.com.evil.example', 'http://app.example.com', 'null']) {
      const refused = await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: { origin } });
      assert.notEqual(refused.headers['access-control-allow-origin'], origin, origin);
      assert.equal(refused.headers['access-control-allow-origin'], undefined, origin);
    }
  });
});
