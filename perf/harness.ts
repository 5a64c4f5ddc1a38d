/**
 * What every benchmark shares: CPU pinning, child processes (Gatehouse, the baselines, the
 * hash-bound child), scratch storage, and one measured load run with autocannon that also
 * records the server's peak RSS, event-loop delay and utilisation.
 *
 * The machines are shared and noisy, so no figure stands alone: each is set beside a baseline
 * measured in the same run, on the same pinned core.
 */
import autocannon, { type Request as AutocannonRequest, type Result } from 'autocannon';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, unlinkSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { HashBound } from './hash-bound.ts';
import type { ProbeReport } from './probe.ts';
import { freePort, randomSecret, startScriptNodeArgs } from '../test/helpers/process.ts';

export const HOST = '127.0.0.1';
export const BENCH_DIR = fileURLToPath(new URL('.', import.meta.url));
export const REPO_DIR = fileURLToPath(new URL('..', import.meta.url));
export const RESULTS_DIR = join(BENCH_DIR, 'results');
const HASH_BOUND_ENTRY = join(BENCH_DIR, 'hash-bound.ts');
/** The maintenance database the scratch databases are created from (trust auth on loopback). */
const POSTGRES_ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const STARTUP_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 8_000;
const KEPT_OUTPUT_CHARS = 64 * 1024;
const RSS_SAMPLE_MS = 100;

// ---- settings ----------------------------------------------------------------------------------

export interface Settings {
  /** Measured seconds of each figure (BENCH_SECONDS), split over `rounds` interleaved rounds. */
  seconds: number;
  /** BENCH_ROUNDS: each figure is measured in this many rounds, round-robin with its baseline. */
  rounds: number;
  /** Unmeasured load before each run: JIT, pools and caches warm. */
  warmupSeconds: number;
  /** Measured seconds of each hash-bound measurement (one per round). */
  hashSeconds: number;
  /** Connections for the fast endpoints (BENCH_CONNECTIONS). */
  connections: number;
  /** Sign-in is measured at each of these (BENCH_SIGNIN_CONNECTIONS, e.g. "8,64"). */
  signinConnections: number[];
  /** Profile the servers' measured windows (perf/probe.ts, node:inspector) and summarise them (BENCH_CPU_PROF=1). */
  cpuProfile: boolean;
}

export function readSettings(env: NodeJS.ProcessEnv): Settings {
  const seconds = integerSetting(env, 'BENCH_SECONDS', 9, 1, 300);
  const rounds = integerSetting(env, 'BENCH_ROUNDS', 3, 1, 20);
  const connections = integerSetting(env, 'BENCH_CONNECTIONS', 32, 1, 1000);
  const signinConnections = (env.BENCH_SIGNIN_CONNECTIONS?.trim() || '8,64').split(',').map((part) => Number(part.trim()));
  if (signinConnections.some((c) => !Number.isInteger(c) || c < 1 || c > 1000)) {
    throw new Error(`BENCH_SIGNIN_CONNECTIONS must be a comma-separated list of integers (got "${env.BENCH_SIGNIN_CONNECTIONS}")`);
  }
  return {
    seconds,
    rounds: Math.min(rounds, seconds),
    warmupSeconds: seconds >= 4 ? 2 : 1,
    hashSeconds: Math.min(3, Math.max(1, Math.round(seconds / rounds))),
    connections,
    signinConnections,
    cpuProfile: env.BENCH_CPU_PROF === '1' || env.BENCH_CPU_PROF === 'true',
  };
}

function integerSetting(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) throw new Error(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
  return value;
}

// ---- the machine and CPU pinning ---------------------------------------------------------------

export interface Machine {
  cpu: string;
  cores: number;
  node: string;
  kernel: string;
  /** 1-minute load average when the run started: how busy the shared machine was. */
  loadAverage1m: number;
  date: string;
}

export function describeMachine(): Machine {
  return {
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    cores: cpus().length,
    node: process.version,
    kernel: release(),
    loadAverage1m: Math.round(loadavg()[0]! * 100) / 100,
    date: new Date().toISOString(),
  };
}

