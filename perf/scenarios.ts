/**
 * The scenarios of `npm run bench`. Each starts the servers it needs (and stops them), measures
 * its figures beside a baseline measured in the same run on the same pinned core, checks the
 * issue's targets, and returns a `ScenarioResult` that run.ts writes to perf/results/<name>.json.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import type { HashBound } from './hash-bound.ts';
import type { SeedReport } from './seed.ts';
import {
  BENCH_DIR,
  HOST,
  REPO_DIR,
  aggregate,
  getJson,
  makeTempDir,
  measureHashBound,
  measureInterleaved,
  pairedRatio,
  ratio,
  round,
  roundSeconds,
  runRound,
  signIn,
  startApp,
  startGatehouse,
  type App,
  type Gatehouse,
  type GatehouseOptions,
  type LoadSpec,
  type Machine,
  type Measurement,
  type Pinning,
  type Settings,
  type Subject,
  waitForQuiet,
  warmUp,
} from './harness.ts';
import { freePort } from '../test/helpers/process.ts';

export interface Context {
  settings: Settings;
  pinning: Pinning | null;
  machine: Machine;
  /** Where CPU profiles (perf/probe.ts) go, one folder per server; null without BENCH_CPU_PROF. */
  profileRoot: string | null;
  /** Sign-in figures of this run's `signin` scenario, reused by `signin-workers`. */
  signInOneWorker?: { hashBound: HashBound[]; runs: RunRecord[] };
}

export interface RunRecord extends Measurement {
  /** A stable key, e.g. `session-jwt-sqlite`. */
  name: string;
  label: string;
  /** What served it: `gatehouse (sqlite, jwt, 1 worker)`, `bare fastify`, ... */
  server: string;
  /** The baseline this figure is divided by, and the quotient (req/s ÷ req/s, or ÷ verifies/s). */
  baseline?: { name: string; label: string; value: number; unit: string };
  ratio?: number;
  /** Is this a Gatehouse figure (counted for the RSS and event-loop targets)? */
  isService: boolean;
  /** What its "requests" are when not HTTP requests: webhook deliveries, or runs of a command (perf/cli-timing.ts). */
  counts?: 'deliveries' | 'runs';
}

/** The unit of a run's rate. */
export const rateUnit = (run: Pick<RunRecord, 'counts'>) => (run.counts === undefined ? 'req/s' : `${run.counts}/s`);

export interface Target {
  id: string;
  /** The issue's wording of the target. */
  target: string;
  measured: string;
  met: boolean;
  /** When the figure cannot meet the target for a reason the code cannot change. */
  note?: string;
}

export interface ScenarioResult {
  scenario: string;
  title: string;
  machine: Machine;
  pinning: Pinning | null;
  settings: Settings;
  hashBound?: HashBound[];
  runs: RunRecord[];
  targets: Target[];
  notes: string[];
  /** growth only: what perf/seed.ts reported. */
  seeds?: SeedReport[];
}

export type ScenarioName = 'signin' | 'signin-workers' | 'session' | 'protected' | 'jwks' | 'protect' | 'flood' | 'mfa' | 'oidc' | 'webhooks' | 'cli' | 'idle' | 'growth' | 'import' | 'paths' | 'magic-link';

export const DEFAULT_SCENARIOS: ScenarioName[] = ['signin', 'signin-workers', 'session', 'protected', 'jwks', 'protect', 'flood', 'mfa', 'oidc', 'webhooks', 'cli', 'idle', 'paths', 'magic-link'];

const RSS_LIMIT_MB = 200;
const EVENT_LOOP_LIMIT_MS = 20;

// ---- helpers -------------------------------------------------------------------------------------

export function describeServer(options: Pick<GatehouseOptions, 'database' | 'strategy' | 'workers'>): string {
  const workers = options.workers ?? 1;
  return `gatehouse (${options.database}, ${options.strategy}, ${workers} worker${workers === 1 ? '' : 's'})`;
}

export function profileDir(ctx: Context, name: string): string | null {
  return ctx.profileRoot === null ? null : join(ctx.profileRoot, name);
}

/**
 * What the throughput scenarios' servers run with beyond `npm start`'s settings: no idle memory
 * release. Rounds take turns, so a server sits out the other subjects' turns for seconds: long
 * enough (5 s) for the release to run V8's memory-reducing collection, which shrinks the young
 * generation, and the subject measured first after those turns then ran on a server regrowing it
 * (more scavenges for the same work, then a full collection: about 4 s, longer than a round;
 * measured on the API-key check: its round after the baselines' turns at 0.57–0.67 × its
 * access-token pair, 0.82 with the release off; a second of load before the round did not bring it
 * back). Steady traffic never lets the release run (a server that is never idle never releases):
 * these figures are of that. The idle scenario keeps it, since what it measures is the memory the
 * release gives back. perf/analysis.md, "the idle release in the rounds".
 */
export const STEADY_TRAFFIC_ENV = { IDLE_MEMORY_RELEASE: 'off' };

export async function gatehouse(ctx: Context, name: string, options: Omit<GatehouseOptions, 'name' | 'cpus'> & { cpus?: string | null }): Promise<Gatehouse> {
  return startGatehouse({ name, cpus: ctx.pinning?.server ?? null, profileDir: profileDir(ctx, name), ...options, env: { ...STEADY_TRAFFIC_ENV, ...options.env } });
}

/** The unprotected baseline: bare Fastify answering `routes` (path -> JSON), on the server's core. */
export async function startBare(ctx: Context, routes: Record<string, unknown>): Promise<App & { url: string }> {
  const port = await freePort();
  const app = await startApp({
    name: 'bare',
    script: join(BENCH_DIR, 'bare-app.ts'),
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PORT: String(port), BARE_ROUTES: JSON.stringify(routes) },
    cwd: REPO_DIR,
    cpus: ctx.pinning?.server ?? null,
    readyUrl: `http://${HOST}:${port}/__ready`,
    profileDir: profileDir(ctx, 'bare'),
  });
  return { ...app, url: `http://${HOST}:${port}` };
}

