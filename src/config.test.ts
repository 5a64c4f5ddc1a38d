import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from './config.ts';
import { loadConfig } from './modules.ts';

const SECRET = 'x'.repeat(48);
/** Production needs a mail server; tests about other settings give it one. */
const MAIL = { EMAIL_SERVER_HOST: 'smtp.example.com', EMAIL_FROM: 'no-reply@example.com' } as const;

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(env);
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return error.problems;
  }
  assert.fail('expected a ConfigError');
}

describe('loadConfig', () => {
  it('has development defaults: SQLite under DATA_DIR, port 3000, database sessions', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gh-config-'));
    const config = loadConfig({ AUTH_SECRET: SECRET, DATA_DIR: dataDir });
    assert.equal(config.env, 'development');
    assert.equal(config.port, 3000);
    assert.equal(config.authUrl, 'http://localhost:3000');
    assert.deepEqual(config.database, { kind: 'sqlite', path: join(dataDir, 'gatehouse.db'), cacheMib: 32 });
    assert.equal(config.sessionStrategy, 'database');
    assert.equal(config.isSecureOrigin, false);
    assert.deepEqual(config.passwords.argon2, { memoryKib: 19_456, iterations: 2, parallelism: 1 });
    assert.equal(config.passwords.hashThreadNice, 10);
    assert.equal(config.tokens.issuer, 'http://localhost:3000');
  });

  it('is deeply frozen', () => {
    const config = loadConfig({ AUTH_SECRET: SECRET, DATA_DIR: mkdtempSync(join(tmpdir(), 'gh-config-')) });
    assert.ok(Object.isFrozen(config));
    assert.ok(Object.isFrozen(config.passwords.argon2));
    assert.throws(() => {
      (config as { port: number }).port = 1;
    }, TypeError);
  });

  it('names every problem at once in production', () => {
    const problems = problemsOf({ ...MAIL, NODE_ENV: 'production', AUTH_URL: 'http://auth.example.com', DATABASE_URL: 'mysql://x', PORT: 'eighty' });
    assert.equal(problems.length, 4, problems.join('\n'));
    for (const name of ['AUTH_SECRET', 'AUTH_URL', 'DATABASE_URL', 'PORT']) {
      assert.ok(problems.some((p) => p.startsWith(name)), `${name} is named`);
    }
    const message = new ConfigError(problems).message;
    for (const name of ['AUTH_SECRET', 'AUTH_URL', 'DATABASE_URL', 'PORT']) assert.ok(message.includes(name));
  });

  it('refuses a short AUTH_SECRET and never echoes it', () => {
    const problems = problemsOf({ ...MAIL, NODE_ENV: 'production', AUTH_URL: 'https://auth.example.com', AUTH_SECRET: 'short-secret-value' });
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /^AUTH_SECRET must be at least 32 characters/);
    assert.ok(!problems[0]!.includes('short-secret-value'));
  });

  it('accepts a valid production configuration', () => {
    const config = loadConfig({ ...MAIL, NODE_ENV: 'production', AUTH_URL: 'https://auth.example.com/', AUTH_SECRET: SECRET, DATABASE_URL: 'postgres://u:p@db:5432/gatehouse' });
    assert.equal(config.authUrl, 'https://auth.example.com');
    assert.equal(config.isSecureOrigin, true);
    assert.equal(config.host, '0.0.0.0');
    assert.deepEqual(config.database, { kind: 'postgres', url: 'postgres://u:p@db:5432/gatehouse', queryTimeoutMs: 5_000, poolSize: 10 });
  });

  it('bounds PostgreSQL queries by DATABASE_QUERY_TIMEOUT_MS; SQLite has no such bound', () => {
    const postgres = loadConfig({ AUTH_SECRET: SECRET, DATA_DIR: tmpdir(), DATABASE_URL: 'postgres://db/gatehouse', DATABASE_QUERY_TIMEOUT_MS: '2500' });
    assert.deepEqual(postgres.database, { kind: 'postgres', url: 'postgres://db/gatehouse', queryTimeoutMs: 2_500, poolSize: 10 });
    const sqlite = loadConfig({ AUTH_SECRET: SECRET, DATA_DIR: tmpdir(), DATABASE_QUERY_TIMEOUT_MS: '2500' });
    assert.equal(sqlite.database.kind, 'sqlite');
    assert.ok(!('queryTimeoutMs' in sqlite.database));
  });

  it('sizes the PostgreSQL pool by DATABASE_POOL_SIZE (2 to 1000 connections per process)', () => {
    const sized = loadConfig({ AUTH_SECRET: SECRET, DATA_DIR: tmpdir(), DATABASE_URL: 'postgres://db/gatehouse', DATABASE_POOL_SIZE: '25' });
    assert.equal(sized.database.kind === 'postgres' && sized.database.poolSize, 25);
  });

  it('request bodies are timed out: bounds on headers, whole requests, idle keep-alive and open connections, by default and by env', () => {
    const base = { AUTH_SECRET: SECRET, DATA_DIR: tmpdir() };
    assert.deepEqual(loadConfig(base).connections, { headersTimeoutMs: 10_000, requestTimeoutMs: 20_000, keepAliveTimeoutMs: 72_000, maxConnections: 4_096 });
    const custom = loadConfig({ ...base, HEADERS_TIMEOUT_MS: '5000', REQUEST_TIMEOUT_MS: '15000', KEEP_ALIVE_TIMEOUT_MS: '65000', MAX_CONNECTIONS: '20000' });
    assert.deepEqual(custom.connections, { headersTimeoutMs: 5_000, requestTimeoutMs: 15_000, keepAliveTimeoutMs: 65_000, maxConnections: 20_000 });
    assert.ok(Object.isFrozen(custom.connections));

    // Every problem at once, each naming its variable.
    const problems = problemsOf({ ...base, HEADERS_TIMEOUT_MS: '0', REQUEST_TIMEOUT_MS: 'forever', KEEP_ALIVE_TIMEOUT_MS: '999', MAX_CONNECTIONS: '0' });
    assert.deepEqual(problems.map((problem) => problem.split(' ')[0]), ['HEADERS_TIMEOUT_MS', 'REQUEST_TIMEOUT_MS', 'KEEP_ALIVE_TIMEOUT_MS', 'MAX_CONNECTIONS']);
    const inverted = problemsOf({ ...base, HEADERS_TIMEOUT_MS: '30000', REQUEST_TIMEOUT_MS: '20000' });
    assert.deepEqual(inverted, ['HEADERS_TIMEOUT_MS must be at most REQUEST_TIMEOUT_MS (got 30000 > 20000)']);
  });

  it('rejects unparseable values with the variable named', () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ DATABASE_URL: 'postgres://[bad' }, 'DATABASE_URL'],
      [{ DATABASE_URL: 'sqlite:' }, 'DATABASE_URL'],
      [{ AUTH_URL: 'not a url' }, 'AUTH_URL'],
      [{ AUTH_URL: 'ftp://x' }, 'AUTH_URL'],
      [{ AUTH_URL: 'https://u:p@x' }, 'AUTH_URL'],
      [{ SESSION_STRATEGY: 'cookie' }, 'SESSION_STRATEGY'],
      [{ ACCESS_TOKEN_TTL: '15 minutes' }, 'ACCESS_TOKEN_TTL'],
      [{ ARGON2_MEMORY_KIB: '12' }, 'ARGON2_MEMORY_KIB'],
      [{ PORT: '70000' }, 'PORT'],
      [{ ADMIN_EMAIL: 'a@example.com' }, 'ADMIN_EMAIL'],
      [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
      [{ PORT: '0' }, 'AUTH_URL'],
      [{ ALLOW_SIGNUP: 'maybe' }, 'ALLOW_SIGNUP'],
      [{ RESET_TOKEN_TTL: 'soon' }, 'RESET_TOKEN_TTL'],
      [{ REFRESH_REUSE_GRACE: '5m' }, 'REFRESH_REUSE_GRACE'],
      [{ SESSION_IDLE_TIMEOUT: '5m' }, 'SESSION_TOUCH_INTERVAL'],
      [{ DATABASE_QUERY_TIMEOUT_MS: '0' }, 'DATABASE_QUERY_TIMEOUT_MS'],
      [{ DATABASE_QUERY_TIMEOUT_MS: '5s' }, 'DATABASE_QUERY_TIMEOUT_MS'],
      [{ DATABASE_POOL_SIZE: '1' }, 'DATABASE_POOL_SIZE'],
      [{ DATABASE_POOL_SIZE: '1001' }, 'DATABASE_POOL_SIZE'],
      [{ HASH_THREAD_NICE: '20' }, 'HASH_THREAD_NICE'],
      [{ SQLITE_CACHE_MB: '0' }, 'SQLITE_CACHE_MB'],
      [{ HASH_THREAD_NICE: '-5' }, 'HASH_THREAD_NICE'],
    ];
    for (const [env, name] of cases) {
      const problems = problemsOf({ AUTH_SECRET: SECRET, ...env });
      assert.equal(problems.length, 1, `${JSON.stringify(env)}: ${problems.join('; ')}`);
      assert.ok(problems[0]!.startsWith(name), problems[0]);
    }
  });

  it('parses durations with units', () => {
    const config = loadConfig({ AUTH_SECRET: SECRET, DATA_DIR: tmpdir(), ACCESS_TOKEN_TTL: '15m', SESSION_MAX_AGE: '7d' });
    assert.equal(config.tokens.accessTokenTtlSeconds, 900);
    assert.equal(config.sessions.maxAgeSeconds, 7 * 86_400);
  });

  it('gives idle memory back after 5 s idle by default; IDLE_MEMORY_RELEASE is a duration or off', () => {
    assert.equal(loadConfig({ AUTH_SECRET: SECRET, DATA_DIR: tmpdir() }).idleMemoryReleaseSeconds, 5);
    assert.equal(loadConfig({ AUTH_SECRET: SECRET, DATA_DIR: tmpdir(), IDLE_MEMORY_RELEASE: '2m' }).idleMemoryReleaseSeconds, 120);
    assert.equal(loadConfig({ AUTH_SECRET: SECRET, DATA_DIR: tmpdir(), IDLE_MEMORY_RELEASE: 'off' }).idleMemoryReleaseSeconds, null);
    assert.equal(loadConfig({ AUTH_SECRET: SECRET, DATA_DIR: tmpdir(), IDLE_MEMORY_RELEASE: 'OFF' }).idleMemoryReleaseSeconds, null);
    for (const value of ['0', 'never', '-1']) {
      const problems = problemsOf({ AUTH_SECRET: SECRET, IDLE_MEMORY_RELEASE: value });
      assert.equal(problems.length, 1, value);
      assert.match(problems[0]!, /^IDLE_MEMORY_RELEASE must be a duration .*, or off \(got/, problems[0]);
    }
  });

  it('keeps audit events 90 days by default; AUDIT_RETENTION is a duration', () => {
    assert.equal(loadConfig({ AUTH_SECRET: SECRET, DATA_DIR: tmpdir() }).audit.retentionSeconds, 90 * 86_400);
    assert.equal(loadConfig({ AUTH_SECRET: SECRET, DATA_DIR: tmpdir(), AUDIT_RETENTION: '30d' }).audit.retentionSeconds, 30 * 86_400);
    assert.equal(loadConfig({ AUTH_SECRET: SECRET, DATA_DIR: tmpdir(), AUDIT_RETENTION: '12h' }).audit.retentionSeconds, 12 * 3_600);
    for (const value of ['forever', '0', '90 days', '400d']) {
      const problems = problemsOf({ AUTH_SECRET: SECRET, AUDIT_RETENTION: value });
      assert.equal(problems.length, 1, value);
      assert.ok(problems[0]!.startsWith('AUDIT_RETENTION'), problems[0]);
    }
  });

  it('keeps access tokens short-lived by default in both strategies (downstream apps verify them offline)', () => {
    const jwt = loadConfig({ AUTH_SECRET: SECRET, SESSION_STRATEGY: 'jwt' });
    assert.equal(jwt.tokens.accessTokenTtlSeconds, 900);
    const database = loadConfig({ AUTH_SECRET: SECRET });
    assert.equal(database.tokens.accessTokenTtlSeconds, 900);
    assert.ok(database.sessions.maxAgeSeconds > database.tokens.accessTokenTtlSeconds, 'sessions outlive their tokens and go on through refresh');
  });

  it('generates a development secret once into DATA_DIR, readable by the owner only', () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gh-config-'));
    const warnings: string[] = [];
    const first = loadConfig({ DATA_DIR: dataDir }, { onWarning: (m) => warnings.push(m) });
    const second = loadConfig({ DATA_DIR: dataDir }, { onWarning: (m) => warnings.push(m) });
    assert.equal(first.authSecret, second.authSecret);
    assert.ok(first.authSecret.length >= 32);
    assert.equal(warnings.length, 1, 'warned once, when generated');
    assert.ok(!warnings[0]!.includes(first.authSecret));
    const path = join(dataDir, 'auth-secret');
    assert.equal(readFileSync(path, 'utf8').trim(), first.authSecret);
    assert.equal(statSync(path).mode & 0o777, 0o600);
  });

  describe('mail', () => {
    const base = { AUTH_SECRET: SECRET, DATA_DIR: tmpdir() };

    it('uses the dev outbox without EMAIL_SERVER_HOST outside production', () => {
      for (const env of ['development', 'test']) {
        const { mail } = loadConfig({ ...base, NODE_ENV: env });
        assert.equal(mail.kind, 'dev-outbox');
        assert.equal(mail.smtp, null);
        assert.equal(mail.maxAttempts, 8);
        assert.equal(mail.pollIntervalMs, 5_000);
        assert.equal(mail.retentionSeconds, 7 * 86_400);
      }
    });

    it('/dev/outbox trusts no address by default: its page is off unless DEV_OUTBOX_PAGE is on, which production and SMTP refuse', () => {
      assert.equal(loadConfig({ ...base, NODE_ENV: 'development' }).mail.showOutboxPage, false);
      assert.equal(loadConfig({ ...base, NODE_ENV: 'development', DEV_OUTBOX_PAGE: 'true' }).mail.showOutboxPage, true);
      assert.equal(loadConfig({ ...base, ...MAIL }).mail.showOutboxPage, false);
      assert.deepEqual(problemsOf({ ...base, ...MAIL, DEV_OUTBOX_PAGE: 'true' }), [
        'DEV_OUTBOX_PAGE is on but EMAIL_SERVER_HOST is set: mail goes to the SMTP server, there is no dev outbox to show',
      ]);
      const production = problemsOf({ ...base, NODE_ENV: 'production', AUTH_URL: 'https://auth.example.com', DEV_OUTBOX_PAGE: 'true' });
      assert.ok(production.some((problem) => problem.startsWith('DEV_OUTBOX_PAGE')), production.join('\n'));
      assert.match(problemsOf({ ...base, DEV_OUTBOX_PAGE: 'maybe' })[0]!, /^DEV_OUTBOX_PAGE must be true or false/);
    });

    it('requires a mail server in production', () => {
      const problems = problemsOf({ NODE_ENV: 'production', AUTH_URL: 'https://auth.example.com', AUTH_SECRET: SECRET });
      assert.equal(problems.length, 1, problems.join('\n'));
      assert.match(problems[0]!, /^EMAIL_SERVER_HOST is required when NODE_ENV=production: mail is required in production for password reset and sign-up/);
    });

    it('reads an SMTP server: port 587 by default, TLS required for any host but a loopback relay', () => {
      const config = loadConfig({ ...base, ...MAIL });
      assert.equal(config.mail.kind, 'smtp');
      assert.deepEqual(config.mail.smtp, { host: 'smtp.example.com', port: 587, isImplicitTls: false, requireTls: true, auth: null });
      assert.deepEqual(config.mail.from, { name: null, address: 'no-reply@example.com' });
      assert.equal(loadConfig({ ...base, ...MAIL, EMAIL_SERVER_PORT: '465' }).mail.smtp?.isImplicitTls, true);
      for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', 'LOCALHOST', '::1', '[::1]']) {
        assert.equal(loadConfig({ ...base, ...MAIL, EMAIL_SERVER_HOST: host }).mail.smtp?.requireTls, false, host);
      }
      for (const host of ['128.0.0.1', '10.0.0.1', 'localhost.example.com', '127.0.0.1.example.com', '::ffff:127.0.0.1', 'smtp.local']) {
        assert.equal(loadConfig({ ...base, ...MAIL, EMAIL_SERVER_HOST: host }).mail.smtp?.requireTls, true, host);
      }
    });

    it('authenticates only with EMAIL_SERVER_USER, keeps the password as given, and never echoes it', () => {
      const withUser = loadConfig({ ...base, ...MAIL, EMAIL_SERVER_USER: 'relay', EMAIL_SERVER_PASSWORD: '  p@ss word  ' });
      assert.deepEqual(withUser.mail.smtp?.auth, { user: 'relay', password: '  p@ss word  ' });
      const problems = problemsOf({ ...base, ...MAIL, EMAIL_SERVER_PASSWORD: 'hunter2-secret' });
      assert.equal(problems.length, 1);
      assert.match(problems[0]!, /^EMAIL_SERVER_USER and EMAIL_SERVER_PASSWORD must be set together/);
      assert.ok(!problems[0]!.includes('hunter2-secret'));
      assert.equal(problemsOf({ ...base, ...MAIL, EMAIL_SERVER_USER: 'relay' }).length, 1);
    });

    it('parses EMAIL_FROM with or without a display name', () => {
      assert.deepEqual(loadConfig({ ...base, ...MAIL, EMAIL_FROM: 'Gatehouse <no-reply@example.com>' }).mail.from, { name: 'Gatehouse', address: 'no-reply@example.com' });
      assert.deepEqual(loadConfig({ ...base, ...MAIL, EMAIL_FROM: '"Acme, Inc." <a@b.example>' }).mail.from, { name: 'Acme, Inc.', address: 'a@b.example' });
    });

    it('names each bad mail setting', () => {
      const cases: Array<[Record<string, string>, string]> = [
        [{ ...MAIL, EMAIL_FROM: 'not an address' }, 'EMAIL_FROM'],
        [{ ...MAIL, EMAIL_FROM: 'a@b.example, c@d.example' }, 'EMAIL_FROM'],
        [{ ...MAIL, EMAIL_FROM: 'Name <a@b.example' }, 'EMAIL_FROM'],
        [{ EMAIL_SERVER_HOST: 'smtp.example.com' }, 'EMAIL_FROM'],
        [{ ...MAIL, EMAIL_SERVER_HOST: 'smtp://smtp.example.com' }, 'EMAIL_SERVER_HOST'],
        [{ ...MAIL, EMAIL_SERVER_HOST: 'smtp.example.com:587' }, 'EMAIL_SERVER_HOST'],
        [{ ...MAIL, EMAIL_SERVER_PORT: '0' }, 'EMAIL_SERVER_PORT'],
        [{ EMAIL_SERVER_PORT: '2525' }, 'EMAIL_SERVER_PORT'],
        [{ EMAIL_SERVER_USER: 'u', EMAIL_SERVER_PASSWORD: 'p' }, 'EMAIL_SERVER_USER, EMAIL_SERVER_PASSWORD are set but EMAIL_SERVER_HOST is not'],
        [{ MAIL_MAX_ATTEMPTS: '0' }, 'MAIL_MAX_ATTEMPTS'],
        [{ MAIL_POLL_INTERVAL_MS: '10' }, 'MAIL_POLL_INTERVAL_MS'],
        [{ MAIL_RETENTION: 'forever' }, 'MAIL_RETENTION'],
      ];
      for (const [env, name] of cases) {
        const problems = problemsOf({ ...base, ...env });
        assert.equal(problems.length, 1, `${JSON.stringify(env)}: ${problems.join('; ')}`);
        assert.ok(problems[0]!.startsWith(name), problems[0]);
      }
    });
  });
  describe('OAuth providers', () => {
    const base = { AUTH_SECRET: SECRET, DATA_DIR: mkdtempSync(join(tmpdir(), 'gh-config-')) };

    it('enables none by default, and each provider by its client id and secret (the seed\'s aliases too)', () => {
      assert.deepEqual(loadConfig(base).oauth.providers, []);
      const config = loadConfig({
        ...base,
        PROVIDER_A_CLIENT_ID: 'gh-id',
        PROVIDER_A_CLIENT_SECRET: 'gh-secret',
        GOOGLE_CLIENT_ID: 'g-id',
        GOOGLE_CLIENT_SECRET: 'g-secret',
        OIDC_ISSUER: 'https://sso.example.com/realms/acme/',
        OIDC_CLIENT_ID: 'o-id',
        OIDC_CLIENT_SECRET: 'o-secret',
        OIDC_NAME: 'Acme SSO',
      });
      assert.deepEqual(config.oauth.providers, [
        { id: 'github', kind: 'github', name: 'GitHub', clientId: 'gh-id', clientSecret: 'gh-secret', url: 'https://github.com', apiUrl: 'https://api.github.com' },
        { id: 'google', kind: 'oidc', name: 'Google', clientId: 'g-id', clientSecret: 'g-secret', issuer: 'https://accounts.google.com' },
        { id: 'oidc', kind: 'oidc', name: 'Acme SSO', clientId: 'o-id', clientSecret: 'o-secret', issuer: 'https://sso.example.com/realms/acme' },
      ]);
      // The primary names win over the aliases.
      const github = loadConfig({ ...base, GITHUB_CLIENT_ID: 'a', GITHUB_CLIENT_SECRET: 'b', PROVIDER_A_CLIENT_ID: 'c', PROVIDER_A_CLIENT_SECRET: 'd', GITHUB_URL: 'https://ghe.example.com', GITHUB_API_URL: 'https://ghe.example.com/api/v3' });
      assert.deepEqual(github.oauth.providers[0], { id: 'github', kind: 'github', name: 'GitHub', clientId: 'a', clientSecret: 'b', url: 'https://ghe.example.com', apiUrl: 'https://ghe.example.com/api/v3' });
    });

    it('names each bad provider setting, never echoing a secret', () => {
      const cases: Array<[Record<string, string>, string]> = [
        [{ GITHUB_CLIENT_ID: 'x' }, 'GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET'],
        [{ PROVIDER_B_CLIENT_SECRET: 'hush-hush' }, 'GOOGLE_CLIENT_ID and GOOGLE_CLIENT_SECRET'],
        [{ OIDC_CLIENT_ID: 'x', OIDC_CLIENT_SECRET: 'hush-hush' }, 'OIDC_ISSUER is required'],
        [{ OIDC_ISSUER: 'https://sso.example.com' }, 'OIDC_CLIENT_ID and OIDC_CLIENT_SECRET are required'],
        [{ GOOGLE_ISSUER: 'http://accounts.example.com' }, 'GOOGLE_ISSUER must be https'],
        [{ GOOGLE_ISSUER: 'http://me:hush-hush@accounts.example.com' }, 'GOOGLE_ISSUER must be https'],
        [{ GITHUB_URL: 'ftp://github.example.com' }, 'GITHUB_URL must be https'],
        [{ GITHUB_API_URL: 'not a url' }, 'GITHUB_API_URL must be an absolute https URL'],
        [{ OIDC_ISSUER: 'https://user:pw@sso.example.com', OIDC_CLIENT_ID: 'x', OIDC_CLIENT_SECRET: 'y' }, 'OIDC_ISSUER must not contain credentials'],
      ];
      for (const [env, start] of cases) {
        const problems = problemsOf({ ...base, ...env });
        assert.equal(problems.length, 1, `${JSON.stringify(env)}: ${problems.join('; ')}`);
        assert.ok(problems[0]!.startsWith(start), problems[0]);
        assert.ok(!problems[0]!.includes('hush-hush'), 'no secret in the message');
      }
      // http is accepted for a provider on this machine only.
      assert.equal(loadConfig({ ...base, OIDC_ISSUER: 'http://127.0.0.1:8080', OIDC_CLIENT_ID: 'x', OIDC_CLIENT_SECRET: 'y' }).oauth.providers[0]?.id, 'oidc');
    });
  });
});