/** taskset CPU lists: the server on one CPU, the load generator (this process) on another. */
export interface Pinning {
  server: string;
  load: string;
  /** Every CPU we may use, for the multi-worker server. */
  all: string;
}

/**
 * Two CPUs apart when taskset exists and we may use at least two: otherwise autocannon and the
 * server would share (and fight over) the CPU whose hash rate we compare against.
 */
export function choosePinning(): Pinning | null {
  if (availableParallelism() < 2) return null;
  const allowed = allowedCpus();
  if (allowed === null || allowed.length < 2) return null;
  return { server: String(allowed[0]), load: String(allowed[1]), all: allowed.join(',') };
}

function allowedCpus(): number[] | null {
  try {
    const out = execFileSync('taskset', ['-c', '-p', String(process.pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return parseCpuList(out.slice(out.lastIndexOf(':') + 1));
  } catch {
    return null;
  }
}

function parseCpuList(list: string): number[] {
  const result: number[] = [];
  for (const part of list.trim().split(',')) {
    const [from, to = from] = part.split('-').map(Number);
    if (from === undefined || to === undefined || !Number.isInteger(from) || !Number.isInteger(to)) return [];
    for (let cpu = from; cpu <= to; cpu++) result.push(cpu);
  }
  return result;
}

/** `-a`: every thread of this process, so autocannon's sockets and timers stay off the server's CPU. */
export function pinThisProcess(cpuList: string): void {
  execFileSync('taskset', ['-a', '-c', '-p', cpuList, String(process.pid)], { stdio: 'ignore' });
}

// ---- child processes and clean-up --------------------------------------------------------------

const children = new Set<ChildProcess>();
const cleanups: (() => Promise<void> | void)[] = [];

/** Runs at the end, and on Ctrl-C / SIGTERM / the watchdog: remove temp dirs, drop databases. */
export function onCleanup(task: () => Promise<void> | void): void {
  cleanups.push(task);
}

export async function cleanUp(): Promise<void> {
  for (const child of children) child.kill('SIGKILL');
  while (cleanups.length > 0) {
    const task = cleanups.pop()!;
    try {
      await task();
    } catch (error) {
      process.stderr.write(`bench: clean-up step failed: ${(error as Error).message}\n`);
    }
  }
}

/** On Ctrl-C, SIGTERM or a hang past the budget: kill the children, clean up, exit. */
export function installEmergencyStop(budgetMs: number): void {
  const stop = (why: string, exitCode: number): void => {
    process.stderr.write(`bench: ${why}; stopping\n`);
    const forced = setTimeout(() => process.exit(exitCode), 10_000);
    forced.unref();
    void cleanUp().finally(() => process.exit(exitCode));
  };
  process.once('SIGINT', () => stop('interrupted', 130));
  process.once('SIGTERM', () => stop('terminated', 143));
  setTimeout(() => stop(`still running after ${Math.round(budgetMs / 1000)} s`, 1), budgetMs).unref();
}

export function makeTempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface SpawnOptions {
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** taskset CPU list, or null for no pinning. */
  cpus: string | null;
  nodeArgs?: string[];
}

export function spawnNode(script: string, args: string[], options: SpawnOptions): ChildProcess {
  // process.execPath is the Node 24 that runs this file; taskset execs it, so the pid stays node's.
  const nodeArgv = [...(options.nodeArgs ?? []), script, ...args];
  const [command, argv] = options.cpus === null ? [process.execPath, nodeArgv] : ['taskset', ['-c', options.cpus, process.execPath, ...nodeArgv]];
  const child = spawn(command, argv, { env: options.env, cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** Keeps the last `KEPT_OUTPUT_CHARS` of the given streams, so a chatty child cannot fill memory. */
export function collectOutput(...streams: (NodeJS.ReadableStream | null)[]): () => string {
  let kept = '';
  for (const stream of streams) {
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      kept = (kept + chunk).slice(-KEPT_OUTPUT_CHARS);
    });
  }
  return () => kept;
}

export function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    // SIGTERM lets the server close gracefully; SIGKILL if it hangs.
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** A process the bench loads: a Gatehouse server, a baseline app, a downstream app. */
export interface App {
  name: string;
  pid: number;
  /** Where its event-loop probe writes (BENCH_PROBE_DIR). */
  probeDir: string;
  output(): string;
  stop(): Promise<void>;
}

export interface StartAppOptions extends SpawnOptions {
  name: string;
  script: string;
  /** Polled until it answers 200. */
  readyUrl: string;
  /** When set, the probe writes CPU profiles of the measured windows here (BENCH_CPU_PROF). */
  profileDir?: string | null;
}

/** Every app still running: `waitForQuiet` watches them all. */
const runningApps = new Set<App>();

export async function startApp(options: StartAppOptions): Promise<App> {
  const probeDir = makeTempDir(`gatehouse-probe-${options.name}-`);
  // With a profile dir, the probe profiles each window between its signals (the measured rounds
  // and the gaps between them), never the start-up.
  const env = { ...options.env, BENCH_PROBE_DIR: probeDir, ...(options.profileDir && { BENCH_PROFILE_DIR: options.profileDir }) };
  const child = spawnNode(options.script, [], { ...options, env });
  const output = collectOutput(child.stdout, child.stderr);
  const app: App = {
    name: options.name,
    pid: child.pid!,
    probeDir,
    output,
    stop: () => {
      runningApps.delete(app);
      return stopChild(child);
    },
  };
  runningApps.add(app);
  try {
    await waitForReady(options.readyUrl, child);
  } catch (error) {
    await app.stop();
    throw new Error(`${options.name}: ${(error as Error).message}\n--- output ---\n${output()}`);
  }
  return app;
}

async function waitForReady(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`exited during start-up (${child.exitCode ?? child.signalCode})`);
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(1_000) });
      await response.body?.cancel();
      if (response.status === 200) return;
    } catch {
      // Not listening yet.
    }
    await sleep(100);
  }
  throw new Error(`${url} did not answer 200 within ${STARTUP_TIMEOUT_MS / 1000} s`);
}

