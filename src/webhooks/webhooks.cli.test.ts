/**
 * `gatehouse webhooks …` as an operator runs it (`node src/cli/main.ts` in a child process), on
 * every backend: create (JSON: `{"id","secret"}`), list, show, disable, enable, rotate-secret,
 * deliveries, redeliver and delete, and the refusals (exit 2 for a wrong command line or a value
 * the rules refuse, 1 for what fails).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, type TestApp } from '../../test/helpers/app.ts';
import { randomSecret, runCli, type ChildEnv, type RegisterCleanup, type RunResult } from '../../test/helpers/process.ts';
import { PassThrough } from 'node:stream';
import { runWebhooksCommand } from './webhooks.cli.ts';
import type { ServiceRegistry } from '../module.ts';

const CLI_TIMEOUT_MS = 30_000;
const URL_ = 'https://hooks.example.com/in';

const describeRun = (result: RunResult) => `exit ${result.code} (signal ${result.signal})\n--- stdout ---\n${result.stdout}\n--- stderr ---\n${result.stderr}`;

for (const backend of await backends()) {
  describe(`gatehouse webhooks (${backend.name})`, { skip: backend.skip }, () => {
    const authSecret = randomSecret();
    let database: TestDatabase;
    let dataDir: string;
    let env: ChildEnv;
    let inspector: TestApp | undefined;

    before(async () => {
      database = await backend.create();
      dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-webhooks-cli-'));
      env = { NODE_ENV: 'development', LOG_LEVEL: 'info', AUTH_SECRET: authSecret, DATA_DIR: dataDir, DATABASE_URL: database.url };
    });
    after(async () => {
      await inspector?.close();
      rmSync(dataDir, { recursive: true, force: true });
      await database.drop();
    });

    /** The real app on the same database (its worker asleep), to check what the CLI wrote and to make events. */
    async function app(): Promise<TestApp> {
      inspector ??= await createTestApp(database, { env: { AUTH_SECRET: authSecret, WEBHOOK_POLL_INTERVAL_MS: '600000' } });
      return inspector;
    }
    const cli = (args: readonly string[], cleanup: RegisterCleanup) => runCli(['webhooks', ...args], { env, timeoutMs: CLI_TIMEOUT_MS, cleanup });

    let id = '';

    it('create --json registers an endpoint and prints its id and secret, which are never logged', async (t) => {
      const result = await cli(['create', '--url', URL_, '--event', 'user.created', '--event', 'email.verified', '--description', 'CRM', '--json'], (fn) => t.after(fn));
      assert.equal(result.code, 0, describeRun(result));
      const body = JSON.parse(result.stdout);
      assert.deepEqual(Object.keys(body), ['id', 'secret']);
      assert.match(body.secret, /^whsec_/);
      assert.ok(!result.stderr.includes(body.secret));
      id = body.id;
      const endpoint = await (await app()).services.webhooks.show(id);
      assert.deepEqual([endpoint?.url, endpoint?.eventTypes, endpoint?.description], [URL_, ['user.created', 'email.verified'], 'CRM']);
      const event = (await (await app()).services.audit.listEvents({ type: 'webhook.endpoint_created', limit: 5 })).events.find((e) => e.details?.endpointId === id);
      assert.equal(event?.details?.via, 'cli');
    });

    it('refuses a wrong command line and values the rules refuse with exit 2', async (t) => {
      for (const args of [['create', '--event', 'user.created'], ['create', '--url', URL_], ['create', '--url', URL_, '--event', 'nope'], ['create', '--url', 'https://u:p@x.example.com/', '--event', 'user.created'], ['show'], ['frobnicate'], ['deliveries', id, '--limit', '0']]) {
        const result = await cli(args, (fn) => t.after(fn));
        assert.equal(result.code, 2, `${args.join(' ')}\n${describeRun(result)}`);
      }
      const unknown = await cli(['create', '--url', URL_, '--event', 'nope'], (fn) => t.after(fn));
      assert.match(unknown.stderr, /--event: "nope" is not an event type[\s\S]*event types: user\.created/);
      for (const args of [['show', 'missing'], ['disable', 'missing'], ['delete', 'missing'], ['rotate-secret', 'missing'], ['redeliver', 'missing'], ['deliveries', 'missing']]) {
        const result = await cli(args, (fn) => t.after(fn));
        assert.equal(result.code, 1, `${args.join(' ')}\n${describeRun(result)}`);
        assert.match(result.stderr, /no webhook (endpoint|delivery) with the ID missing/);
      }
    });

    it('list, show, disable, enable and rotate-secret', async (t) => {
      const list = await cli(['list', '--json'], (fn) => t.after(fn));
      assert.equal(list.code, 0, describeRun(list));
      assert.deepEqual(JSON.parse(list.stdout).endpoints.map((endpoint: { id: string }) => endpoint.id), [id]);
      const text = await cli(['list'], (fn) => t.after(fn));
      assert.match(text.stdout, new RegExp(`${id}\\s+enabled\\s+.*user\\.created,email\\.verified\\s+${URL_}`));
      assert.match((await cli(['show', id], (fn) => t.after(fn))).stdout, /State:\s+enabled/);
      assert.match((await cli(['disable', id], (fn) => t.after(fn))).stdout, /Disabled webhook endpoint/);
      assert.match((await cli(['disable', id], (fn) => t.after(fn))).stdout, /was already disabled/);
      assert.equal(JSON.parse((await cli(['show', id, '--json'], (fn) => t.after(fn))).stdout).enabled, false);
      assert.match((await cli(['enable', id], (fn) => t.after(fn))).stdout, /Enabled webhook endpoint/);
      const rotated = await cli(['rotate-secret', id, '--json'], (fn) => t.after(fn));
      assert.equal(rotated.code, 0, describeRun(rotated));
      assert.deepEqual(Object.keys(JSON.parse(rotated.stdout)), ['id', 'secret']);
      assert.ok(!rotated.stderr.includes(JSON.parse(rotated.stdout).secret));
    });

    it('deliveries shows status, attempts and response code; redeliver queues a failed one again', async (t) => {
      const services = (await app()).services;
      await services.audit.record({ type: 'email.verified', userId: 'user-cli' });
      const [pending] = (await services.webhooks.listDeliveries(id))!;
      const listed = await cli(['deliveries', id, '--json'], (fn) => t.after(fn));
      assert.equal(listed.code, 0, describeRun(listed));
      const [delivery] = JSON.parse(listed.stdout).deliveries;
      // The inspecting app's worker may have tried it once already (hooks.example.com does not answer here).
      assert.deepEqual([delivery.id, delivery.status, delivery.eventType], [pending!.id, 'pending', 'email.verified']);
      assert.ok(delivery.attempts <= 1 && 'lastResponseCode' in delivery);
      assert.match((await cli(['deliveries', id], (fn) => t.after(fn))).stdout, new RegExp(`DELIVERY ID\\s+EVENT\\s+STATUS\\s+ATTEMPTS\\s+RESPONSE\\s+ERROR[\\s\\S]*${pending!.id}\\s+email\\.verified\\s+pending\\s+[01]\\s+`));
      const early = await cli(['redeliver', pending!.id], (fn) => t.after(fn));
      assert.equal(early.code, 1);
      assert.match(early.stderr, /still pending/);
      // Disabling fails what is pending; enabled again, the failed delivery can be redelivered.
      await cli(['disable', id], (fn) => t.after(fn));
      await cli(['enable', id], (fn) => t.after(fn));
      const redone = await cli(['redeliver', pending!.id], (fn) => t.after(fn));
      assert.equal(redone.code, 0, describeRun(redone));
      assert.match(redone.stdout, new RegExp(`a redelivery of ${pending!.id}, webhook-id ${pending!.webhookId}`));
      assert.equal((await services.webhooks.listDeliveries(id))!.length, 2);
    });

    it('delete removes the endpoint', async (t) => {
      const result = await cli(['delete', id], (fn) => t.after(fn));
      assert.equal(result.code, 0, describeRun(result));
      assert.equal(await (await app()).services.webhooks.show(id), null);
      assert.match((await cli(['list'], (fn) => t.after(fn))).stdout, /No webhook endpoints/);
    });
  });
}