/**
 * The peer: Better Auth's minimal server (perf/better-auth-app.ts) on the server's core, on the
 * SQLite file `database` (made on its first start by Better Auth's own migrations; a restart on
 * the same file finds its tables).
 */
export async function startBetterAuth(ctx: Context, database: string = join(makeTempDir('gatehouse-bench-better-auth-'), 'better-auth.sqlite')): Promise<App & { url: string; database: string }> {
  const port = await freePort();
  const app = await startApp({
    name: 'better-auth',
    script: join(BENCH_DIR, 'better-auth-app.ts'),
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PORT: String(port), BA_DATABASE: database, BETTER_AUTH_SECRET: 'bench-only-secret-not-used-anywhere-else-0123', NODE_ENV: 'production' },
    cwd: REPO_DIR,
    cpus: ctx.pinning?.server ?? null,
    readyUrl: `http://${HOST}:${port}/__ready`,
    profileDir: profileDir(ctx, 'better-auth'),
  });
  return { ...app, url: `http://${HOST}:${port}`, database };
}

/** Signs a new user up on the Better Auth peer and returns its session cookie. */
export async function betterAuthSession(peer: { url: string }): Promise<string> {
  const response = await fetch(`${peer.url}/api/auth/sign-up/email`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: peer.url },
    body: JSON.stringify({ email: `bench-${Date.now()}@example.com`, password: 'correct horse battery staple', name: 'Bench' }),
  });
  const cookie = response.headers.getSetCookie().find((c) => c.startsWith('better-auth.session_token='));
  await response.body?.cancel();
  if (response.status !== 200 || cookie === undefined) throw new Error(`Better Auth sign-up answered ${response.status}`);
  return cookie.split(';')[0]!;
}

function load(ctx: Context, url: string, extra: { headers?: Record<string, string>; connections?: number } = {}): LoadSpec {
  return {
    url,
    connections: extra.connections ?? ctx.settings.connections,
    ...(extra.headers !== undefined && { headers: extra.headers }),
  };
}

function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

function printRun(run: RunRecord): void {
  const against = run.baseline === undefined ? '' : `  = ${run.ratio?.toFixed(3)} × ${run.baseline.label} (${run.baseline.value} ${run.baseline.unit})`;
  const loop = run.eventLoopDelayMaxMs === null ? '' : `, loop max ${run.eventLoopDelayMaxMs} ms, ELU ${run.eventLoopUtilization}`;
  process.stdout.write(
    `  ${run.label.padEnd(44)} ${String(run.requestsPerSecond).padStart(9)} ${rateUnit(run)}  p50 ${run.latencyP50Ms} ms  p99 ${run.latencyP99Ms} ms${run.counts === 'runs' ? '' : `  rss ${run.peakRssMb} MB`}${loop}${against}\n`,
  );
  const failed = run.non2xx + run.errors + run.timeouts;
  if (failed > 0) process.stdout.write(`    !! ${run.non2xx} non-2xx, ${run.errors} errors, ${run.timeouts} timeouts: ${JSON.stringify(run.statusCodes)}\n`);
}

/**
 * The run as written to the results: the figures and the fields that name them, picked one by one.
 * A subject is often passed as `fields`; its app and load (a bearer token, a client secret in a
 * header) must never reach a result file.
 */
export function record(measurement: Measurement, fields: Pick<RunRecord, 'name' | 'label' | 'server' | 'isService' | 'counts'>): RunRecord {
  const { name, label, server, isService, counts } = fields;
  return { ...measurement, name, label, server, isService, ...(counts !== undefined && { counts }) };
}

/** A subject with what its run is recorded as. */
export type NamedSubject = Subject & Pick<RunRecord, 'name' | 'label' | 'server' | 'isService' | 'counts'>;

/** Measures the subjects in interleaved rounds (harness `measureInterleaved`) and records each as a run. */
export async function measureRuns(ctx: Context, subjects: NamedSubject[]): Promise<RunRecord[]> {
  const measured = await measureInterleaved(subjects, ctx.settings);
  return measured.map((m, i) => record(m, subjects[i]!));
}

/**
 * Issue 21's "new paths benchmarked beside their baselines" for `run` (compared already): met
 * when it ran and every measured request of it succeeded; `alsoFailed` counts successes by status
 * that were not (an introspection answering `active: false`).
 */
export function pathTarget(id: string, what: string, run: RunRecord, extra = '', alsoFailed = 0): Target {
  const failed = run.non2xx + run.errors + run.timeouts + alsoFailed;
  const baseline = run.baseline!;
  return {
    id,
    target: `${what} benchmarked in the same run beside its baseline (${baseline.label}), every measured ${run.counts === 'deliveries' ? 'delivery received and verified' : 'request a real success (2xx)'}`,
    measured: `${run.requestsPerSecond} ${rateUnit(run)} = ${run.ratio} × ${baseline.label} (${baseline.value} ${baseline.unit})${extra}; ${run.completed} ${run.counts ?? 'requests'}, ${failed} failed`,
    met: failed === 0 && run.completed > 0,
  };
}

/** Sets `baseline` and the paired ratio on each run, then prints them all. */
export function compare(runs: RunRecord[], baseline: RunRecord): void {
  for (const run of runs) {
    run.baseline = asBaseline(baseline);
    run.ratio = pairedRatio(run.rounds.map((r) => r.requestsPerSecond), baseline.rounds.map((r) => r.requestsPerSecond));
  }
}

function asBaseline(run: RunRecord): NonNullable<RunRecord['baseline']> {
  return { name: run.name, label: run.label, value: run.requestsPerSecond, unit: rateUnit(run) };
}