// ---- the process tree: RSS and the event-loop probe --------------------------------------------

/** The pid and every descendant (cluster workers). */
export function processTree(pid: number): number[] {
  const result = [pid];
  for (let i = 0; i < result.length; i++) {
    const current = result[i]!;
    try {
      const text = readFileSync(`/proc/${current}/task/${current}/children`, 'utf8').trim();
      if (text !== '') result.push(...text.split(/\s+/).map(Number));
    } catch {
      // Gone, or no such proc file: no children counted.
    }
  }
  return result;
}

function rssKib(pid: number): number {
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

/** Samples the summed RSS of the tree every 100 ms; `stop()` gives the peak in MiB. */
function sampleRss(pid: number): { stop(): number } {
  let peakKib = 0;
  const sample = () => {
    const total = processTree(pid).reduce((sum, p) => sum + rssKib(p), 0);
    if (total > peakKib) peakKib = total;
  };
  sample();
  const timer = setInterval(sample, RSS_SAMPLE_MS);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return Math.round((peakKib / 1024) * 10) / 10;
    },
  };
}

/** CPU time used so far by the process and all its threads (argon2's thread pool too), in clock ticks. */
function cpuTicks(pid: number): number {
  try {
    // Fields after the command name (which may hold spaces): utime is the 12th, stime the 13th.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

const QUIET_WINDOW_MS = 300;
/** At most this many clock ticks (10 ms each) of CPU in a window counts as idle: background timers. */
const QUIET_TICKS = 2;

/**
 * Waits until no running app uses the CPU: autocannon stops sending at the end of a run, but a
 * server still holds the requests it queued (64 sign-ins are seconds of argon2) and would steal
 * the core from whatever is measured next.
 */
export async function waitForQuiet(timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const total = () => [...runningApps].flatMap((app) => processTree(app.pid)).reduce((sum, pid) => sum + cpuTicks(pid), 0);
  let before = total();
  while (Date.now() < deadline) {
    await sleep(QUIET_WINDOW_MS);
    const now = total();
    if (now - before <= QUIET_TICKS) return;
    before = now;
  }
}

/** Asks every process of the tree for its probe report (and so starts its next window). */
async function readProbes(app: App): Promise<ProbeReport[]> {
  const pids = processTree(app.pid);
  const files = pids.map((pid) => join(app.probeDir, `probe-${pid}.json`));
  for (const file of files) if (existsSync(file)) unlinkSync(file);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGUSR2');
    } catch {
      // Exited meanwhile.
    }
  }
  const deadline = Date.now() + 3_000;
  const reports: ProbeReport[] = [];
  for (const file of files) {
    while (!existsSync(file) && Date.now() < deadline) await sleep(10);
    if (existsSync(file)) reports.push(JSON.parse(readFileSync(file, 'utf8')) as ProbeReport);
  }
  return reports;
}