describe('gatehouse webhooks: ids that start with a dash', () => {
  // Ids are base64url: one in 64 starts with `-`, and must not be read as an unknown option.
  it('takes `-…` as the id, for every command that names one', async () => {
    const id = '-bcdefghijklmnopqrstuv';
    const seen: string[] = [];
    const webhooks = {
      show: async (value: string) => (seen.push(value), null),
      delete: async (value: string) => (seen.push(value), false),
      listDeliveries: async (value: string) => (seen.push(value), null),
      redeliver: async (value: string) => (seen.push(value), { ok: false, reason: 'NOT_FOUND' }),
    };
    const run = (args: string[]) =>
      runWebhooksCommand(args, { stdin: new PassThrough(), stdout: new PassThrough(), stderr: new PassThrough() }, {
        usage: '',
        withServices: async (_io, fn) => fn({ webhooks } as unknown as ServiceRegistry),
      });
    assert.equal(await run(['show', id, '--json']), 1);
    assert.equal(await run(['delete', id]), 1);
    assert.equal(await run(['deliveries', '--limit', '5', id]), 1);
    assert.equal(await run(['redeliver', id]), 1);
    assert.equal(await run(['show', '--', id]), 1);
    assert.deepEqual(seen, [id, id, id, id, id]);
    // A real option mistyped is still refused as a wrong command line.
    assert.equal(await run(['show', 'abc', '--jsn']), 2);
  });
});
