/**
 * docs/configuration.md is written by hand (its explanations are prose), so this checks it against
 * the code instead: every variable the configuration reads, the core's and every module's section,
 * is documented there, and every variable its tables name (before "Tests, benchmarks and the
 * process", which lists the test harness's own) is one the configuration reads.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { Env } from './config.ts';
import { loadConfig } from './modules.ts';

const DOC = readFileSync(new URL('../docs/configuration.md', import.meta.url), 'utf8');

/** The names the configuration asks the environment for, given `env`. */
function namesRead(env: Record<string, string>): Set<string> {
  const asked = new Set<string>();
  const recording = new Proxy(env, {
    get(target, name) {
      if (typeof name === 'string') asked.add(name);
      return Reflect.get(target, name);
    },
  }) as Env;
  try {
    loadConfig(recording);
  } catch {
    // Invalid combinations are fine here: only which names were asked matters.
  }
  return asked;
}

/** Some variables are read only when another is set (SMTP's, a provider's): read every branch. */
const BRANCHES: Record<string, string>[] = [
  {},
  { EMAIL_SERVER_HOST: 'smtp.example.com', EMAIL_SERVER_USER: 'user', EMAIL_SERVER_PASSWORD: 'password', EMAIL_FROM: 'a@example.com' },
  { GITHUB_CLIENT_ID: 'id', GITHUB_CLIENT_SECRET: 'secret', GOOGLE_CLIENT_ID: 'id', GOOGLE_CLIENT_SECRET: 'secret', OIDC_CLIENT_ID: 'id', OIDC_CLIENT_SECRET: 'secret', OIDC_ISSUER: 'https://idp.example.com' },
  { ADMIN_EMAIL: 'admin@example.com', ADMIN_PASSWORD: 'correct horse battery staple' },
  { NODE_ENV: 'production' },
];

function allNamesRead(): Set<string> {
  const names = new Set<string>();
  for (const branch of BRANCHES) {
    for (const name of namesRead({ NODE_ENV: 'test', DATA_DIR: tmpdir(), AUTH_SECRET: 'x'.repeat(40), ...branch })) names.add(name);
  }
  return names;
}

/** The variables the doc's tables name in their first column, up to the test harness's section. */
function documentedNames(): Set<string> {
  const settings = DOC.slice(0, DOC.indexOf('## Tests, benchmarks and the process'));
  const names = new Set<string>();
  for (const line of settings.split('\n')) {
    const firstCell = /^\| ([^|]*) \|/.exec(line)?.[1];
    if (firstCell === undefined) continue;
    for (const [, name] of firstCell.matchAll(/`([A-Z][A-Z0-9_]*)`/g)) names.add(name!);
  }
  return names;
}

describe('docs/configuration.md', () => {
  it('documents every variable the configuration reads', () => {
    // A family may be documented once by its prefix: `PROVIDER_A_*`.
    const prefixes = [...DOC.matchAll(/`([A-Z][A-Z0-9_]*_)\*`/g)].map(([, prefix]) => prefix!);
    const isDocumented = (name: string) => DOC.includes(`\`${name}\``) || prefixes.some((prefix) => name.startsWith(prefix));
    const undocumented = [...allNamesRead()].filter((name) => /^[A-Z][A-Z0-9_]*$/.test(name) && !isDocumented(name));
    assert.deepEqual(undocumented, [], 'read by the code but not in docs/configuration.md');
  });

  it('names no setting the configuration does not read', () => {
    const read = allNamesRead();
    const unread = [...documentedNames()].filter((name) => !read.has(name));
    assert.deepEqual(unread, [], 'in docs/configuration.md but never read');
  });

  it('would notice a variable nobody documented', () => {
    assert.ok(!DOC.includes('`NOT_A_GATEHOUSE_SETTING`'));
    assert.ok(allNamesRead().has('AUDIT_RETENTION'), 'a module section is read with the core');
  });
});
