/** OIDC_PROVIDER_* settings: resource servers are checked at start, with every problem named. */
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
});