/** Targets every scenario checks over its Gatehouse runs: peak RSS and event-loop blocking. */
function commonTargets(scenario: string, runs: RunRecord[]): Target[] {
  const service = runs.filter((r) => r.isService);
  if (service.length === 0) return [];
  const worstRss = service.reduce((a, b) => (b.peakRssMb > a.peakRssMb ? b : a));
  const targets: Target[] = [
    {
      id: `${scenario}:rss`,
      target: `RSS ≤ ${RSS_LIMIT_MB} MB under load`,
      measured: `peak ${worstRss.peakRssMb} MB (${worstRss.label}; heap used ${cell(worstRss.heapUsedMb)} MB)`,
      met: worstRss.peakRssMb <= RSS_LIMIT_MB,
    },
  ];
  const withLoop = service.filter((r) => r.eventLoopDelayMaxMs !== null);
  if (withLoop.length > 0) {
    const worst = withLoop.reduce((a, b) => (b.eventLoopDelayMaxMs! > a.eventLoopDelayMaxMs! ? b : a));
    // A process doing nothing but answering JSON in the same run: what the machine alone causes
    // (the VM descheduling us, other tenants) rather than our code.
    const floor = runs.filter((r) => !r.isService && r.eventLoopDelayMaxMs !== null);
    const floorText = floor.length === 0 ? '' : `; baseline app in the same run: max ${Math.max(...floor.map((r) => r.eventLoopDelayMaxMs!))} ms`;
    const medianOfRoundMaxes = (r: RunRecord) => {
      const values = r.rounds.map((x) => x.eventLoopDelayMaxMs ?? 0).sort((a, b) => a - b);
      return values[Math.floor(values.length / 2)] ?? 0;
    };
    const floorMax = floor.length === 0 ? 0 : Math.max(...floor.map((r) => r.eventLoopDelayMaxMs!));
    const isMet = worst.eventLoopDelayMaxMs! <= EVENT_LOOP_LIMIT_MS;
    targets.push({
      id: `${scenario}:event-loop`,
      target: `event loop never blocked > ${EVENT_LOOP_LIMIT_MS} ms`,
      measured: `max ${worst.eventLoopDelayMaxMs} ms (${worst.label}; median round ${medianOfRoundMaxes(worst)} ms; p99 ${worst.eventLoopDelayP99Ms} ms${floorText})`,
      met: isMet,
      // Only when the do-nothing app stalled as long: then the figure says more about the VM.
      ...(!isMet &&
        floorMax >= worst.eventLoopDelayMaxMs! && {
          note: `not conclusive here: an app that only answers static JSON stalled ${floorMax} ms in the same run, so stalls of this size come from the shared VM (steal time, other tenants), not from our code alone`,
        }),
    });
  }
  return targets;
}

const cell = (value: unknown) => (value === null || value === undefined ? '–' : String(value));

export function result(ctx: Context, scenario: string, title: string, runs: RunRecord[], targets: Target[], extra: Partial<ScenarioResult> = {}): ScenarioResult {
  for (const run of runs) printRun(run);
  return {
    scenario,
    title,
    machine: ctx.machine,
    pinning: ctx.pinning,
    settings: ctx.settings,
    runs,
    // A scenario may state a common target in its own, stricter words (sign-in's RSS): then only that one.
    targets: [...targets, ...commonTargets(scenario, runs).filter((common) => !targets.some((own) => own.id === common.id))],
    notes: [],
    ...extra,
  };
}

export async function withApps<T>(apps: (App | undefined)[], body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } finally {
    for (const app of apps) await app?.stop();
  }
}

// ---- sign-in -------------------------------------------------------------------------------------

/**
 * Sign-in at each connection count, in rounds; each round starts with the hash bound measured in
 * a child on the server's CPU(s) while the server is idle, and each sign-in figure is divided by
 * the hash bound of its own round (the median of those quotients is the ratio).
 */
async function measureSignIns(ctx: Context, server: Gatehouse, cpus: string | null, prefix: string, hashLabel: string) {
  await signIn(server); // a load run against wrong credentials would measure fast 401s
  const specs: LoadSpec[] = ctx.settings.signinConnections.map((connections) => ({
    url: `${server.url}/api/auth`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(server.store.admin),
    connections,
  }));
  for (const spec of specs) await warmUp(spec, ctx.settings.warmupSeconds);
  const hashBound: HashBound[] = [];
  const raw: Awaited<ReturnType<typeof runRound>>[][] = specs.map(() => []);
  for (let r = 0; r < ctx.settings.rounds; r++) {
    hashBound.push(await measureHashBound(server.env, server.store.dataDir, cpus, ctx.settings.hashSeconds, r === 0 ? 1 : 0));
    for (const [i, spec] of specs.entries()) raw[i]!.push(await runRound(server, spec, roundSeconds(ctx.settings)));
  }
  const perRound = hashBound.map((h) => h.verifiesPerSecond);
  const meanBound = round(perRound.reduce((a, b) => a + b, 0) / perRound.length, 2);
  process.stdout.write(`  hash bound ${hashLabel}: ${perRound.join(', ')} verifies/s by round; one verify alone ${hashBound[0]!.singleVerifyMs} ms\n`);
  const runs = specs.map((spec, i) => {
    const m = aggregate(spec, raw[i]!);
    const run = record(m, { name: `${prefix}-c${m.connections}`, label: `POST /api/auth, ${m.connections} connections`, server: describeServer(server.options), isService: true });
    run.baseline = { name: `${prefix}-hash-bound`, label: hashLabel, value: meanBound, unit: 'verifies/s' };
    run.ratio = pairedRatio(m.rounds.map((x) => x.requestsPerSecond), perRound);
    return run;
  });
  return { hashBound, runs };
}

/**
 * The sign-in servers run in the default settings, as `npm start` gives them (LOG_LEVEL=info: a
 * log line per request; the database strategy; SQLite): issue 21's RSS target is for those. The
 * only change is the per-IP sign-in limits gatehouseEnv raises, since every request comes from
 * 127.0.0.1. A line per request costs nothing next to an argon2id verify, so the hash-bound
 * ratios stay what they measure.
 */
const SIGNIN_ENV = { LOG_LEVEL: 'info' };
/** Issue 21: p99 within this factor of the floor Little's law sets. */
const SIGNIN_P99_FLOOR_FACTOR = 1.5;

