/**
 * `BENCH_ONLY=webhooks`: webhook delivery throughput, from event to receipt. Events are made the
 * way an operator's would be (an administrator creating users through `POST /api/admin/users`,
 * each a `user.created` webhook per subscribed endpoint, written to the outbox with the change),
 * as fast as the API takes them; the delivery worker (src/webhooks/delivery-worker.ts) sends them
 * to a receiver on loopback (perf/webhook-receiver.ts, on the load generator's core), which
 * verifies each signature and records when each arrived. A run's figure is the deliveries ÷ the
 * time from its first event to its last receipt; each delivery's latency is its event to its
 * receipt, queueing in the outbox included.
 *
 * The worker sends to one endpoint one attempt at a time (a lane per endpoint): measured
 * with 1 endpoint and with 4 (each event then makes 4 deliveries). The baseline of each is the
 * same receiver fed signed POSTs straight from one process on the server's core, with as many
 * lanes, by the worker's own signing and sending code (perf/webhook-sender.ts): what the transport
 * alone allows, without the outbox. Runs are by count (as many events as the previous run's rate
 * fills a round with), and end when every delivery has arrived.
 */
import { randomBytes } from 'node:crypto';
import autocannon, { type Result } from 'autocannon';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BENCH_DIR, HOST, REPO_DIR, getJson, postJson, resultOf, roundSeconds, startApp, type App, type Gatehouse } from './harness.ts';
import { compare, describeServer, gatehouse, measureRuns, pathTarget, profileDir, result, withApps, type Context, type NamedSubject, type RunRecord, type ScenarioResult } from './scenarios.ts';
import type { ReceiverWindow } from './webhook-receiver.ts';
import { freePort } from '../test/helpers/process.ts';

const WEBHOOKS_ENV = { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' };
/** Deliveries in the first warm-up run of each subject, before any rate is known. */
const FIRST_WARMUP_DELIVERIES = 400;
/** Admin requests in flight while events are made. */
const EVENT_CONNECTIONS = 8;
/** Every delivery of a run must have arrived by then (a dead worker must not hang the bench). */
const DELIVERY_TIMEOUT_MS = 60_000;
/** The fan-out measured beside one endpoint: as many endpoints, each on a lane of its own. */
const LANES = 4;

type Receiver = App & { url: string };

async function startHelper(ctx: Context, name: string, script: string, cpus: string | null, env: Record<string, string> = {}): Promise<Receiver> {
  const port = await freePort();
  const app = await startApp({
    name,
    script: join(BENCH_DIR, script),
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PORT: String(port), ...env },
    cwd: REPO_DIR,
    cpus,
    readyUrl: `http://${HOST}:${port}/__ready`,
    profileDir: profileDir(ctx, name),
  });
  return { ...app, url: `http://${HOST}:${port}` };
}

/** Registers `count` endpoints for user.created at `/hooks/<prefix><i>` of the receiver, and gives it their secrets. */
async function registerEndpoints(server: Gatehouse, adminToken: string, receiver: Receiver, prefix: string, count: number): Promise<void> {
  const secrets: Record<string, string> = {};
  for (let i = 0; i < count; i++) {
    const path = `/hooks/${prefix}${i}`;
    const answer = await postJson(`${server.url}/api/admin/webhooks`, { url: `${receiver.url}${path}`, eventTypes: ['user.created'], description: 'bench receiver' }, adminToken);
    if (answer.status !== 201 || typeof answer.body.secret !== 'string') throw new Error(`webhook endpoint not registered: ${answer.status} ${JSON.stringify(answer.body)}`);
    secrets[path] = answer.body.secret;
  }
  await postJson(`${receiver.url}/__secrets`, secrets);
}

/**
 * One run: opens a receiver window, `send`s (makes the events or posts the webhooks), waits until
 * `expected` deliveries have arrived, and reports them in autocannon's shape: a "request" is a
 * delivery, its latency the time from its event to its receipt; one that never came is status 0,
 * a refused signature 400.
 */
async function deliveryRun(receiver: Receiver, expected: number, send: () => Promise<void>): Promise<{ result: Result; duplicates: number }> {
  await postJson(`${receiver.url}/__window`, {});
  await send();
  const deadline = Date.now() + DELIVERY_TIMEOUT_MS;
  let window = (await getJson(`${receiver.url}/__window`)) as ReceiverWindow;
  while (window.delivered + window.refused < expected && Date.now() < deadline) {
    await sleep(20);
    window = (await getJson(`${receiver.url}/__window`)) as ReceiverWindow;
  }
  const seconds = window.firstEventAt === null || window.lastReceivedAt === null ? 0 : Math.max(0.001, (window.lastReceivedAt - window.firstEventAt) / 1000);
  const missing = Math.max(0, expected - window.delivered - window.refused);
  const outcomes: Record<string, number> = { '204': window.delivered, ...(window.refused > 0 && { '400': window.refused }), ...(missing > 0 && { '0': missing }) };
  return { result: resultOf({ seconds, latenciesMs: window.latenciesMs, outcomes, failed: window.refused + missing }), duplicates: window.duplicates };
}

/** How many deliveries make a round at the rate of the subject's previous run. */
function deliveriesFor(ctx: Context, previous: Result | null): number {
  if (previous === null || previous.duration <= 0) return FIRST_WARMUP_DELIVERIES;
  return Math.max(LANES * 10, Math.round(((previous.requests.total ?? 0) / previous.duration) * roundSeconds(ctx.settings)));
}

