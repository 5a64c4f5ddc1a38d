/**
 * `gatehouse sso …` as an operator runs it (a child process), on every backend: create from an IdP
 * metadata file, list, show, metadata, enforce, delete; an OIDC connection's secret from standard
 * input only; a wrong command line is exit 2, an unknown connection exit 1.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { randomSecret, runCli, type ChildEnv, type RegisterCleanup, type RunResult } from '../../test/helpers/process.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';
import { startTestIdp } from './sso.test-helpers.ts';

const describeRun = (result: RunResult) => `exit ${result.code}\n--- stdout ---\n${result.stdout}\n--- stderr ---\n${result.stderr}`;

for (const backend of await backends()) {
  describe(`gatehouse sso (${backend.name})`, { skip: backend.skip, timeout: 240_000 }, () => {
    const authSecret = randomSecret();
    let database: TestDatabase;
    let dataDir: string;
    let env: ChildEnv;
    let app: TestApp;
    let slug: string;

    before(async () => {
      database = await backend.create();
      dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-sso-cli-'));
      env = { NODE_ENV: 'development', LOG_LEVEL: 'warn', AUTH_SECRET: authSecret, DATA_DIR: dataDir, DATABASE_URL: database.url };
      app = await createTestApp(database, { env: { AUTH_SECRET: authSecret } });
      const owner = await createUser(app.services, { email: 'owner@example.com', password: 'correct horse battery staple' });
      const org = await app.services.organizations.create({ name: 'Umbrella' }, owner.id, SYSTEM_SOURCE);
      assert.ok(org.ok);
      slug = org.organization.slug;
      writeFileSync(join(dataDir, 'idp.xml'), (await startTestIdp()).metadata);
    });
    after(async () => {
      await app?.close();
      rmSync(dataDir, { recursive: true, force: true });
      await database.drop();
    });
    const cli = (args: readonly string[], cleanup: RegisterCleanup, stdin?: string) => runCli(['sso', ...args], { env, timeoutMs: 60_000, cleanup, ...(stdin !== undefined && { stdin }) });

    it('creates, lists, shows, prints metadata, enforces and deletes a SAML connection', async (t) => {
      const created = await cli(['create', '--org', slug, '--name', 'Umbrella Okta', '--metadata-file', join(dataDir, 'idp.xml'), '--json'], (fn) => t.after(fn));
      assert.equal(created.code, 0, describeRun(created));
      const view = JSON.parse(created.stdout);
      assert.match(view.serviceProvider.acsUrl, new RegExp(`/sso/saml/${view.id}/acs$`));
      assert.equal(created.stdout.includes('PRIVATE KEY'), false);

      const listed = await cli(['list', '--org', slug], (fn) => t.after(fn));
      assert.equal(listed.code, 0, describeRun(listed));
      assert.match(listed.stdout, new RegExp(view.id));
      const metadata = await cli(['metadata', view.id], (fn) => t.after(fn));
      assert.match(metadata.stdout, /EntityDescriptor/);
      const enforced = await cli(['enforce', view.id, 'on'], (fn) => t.after(fn));
      assert.equal(enforced.code, 0, describeRun(enforced));
      assert.equal((await app.services.sso.connections.get(view.id))?.enforce, true);
      const deleted = await cli(['delete', view.id], (fn) => t.after(fn));
      assert.equal(deleted.code, 0, describeRun(deleted));
      assert.equal((await cli(['show', view.id], (fn) => t.after(fn))).code, 1);
    });

    it('reads an OIDC client secret from standard input only; refuses wrong command lines with exit 2', async (t) => {
      const secret = 'stdin-secret-0123456789';
      const created = await cli(['create', '--org', slug, '--name', 'Umbrella Entra', '--protocol', 'oidc', '--issuer', 'https://login.example.com/t/v2.0', '--client-id', 'c1', '--client-secret-stdin', '--json'], (fn) => t.after(fn), `${secret}\n`);
      assert.equal(created.code, 0, describeRun(created));
      assert.equal(created.stdout.includes(secret), false);
      const rp = await app.services.sso.connections.oidcConnection((await app.services.sso.connections.get(JSON.parse(created.stdout).id))!);
      assert.equal(rp?.clientSecret, secret);
      assert.equal((await cli(['create', '--org', slug], (fn) => t.after(fn))).code, 2);
      assert.equal((await cli(['create', '--org', slug, '--name', 'x', '--client-secret', 'visible'], (fn) => t.after(fn))).code, 2);
      assert.equal((await cli(['frobnicate'], (fn) => t.after(fn))).code, 2);
    });

    it('makes a setup link (printed once, working) and revokes it', async (t) => {
      const made = await cli(['setup-link', '--org', slug, '--days', '2'], (fn) => t.after(fn));
      assert.equal(made.code, 0, describeRun(made));
      const url = /https?:\/\/\S+\/sso\/setup\?token=\S+/.exec(made.stdout)?.[0] ?? '';
      const id = /Setup link (\S+)/.exec(made.stdout)?.[1] ?? '';
      const opened = await app.app.inject({ url: url.slice(url.indexOf('/sso/setup')) });
      assert.equal(opened.statusCode, 303, opened.body);
      assert.equal((await cli(['setup-link', '--org', slug, '--days', '90'], (fn) => t.after(fn))).code, 2);
      const revoked = await cli(['revoke-setup-link', '--org', slug, id], (fn) => t.after(fn));
      assert.equal(revoked.code, 0, describeRun(revoked));
      assert.equal((await app.app.inject({ url: url.slice(url.indexOf('/sso/setup')) })).statusCode, 410);
      assert.equal((await cli(['revoke-setup-link', '--org', slug, id], (fn) => t.after(fn))).code, 1);
    });
  });
}