export async function signInScenario(ctx: Context): Promise<ScenarioResult> {
  process.stdout.write('\nsign-in (1 worker, default settings) vs the hash-bound limit on the same core\n');
  const server = await gatehouse(ctx, 'signin', { database: 'sqlite', strategy: 'database', env: SIGNIN_ENV });
  const { hashBound, runs } = await withApps([server], () => measureSignIns(ctx, server, ctx.pinning?.server ?? null, 'signin', 'argon2id verifies/s, 1 core'));
  ctx.signInOneWorker = { hashBound, runs };

  const targets: Target[] = [];
  for (const run of runs) {
    const bound = run.baseline!.value;
    targets.push({
      id: `signin:ratio-c${run.connections}`,
      target: `sign-in ≥ 0.9 × hash-bound limit (concurrency ${run.connections})`,
      measured: `${run.requestsPerSecond} / ${bound} → ${run.ratio} (median of per-round ratios)`,
      met: run.ratio! >= 0.9,
    });
    // Little's law: with c requests always in flight and at most `bound` completions per second,
    // the mean latency cannot be below c / bound however fast everything else is.
    const floorMs = round((run.connections / bound) * 1000, 1);
    const limitMs = round(SIGNIN_P99_FLOOR_FACTOR * floorMs, 1);
    targets.push({
      id: `signin:p99-c${run.connections}`,
      target: `sign-in p99 ≤ ${SIGNIN_P99_FLOOR_FACTOR} × the Little's-law floor, in flight ÷ hash-bound rate (concurrency ${run.connections})`,
      measured: `p99 ${run.latencyP99Ms} ms vs ${SIGNIN_P99_FLOOR_FACTOR} × ${floorMs} ms = ${limitMs} ms (${run.connections} in flight ÷ ${bound} verifies/s) → ${ratio(run.latencyP99Ms, floorMs)} × the floor`,
      met: run.latencyP99Ms <= limitMs,
    });
  }
  const worst = runs.reduce((a, b) => (b.peakRssMb > a.peakRssMb ? b : a));
  targets.push({
    id: 'signin:rss',
    target: `RSS ≤ ${RSS_LIMIT_MB} MB under sign-in load with one worker and default settings (as npm start runs it: LOG_LEVEL=info, database strategy, SQLite; only the per-IP sign-in limits raised)`,
    measured: `peak ${worst.peakRssMb} MB (${worst.label}; heap used ${cell(worst.heapUsedMb)} MB)`,
    met: worst.peakRssMb <= RSS_LIMIT_MB,
  });
  return result(ctx, 'signin', 'Sign-in, POST /api/auth (SQLite, database strategy, 1 worker, default logging)', runs, targets, { hashBound });
}

export async function signInWorkersScenario(ctx: Context): Promise<ScenarioResult> {
  process.stdout.write('\nsign-in with WORKERS=2 (server on every core) vs 1 worker\n');
  const notes: string[] = [];
  let oneWorker: { hashBound: HashBound[]; runs: RunRecord[] };
  if (ctx.signInOneWorker === undefined) {
    const single = await gatehouse(ctx, 'signin-1w', { database: 'sqlite', strategy: 'database', env: SIGNIN_ENV });
    oneWorker = await withApps([single], () => measureSignIns(ctx, single, ctx.pinning?.server ?? null, 'signin', 'argon2id verifies/s, 1 core'));
  } else {
    oneWorker = ctx.signInOneWorker;
    notes.push('The 1-worker rows are those of the `signin` scenario of the same run.');
  }
  const allCpus = ctx.pinning?.all ?? null;
  const server = await gatehouse(ctx, 'signin-2w', { database: 'sqlite', strategy: 'database', workers: 2, cpus: allCpus, env: SIGNIN_ENV });
  const two = await withApps([server], () => measureSignIns(ctx, server, allCpus, 'signin-2w', 'argon2id verifies/s, 2 cores'));
  if (ctx.pinning !== null) {
    notes.push(
      `With 2 workers the server (primary and both workers) is pinned to CPUs ${ctx.pinning.all} and autocannon stays on CPU ${ctx.pinning.load}, so the load generator takes a little of the second core from the server; the 2-core hash bound is measured the same way (a child on CPUs ${ctx.pinning.all}). Peak RSS sums the primary and both workers.`,
    );
  }
  const targets: Target[] = [];
  const oneRuns = oneWorker.runs.map((r) => ({ ...r, name: `1w-${r.name}`, label: `1 worker: ${r.label}` }));
  const twoRuns = two.runs.map((r) => ({ ...r, label: `2 workers: ${r.label}` }));
  for (const run of twoRuns) {
    const single = oneRuns.find((r) => r.connections === run.connections);
    if (single === undefined) continue;
    targets.push({
      id: `signin-workers:scaling-c${run.connections}`,
      target: `sign-in throughput scales with cores: 2 workers ≥ 1.5 × 1 worker (concurrency ${run.connections})`,
      measured: `${run.requestsPerSecond} / ${single.requestsPerSecond} = ${ratio(run.requestsPerSecond, single.requestsPerSecond)}× (hash bound 2 cores ÷ 1 core: ${ratio(run.baseline!.value, single.baseline!.value)}×)`,
      met: run.requestsPerSecond >= 1.5 * single.requestsPerSecond,
    });
    targets.push({
      id: `signin-workers:ratio-c${run.connections}`,
      target: `2 workers ≥ 0.9 × the 2-core hash-bound limit (concurrency ${run.connections})`,
      measured: `${run.requestsPerSecond} / ${run.baseline!.value} → ${run.ratio}`,
      met: run.ratio! >= 0.9,
    });
  }
  return result(ctx, 'signin-workers', 'Sign-in, 1 vs 2 workers (WORKERS=2, node:cluster)', [...oneRuns, ...twoRuns], targets, {
    hashBound: [...oneWorker.hashBound, ...two.hashBound],
    notes,
  });
}

// ---- session check -------------------------------------------------------------------------------

