/**
 * `gatehouse domains …` as an operator runs it (`node src/cli/main.ts` in a child process) on every
 * backend, against a stub DNS server on loopback: add (the record printed), list, verify (refused
 * with its reason and exit 1 until the record is there), remove, and a wrong command line (exit 2).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { randomSecret, runCli, type ChildEnv, type RegisterCleanup, type RunResult } from '../../test/helpers/process.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';
import { startStubDnsServer, type StubDnsServer } from './test-dns-server.ts';

const describeRun = (result: RunResult) => `exit ${result.code} (signal ${result.signal})\n--- stdout ---\n${result.stdout}\n--- stderr ---\n${result.stderr}`;

for (const backend of await backends()) {
  describe(`gatehouse domains (${backend.name})`, { skip: backend.skip, timeout: 180_000 }, () => {
    const authSecret = randomSecret();
    let database: TestDatabase;
    let dataDir: string;
    let env: ChildEnv;
    let t: TestApp;
    let dns: StubDnsServer;

    before(async () => {
      dns = await startStubDnsServer();
      database = await backend.create();
      dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-domains-cli-'));
      env = { NODE_ENV: 'development', LOG_LEVEL: 'info', AUTH_SECRET: authSecret, DATA_DIR: dataDir, DATABASE_URL: database.url, DOMAINS_DNS_SERVER: dns.address };
      t = await createTestApp(database, { env: { AUTH_SECRET: authSecret } });
      const owner = await createUser(t.services, { email: 'owner@example.com', password: 'correct horse battery staple' });
      const created = await t.services.organizations.create({ name: 'Acme', slug: 'acme' }, owner.id, SYSTEM_SOURCE);
      assert.ok(created.ok);
    });

    after(async () => {
      await t?.close();
      rmSync(dataDir, { recursive: true, force: true });
      await database.drop();
      await dns.close();
    });

    const cli = (args: readonly string[], cleanup: RegisterCleanup) => runCli(['domains', ...args], { env, timeoutMs: 30_000, cleanup });

    it('adds a domain, verifies it once its record is published, lists and removes it', async (context) => {
      const cleanup: RegisterCleanup = (fn) => context.after(fn);
      const added = await cli(['add', '--org', 'acme', 'Bücher.Example'], cleanup);
      assert.equal(added.code, 0, describeRun(added));
      const record = /^  (_gatehouse-challenge\.xn--bcher-kva\.example)\. TXT "(gatehouse-domain-verification=[A-Za-z0-9_-]+)"$/m.exec(added.stdout);
      assert.ok(record, added.stdout);

      const early = await cli(['verify', '--org', 'acme', 'bücher.example'], cleanup);
      assert.equal(early.code, 1, describeRun(early));
      assert.match(early.stderr, /was not verified: DOMAIN_RECORD_NOT_FOUND/);

      dns.records.set(record[1]!, { TXT: [record[2]!] });
      const verified = await cli(['verify', '--org', 'acme', 'xn--bcher-kva.example'], cleanup);
      assert.equal(verified.code, 0, describeRun(verified));
      assert.match(verified.stdout, /^Verified xn--bcher-kva\.example for organization \S+ \(dns\)\n$/);
      const events = (await t.services.audit.listEvents({ type: 'org_domain.verified', limit: 10 })).events;
      assert.equal(events[0]?.details?.via, 'cli');
      assert.equal((await t.services.orgDomains.findVerifiedForEmail('someone@bücher.example'))?.domain, 'xn--bcher-kva.example');

      const listed = await cli(['list', '--json'], cleanup);
      assert.equal(listed.code, 0, describeRun(listed));
      assert.deepEqual((JSON.parse(listed.stdout) as Array<{ domain: string; status: string }>).map((domain) => [domain.domain, domain.status]), [['xn--bcher-kva.example', 'verified']]);
      const table = await cli(['list', '--org', 'acme'], cleanup);
      assert.match(table.stdout, /xn--bcher-kva\.example\s+verified/);

      const removed = await cli(['remove', '--org', 'acme', 'xn--bcher-kva.example'], cleanup);
      assert.equal(removed.code, 0, describeRun(removed));
      assert.equal(await t.services.orgDomains.findVerified('xn--bcher-kva.example'), null);
    });

    it('refuses a wrong command line with exit 2 and what fails with exit 1', async (context) => {
      const cleanup: RegisterCleanup = (fn) => context.after(fn);
      assert.equal((await cli(['frobnicate'], cleanup)).code, 2);
      assert.equal((await cli(['add', 'example.com'], cleanup)).code, 2, '--org is required');
      const invalid = await cli(['add', '--org', 'acme', 'co.uk'], cleanup);
      assert.equal(invalid.code, 2, describeRun(invalid));
      assert.match(invalid.stderr, /DOMAIN_INVALID/);
      assert.equal((await cli(['verify', '--org', 'acme', 'example.com', '--method', 'ftp'], cleanup)).code, 2);
      assert.equal((await cli(['remove', '--org', 'nope', 'example.com'], cleanup)).code, 1);
      assert.equal((await cli(['remove', '--org', 'acme', 'missing.example'], cleanup)).code, 1);
    });
  });
}
