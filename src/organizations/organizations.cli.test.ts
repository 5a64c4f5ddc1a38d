/**
 * `gatehouse orgs …` as an operator runs it (`node src/cli/main.ts` in a child process), on every
 * backend: create (JSON and text), list, show, members, add-member, set-role, remove-member,
 * delete, and the refusals (exit 2 for a wrong command line, 1 for what fails: the last OWNER).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { randomSecret, runCli, type ChildEnv, type RegisterCleanup, type RunResult } from '../../test/helpers/process.ts';

const CLI_TIMEOUT_MS = 30_000;
const PASSWORD = 'correct horse battery staple';

function describeRun(result: RunResult): string {
  return `exit ${result.code} (signal ${result.signal})\n--- stdout ---\n${result.stdout}\n--- stderr ---\n${result.stderr}`;
}

for (const backend of await backends()) {
  describe(`gatehouse orgs (${backend.name})`, { skip: backend.skip, timeout: 180_000 }, () => {
    const authSecret = randomSecret();
    let database: TestDatabase;
    let dataDir: string;
    let env: ChildEnv;
    let t: TestApp;

    before(async () => {
      database = await backend.create();
      dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-orgs-cli-'));
      env = { NODE_ENV: 'development', LOG_LEVEL: 'info', AUTH_SECRET: authSecret, DATA_DIR: dataDir, DATABASE_URL: database.url };
      t = await createTestApp(database, { env: { AUTH_SECRET: authSecret } });
      await createUser(t.services, { email: 'owner@example.com', password: PASSWORD, name: 'Owner' });
      await createUser(t.services, { email: 'second@example.com', password: PASSWORD, name: 'Second' });
    });

    after(async () => {
      await t?.close();
      rmSync(dataDir, { recursive: true, force: true });
      await database.drop();
    });

    const cli = (args: readonly string[], cleanup: RegisterCleanup) => runCli(['orgs', ...args], { env, timeoutMs: CLI_TIMEOUT_MS, cleanup });

    // One story in three tests (each a handful of processes, far from the per-test timeout on a
    // busy machine), run in order on the same database.
    let organization: { id: string; slug: string };

    it('creates and lists', async (context) => {
      const cleanup: RegisterCleanup = (fn) => context.after(fn);
      const created = await cli(['create', '--name', 'Acme Corp', '--slug', 'acme', '--owner-email', 'owner@example.com', '--json'], cleanup);
      assert.equal(created.code, 0, describeRun(created));
      organization = JSON.parse(created.stdout) as { id: string; slug: string };
      assert.equal(organization.slug, 'acme');
      const events = (await t.services.audit.listEvents({ type: 'organization.created', limit: 10 })).events;
      assert.equal(events.find((e) => e.details?.organizationId === organization.id)?.details?.via, 'cli');

      const text = await cli(['create', '--name', 'Beta Works', '--owner-email', 'owner@example.com'], cleanup);
      assert.equal(text.code, 0, describeRun(text));
      assert.match(text.stdout, /^Created organization \S+ \(beta-works: Beta Works\) with owner@example.com as OWNER\n$/);

      const list = await cli(['list'], cleanup);
      assert.equal(list.code, 0, describeRun(list));
      assert.match(list.stdout, /acme\s+1\s+/);
      assert.match(list.stdout, /2 organizations\n$/);
      const { organizations: listed } = JSON.parse((await cli(['list', '--json'], cleanup)).stdout) as { organizations: Array<{ slug: string; memberCount: number }> };
      assert.deepEqual(listed.map((o) => o.slug).sort(), ['acme', 'beta-works']);
    });

    it('adds members and shows them', async (context) => {
      const cleanup: RegisterCleanup = (fn) => context.after(fn);
      assert.ok(organization, 'created by the test before');
      assert.equal((await cli(['add-member', 'acme', '--email', 'second@example.com', '--role', 'ADMIN'], cleanup)).code, 0);
      const { members } = JSON.parse((await cli(['members', organization.id, '--json'], cleanup)).stdout) as { members: Array<{ email: string; role: string }> };
      assert.deepEqual(members.map((m) => [m.email, m.role]), [['owner@example.com', 'OWNER'], ['second@example.com', 'ADMIN']]);
      const shown = await cli(['show', 'acme'], cleanup);
      assert.match(shown.stdout, /Members:\s+2\n/);
      assert.match(shown.stdout, /Owners:\s+owner@example.com\n/);
      const shownJson = JSON.parse((await cli(['show', 'acme', '--json'], cleanup)).stdout) as { id: string; slug: string; memberCount: number };
      assert.deepEqual([shownJson.id, shownJson.slug, shownJson.memberCount], [organization.id, 'acme', 2]);
    });

    it('keeps the last OWNER, hands the organization over and deletes it', async (context) => {
      const cleanup: RegisterCleanup = (fn) => context.after(fn);
      assert.ok(organization, 'created by the test before');
      // The last OWNER stays.
      const refused = await cli(['set-role', 'acme', '--email', 'owner@example.com', '--role', 'MEMBER'], cleanup);
      assert.equal(refused.code, 1, describeRun(refused));
      assert.match(refused.stderr, /at least one OWNER/);
      assert.equal((await cli(['remove-member', 'acme', '--email', 'owner@example.com'], cleanup)).code, 1);
      assert.equal((await cli(['set-role', 'acme', '--email', 'second@example.com', '--role', 'OWNER'], cleanup)).code, 0);
      const removed = await cli(['remove-member', 'acme', '--email', 'owner@example.com'], cleanup);
      assert.equal(removed.code, 0, describeRun(removed));
      assert.equal((await t.services.organizations.listMembers(organization.id, { userId: (await t.services.users.findUserByEmail('second@example.com'))!.id }))?.length, 1);

      const deleted = await cli(['delete', 'acme'], cleanup);
      assert.equal(deleted.code, 0, describeRun(deleted));
      assert.equal(await t.services.organizations.find(organization.id), null);
    });

    it('refuses a wrong command line with exit 2 and what fails with exit 1', async (context) => {
      const cleanup: RegisterCleanup = (fn) => context.after(fn);
      assert.equal((await cli(['frobnicate'], cleanup)).code, 2);
      const badOption = await cli(['members', 'acme', '--jsn'], cleanup);
      assert.equal(badOption.code, 2, describeRun(badOption));
      assert.match(badOption.stderr, /orgs members: unknown option --jsn \(did you mean "--json"\?\); its options: --json/);
      assert.equal((await cli(['create', '--name', 'X'], cleanup)).code, 2, '--owner-email is required');
      assert.equal((await cli(['create', '--name', 'X', '--slug', 'Bad Slug', '--owner-email', 'owner@example.com'], cleanup)).code, 2);
      assert.equal((await cli(['show'], cleanup)).code, 2);
      assert.equal((await cli(['show', 'nope'], cleanup)).code, 1);
      assert.equal((await cli(['create', '--name', 'X', '--owner-email', 'nobody@example.com'], cleanup)).code, 1);
      assert.equal((await cli(['add-member', 'beta-works', '--email', 'second@example.com', '--role', 'lower'], cleanup)).code, 2);
    });
  });
}