export async function sessionScenario(ctx: Context): Promise<ScenarioResult> {
  process.stdout.write('\nsession check GET /api/auth/session, both strategies, SQLite and PostgreSQL\n');
  const servers: Gatehouse[] = [];
  const apps: App[] = [];
  return withApps(apps, async () => {
    for (const database of ['sqlite', 'postgres'] as const) {
      for (const strategy of ['jwt', 'database'] as const) {
        const server = await gatehouse(ctx, `session-${strategy}-${database}`, { database, strategy });
        servers.push(server);
        apps.push(server);
      }
    }
    // Issue 38: the database strategy on PostgreSQL with SESSION_CHECK_CACHE (checks kept per
    // instance, changes announced by NOTIFY).
    {
      const server = await gatehouse(ctx, 'session-database-postgres-cached', { database: 'postgres', strategy: 'database', env: { SESSION_CHECK_CACHE: '10000' } });
      servers.push(server);
      apps.push(server);
    }
    // The database strategy on SQLite without its default check cache: the one statement alone.
    {
      const server = await gatehouse(ctx, 'session-database-sqlite-uncached', { database: 'sqlite', strategy: 'database', env: { SESSION_CHECK_CACHE: '0' } });
      servers.push(server);
      apps.push(server);
    }
    // As `npm start` runs it: its default logging (info: one line per request, read by the harness
    // as a log collector would), SQLite, one worker (issue 21's targets).
    for (const strategy of ['jwt', 'database'] as const) {
      const server = await gatehouse(ctx, `session-default-${strategy}-sqlite`, { database: 'sqlite', strategy, env: { LOG_LEVEL: 'info' } });
      servers.push(server);
      apps.push(server);
    }
    const subjects: (Subject & { name: string; label: string; server: string; isService: boolean })[] = [];
    let body: unknown = null;
    for (const server of servers) {
      const { token } = await signIn(server);
      body ??= await getJson(`${server.url}/api/auth/session`, token);
      const { strategy, database } = server.options;
      const isDefault = server.options.env?.LOG_LEVEL === 'info';
      const cacheSetting = server.options.env?.SESSION_CHECK_CACHE;
      subjects.push({
        app: server,
        spec: load(ctx, `${server.url}/api/auth/session`, { headers: bearer(token) }),
        name: isDefault
          ? `session-default-${strategy}-${database}`
          : cacheSetting === '0'
            ? `session-${strategy}-${database}-uncached`
            : cacheSetting !== undefined
              ? `session-${strategy}-${database}-cached`
              : `session-${strategy}-${database}`,
        label: isDefault
          ? `session check, ${strategy}, ${database}, as npm start runs it (LOG_LEVEL=info)`
          : cacheSetting !== undefined
            ? `session check, ${strategy}, ${database}, SESSION_CHECK_CACHE=${cacheSetting}`
            : `session check, ${strategy}, ${database}`,
        server: describeServer(server.options),
        isService: true,
      });
    }
    // The peer (issue 38, part 5): Better Auth's minimal server, its default session check.
    const peer = await startBetterAuth(ctx);
    apps.push(peer);
    const peerCookie = await betterAuthSession(peer);
    subjects.push({ app: peer, spec: load(ctx, `${peer.url}/api/auth/get-session`, { headers: { cookie: peerCookie } }), name: 'better-auth', label: 'Better Auth minimal server, GET /api/auth/get-session (SQLite)', server: 'better-auth (node:http, SQLite)', isService: false });
    const bare = await startBare(ctx, { '/api/auth/session': body });
    apps.push(bare);
    subjects.push({ app: bare, spec: load(ctx, `${bare.url}/api/auth/session`), name: 'bare', label: 'bare fastify, same JSON', server: 'bare fastify', isService: false });

    const measured = await measureInterleaved(subjects, ctx.settings);
    const runs = measured.map((m, i) => record(m, subjects[i]!));
    const baselineRun = runs.at(-1)!;
    const peerRun = runs.at(-2)!;
    const serviceRuns = runs.slice(0, -2);
    compare([...serviceRuns, peerRun], baselineRun);
    const targets: Target[] = serviceRuns
      .filter((r) => r.name.startsWith('session-jwt'))
      .map((run) => ({
        id: `session:${run.name}`,
        target: `session check ≥ 20,000 req/s on one core (jwt strategy, ${run.name.endsWith('sqlite') ? 'SQLite' : 'PostgreSQL'})`,
        measured: `${run.requestsPerSecond} req/s (bare Fastify, same core and rounds: ${baselineRun.requestsPerSecond} req/s; ratio ${run.ratio})`,
        met: run.requestsPerSecond >= 20_000,
      }));
    for (const [strategy, floor] of [['database', 0.5], ['jwt', 0.7]] as const) {
      const run = serviceRuns.find((r) => r.name === `session-default-${strategy}-sqlite`)!;
      targets.push({
        id: `session:default-${strategy}-sqlite`,
        target: `session check as npm start runs it (default logging), ${strategy} strategy, SQLite ≥ ${floor} × bare Fastify (issue 21)`,
        measured: `ratio ${run.ratio} (${run.requestsPerSecond} req/s; bare Fastify ${baselineRun.requestsPerSecond} req/s)`,
        met: (run.ratio ?? 0) >= floor,
      });
    }
    // Issue 38, part 5: the check as `npm start` gives it against bare Fastify, and its stalls
    // against the bare app's worst in the same run.
    for (const [strategy, floor] of [['database', 0.4], ['jwt', 0.55]] as const) {
      const run = serviceRuns.find((r) => r.name === `session-default-${strategy}-sqlite`)!;
      targets.push({
        id: `session:default-${strategy}-sqlite-issue38`,
        target: `session check as npm start gives it (LOG_LEVEL=info), ${strategy} strategy, SQLite ≥ ${floor} × bare Fastify (issue 38)`,
        measured: `ratio ${run.ratio} (${run.requestsPerSecond} req/s; bare Fastify ${baselineRun.requestsPerSecond} req/s)`,
        met: (run.ratio ?? 0) >= floor,
      });
    }
    {
      const stalls = serviceRuns.filter((r) => r.name.startsWith('session-default-') && r.eventLoopDelayMaxMs !== null);
      const bareMax = baselineRun.eventLoopDelayMaxMs;
      if (stalls.length > 0 && bareMax !== null) {
        const worst = stalls.reduce((a, b) => (b.eventLoopDelayMaxMs! > a.eventLoopDelayMaxMs! ? b : a));
        targets.push({
          id: 'session:default-stall-vs-bare',
          target: 'no event-loop stall above 1.5 × the bare app\'s worst in the same run, as npm start gives it (issue 38)',
          measured: `max ${worst.eventLoopDelayMaxMs} ms (${worst.label}); bare Fastify ${bareMax} ms → ${Math.round((worst.eventLoopDelayMaxMs! / Math.max(bareMax, 0.1)) * 100) / 100} ×`,
          met: worst.eventLoopDelayMaxMs! <= 1.5 * bareMax,
        });
      }
    }
    // Issue 38: the database strategy reads the session, its user, roles and every module's claims
    // in one statement, so it should keep up with the jwt strategy on the same store.
    const jwtRatio = (name: string, database: string) => {
      const run = serviceRuns.find((r) => r.name === name)!;
      const jwtRun = serviceRuns.find((r) => r.name === `session-jwt-${database}`)!;
      return { run, jwtRun, ratio: Math.round((run.requestsPerSecond / jwtRun.requestsPerSecond) * 1000) / 1000 };
    };
    for (const [name, database, floor, how] of [
      ['session-database-postgres-cached', 'postgres', 0.5, 'SESSION_CHECK_CACHE: kept checks, changes by NOTIFY'],
      ['session-database-sqlite', 'sqlite', 0.6, 'its defaults: checks kept while nothing is committed'],
    ] as const) {
      const { run, jwtRun, ratio } = jwtRatio(name, database);
      const uncached = jwtRatio(database === 'postgres' ? 'session-database-postgres' : 'session-database-sqlite-uncached', database);
      targets.push({
        id: `session:database-vs-jwt-${database}`,
        target: `session check, database strategy ≥ ${floor} × the jwt strategy on ${database === 'postgres' ? 'PostgreSQL' : 'SQLite'} (issue 38; ${how})`,
        measured:
          `${run.requestsPerSecond} / ${jwtRun.requestsPerSecond} req/s → ${ratio}` +
          ` (without the cache, one statement per check: ${uncached.run.requestsPerSecond} req/s → ${uncached.ratio})`,
        met: ratio >= floor,
      });
    }
    // Issue 38, part 5: ≥ 15 × Better Auth's session endpoint, both as their defaults give them.
    for (const strategy of ['database', 'jwt'] as const) {
      const run = serviceRuns.find((r) => r.name === `session-default-${strategy}-sqlite`)!;
      const times = pairedRatio(run.rounds.map((r) => r.requestsPerSecond), peerRun.rounds.map((r) => r.requestsPerSecond));
      targets.push({
        id: `session:default-${strategy}-vs-better-auth`,
        target: `session check as npm start gives it (LOG_LEVEL=info), ${strategy} strategy, SQLite ≥ 15 × Better Auth's minimal server's GET /api/auth/get-session (issue 38)`,
        measured: `${run.requestsPerSecond} / ${peerRun.requestsPerSecond} req/s → ${times} × (paired by round; Better Auth ${peerRun.ratio} × bare Fastify)`,
        met: times >= 15 && peerRun.non2xx + peerRun.errors === 0,
      });
    }
    const notes = [
      'PostgreSQL itself runs unpinned: its backends share both cores with the server and the load generator.',
      "Better Auth (perf/better-auth-app.ts) is its minimal server as its documentation sets one up: betterAuth() with e-mail and password on node:sqlite, mounted with toNodeHandler on node:http, NODE_ENV=production, its rate limiter off; the check is its default get-session (no cookie cache) with the session cookie of a user signed up before the rounds. It takes its turn in the same rounds on the same core.",
      'The session-default-* servers run as npm start does, logging every request at info (one line each, read by the harness); the others log at warn.',
      'On a SQLite file the database strategy keeps check reads by default (SESSION_CHECK_CACHE=10000: a kept read is used while SQLite\'s change counter, read before each use, says nothing was committed since); the -uncached row turns that off (SESSION_CHECK_CACHE=0), one statement per check. Nothing is written during these runs, so the kept reads hold for the whole run.',
    ];
    return result(ctx, 'session', 'Session check, GET /api/auth/session', runs, targets, { notes });
  });
}

