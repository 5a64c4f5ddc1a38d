/**
 * `BENCH_ONLY=idle`: how light a default instance is (issue 38, part 3). The instance is what
 * `npm start` runs (`node <its flags> src/start.js`, no bench probe loaded), with the bench's
 * defaults (SQLite, the database strategy, LOG_LEVEL=info, the admin bootstrap), on its store after
 * a restart: a first start makes the store (migrations, the admin, its password rated) and fills
 * Node's compile cache; then each round starts it again and measures
 *   - cold start to ready: spawn until `/api/health` answers 200 (polled every 100 ms);
 *   - idle RSS: once the process has used no CPU for a moment (perf/harness.ts waitForQuiet) and
 *     IDLE_SETTLE_MS more have passed (and, reported beside it, the RSS at that moment of quiet);
 * beside the same two figures of a bare Fastify app (perf/bare-app.ts) started in the same round
 * on the same core. After the rounds, the instance signs in under load (POST /api/auth, 8
 * connections, BENCH_SECONDS split in rounds; started with the bench's probe, as the signin
 * scenario starts it) and its peak RSS is read, then its RSS once idle again.
 *
 * The peer, Better Auth's minimal server (perf/better-auth-app.ts: e-mail and password on SQLite),
 * is measured the same way in the same rounds: a first start makes its tables, then each round
 * restarts it on that file.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  HOST,
  REPO_DIR,
  aggregate,
  createStore,
  gatehouseEnv,
  resultOf,
  round,
  roundSeconds,
  runRound,
  signIn,
  startApp,
  startGatehouse,
  waitForQuiet,
  warmUp,
  type App,
  type GatehouseStore,
  type RawRound,
} from './harness.ts';
import { record, result, startBare, startBetterAuth, type Context, type RunRecord, type ScenarioResult, type Target } from './scenarios.ts';
import { freePort, startScriptNodeArgs } from '../test/helpers/process.ts';
import { serverEntry } from '../src/start.js';

/** Issue 38: a default instance idles at most at this, and stays under SIGNIN_RSS_LIMIT_MB signing in. */
const IDLE_RSS_LIMIT_MB = 100;
const SIGNIN_RSS_LIMIT_MB = 200;
/**
 * After the process goes quiet: late timers (the password-strength worker's idle end) have run, and
 * the instance has given back what its start left behind (IDLE_MEMORY_RELEASE, 5 s of idle by
 * default); the RSS once quiet, before that, is reported too.
 */
const IDLE_SETTLE_MS = 10_000;
const SIGNIN_CONNECTIONS = 8;

interface Started {
  app: App;
  url: string;
  readyMs: number;
}

/** The default instance on `store`, as `npm start` runs it; timed from spawn to ready. */
async function startDefault(ctx: Context, store: GatehouseStore): Promise<Started> {
  const port = await freePort();
  const started = performance.now();
  const app = await startApp({
    name: 'idle-gatehouse',
    script: join(REPO_DIR, 'src', 'start.js'),
    nodeArgs: startScriptNodeArgs(),
    env: gatehouseEnv(store, port, { strategy: 'database', env: { LOG_LEVEL: 'info' } }),
    cwd: store.dataDir, // so a developer's .env in the repository is not read
    cpus: ctx.pinning?.server ?? null,
    readyUrl: `http://${HOST}:${port}/api/health`,
  });
  return { app, url: `http://${HOST}:${port}`, readyMs: performance.now() - started };
}

async function startBareTimed(ctx: Context): Promise<Started> {
  const started = performance.now();
  const app = await startBare(ctx, { '/health': { status: 'ok' } });
  return { app, url: app.url, readyMs: performance.now() - started };
}

async function startBetterAuthTimed(ctx: Context, database: string): Promise<Started> {
  const started = performance.now();
  const app = await startBetterAuth(ctx, database);
  return { app, url: app.url, readyMs: performance.now() - started };
}

function rssMb(pid: number): number {
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? round(Number(match[1]) / 1024, 1) : 0;
}

