/**
 * `gatehouse clients …` as an operator runs it (`node src/cli/main.ts` in a child process), on
 * every backend: create (JSON and text), list, show, rotate-secret, delete, and the refusals
 * (exit 2 for a wrong command line or a value the rules refuse, 1 for what fails).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, type TestApp } from '../../test/helpers/app.ts';
import { randomSecret, runCli, type ChildEnv, type RegisterCleanup, type RunResult } from '../../test/helpers/process.ts';
import { clientSecretMatches } from './clients.service.ts';

const CLI_TIMEOUT_MS = 30_000;
const WEB = 'https://app.example.com/callback';

function describeRun(result: RunResult): string {
  return `exit ${result.code} (signal ${result.signal})\n--- stdout ---\n${result.stdout}\n--- stderr ---\n${result.stderr}`;
}

for (const backend of await backends()) {
  describe(`gatehouse clients (${backend.name})`, { skip: backend.skip }, () => {
    const authSecret = randomSecret();
    let database: TestDatabase;
    let dataDir: string;
    let env: ChildEnv;
    let inspector: TestApp | undefined;

    before(async () => {
      database = await backend.create();
      dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-clients-cli-'));
      env = { NODE_ENV: 'development', LOG_LEVEL: 'info', AUTH_SECRET: authSecret, DATA_DIR: dataDir, DATABASE_URL: database.url };
    });

    after(async () => {
      await inspector?.close();
      rmSync(dataDir, { recursive: true, force: true });
      await database.drop();
    });

    /** The real app on the same database, to check what the CLI wrote. */
    async function app(): Promise<TestApp> {
      inspector ??= await createTestApp(database, { env: { AUTH_SECRET: authSecret } });
      return inspector;
    }

    const cli = (args: readonly string[], cleanup: RegisterCleanup) => runCli(['clients', ...args], { env, timeoutMs: CLI_TIMEOUT_MS, cleanup });
    const hashOf = async (id: string) =>
      (await (await app()).services.storage.db.selectFrom('oidc_clients').select('secret_hash').where('id', '=', id).executeTakeFirstOrThrow()).secret_hash;

    let confidential: { clientId: string; clientSecret: string };

    it('create --json registers a confidential client and prints its id and secret', async (t) => {
      const result = await cli(
        ['create', '--name', 'Billing', '--redirect-uri', WEB, '--redirect-uri', 'http://127.0.0.1:8080/cb', '--post-logout-redirect-uri', 'https://app.example.com/bye', '--first-party', '--id-token-alg', 'RS256', '--backchannel-logout-uri', 'https://app.example.com/backchannel', '--json'],
        (fn) => t.after(fn),
      );
      assert.equal(result.code, 0, describeRun(result));
      const printed = JSON.parse(result.stdout) as Record<string, unknown> & { clientId: string; clientSecret: string };
      confidential = { clientId: printed.clientId, clientSecret: printed.clientSecret };
      // All an app needs to be this client, the secret once: the issuer, its id and secret, its registration.
      assert.deepEqual(Object.keys(printed).slice(0, 3), ['issuer', 'clientId', 'clientSecret']);
      assert.equal(printed.issuer, (await app()).services.config.authUrl);
      assert.deepEqual(printed.redirectUris, [WEB, 'http://127.0.0.1:8080/cb']);
      assert.deepEqual(printed.postLogoutRedirectUris, ['https://app.example.com/bye']);
      assert.equal(printed.backchannelLogoutUri, 'https://app.example.com/backchannel');
      assert.deepEqual(printed.grantTypes, ['authorization_code', 'refresh_token']);
      assert.equal(printed.public, false);
      assert.ok(!result.stderr.includes(confidential.clientSecret), 'the secret is not logged');
      const client = await (await app()).services.oidcClients.show(confidential.clientId);
      assert.ok(client);
      assert.equal(client.name, 'Billing');
      assert.deepEqual(client.redirectUris, [WEB, 'http://127.0.0.1:8080/cb']);
      assert.deepEqual(client.postLogoutRedirectUris, ['https://app.example.com/bye']);
      assert.equal(client.isFirstParty, true);
      assert.equal(client.idTokenSignedResponseAlg, 'RS256');
      assert.equal(client.backchannelLogoutUri, 'https://app.example.com/backchannel');
      assert.ok(clientSecretMatches(confidential.clientSecret, (await hashOf(confidential.clientId))!));
      const events = (await (await app()).services.audit.listEvents({ type: 'oidc_client.created', limit: 10 })).events;
      assert.equal(events.find((event) => event.details?.clientId === confidential.clientId)?.details?.via, 'cli');
    });

    it('create prints no secret for a public client, and text without --json', async (t) => {
      const json = await cli(['create', '--name', 'Phone', '--public', '--redirect-uri', 'com.example.app:/callback', '--grant-type', 'authorization_code', '--grant-type', 'refresh_token', '--json'], (fn) => t.after(fn));
      assert.equal(json.code, 0, describeRun(json));
      const body = JSON.parse(json.stdout);
      assert.equal(body.public, true);
      assert.ok(!('clientSecret' in body), 'a public client has no secret');
      assert.equal((await hashOf(body.clientId)), null);

      const text = await cli(['create', '--name', 'Device', '--grant-type', 'device_code', '--grant-type', 'refresh_token', '--public'], (fn) => t.after(fn));
      assert.equal(text.code, 0, describeRun(text));
      assert.match(text.stdout, /^Registered public client [A-Za-z0-9_-]{22} \(Device\)\n$/);
      const id = /client (\S+)/.exec(text.stdout)![1]!;
      assert.deepEqual((await (await app()).services.oidcClients.show(id))?.grantTypes, ['urn:ietf:params:oauth:grant-type:device_code', 'refresh_token']);

      const secretText = await cli(['create', '--name', 'Batch', '--grant-type', 'client_credentials'], (fn) => t.after(fn));
      assert.equal(secretText.code, 0, describeRun(secretText));
      assert.match(secretText.stdout, /^Registered confidential client \S+ \(Batch\)\nClient secret \(shown only this once; Gatehouse keeps only a hash\): [A-Za-z0-9_-]{43}\n$/);
    });

    it('list and show print the clients, never a secret', async (t) => {
      const json = await cli(['list', '--json'], (fn) => t.after(fn));
      assert.equal(json.code, 0, describeRun(json));
      const { clients } = JSON.parse(json.stdout) as { clients: Array<{ clientId: string; name: string; origin: string; lastUsedAt: string | null }> };
      assert.deepEqual(clients.map((client) => client.name), ['Batch', 'Device', 'Phone', 'Billing']);
      assert.ok(clients.every((client) => client.origin === 'cli' && client.lastUsedAt === null), 'registered at the command line, never used');
      const hash = (await hashOf(confidential.clientId))!;
      for (const output of [json.stdout]) assert.ok(!output.includes(confidential.clientSecret) && !output.includes(hash));

      const text = await cli(['list'], (fn) => t.after(fn));
      assert.equal(text.code, 0, describeRun(text));
      assert.match(text.stdout, /^CLIENT ID\s+TYPE\s+GRANT TYPES\s+ORIGIN\s+CREATED \(UTC\)\s+LAST USED \(UTC\)\s+NAME\n/);
      assert.match(text.stdout, new RegExp(`^${confidential.clientId}\\s+confidential\\s+authorization_code,refresh_token\\s+cli\\s+\\S+ \\S+\\s+never\\s+Billing$`, 'm'));
      assert.match(text.stdout, /^4 clients\n$/m);

      const shown = await cli(['show', confidential.clientId, '--json'], (fn) => t.after(fn));
      assert.equal(shown.code, 0, describeRun(shown));
      const client = JSON.parse(shown.stdout);
      assert.equal(client.clientId, confidential.clientId);
      assert.equal(client.public, false);
      assert.equal('clientSecret' in client, false);
      const shownText = await cli(['show', confidential.clientId], (fn) => t.after(fn));
      assert.equal(shownText.code, 0, describeRun(shownText));
      assert.match(shownText.stdout, /^Client ID: +\S+\nName: +Billing\nType: +confidential\n/);
      assert.ok(!shownText.stdout.includes(hash));
    });

    it('rotate-secret prints a new secret; the old one stops working', async (t) => {
      const rotated = await cli(['rotate-secret', confidential.clientId, '--json'], (fn) => t.after(fn));
      assert.equal(rotated.code, 0, describeRun(rotated));
      const body = JSON.parse(rotated.stdout);
      assert.equal(body.clientId, confidential.clientId);
      const hash = (await hashOf(confidential.clientId))!;
      assert.equal(clientSecretMatches(body.clientSecret, hash), true);
      assert.equal(clientSecretMatches(confidential.clientSecret, hash), false);

      const publicId = (await (await app()).services.oidcClients.list()).find((client) => client.name === 'Phone')!.id;
      const refused = await cli(['rotate-secret', publicId], (fn) => t.after(fn));
      assert.equal(refused.code, 1, describeRun(refused));
      assert.match(refused.stderr, /public client/);
    });

    it('delete removes a client; a second delete and a show of it fail with exit 1', async (t) => {
      const deleted = await cli(['delete', confidential.clientId], (fn) => t.after(fn));
      assert.equal(deleted.code, 0, describeRun(deleted));
      assert.equal(deleted.stdout, `Deleted client ${confidential.clientId} (Billing)\n`);
      assert.equal(await (await app()).services.oidcClients.show(confidential.clientId), null);
      for (const args of [['delete', confidential.clientId], ['show', confidential.clientId], ['rotate-secret', confidential.clientId]]) {
        const again = await cli(args, (fn) => t.after(fn));
        assert.equal(again.code, 1, describeRun(again));
        assert.match(again.stderr, /no client with the ID/);
      }
    });

    // The command line is read the same on every backend: once is enough.
    it('create --exchange-resource and set-exchange set and replace the exchange policy', { skip: backend.name !== 'sqlite' && 'the same on every backend: run on SQLite' }, async (t) => {
      const created = await cli(['create', '--name', 'Agent', '--grant-type', 'client_credentials', '--exchange-resource', 'https://b.example.com', '--exchange-resource', 'https://c.example.com', '--json'], (fn) => t.after(fn));
      assert.equal(created.code, 0, describeRun(created));
      const { clientId, exchangeResources } = JSON.parse(created.stdout) as { clientId: string; exchangeResources: string[] };
      assert.deepEqual(exchangeResources, ['https://b.example.com', 'https://c.example.com']);
      const replaced = await cli(['set-exchange', clientId, '--exchange-resource', 'https://d.example.com'], (fn) => t.after(fn));
      assert.equal(replaced.code, 0, describeRun(replaced));
      assert.match(replaced.stdout, /may exchange tokens for: https:\/\/d\.example\.com/);
      assert.deepEqual((await (await app()).services.oidcClients.show(clientId))?.exchangeResources, ['https://d.example.com']);
      const cleared = await cli(['set-exchange', clientId], (fn) => t.after(fn));
      assert.equal(cleared.code, 0, describeRun(cleared));
      assert.deepEqual((await (await app()).services.oidcClients.show(clientId))?.exchangeResources, []);
      // Nothing but the policy: a client that only exchanges (no grant type of its own).
      const exchanger = await cli(['create', '--name', 'API B', '--exchange-resource', 'https://c.example.com', '--json'], (fn) => t.after(fn));
      assert.equal(exchanger.code, 0, describeRun(exchanger));
      assert.deepEqual((JSON.parse(exchanger.stdout) as { grantTypes: string[] }).grantTypes, []);
      const publicAgent = await cli(['create', '--name', 'SPA', '--public', '--redirect-uri', WEB, '--exchange-resource', 'https://b.example.com'], (fn) => t.after(fn));
      assert.equal(publicAgent.code, 2, describeRun(publicAgent));
      assert.match(publicAgent.stderr, /--exchange-resource: token exchange needs a client that can keep a secret/);
    });

    it('refuses a wrong command line or refused values with exit 2 and a clear message', { skip: backend.name !== 'sqlite' && 'the same on every backend: run on SQLite' }, async (t) => {
      const before = (await (await app()).services.oidcClients.list()).length;
      const cases: Array<[string[], RegExp]> = [
        [['frobnicate'], /unknown clients command "frobnicate"/],
        [['create', '--name', 'X', '--redirect-uri', WEB, '--colour', 'blue'], /clients create: unknown option --colour/],
        [['create', '--redirect-uri', WEB], /--name is required/],
        [['create', '--name', 'X', '--redirect-uri', WEB, '--id-token-alg', 'HS256'], /--id-token-alg must be one of EdDSA, RS256/],
        [['create', '--name', 'X', '--redirect-uri', 'http://app.example.com/cb'], /--redirect-uri "http:\/\/app\.example\.com\/cb": must use https/],
        [['create', '--name', 'X', '--redirect-uri', `${WEB}#frag`], /must not contain a fragment/],
        [['create', '--name', 'X', '--redirect-uri', 'com.example.app:/cb'], /only a public \(native app\) client may/],
        [['create', '--name', 'X', '--redirect-uri', WEB, '--grant-type', 'implicit'], /--grant-type: the implicit grant is not supported/],
        [['create', '--name', 'X', '--redirect-uri', WEB, '--grant-type', 'password'], /--grant-type: the password grant is not supported/],
        [['create', '--name', 'X', '--public', '--grant-type', 'client_credentials'], /a public client cannot use it/],
        [['create', '--name', 'X'], /--redirect-uri: must list at least one redirect URI/],
        [['create', '--name', 'X', '--redirect-uri', WEB, '--backchannel-logout-uri', 'http://app.example.com/bc'], /--backchannel-logout-uri: must use https/],
        [['show'], /name exactly one client ID/],
        [['delete', 'a', 'b'], /name exactly one client ID/],
        [['list', 'extra'], /unexpected argument/i],
      ];
      for (const [args, message] of cases) {
        const result = await cli(args, (fn) => t.after(fn));
        assert.equal(result.code, 2, `${args.join(' ')}\n${describeRun(result)}`);
        assert.match(result.stderr, message, args.join(' '));
      }
      assert.equal((await (await app()).services.oidcClients.list()).length, before, 'nothing registered');
    });
  });
}