// ---- protected route ---------------------------------------------------------------------------

const PROTECTED_PATH = '/api/admin/users?limit=1';

/** The access hook alone on a bare app, for the diagnosis (see guard-app.ts). */
async function startGuardApp(ctx: Context, server: Gatehouse, routes: Record<string, unknown>): Promise<App & { url: string }> {
  const port = await freePort();
  const app = await startApp({
    name: `guard-${server.options.strategy}`,
    script: join(BENCH_DIR, 'guard-app.ts'),
    env: { ...server.env, PORT: String(port), BARE_ROUTES: JSON.stringify(routes), ADMIN_EMAIL: '', ADMIN_PASSWORD: '' },
    cwd: server.store.dataDir,
    cpus: ctx.pinning?.server ?? null,
    readyUrl: `http://${HOST}:${port}/__ready`,
    profileDir: profileDir(ctx, `guard-${server.options.strategy}`),
  });
  return { ...app, url: `http://${HOST}:${port}` };
}

export async function protectedScenario(ctx: Context): Promise<ScenarioResult> {
  process.stdout.write(`\nprotected route GET ${PROTECTED_PATH} (ADMIN, through the access hook) vs the same JSON from bare Fastify\n`);
  const apps: App[] = [];
  return withApps(apps, async () => {
    type Named = Subject & { name: string; label: string; server: string; isService: boolean };
    const services: Named[] = [];
    const guards: Named[] = [];
    let body: unknown = null;
    for (const strategy of ['jwt', 'database'] as const) {
      const server = await gatehouse(ctx, `protected-${strategy}`, { database: 'sqlite', strategy });
      apps.push(server);
      const { token } = await signIn(server);
      body ??= await getJson(`${server.url}${PROTECTED_PATH}`, token);
      services.push({
        app: server,
        spec: load(ctx, `${server.url}${PROTECTED_PATH}`, { headers: bearer(token) }),
        name: `protected-${strategy}`,
        label: `whole service, admin route, ${strategy}, sqlite`,
        server: describeServer(server.options),
        isService: true,
      });
      // The same route and JSON on a bare app with only the access hook in front (diagnosis),
      // on the same SQLite file and secret, so the same token is good there.
      const guard = await startGuardApp(ctx, server, { '/api/admin/users': body });
      apps.push(guard);
      guards.push({
        app: guard,
        spec: load(ctx, `${guard.url}${PROTECTED_PATH}`, { headers: bearer(token) }),
        name: `guard-only-${strategy}`,
        label: `bare fastify + access hook (the middleware), ${strategy}`,
        server: 'bare fastify + src/authorization/route-access.ts',
        isService: false,
      });
    }
    const bare = await startBare(ctx, { '/api/admin/users': body });
    apps.push(bare);
    const baseline: Named = { app: bare, spec: load(ctx, `${bare.url}${PROTECTED_PATH}`), name: 'bare', label: 'bare fastify, same route and JSON', server: 'bare fastify', isService: false };
    const subjects = [...services, ...guards, baseline];
    const measured = await measureInterleaved(subjects, ctx.settings);
    const runs = measured.map((m, i) => record(m, subjects[i]!));
    const baselineRun = runs.at(-1)!;
    compare(runs.slice(0, -1), baselineRun);

    // The issue's target: a route through the middleware vs the same Fastify route without it. That is
    // the guard-only row (the real access hook, authenticator and session service in front of the bare
    // app's route). The whole-service row also runs the admin handler's own queries, which the bare
    // route does not, so it is shown beside it, not judged against it.
    const thresholds = { jwt: 0.85, database: 0.6 } as const;
    const targets: Target[] = runs
      .filter((r) => r.name.startsWith('guard-only-'))
      .map((run) => {
        const strategy = run.name.endsWith('jwt') ? 'jwt' : 'database';
        const service = runs.find((g) => g.name === `protected-${strategy}`);
        return {
          id: `protected:${strategy}`,
          target: `protected route ≥ ${thresholds[strategy]} × the same route unprotected (${strategy} strategy, SQLite)`,
          measured: `${run.requestsPerSecond} / ${baselineRun.requestsPerSecond} → ${run.ratio}${service === undefined ? '' : ` (the whole service's admin route, with its own queries: ${service.ratio})`}`,
          met: run.ratio! >= thresholds[strategy],
        };
      });
    const notes = [
      `The target row is "bare fastify + access hook": the same route as the baseline with Gatehouse's protection in front (src/authorization/route-access.ts, the route declared for ADMIN, with the real request authenticator and session service, on the server's storage). The "protected route" rows are the whole service answering the admin route: security headers, CSRF and input hooks, request ids, the access hook, and the admin handler's two queries and zod serialisation, work the bare route does not do.`,
    ];
    return result(ctx, 'protected', `Protected API route, GET ${PROTECTED_PATH} as ADMIN`, runs, targets, { notes });
  });
}

// ---- JWKS ----------------------------------------------------------------------------------------

export async function jwksScenario(ctx: Context): Promise<ScenarioResult> {
  process.stdout.write('\nJWKS GET /.well-known/jwks.json\n');
  const apps: App[] = [];
  return withApps(apps, async () => {
    const server = await gatehouse(ctx, 'jwks', { database: 'sqlite', strategy: 'jwt' });
    apps.push(server);
    const body = await getJson(`${server.url}/.well-known/jwks.json`);
    const bare = await startBare(ctx, { '/.well-known/jwks.json': body });
    apps.push(bare);
    const subjects = [
      { app: server, spec: load(ctx, `${server.url}/.well-known/jwks.json`), name: 'jwks', label: 'JWKS', server: describeServer(server.options), isService: true },
      { app: bare, spec: load(ctx, `${bare.url}/.well-known/jwks.json`), name: 'bare', label: 'bare fastify, same JSON', server: 'bare fastify', isService: false },
    ];
    const measured = await measureInterleaved(subjects, ctx.settings);
    const [run, baselineRun] = measured.map((m, i) => record(m, subjects[i]!)) as [RunRecord, RunRecord];
    compare([run], baselineRun);
    return result(ctx, 'jwks', 'JWKS, GET /.well-known/jwks.json', [run, baselineRun], []);
  });
}

// ---- protect() in a downstream app ---------------------------------------------------------------

export async function protectScenario(ctx: Context): Promise<ScenarioResult> {
  process.stdout.write('\nprotect() in a downstream app (gatehouse-protect, built), protected vs the same route unprotected\n');
  // `gatehouse-protect` resolves to its build; benchmarking a stale one would mislead.
  const built = join(REPO_DIR, 'packages/protect/dist/protect.js');
  if (!existsSync(built)) throw new Error('packages/protect/dist is missing: run `npm run build` first');
  const staleNote = ['protect.ts', 'rules.ts', 'adapters.ts'].some((f) => statSync(join(REPO_DIR, 'packages/protect/src', f)).mtimeMs > statSync(built).mtimeMs)
    ? ['packages/protect/dist was older than its src when this ran: these figures are of the previous build (`npm run build`).']
    : [];
  const apps: App[] = [];
  return withApps(apps, async () => {
    const server = await gatehouse(ctx, 'protect-issuer', { database: 'sqlite', strategy: 'jwt' });
    apps.push(server);
    const { token } = await signIn(server);
    const [fastifyPort, nodePort, nodeOpenPort] = [await freePort(), await freePort(), await freePort()];
    const downstream = await startApp({
      name: 'downstream',
      script: join(BENCH_DIR, 'downstream-app.ts'),
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        GATEHOUSE_URL: server.url,
        FASTIFY_PORT: String(fastifyPort),
        NODE_PORT: String(nodePort),
        NODE_OPEN_PORT: String(nodeOpenPort),
      },
      cwd: REPO_DIR,
      cpus: ctx.pinning?.server ?? null,
      readyUrl: `http://${HOST}:${fastifyPort}/__ready`,
      profileDir: profileDir(ctx, 'downstream'),
    });
    apps.push(downstream);
    const fastifyUrl = `http://${HOST}:${fastifyPort}`;
    // The first protected request fetches the JWKS from Gatehouse; after that the issuer idles.
    await getJson(`${fastifyUrl}/api/data`, token);
    await getJson(`http://${HOST}:${nodePort}/api/data`, token);
    const headers = bearer(token);
    const subjects = [
      { app: downstream, spec: load(ctx, `${fastifyUrl}/api/data`, { headers }), name: 'protect-fastify', label: 'protect() as a Fastify onRequest hook', server: 'downstream fastify + gatehouse-protect', isService: true },
      { app: downstream, spec: load(ctx, `${fastifyUrl}/open/data`, { headers }), name: 'open-fastify', label: 'same Fastify route, no hook', server: 'downstream fastify', isService: false },
      { app: downstream, spec: load(ctx, `http://${HOST}:${nodePort}/api/data`, { headers }), name: 'protect-node', label: 'protect() as node:http middleware', server: 'downstream node:http + gatehouse-protect', isService: true },
      { app: downstream, spec: load(ctx, `http://${HOST}:${nodeOpenPort}/api/data`, { headers }), name: 'open-node', label: 'same node:http handler, no middleware', server: 'downstream node:http', isService: false },
    ];
    const measured = await measureInterleaved(subjects, ctx.settings);
    const runs = measured.map((m, i) => record(m, subjects[i]!));
    const [protectedFastify, openFastify, protectedNode, openNode] = runs as [RunRecord, RunRecord, RunRecord, RunRecord];
    compare([protectedFastify], openFastify);
    compare([protectedNode], openNode);
    const targets: Target[] = [protectedFastify, protectedNode].map((run) => ({
      id: `protect:${run.name}`,
      target: `protected route ≥ 0.85 × unprotected, jwt (the issue's protected-route target applied to protect(), ${run.name.endsWith('fastify') ? 'Fastify hook' : 'node:http middleware'})`,
      measured: `${run.requestsPerSecond} / ${run.baseline!.value} → ${run.ratio}`,
      met: run.ratio! >= 0.85,
    }));
    const notes = [...staleNote, 'One downstream process serves all four routes, pinned to the server CPU; the Gatehouse that issued the token idles on the same CPU after the first JWKS fetch. Its RSS and event-loop figures are the downstream process\'s.'];
    return result(ctx, 'protect', 'protect() in a downstream app (gatehouse-protect, built)', runs, targets, { notes });
  });
}