// ---- measured load runs -------------------------------------------------------------------------

export interface LoadSpec {
  url: string;
  method?: 'GET' | 'POST' | 'PATCH';
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  /**
   * Built as each request is sent (autocannon's `requests`): for credentials that work once (a
   * second-factor challenge, an authorization code, a rotating refresh token).
   */
  requests?: AutocannonRequest[];
  /**
   * A run of this many requests instead of `seconds`: for a pool of single-use credentials prepared
   * ahead, which a run by time could exhaust. Its time is measured to the last response.
   */
  amount?: number;
  /**
   * Drives the load itself instead of autocannon (webhook deliveries: the load is events, the
   * answers arrive elsewhere), for `seconds`, and reports what it did in autocannon's shape.
   */
  drive?: (seconds: number) => Promise<Result>;
}

/** The figures of one round, kept in the results so the spread is visible. */
export interface RoundFigures {
  requestsPerSecond: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  eventLoopDelayMaxMs: number | null;
}

export interface Measurement {
  endpoint: string;
  connections: number;
  /** Measured seconds, summed over the rounds. */
  seconds: number;
  /** Completed requests ÷ measured seconds, over all rounds. */
  requestsPerSecond: number;
  completed: number;
  /** Latencies: the median over the rounds of each round's figure (max: the largest). */
  latencyMeanMs: number;
  latencyP50Ms: number;
  latencyP90Ms: number;
  latencyP99Ms: number;
  latencyMaxMs: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  /** Summed over the server's processes, sampled every 100 ms during the measured rounds. */
  peakRssMb: number;
  /** Heap of the busiest server process at the end of its last round. */
  heapUsedMb: number | null;
  /** The longest stall of the server's event loop in any round (after the warm-up). */
  eventLoopDelayMaxMs: number | null;
  eventLoopDelayP99Ms: number | null;
  /** Mean over the rounds; 1.0: the server's event loop was busy the whole run (the load generator kept up). */
  eventLoopUtilization: number | null;
  rounds: RoundFigures[];
}

export interface RawRound {
  result: Result;
  peakRssMb: number;
  probes: ProbeReport[];
}

/** Sampling this often ends a run by `amount` within 20 ms of its last response (the default 1 s would pad its time). */
const AMOUNT_SAMPLE_MS = 20;

function autocannonOptions(spec: LoadSpec) {
  return {
    url: spec.url,
    method: spec.method ?? 'GET',
    ...(spec.headers !== undefined && { headers: spec.headers }),
    ...(spec.body !== undefined && { body: spec.body }),
    ...(spec.requests !== undefined && { requests: spec.requests }),
    ...(spec.amount !== undefined && { amount: spec.amount, sampleInt: AMOUNT_SAMPLE_MS }),
    connections: spec.connections,
    timeout: 10,
  } as const;
}

/** One run of `spec`: `seconds` long, or `spec.amount` requests. */
function load(spec: LoadSpec, seconds: number): Promise<Result> {
  return spec.drive !== undefined ? spec.drive(seconds) : autocannon({ ...autocannonOptions(spec), duration: seconds });
}

