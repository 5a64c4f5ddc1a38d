/** OIDC_PROVIDER_* settings: resource servers and the registration mode are checked at start, with every problem named. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError } from '../config.ts';
import { loadConfig } from '../modules.ts';

const base = { NODE_ENV: 'test', AUTH_SECRET: 'x'.repeat(48), AUTH_URL: 'https://auth.example.com', DATA_DIR: '/tmp/gatehouse-config-test' };

function problems(env: Record<string, string>): readonly string[] {
  try {
    loadConfig({ ...base, ...env });
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
}

describe('OpenID Provider configuration', () => {
  it('reads resource servers with their scopes, and the lifetimes', () => {
    const config = loadConfig({
      ...base,
      OIDC_PROVIDER_RESOURCES: 'https://api.example.com=read:items write:items, http://127.0.0.1:8080/mcp=mcp:tools',
      OIDC_PROVIDER_ACCESS_TOKEN_TTL: '5m',
    });
    assert.deepEqual(config.oidcProvider.resources, [
      { indicator: 'https://api.example.com', scopes: ['read:items', 'write:items'] },
      { indicator: 'http://127.0.0.1:8080/mcp', scopes: ['mcp:tools'] },
    ]);
    assert.equal(config.oidcProvider.accessTokenTtlSeconds, 300);
    assert.equal(config.oidcProvider.refreshTokenTtlSeconds, 30 * 86_400);
  });

  for (const [value, pattern] of [
    ['http://api.example.com=read', /https URL/],
    ['https://api.example.com#x=read', /without query or fragment/],
    ['https://api.example.com', /needs one or more scopes/],
    ['https://api.example.com=openid', /not "openid"/],
    ['https://api.example.com=a, https://api.example.com=b', /listed twice/],
    ['https://auth.example.com/api=read', /Gatehouse's own origin/],
    ['not a url=read', /https URL/],
  ] as const) {
    it(`refuses OIDC_PROVIDER_RESOURCES="${value}"`, () => {
      const found = problems({ OIDC_PROVIDER_RESOURCES: value });
      assert.ok(found.some((problem) => pattern.test(problem)), found.join('\n'));
    });
  }

  it('refuses a lifetime that is no duration', () => {
    assert.ok(problems({ OIDC_PROVIDER_REFRESH_TOKEN_TTL: 'forever' }).some((problem) => problem.startsWith('OIDC_PROVIDER_REFRESH_TOKEN_TTL')));
  });

  const TOKEN = 'registration-token-0123456789abcdefghijklmnop';

  it('follows the token when OIDC_PROVIDER_REGISTRATION is unset: off without it, token with it (nothing changes for existing deployments)', () => {
    assert.equal(loadConfig(base).oidcProvider.registrationMode, 'off');
    const withToken = loadConfig({ ...base, OIDC_PROVIDER_REGISTRATION_TOKEN: TOKEN }).oidcProvider;
    assert.equal(withToken.registrationMode, 'token');
    assert.equal(withToken.registrationToken, TOKEN);
  });

  it('reads open mode and its limits, with their defaults', () => {
    const open = loadConfig({ ...base, OIDC_PROVIDER_REGISTRATION: 'open' }).oidcProvider;
    assert.equal(open.registrationMode, 'open');
    assert.equal(open.registrationToken, undefined);
    assert.deepEqual(open.registrationGlobalLimit, { points: 40, durationSeconds: 3_600 });
    assert.equal(open.registrationMaxClients, 1_000);
    assert.equal(open.registrationUnusedTtlSeconds, 86_400);
    const tuned = loadConfig({ ...base, OIDC_PROVIDER_REGISTRATION: 'open', OIDC_PROVIDER_REGISTRATION_MAX_CLIENTS: '50', OIDC_PROVIDER_REGISTRATION_UNUSED_TTL: '7d', RATE_LIMIT_OIDC_REGISTRATION_GLOBAL: '5/1m' }).oidcProvider;
    assert.equal(tuned.registrationMaxClients, 50);
    assert.equal(tuned.registrationUnusedTtlSeconds, 7 * 86_400);
    assert.deepEqual(tuned.registrationGlobalLimit, { points: 5, durationSeconds: 60 });
  });

  for (const [env, pattern] of [
    [{ OIDC_PROVIDER_REGISTRATION: 'token' }, /needs OIDC_PROVIDER_REGISTRATION_TOKEN/],
    [{ OIDC_PROVIDER_REGISTRATION: 'open', OIDC_PROVIDER_REGISTRATION_TOKEN: TOKEN }, /OIDC_PROVIDER_REGISTRATION_TOKEN is set but OIDC_PROVIDER_REGISTRATION is open/],
    [{ OIDC_PROVIDER_REGISTRATION: 'off', OIDC_PROVIDER_REGISTRATION_TOKEN: TOKEN }, /OIDC_PROVIDER_REGISTRATION_TOKEN is set but OIDC_PROVIDER_REGISTRATION is off/],
    [{ OIDC_PROVIDER_REGISTRATION: 'anyone' }, /OIDC_PROVIDER_REGISTRATION must be one of off, token, open/],
    [{ OIDC_PROVIDER_REGISTRATION: 'token', OIDC_PROVIDER_REGISTRATION_TOKEN: 'short' }, /at least 32 characters/],
    [{ OIDC_PROVIDER_REGISTRATION: 'open', OIDC_PROVIDER_REGISTRATION_MAX_CLIENTS: '0' }, /OIDC_PROVIDER_REGISTRATION_MAX_CLIENTS must be an integer/],
  ] as const) {
    it(`refuses to start with ${JSON.stringify(env)}`, () => {
      const found = problems(env);
      assert.ok(found.some((problem) => pattern.test(problem)), found.join('\n'));
    });
  }
});