// ---- session checks during a sign-in flood -------------------------------------------------------

const FLOOD_CONNECTIONS = 64;
const FLOOD_CHECK_CONNECTIONS = 8;

/**
 * Session checks (jwt, SQLite) while 64 sign-ins are in flight on the same core, with the hash
 * threads below the event loop (HASH_THREAD_NICE=10, the default) and at its priority (0). The two
 * servers take turns, round by round; each round's flood starts a second before the measured checks
 * and ends after them, and the sign-ins it completed are counted as well: the priority decides
 * which of the two waits for the CPU.
 */
export async function floodScenario(ctx: Context): Promise<ScenarioResult> {
  process.stdout.write(`\nsession checks during a flood of ${FLOOD_CONNECTIONS} sign-ins, hash threads at nice 10 (default) and 0\n`);
  const apps: App[] = [];
  return withApps(apps, async () => {
    const servers = [];
    for (const nice of ['10', '0']) {
      const server = await gatehouse(ctx, `flood-nice${nice}`, { database: 'sqlite', strategy: 'jwt', env: { HASH_THREAD_NICE: nice } });
      apps.push(server);
      const { token } = await signIn(server);
      servers.push({
        server,
        nice,
        check: load(ctx, `${server.url}/api/auth/session`, { headers: bearer(token), connections: FLOOD_CHECK_CONNECTIONS }),
        flood: {
          url: `${server.url}/api/auth`,
          method: 'POST' as const,
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(server.store.admin),
          connections: FLOOD_CONNECTIONS,
        },
        rounds: [] as Awaited<ReturnType<typeof runRound>>[],
        signInsPerSecond: [] as number[],
      });
    }
    const seconds = roundSeconds(ctx.settings);
    for (const subject of servers) {
      await warmUp(subject.check, ctx.settings.warmupSeconds);
      await warmUp(subject.flood, ctx.settings.warmupSeconds);
    }
    for (let r = 0; r < ctx.settings.rounds; r++) {
      for (const subject of servers) {
        await waitForQuiet();
        const flood = autocannon({ ...subject.flood, duration: seconds + 2, timeout: 30 });
        let floodResult;
        try {
          await sleep(1_000);
          subject.rounds.push(await runRound(subject.server, subject.check, seconds, true));
        } finally {
          // Never leave the flood running (or its failure unheard) if the measured round fails.
          floodResult = await flood;
        }
        subject.signInsPerSecond.push(Math.round(((floodResult.requests.total ?? 0) / floodResult.duration) * 10) / 10);
      }
    }
    const runs = servers.map((subject) =>
      record(aggregate(subject.check, subject.rounds), {
        name: `flood-check-nice${subject.nice}`,
        label: `session check during the flood, hash threads at nice ${subject.nice}`,
        server: `${describeServer(subject.server.options)}, HASH_THREAD_NICE=${subject.nice}`,
        isService: true,
      }),
    );
    const [lowered, equal] = runs as [RunRecord, RunRecord];
    compare([lowered], equal);
    const floodText = servers.map((s) => `nice ${s.nice}: ${s.signInsPerSecond.join(', ')} sign-ins/s by round`).join('; ');
    process.stdout.write(`  flood: ${floodText}\n`);
    const notes = [
      `The flood: ${FLOOD_CONNECTIONS} connections posting correct credentials to POST /api/auth, started 1 s before each measured round of session checks (${FLOOD_CHECK_CONNECTIONS} connections) and ended 1 s after it. Sign-ins completed during the flood: ${floodText}.`,
      'No target applies; these figures show what HASH_THREAD_NICE buys: the event loop gets the CPU first, so cheap requests keep flowing while hashes take what is left (src/lib/thread-pool-priority.ts).',
    ];
    return result(ctx, 'flood', `Session checks during a flood of ${FLOOD_CONNECTIONS} sign-ins (SQLite, jwt, 1 worker)`, runs, [], { notes });
  });
}