/** Unmeasured load: JIT, pools and caches warm. What it did (a scenario sizes its next run by it), or null. */
export async function warmUp(spec: LoadSpec, seconds: number): Promise<Result | null> {
  return seconds > 0 ? load(spec, seconds) : null;
}

/**
 * One measured round against `app`, with its peak RSS and event-loop report. It starts once the
 * apps are idle, unless `isUnderOtherLoad` (a scenario that runs a second load on purpose).
 */
export async function runRound(app: App, spec: LoadSpec, seconds: number, isUnderOtherLoad = false): Promise<RawRound> {
  if (!isUnderOtherLoad) await waitForQuiet();
  await readProbes(app); // starts the window the next read reports
  const rss = sampleRss(app.pid);
  const result = await load(spec, seconds);
  const peakRssMb = rss.stop();
  return { result, peakRssMb, probes: await readProbes(app) };
}

/**
 * A load that is not autocannon's (webhook deliveries, runs of a command) in autocannon's shape,
 * so that `aggregate` treats it like any other: one latency in ms per request, the outcomes by
 * name (a status, an exit code) and how many of them failed.
 */
export function resultOf(run: { seconds: number; latenciesMs: number[]; outcomes: Record<string, number>; failed: number }): Result {
  const sorted = [...run.latenciesMs].sort((a, b) => a - b);
  const at = (q: number) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!);
  const mean = sorted.length === 0 ? 0 : sorted.reduce((a, b) => a + b, 0) / sorted.length;
  const stddev = sorted.length === 0 ? 0 : Math.sqrt(sorted.reduce((sum, x) => sum + (x - mean) ** 2, 0) / sorted.length);
  const total = Object.values(run.outcomes).reduce((sum, count) => sum + count, 0);
  const perSecond = total / Math.max(run.seconds, 1e-9);
  return {
    duration: run.seconds,
    errors: 0,
    timeouts: 0,
    non2xx: run.failed,
    resets: 0,
    '2xx': total - run.failed,
    statusCodeStats: Object.fromEntries(Object.entries(run.outcomes).map(([outcome, count]) => [outcome, { count }])),
    latency: { average: mean, mean, stddev, min: sorted[0] ?? 0, max: sorted.at(-1) ?? 0, p50: at(0.5), p90: at(0.9), p99: at(0.99) },
    requests: { average: perSecond, mean: perSecond, stddev: 0, min: perSecond, max: perSecond, p50: perSecond, p90: perSecond, p99: perSecond, total, sent: total },
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

function busiest(probes: ProbeReport[]): ProbeReport | null {
  return probes.length === 0 ? null : probes.reduce((a, b) => (b.eventLoopUtilization > a.eventLoopUtilization ? b : a));
}

export function aggregate(spec: LoadSpec, rounds: RawRound[]): Measurement {
  const results = rounds.map((r) => r.result);
  const completed = results.reduce((sum, r) => sum + (r.requests.total ?? 0), 0);
  const seconds = results.reduce((sum, r) => sum + r.duration, 0);
  const statusCodes: Record<string, number> = {};
  for (const r of results) for (const [code, { count }] of Object.entries(r.statusCodeStats)) statusCodes[code] = (statusCodes[code] ?? 0) + count;
  const loopMax = (r: RawRound) => (r.probes.length === 0 ? null : Math.max(...r.probes.map((p) => p.eventLoopDelay.maxMs)));
  const hasProbes = rounds.every((r) => r.probes.length > 0);
  const url = new URL(spec.url);
  return {
    endpoint: `${spec.method ?? 'GET'} ${url.pathname}${url.search}`,
    connections: spec.connections,
    seconds: round(seconds, 2),
    requestsPerSecond: round(completed / seconds, 1),
    completed,
    latencyMeanMs: round(median(results.map((r) => r.latency.mean)), 2),
    latencyP50Ms: median(results.map((r) => r.latency.p50)),
    latencyP90Ms: median(results.map((r) => r.latency.p90)),
    latencyP99Ms: median(results.map((r) => r.latency.p99)),
    latencyMaxMs: Math.max(...results.map((r) => r.latency.max)),
    non2xx: results.reduce((sum, r) => sum + r.non2xx, 0),
    errors: results.reduce((sum, r) => sum + r.errors, 0),
    timeouts: results.reduce((sum, r) => sum + r.timeouts, 0),
    statusCodes,
    peakRssMb: Math.max(...rounds.map((r) => r.peakRssMb)),
    heapUsedMb: busiest(rounds.at(-1)!.probes)?.heapUsedMb ?? null,
    eventLoopDelayMaxMs: hasProbes ? round(Math.max(...rounds.map((r) => loopMax(r)!)), 1) : null,
    eventLoopDelayP99Ms: hasProbes ? round(Math.max(...rounds.flatMap((r) => r.probes.map((p) => p.eventLoopDelay.p99Ms))), 1) : null,
    eventLoopUtilization: hasProbes ? round(rounds.reduce((sum, r) => sum + busiest(r.probes)!.eventLoopUtilization, 0) / rounds.length, 3) : null,
    rounds: rounds.map((r) => ({
      requestsPerSecond: round((r.result.requests.total ?? 0) / r.result.duration, 1),
      latencyP50Ms: r.result.latency.p50,
      latencyP99Ms: r.result.latency.p99,
      eventLoopDelayMaxMs: loopMax(r) === null ? null : round(loopMax(r)!, 1),
    })),
  };
}

export interface Subject {
  app: App;
  spec: LoadSpec;
  /**
   * Before the warm-up and before each round, unmeasured (the round waits for the apps to go quiet
   * after it): prepares what the run uses up (single-use credentials, sized by `previous`, what
   * the subject's last run did: null before the warm-up).
   */
  prepare?: (previous: Result | null) => Promise<void>;
}

/**
 * Measures the subjects round-robin: a warm-up each, then `settings.rounds` rounds in which every
 * subject gets `seconds ÷ rounds` in turn. A burst of noise from the shared machine then lands on
 * one round of each rather than on the whole of one figure, and `pairedRatio` can compare the
 * rounds that ran side by side.
 */
export async function measureInterleaved(subjects: Subject[], settings: Settings): Promise<Measurement[]> {
  const previous: (Result | null)[] = subjects.map(() => null);
  for (const [i, { spec, prepare }] of subjects.entries()) {
    await prepare?.(null);
    previous[i] = await warmUp(spec, settings.warmupSeconds);
  }
  const raw: RawRound[][] = subjects.map(() => []);
  for (let r = 0; r < settings.rounds; r++) {
    for (const [i, { app, spec, prepare }] of subjects.entries()) {
      await prepare?.(previous[i] ?? null);
      const measured = await runRound(app, spec, roundSeconds(settings));
      raw[i]!.push(measured);
      previous[i] = measured.result;
    }
  }
  return subjects.map(({ spec }, i) => aggregate(spec, raw[i]!));
}

export function roundSeconds(settings: Settings): number {
  return Math.max(1, Math.round(settings.seconds / settings.rounds));
}

/**
 * How many requests a run by `amount` makes so that it lasts about a round: the rate of the
 * subject's previous run (`previous`) times the round's seconds; `first` before any run (the
 * warm-up). Never fewer than `minimum` (autocannon needs one per connection at least).
 */
export function sizedAmount(previous: Result | null, settings: Settings, first: number, minimum: number): number {
  if (previous === null || previous.duration <= 0) return Math.max(first, minimum);
  const rate = (previous.requests.total ?? 0) / previous.duration;
  return Math.max(minimum, Math.round(rate * roundSeconds(settings)));
}

/**
 * Runs `task(i, lane)` for every i < `count`, `concurrency` at a time (unmeasured preparation);
 * the results in order. `lane` (< concurrency) runs one task at a time: what a task must not
 * share with one running beside it (a browser's cookies) can be kept per lane.
 */
export async function inParallel<T>(count: number, concurrency: number, task: (index: number, lane: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  const run = async (lane: number) => {
    while (next < count) {
      const index = next++;
      results[index] = await task(index, lane);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, (_, lane) => run(lane)));
  return results;
}

/** The median of the per-round ratios (rounds that ran side by side); the overall ratio if they do not pair up. */
export function pairedRatio(subject: number[], baseline: number[]): number {
  if (subject.length !== baseline.length || subject.length === 0) {
    const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
    return ratio(mean(subject), mean(baseline));
  }
  return round(median(subject.map((value, i) => value / baseline[i]!)), 3);
}

// ---- the hash-bound limit ----------------------------------------------------------------------

/**
 * argon2id verifies/s in a child on `cpus`, with `env` (the server's configuration): `seconds`
 * measured after a 1 s warm-up, and one verify alone ("one hash") for `singleSeconds` (0: not).
 */
export async function measureHashBound(env: NodeJS.ProcessEnv, cwd: string, cpus: string | null, seconds: number, singleSeconds = 0): Promise<HashBound> {
  await waitForQuiet();
  const child = spawnNode(HASH_BOUND_ENTRY, ['1', String(seconds), String(singleSeconds)], { env, cwd, cpus });
  const stdout = collectOutput(child.stdout);
  const stderr = collectOutput(child.stderr);
  const [code] = (await once(child, 'close')) as [number | null];
  if (code !== 0) throw new Error(`the hash-bound measurement failed (exit ${code}):\n${stderr()}`);
  const result = JSON.parse(stdout().trim().split('\n').at(-1) ?? '') as HashBound;
  return { ...result, verifiesPerSecond: round(result.verifiesPerSecond, 2), seconds: round(result.seconds, 2), singleVerifyMs: round(result.singleVerifyMs ?? Number.NaN, 2) };
}

// ---- Gatehouse -----------------------------------------------------------------------------------

export interface Credentials {
  email: string;
  password: string;
}

export interface GatehouseOptions {
  name: string;
  database: 'sqlite' | 'postgres';
  strategy: 'database' | 'jwt';
  workers?: number;
  cpus: string | null;
  /** Reuse this store instead of a new one (the growth scenario restarts on a seeded store). */
  store?: GatehouseStore;
  profileDir?: string | null;
  /** Settings the scenario compares (e.g. HASH_THREAD_NICE), over the bench's own. */
  env?: Readonly<Record<string, string>>;
}

export interface GatehouseStore {
  dataDir: string;
  databaseUrl: string;
  authSecret: string;
  admin: Credentials;
}

export interface Gatehouse extends App {
  url: string;
  env: NodeJS.ProcessEnv;
  store: GatehouseStore;
  options: GatehouseOptions;
}

const SERVER_ENTRY = join(BENCH_DIR, 'server-entry.js');

/** A fresh store: a temp dir (and SQLite file in it) or a scratch PostgreSQL database. */
export async function createStore(name: string, database: 'sqlite' | 'postgres'): Promise<GatehouseStore> {
  const dataDir = makeTempDir(`gatehouse-bench-${name}-`);
  const databaseUrl = database === 'sqlite' ? `sqlite:${join(dataDir, 'gatehouse.db')}` : await createScratchDatabase(name);
  return {
    dataDir,
    databaseUrl,
    authSecret: randomSecret(),
    admin: { email: 'bench-admin@example.com', password: `bench-${randomBytes(24).toString('base64url')}` },
  };
}

/**
 * Only what the server needs: passing the caller's environment through would let a DATABASE_URL
 * or HASH_* in the shell silently benchmark another configuration. The limits per IP of the
 * endpoints under load are raised (every request comes from 127.0.0.1) but still counted, so
 * their cost is measured.
 */
export function gatehouseEnv(store: GatehouseStore, port: number, options: Pick<GatehouseOptions, 'strategy' | 'workers' | 'env'>): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    NODE_ENV: 'development',
    LOG_LEVEL: 'warn',
    AUTH_SECRET: store.authSecret,
    AUTH_URL: `http://${HOST}:${port}`,
    DATA_DIR: store.dataDir,
    DATABASE_URL: store.databaseUrl,
    PORT: String(port),
    HOST,
    SESSION_STRATEGY: options.strategy,
    WORKERS: String(options.workers ?? 1),
    ADMIN_EMAIL: store.admin.email,
    ADMIN_PASSWORD: store.admin.password,
    RATE_LIMIT_SIGNIN_PER_IP: '1000000/1m',
    // Every attempt counts as a failure until its password verifies: 64 in flight from one
    // address would pass the default 30 and lock 127.0.0.1 out for the window.
    RATE_LIMIT_SIGNIN_FAILURES_PER_IP: '1000000/1m',
    // The refresh endpoints and the OpenID Provider's token, introspection and revocation endpoints
    // (perf/oidc.ts): per IP as well, and as cheap to count as the sign-in limits.
    RATE_LIMIT_REFRESH_PER_IP: '1000000/1m',
    RATE_LIMIT_OIDC_TOKEN: '1000000/1m',
    ...options.env,
  };
}

