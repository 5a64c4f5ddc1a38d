/**
 * API keys across processes: Gatehouse as the server runs it (`src/start.js`, logging at debug),
 * keys made over its API and listed by `gatehouse api-keys`, and a downstream app on the
 * machine's own Node using gatehouse-protect installed from its `npm pack` tarball (its
 * dependencies linked from this repository: no registry needed), accepting keys by introspection
 * (`apiKeys`, with a cache of CACHE_MS). Checked: a personal key passes as its owner, an
 * organization key passes where a scope rule admits it, with its organization; a revoked key is
 * refused by Gatehouse at once and by the app once its cache has run out (CACHE_MS, the documented
 * bound); no key ever appears in either process's output.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomSecret } from '../../src/lib/random.ts';
import { CLI_ENTRY, LISTENING_MESSAGE, REPO_ROOT, SERVER_ENTRY, freePort, runNode, startNode, type Child } from '../helpers/process.ts';
import { MACHINE_NODE, MACHINE_NPM } from '../helpers/machine.ts';

const ADMIN_EMAIL = 'keys-admin@example.test';
const ADMIN_PASSWORD = 'a long and quite unguessable passphrase 7';
const CACHE_MS = 1_500;

const APP = `
import { createServer } from 'node:http';
import { createProtector, SEED_RULES } from 'gatehouse-protect';
import { toNodeMiddleware } from 'gatehouse-protect/node';
const protector = createProtector({
  issuer: process.env.ISSUER,
  rules: { ...SEED_RULES, scopeRequirements: [{ prefix: '/api/billing', scopes: ['billing:read'] }] },
  apiKeys: { clientId: process.env.CLIENT_ID, clientSecret: process.env.CLIENT_SECRET, cacheMs: Number(process.env.CACHE_MS) },
});
const guard = toNodeMiddleware(protector);
const server = createServer((req, res) => guard(req, res, () => {
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ user: req.gatehouse ?? null, client: req.gatehouseClient ?? null }));
}));
server.listen(Number(process.env.PORT), '127.0.0.1', () => console.log('app listening'));
`;

describe('API keys: Gatehouse, its CLI, and gatehouse-protect from its tarball', { timeout: 240_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-keys-'));
  const env = {
    NODE_ENV: 'development',
    LOG_LEVEL: 'debug',
    AUTH_SECRET: randomSecret(),
    DATA_DIR: dir,
    DATABASE_URL: `sqlite:${join(dir, 'gatehouse.db')}`,
    HOST: '127.0.0.1',
    ADMIN_EMAIL,
    ADMIN_PASSWORD,
  };
  let gatehouse: Child;
  let app: { kill(): void } | undefined;
  let issuer: string;
  let appBase: string;
  const secrets: string[] = [];

  async function call(path: string, init: { method?: string; token?: string; body?: unknown } = {}) {
    const response = await fetch(`${issuer}${path}`, {
      method: init.method ?? 'GET',
      headers: { ...(init.token !== undefined && { authorization: `Bearer ${init.token}` }), ...(init.body !== undefined && { 'content-type': 'application/json' }) },
      ...(init.body !== undefined && { body: JSON.stringify(init.body) }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, any> };
  }
  const atApp = async (path: string, key?: string) => {
    const response = await fetch(`${appBase}${path}`, { headers: key === undefined ? {} : { authorization: `Bearer ${key}` } });
    const isJson = response.headers.get('content-type')?.includes('json') === true;
    return { status: response.status, body: (isJson ? await response.json() : { html: await response.text() }) as Record<string, any> };
  };

  before(async () => {
    const port = await freePort();
    issuer = `http://127.0.0.1:${port}`;
    gatehouse = startNode([SERVER_ENTRY], { env: { ...env, PORT: String(port), AUTH_URL: issuer }, deadlineMs: 230_000 });
    await gatehouse.waitForLog((entry) => entry.msg === LISTENING_MESSAGE, 30_000, LISTENING_MESSAGE);
  });
  after(async () => {
    app?.kill();
    await gatehouse?.stop(10_000).catch(() => gatehouse.kill());
    rmSync(dir, { recursive: true, force: true });
  });

  it('keys work end to end, a revoked one passes the app for at most its cache time, and no key is ever printed', async () => {
    const admin = await call('/api/auth', { method: 'POST', body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } });
    assert.equal(admin.status, 200, JSON.stringify(admin.body));
    const token = admin.body.token as string;
    const client = await call('/api/admin/clients', { method: 'POST', token, body: { name: 'Downstream API', redirectUris: ['https://app.example/cb'] } });
    assert.equal(client.status, 201, JSON.stringify(client.body));
    const personal = await call('/api/keys', { method: 'POST', token, body: { name: 'reports', scopes: ['reports'] } });
    assert.equal(personal.status, 201, JSON.stringify(personal.body));
    const organization = await call('/api/organizations', { method: 'POST', token, body: { name: 'Acme' } });
    assert.equal(organization.status, 201, JSON.stringify(organization.body));
    const organizationId = (organization.body.organization?.id ?? organization.body.id) as string;
    const orgKey = await call('/api/keys', { method: 'POST', token, body: { name: 'billing', organizationId, scopes: ['billing:read'] } });
    assert.equal(orgKey.status, 201, JSON.stringify(orgKey.body));
    secrets.push(personal.body.secret, orgKey.body.secret);

    // The CLI lists them (never a secret).
    const listed = await runNode([CLI_ENTRY, 'api-keys', 'list', '--json'], { env, timeoutMs: 60_000 });
    assert.equal(listed.code, 0, listed.stderr);
    assert.deepEqual((JSON.parse(listed.stdout) as { apiKeys: { id: string }[] }).apiKeys.map((key) => key.id).sort(), [personal.body.key.id, orgKey.body.key.id].sort());

    // The downstream app: gatehouse-protect from its tarball, its dependencies from this repository.
    if (!existsSync(join(REPO_ROOT, 'packages/protect/dist/protect.js'))) execFileSync(process.execPath, [join(REPO_ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(REPO_ROOT, 'packages/protect/tsconfig.json')]);
    const project = join(dir, 'app');
    mkdirSync(join(project, 'node_modules/gatehouse-protect'), { recursive: true });
    const packed = JSON.parse(execFileSync(MACHINE_NPM, ['pack', '--json', '--ignore-scripts', '--pack-destination', project, '-w', 'gatehouse-protect'], { cwd: REPO_ROOT, encoding: 'utf8' })) as { filename: string }[];
    execFileSync('tar', ['-xzf', join(project, packed[0]!.filename), '-C', join(project, 'node_modules/gatehouse-protect'), '--strip-components=1']);
    for (const dependency of ['jose', 'openid-client', 'oauth4webapi']) symlinkSync(join(REPO_ROOT, 'node_modules', dependency), join(project, 'node_modules', dependency));
    writeFileSync(join(project, 'package.json'), '{"type":"module"}');
    writeFileSync(join(project, 'app.mjs'), APP);
    const appPort = await freePort();
    appBase = `http://127.0.0.1:${appPort}`;
    const appEnv = { ISSUER: issuer, CLIENT_ID: client.body.client.clientId, CLIENT_SECRET: client.body.clientSecret, CACHE_MS: String(CACHE_MS), PORT: String(appPort), PATH: '/usr/bin:/bin' };
    const child = spawn(existsSync(MACHINE_NODE) ? MACHINE_NODE : process.execPath, ['app.mjs'], { cwd: project, env: appEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let appOutput = '';
    child.stdout.on('data', (chunk) => (appOutput += chunk));
    child.stderr.on('data', (chunk) => (appOutput += chunk));
    app = { kill: () => void child.kill('SIGKILL') };
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', () => appOutput.includes('app listening') && resolve());
      child.on('exit', (code) => reject(new Error(`the app exited (${code}): ${appOutput}`)));
    });

    const basic = `Basic ${Buffer.from(`${encodeURIComponent(client.body.client.clientId)}:${encodeURIComponent(client.body.clientSecret)}`).toString('base64')}`;
    const direct = await fetch(`${issuer}/api/auth/keys/introspect`, { method: 'POST', headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: personal.body.secret }).toString() });
    assert.equal(direct.status, 200, await direct.clone().text());
    assert.equal(((await direct.json()) as { active: boolean }).active, true);
    const asOwner = await atApp('/api/data', personal.body.secret);
    assert.equal(asOwner.status, 200, JSON.stringify(asOwner.body));
    assert.equal(asOwner.body.user.userId, personal.body.key.userId);
    assert.deepEqual(asOwner.body.user.amr, ['api_key']);
    assert.deepEqual(asOwner.body.user.apiKey, { id: personal.body.key.id, kind: 'personal', org: null });
    assert.equal((await atApp('/admin', personal.body.secret)).status, 403, 'no admin scope: no ADMIN');

    const asOrganization = await atApp('/api/billing/invoices', orgKey.body.secret);
    assert.equal(asOrganization.status, 200, JSON.stringify(asOrganization.body));
    assert.equal(asOrganization.body.user, null);
    assert.deepEqual(asOrganization.body.client.apiKey.org.id, organizationId);
    assert.deepEqual(asOrganization.body.client.apiKey.org.roles, ['MEMBER']);
    assert.equal((await atApp('/api/other', orgKey.body.secret)).status, 403, 'a machine passes only where a scope rule admits it');
    const forged = `${personal.body.secret.slice(0, -6)}AAAAAA`;
    assert.equal((await atApp('/api/data', forged)).status, 401);
    assert.equal((await atApp('/api/data')).status, 401);

    // Revoked: Gatehouse refuses it at once; the app within its cache time.
    assert.equal((await atApp('/api/data', personal.body.secret)).status, 200, 'cached');
    const revokedAt = Date.now();
    assert.equal((await call(`/api/keys/${personal.body.key.id}`, { method: 'DELETE', token })).status, 200);
    assert.equal((await call('/api/organizations', { token: personal.body.secret })).status, 401, 'Gatehouse: refused at once');
    let refusedAfter = -1;
    while (Date.now() - revokedAt < CACHE_MS + 3_000) {
      if ((await atApp('/api/data', personal.body.secret)).status === 401) {
        refusedAfter = Date.now() - revokedAt;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.ok(refusedAfter >= 0 && refusedAfter <= CACHE_MS + 1_000, `refused by the app ${refusedAfter} ms after revocation (cache ${CACHE_MS} ms)`);

    // Never printed: not by Gatehouse at debug, not by the app.
    for (const secret of secrets) {
      assert.ok(!gatehouse.output().includes(secret.slice(13)), 'Gatehouse logged a key');
      assert.ok(!appOutput.includes(secret.slice(13)), 'the app printed a key');
      assert.ok(!listed.stdout.includes(secret.slice(13)));
    }
    assert.ok(gatehouse.output().includes('/api/keys'), 'the requests were logged (without their keys)');
  });
});