/**
 * Starts, waits for idle, reads RSS, stops: one round of one subject, in autocannon's shape (its
 * RSS the idle one), with the RSS read as soon as the process went quiet.
 */
async function idleRound(start: () => Promise<Started>, quietRssMb: number[]): Promise<RawRound> {
  const { app, readyMs } = await start();
  try {
    await waitForQuiet();
    quietRssMb.push(rssMb(app.pid));
    await sleep(IDLE_SETTLE_MS);
    const rss = rssMb(app.pid);
    return { result: resultOf({ seconds: readyMs / 1000, latenciesMs: [Math.round(readyMs)], outcomes: { ready: 1 }, failed: 0 }), peakRssMb: rss, probes: [] };
  } finally {
    await app.stop();
  }
}

export async function idleScenario(ctx: Context): Promise<ScenarioResult> {
  process.stdout.write('\nidle: cold start to ready and idle RSS of a default instance after a restart, vs bare Fastify; RSS signing in\n');
  const store = await createStore('idle', 'sqlite');
  // The first start: the store made, the admin created, the compile cache filled.
  await (await startDefault(ctx, store)).app.stop();

  // The peer's first start: its tables made by its migrations.
  const peerFirst = await startBetterAuth(ctx);
  await peerFirst.stop();

  const gatehouseRounds: RawRound[] = [];
  const bareRounds: RawRound[] = [];
  const peerRounds: RawRound[] = [];
  const quiet = { gatehouse: [] as number[], bare: [] as number[], peer: [] as number[] };
  for (let r = 0; r < ctx.settings.rounds; r++) {
    gatehouseRounds.push(await idleRound(() => startDefault(ctx, store), quiet.gatehouse));
    bareRounds.push(await idleRound(() => startBareTimed(ctx), quiet.bare));
    peerRounds.push(await idleRound(() => startBetterAuthTimed(ctx, peerFirst.database), quiet.peer));
  }
  // `npm run bench` bundles the server first; a source file edited since makes src/start.js run the source.
  const server = `gatehouse (sqlite, database, 1 worker), node src/start.js (${serverEntry().endsWith('.ts') ? 'from source: the bundle is stale' : 'its bundle'})`;
  const idle = record(aggregate({ url: 'http://start/api/health', connections: 1 }, gatehouseRounds), { name: 'idle-gatehouse', label: 'start to ready (ms) and idle RSS, after a restart', server, isService: false, counts: 'runs' });
  const bare = record(aggregate({ url: 'http://start/__ready', connections: 1 }, bareRounds), { name: 'idle-bare', label: 'bare Fastify: start to ready (ms) and idle RSS', server: 'bare fastify', isService: false, counts: 'runs' });
  const peer = record(aggregate({ url: 'http://start/__ready', connections: 1 }, peerRounds), { name: 'idle-better-auth', label: "Better Auth's minimal server: start to ready (ms) and idle RSS", server: 'better-auth (node:http, SQLite)', isService: false, counts: 'runs' });
  for (const run of [idle, peer]) {
    run.baseline = { name: bare.name, label: bare.label, value: bare.latencyP50Ms, unit: 'ms median' };
    run.ratio = round(run.latencyP50Ms / bare.latencyP50Ms, 2);
  }

  // Sign-in under load on the restarted instance: started as the signin scenario starts it
  // (perf/server-entry.js: src/main.ts with the bench's event-loop probe, which the rounds read).
  const server2 = await startGatehouse({ name: 'idle-signin', database: 'sqlite', strategy: 'database', store, cpus: ctx.pinning?.server ?? null, profileDir: null, env: { LOG_LEVEL: 'info' } });
  let signin: RunRecord;
  let afterSigninRssMb: number;
  try {
    const spec = { url: `${server2.url}/api/auth`, method: 'POST' as const, headers: { 'content-type': 'application/json' }, body: JSON.stringify(store.admin), connections: SIGNIN_CONNECTIONS };
    await signIn(server2); // a load of refusals would measure fast 401s
    await warmUp(spec, ctx.settings.warmupSeconds);
    const rounds: RawRound[] = [];
    for (let r = 0; r < ctx.settings.rounds; r++) rounds.push(await runRound(server2, spec, roundSeconds(ctx.settings)));
    signin = record(aggregate(spec, rounds), { name: 'idle-signin-c8', label: `POST /api/auth, ${SIGNIN_CONNECTIONS} connections, after a restart`, server, isService: true });
    // Idle again after the load: what the instance keeps.
    await waitForQuiet();
    await sleep(IDLE_SETTLE_MS);
    afterSigninRssMb = rssMb(server2.pid);
  } finally {
    await server2.stop();
  }

  const targets: Target[] = [
    {
      id: 'idle:rss',
      target: `A default instance (node src/start.js, on its store after a restart) idles at ≤ ${IDLE_RSS_LIMIT_MB} MB RSS`,
      measured: `${idle.peakRssMb} MB idle (the largest of ${ctx.settings.rounds} restarts; ${Math.max(...quiet.gatehouse)} MB as soon as it went quiet, before it gave back what its start left behind; bare Fastify ${bare.peakRssMb} MB); ready in ${idle.latencyP50Ms} ms (median; bare Fastify ${bare.latencyP50Ms} ms)`,
      met: idle.peakRssMb <= IDLE_RSS_LIMIT_MB,
    },
    {
      id: 'idle:vs-better-auth',
      target: "Cold start to ready and idle RSS reported beside Better Auth's minimal server in the same run",
      measured: `Gatehouse ${idle.latencyP50Ms} ms and ${idle.peakRssMb} MB (${Math.max(...quiet.gatehouse)} MB once quiet); Better Auth ${peer.latencyP50Ms} ms and ${peer.peakRssMb} MB (${Math.max(...quiet.peer)} MB once quiet; e-mail and password only; Gatehouse with every module of its default)`,
      met: peer.completed > 0 && idle.completed > 0,
    },
    {
      id: 'idle:rss-signin',
      target: `and stays ≤ ${SIGNIN_RSS_LIMIT_MB} MB under sign-in load with the bench's defaults (including the admin bootstrap)`,
      measured: `peak ${signin.peakRssMb} MB (${signin.label}; ${signin.requestsPerSecond} sign-ins/s); ${afterSigninRssMb} MB idle again after the load`,
      met: signin.peakRssMb <= SIGNIN_RSS_LIMIT_MB && signin.non2xx + signin.errors === 0,
    },
  ];
  const notes = [
    `Each round restarts the instance on the same SQLite store (made by a first, unmeasured start: migrations, the ADMIN_EMAIL user, the compile cache) and starts a bare Fastify app (perf/bare-app.ts) on the same core. "p50 ms" is spawn to the first 200 from the readiness URL (polled every 100 ms); "peak RSS" of these two rows is the idle RSS, read once the process has been quiet and ${IDLE_SETTLE_MS / 1000} s more have passed (the largest of the rounds); the instance gives back what its start left behind after 5 s of idle (IDLE_MEMORY_RELEASE, src/lib/idle-memory-release.ts), and its RSS at the moment it went quiet, before that, is in the target's line. The instance runs src/start.js with package.json's start flags and no bench probe, so it has no event-loop figures. The bare app is TypeScript run without the compile cache, so its RSS includes Node's type-stripping compiler (WebAssembly, about 18 MB) that src/start.js avoids.`,
    "Better Auth's minimal server (perf/better-auth-app.ts: betterAuth() with e-mail and password on node:sqlite, mounted with toNodeHandler on node:http) takes its turn in the same rounds on the same core, restarted on the SQLite file its first start made. Like the bare app it is TypeScript run by Node's type stripping and loads the bench's probe, so its RSS includes the same ~18 MB compiler.",
  ];
  return result(ctx, 'idle', 'A default instance: cold start and idle RSS after a restart; RSS signing in', [idle, bare, peer, signin], targets, { notes });
}