export async function startGatehouse(options: GatehouseOptions): Promise<Gatehouse> {
  const store = options.store ?? (await createStore(options.name, options.database));
  const port = await freePort();
  const env = gatehouseEnv(store, port, options);
  const url = `http://${HOST}:${port}`;
  const app = await startApp({
    name: options.name,
    script: SERVER_ENTRY,
    nodeArgs: startScriptNodeArgs(),
    env,
    cwd: store.dataDir, // so a developer's .env in the repository is not read
    cpus: options.cpus,
    readyUrl: `${url}/api/health`,
    profileDir: options.profileDir ?? null,
  });
  if ((options.workers ?? 1) > 1) await waitForWorkers(app, options.workers!);
  return { ...app, url, env, store, options };
}

/** The primary answers health as soon as one worker listens; wait until all of them run. */
async function waitForWorkers(app: App, workers: number): Promise<void> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  while (processTree(app.pid).length < workers + 1 && Date.now() < deadline) await sleep(100);
  await sleep(1_000);
}

export interface SignedIn {
  token: string;
  refreshToken: string;
}

export async function signIn(server: Gatehouse): Promise<SignedIn> {
  const response = await fetch(`${server.url}/api/auth`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(server.store.admin),
  });
  const body = (await response.json()) as { token?: unknown; refreshToken?: unknown };
  if (response.status !== 200 || typeof body.token !== 'string') throw new Error(`${server.name}: a single sign-in failed: ${response.status} ${JSON.stringify(body)}`);
  return { token: body.token, refreshToken: String(body.refreshToken) };
}

