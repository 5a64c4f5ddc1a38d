/**
 * TRUSTED_ORIGINS: the exact origins a sign-in's `callbackUrl` may name absolutely. Only origins
 * written exactly as browsers serialise them are taken; everything else is a configuration problem
 * named at start, with the form to write when there is one.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../config.ts';
import { loadConfig } from '../modules.ts';
import { parseTrustedOrigins } from './http.config.ts';

function parse(value: string | undefined) {
  const problems: string[] = [];
  const origins = parseTrustedOrigins(value, problems);
  return { origins, problems };
}

describe('TRUSTED_ORIGINS', () => {
  it('is empty when unset or blank', () => {
    assert.deepEqual(parse(undefined), { origins: [], problems: [] });
    assert.deepEqual(parse(''), { origins: [], problems: [] });
    assert.deepEqual(parse(' , '), { origins: [], problems: [] });
  });

  it('takes exact origins, comma-separated: https anywhere, http on loopback hosts', () => {
    const { origins, problems } = parse(' https://app.example.com, https://admin.example.com:8443/ ,http://localhost:5173,http://127.0.0.1:3001,http://[::1]:8080,https://[2001:db8::1],https://xn--bcher-kva.example,https://app.example.com');
    assert.deepEqual(problems, []);
    assert.deepEqual(origins, [
      'https://app.example.com',
      'https://admin.example.com:8443',
      'http://localhost:5173',
      'http://127.0.0.1:3001',
      'http://[::1]:8080',
      'https://[2001:db8::1]',
      'https://xn--bcher-kva.example',
    ]);
  });

  const refused: Array<[string, RegExp]> = [
    ['app.example.com', /not a URL/],
    ['*', /not a URL/],
    ['https://*.example.com', /plain host name or IP address \(no wildcard/],
    ['https://app.*', /no wildcard/],
    ['https://app.example.com./', /no trailing dot/],
    ['http://app.example.com', /https is required except for localhost, 127\.0\.0\.1 and \[::1\]/],
    ['http://192.168.1.10:3000', /https is required/],
    ['http://localhost.example.com', /https is required/],
    ['ftp://app.example.com', /the scheme must be https/],
    ['javascript:alert(1)', /the scheme must be https/],
    ['null', /not a URL/],
    ['https://app.example.com/app', /no path, query, fragment or credentials/],
    ['https://app.example.com/?x=1', /no path, query, fragment or credentials/],
    ['https://app.example.com?', /no path, query, fragment or credentials/],
    ['https://app.example.com#top', /no path, query, fragment or credentials/],
    ['https://user@app.example.com', /no path, query, fragment or credentials/],
    ['https://user:pass@app.example.com', /no path, query, fragment or credentials/],
    ['https://App.Example.com', /write it as https:\/\/app\.example\.com/],
    ['HTTPS://app.example.com', /write it as https:\/\/app\.example\.com/],
    ['https://app.example.com:443', /write it as https:\/\/app\.example\.com\b/],
    ['http://localhost:80', /write it as http:\/\/localhost\b/],
    ['https://bücher.example', /write it as https:\/\/xn--bcher-kva\.example/],
    ['https://app．example.com', /write it as https:\/\/app\.example\.com/],
    ['https://0x7f.1', /write it as https:\/\/127\.0\.0\.1/],
    ['https://app.example.com//', /no path/],
  ];
  for (const [entry, message] of refused) {
    it(`refuses ${entry}`, () => {
      const { origins, problems } = parse(`https://ok.example.com,${entry}`);
      assert.deepEqual(origins, ['https://ok.example.com'], 'the good entries are still read');
      assert.equal(problems.length, 1, problems.join('\n'));
      assert.match(problems[0]!, /^TRUSTED_ORIGINS must list exact origins such as https:\/\/app\.example\.com: /);
      assert.match(problems[0]!, message);
      assert.ok(problems[0]!.endsWith(`(got "${entry}")`), problems[0]);
    });
  }

  it('is read into the configuration, and every bad entry stops the start in one message', () => {
    const base = { AUTH_SECRET: 'x'.repeat(48), DATA_DIR: mkdtempSync(join(tmpdir(), 'gh-config-')) };
    assert.deepEqual(loadConfig(base).trustedOrigins, []);
    assert.deepEqual(loadConfig({ ...base, TRUSTED_ORIGINS: 'https://app.example.com, http://localhost:5173' }).trustedOrigins, ['https://app.example.com', 'http://localhost:5173']);
    let error: unknown;
    try {
      loadConfig({ ...base, TRUSTED_ORIGINS: 'https://*.example.com,http://app.example.com,https://app.example.com/x', CORS_ORIGINS: '*' });
    } catch (caught) {
      error = caught;
    }
    assert.ok(error instanceof ConfigError);
    assert.equal(error.problems.filter((problem) => problem.startsWith('TRUSTED_ORIGINS')).length, 3, error.message);
    assert.ok(error.problems.some((problem) => problem.startsWith('CORS_ORIGINS')), 'listed with the others');
  });
});
