/**
 * `gatehouse api-keys …` as an operator runs it (`node src/cli/main.ts` in a child process), on
 * every backend: create a personal and an organization key (the key printed once, stored as its
 * hash), list (never a secret), revoke, and the refusals (exit 2 for a wrong command line, 1 for
 * what the rules refuse).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { randomSecret, runCli, type ChildEnv, type RegisterCleanup } from '../../test/helpers/process.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';
import { hashApiKey } from './key-format.ts';

for (const backend of await backends()) {
  describe(`gatehouse api-keys (${backend.name})`, { skip: backend.skip }, () => {
    const authSecret = randomSecret();
    let database: TestDatabase;
    let dataDir: string;
    let env: ChildEnv;
    let app: TestApp;

    before(async () => {
      database = await backend.create();
      dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-api-keys-cli-'));
      env = { NODE_ENV: 'development', LOG_LEVEL: 'info', AUTH_SECRET: authSecret, DATA_DIR: dataDir, DATABASE_URL: database.url };
      app = await createTestApp(database, { env: { AUTH_SECRET: authSecret } });
    });
    after(async () => {
      await app?.close();
      rmSync(dataDir, { recursive: true, force: true });
      await database.drop();
    });

    const cli = (args: readonly string[], cleanup: RegisterCleanup) => runCli(['api-keys', ...args], { env, timeoutMs: 30_000, cleanup });

    it('creates, lists and revokes keys; the key is printed once and never listed', async (t) => {
      const cleanup: RegisterCleanup = (fn) => t.after(fn);
      const user = await createUser(app.services, { email: 'cli-keys@example.com', password: 'correct horse battery staple', roles: ['AUDITOR'] });
      const organization = await app.services.organizations.create({ name: 'Cli Co' }, user.id, SYSTEM_SOURCE);
      assert.ok(organization.ok);

      const personal = await cli(['create', '--user', 'cli-keys@example.com', '--name', 'nightly export', '--days', '7', '--role', 'AUDITOR', '--json'], cleanup);
      assert.equal(personal.code, 0, personal.stderr);
      const made = JSON.parse(personal.stdout) as { key: { id: string; roles: string[] }; secret: string };
      assert.deepEqual(made.key.roles, ['AUDITOR']);
      const row = await app.services.storage.db.selectFrom('api_keys').select('secret_hash').where('id', '=', made.key.id).executeTakeFirstOrThrow();
      assert.equal(row.secret_hash, hashApiKey(made.secret));

      const orgKey = await cli(['create', '--org', organization.organization.slug, '--name', 'billing', '--role', 'MEMBER'], cleanup);
      assert.equal(orgKey.code, 0, orgKey.stderr);
      assert.match(orgKey.stdout, /Key \(shown only this once\): gatehouse_ok_[0-9A-Za-z]{48}/);

      const listed = await cli(['list', '--user', 'cli-keys@example.com'], cleanup);
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, /nightly export/);
      assert.ok(!listed.stdout.includes(made.secret.slice(13)));

      const revoked = await cli(['revoke', made.key.id], cleanup);
      assert.equal(revoked.code, 0, revoked.stderr);
      assert.equal((await app.services.apiKeys.show(made.key.id))?.status, 'revoked');

      assert.equal((await cli(['create', '--name', 'no owner'], cleanup)).code, 2);
      const refused = await cli(['create', '--user', 'cli-keys@example.com', '--name', 'too much', '--role', 'ADMIN'], cleanup);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /API_KEY_SCOPE_NOT_ALLOWED/);
      assert.equal((await cli(['revoke', 'nope'], cleanup)).code, 1);
    });
  });
}