/** POSTs `body` as JSON (with the token, if any): the status and the parsed answer, whatever the status. */
export async function postJson(url: string, body: unknown, token?: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token !== undefined && { authorization: `Bearer ${token}` }) },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: (text === '' ? {} : JSON.parse(text)) as Record<string, unknown> };
}

/** GETs `path` with the token; throws unless 200. The body, parsed. */
export async function getJson(url: string, token?: string): Promise<unknown> {
  const response = await fetch(url, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET ${url}: ${response.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as unknown;
}

// ---- PostgreSQL scratch databases --------------------------------------------------------------

/** Creates `gatehouse_bench_<pid>_<name>` and drops it at clean-up; returns its URL. */
export async function createScratchDatabase(name: string): Promise<string> {
  const database = `gatehouse_bench_${process.pid}_${name.replace(/[^a-z0-9]+/gi, '_').toLowerCase()}`;
  await adminQuery(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  await adminQuery(`CREATE DATABASE ${database}`);
  onCleanup(() => adminQuery(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${database}`;
  return url.toString();
}

async function adminQuery(text: string): Promise<void> {
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

// ---- numbers -----------------------------------------------------------------------------------

export function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

export function ratio(value: number, baseline: number): number {
  return baseline === 0 ? 0 : round(value / baseline, 3);
}

/** Names the files of `dir` that end in `suffix`. */
export function filesIn(dir: string, suffix: string): string[] {
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(suffix)).map((f) => join(dir, f)) : [];
}