export async function webhooksScenario(ctx: Context): Promise<ScenarioResult> {
  process.stdout.write('\nwebhook delivery throughput, event to receipt (1 and 4 endpoints) vs signed POSTs straight to the same receiver\n');
  const apps: App[] = [];
  return withApps(apps, async () => {
    const receiver = await startHelper(ctx, 'webhook-receiver', 'webhook-receiver.ts', ctx.pinning?.load ?? null);
    apps.push(receiver);
    const senderTargets = Array.from({ length: LANES }, (_, i) => ({ url: `${receiver.url}/hooks/direct${i}`, secret: `whsec_${randomBytes(32).toString('base64')}` }));
    await postJson(`${receiver.url}/__secrets`, Object.fromEntries(senderTargets.map((target) => [new URL(target.url).pathname, target.secret])));
    const sender = await startHelper(ctx, 'webhook-sender', 'webhook-sender.ts', ctx.pinning?.server ?? null, { TARGETS: JSON.stringify(senderTargets) });
    apps.push(sender);

    let duplicates = 0;
    const subjects: NamedSubject[] = [];
    for (const endpoints of [1, LANES]) {
      const server = await gatehouse(ctx, `webhooks-${endpoints}`, { database: 'sqlite', strategy: 'database', env: WEBHOOKS_ENV });
      apps.push(server);
      const adminToken = String((await postJson(`${server.url}/api/auth`, server.store.admin)).body.token);
      await registerEndpoints(server, adminToken, receiver, `e${endpoints}-`, endpoints);
      let events = 0;
      let created = 0;
      const makeEvents = async () => {
        const result = await autocannon({
          url: `${server.url}/api/admin/users`,
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` },
          connections: EVENT_CONNECTIONS,
          amount: events,
          requests: [{ setupRequest: (params) => ({ ...params, body: JSON.stringify({ email: `bench-${endpoints}-${created++}@bench.example`, name: 'Bench User' }) }) }],
        });
        if (result.non2xx + result.errors > 0) throw new Error(`making events: ${result.non2xx} non-2xx, ${result.errors} errors (${JSON.stringify(result.statusCodeStats)})`);
      };
      const direct = { count: 0 };
      subjects.push(
        {
          app: server,
          spec: {
            url: `${receiver.url}/hooks/e${endpoints}-0`,
            method: 'POST',
            connections: endpoints,
            drive: async () => {
              const run = await deliveryRun(receiver, events * endpoints, makeEvents);
              duplicates += run.duplicates;
              return run.result;
            },
          },
          prepare: async (previous) => {
            events = Math.max(EVENT_CONNECTIONS, Math.ceil(deliveriesFor(ctx, previous) / endpoints));
          },
          name: `webhooks-${endpoints}`,
          label: `deliveries, ${endpoints} endpoint${endpoints === 1 ? '' : 's'} (event to receipt)`,
          server: describeServer(server.options),
          isService: true,
          counts: 'deliveries',
        },
        {
          app: sender,
          spec: {
            url: `${receiver.url}/hooks/direct0`,
            method: 'POST',
            connections: endpoints,
            drive: async () => {
              const run = await deliveryRun(receiver, direct.count * endpoints, async () => {
                await postJson(`${sender.url}/send?count=${direct.count}&lanes=${endpoints}`, {});
              });
              duplicates += run.duplicates;
              return run.result;
            },
          },
          prepare: async (previous) => {
            direct.count = Math.ceil(deliveriesFor(ctx, previous) / endpoints);
          },
          name: `transport-${endpoints}`,
          label: `signed POSTs straight to the receiver, ${endpoints} lane${endpoints === 1 ? '' : 's'}`,
          server: 'perf/webhook-sender.ts (the worker\'s signing and sender.ts, no outbox)',
          isService: false,
          counts: 'deliveries',
        },
      );
    }
    const runs = await measureRuns(ctx, subjects);
    const [one, directOne, four, directFour] = runs as [RunRecord, RunRecord, RunRecord, RunRecord];
    compare([one], directOne);
    compare([four], directFour);
    const targets = [
      pathTarget('webhooks:1-endpoint', 'webhook delivery throughput, event to receipt, 1 endpoint', one),
      pathTarget('webhooks:4-endpoints', `webhook delivery throughput, event to receipt, ${LANES} endpoints`, four),
    ];
    const notes = [
      `Events: an administrator creating users (POST /api/admin/users, no password, ${EVENT_CONNECTIONS} connections), as fast as the API takes them; each makes one user.created delivery per endpoint, written to the outbox in the same transaction. Deliveries per second are counted from the first event of a run to the last receipt, so the server makes the events and delivers them on the same core; the latencies (p50, p99) are each delivery's time from its event to its receipt, queueing in the outbox of a burst included. Every receipt was verified (Standard Webhooks signature) by the receiver, on the load generator's core.`,
      `The worker sends to one endpoint one attempt at a time and to up to ${LANES} endpoints at once (its lanes); the baselines send from one process on the server's core with the worker's own signing and sender (a new connection per attempt), one lane per endpoint, without the outbox. The Gatehouse servers run with WEBHOOK_ALLOW_PRIVATE_TARGETS=true (a receiver on loopback).`,
      ...(duplicates > 0 ? [`The receiver saw ${duplicates} duplicate deliveries (the same webhook-id again), not counted.`] : []),
    ];
    return result(ctx, 'webhooks', 'Webhook delivery throughput, event to receipt (SQLite, database strategy, 1 worker)', runs, targets, { notes });
  });
}
