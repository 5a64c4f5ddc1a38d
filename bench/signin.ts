/**
 * `npm run bench`: password sign-in throughput of the real server, set against the hash-bound
 * limit (argon2id verifies per second on the same CPUs). A sign-in costs one verify plus some
 * bookkeeping, so a ratio near 1 means argon2 is the bound and the rest of the path is cheap.
 *
 * Steps: start `src/main.ts` on a temporary SQLite database with a bootstrap admin; while it is
 * idle, measure the hash bound in a child pinned to the server's CPU; then drive
 * `POST /api/auth` with autocannon from another CPU. Prints a table and writes
 * `bench/results/signin.json`. BENCH_DURATION_SECONDS shortens the measured load (default 10 s).
 */
import autocannon, { type Result } from 'autocannon';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { HashBound } from './hash-bound.ts';

const CONNECTIONS = 8;
const HOST = '127.0.0.1';
const SERVER_ENTRY = fileURLToPath(new URL('../src/main.ts', import.meta.url));
const HASH_BOUND_ENTRY = fileURLToPath(new URL('./hash-bound.ts', import.meta.url));
const RESULTS_FILE = fileURLToPath(new URL('./results/signin.json', import.meta.url));
const STARTUP_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 5_000;
const KEPT_OUTPUT_CHARS = 64 * 1024;

interface Settings {
  loadSeconds: number;
  loadWarmupSeconds: number;
  hashSeconds: number;
  hashWarmupSeconds: number;
}

/** taskset CPU lists: the server (and the hash-bound child) on one, this process on the other. */
interface Pinning {
  server: string;
  load: string;
}

interface Credentials {
  email: string;
  password: string;
}

interface Server {
  url: string;
  /** What the server has written so far (stdout and stderr), the last 64 KiB. */
  output(): string;
  stop(): Promise<void>;
}

interface Report {
  date: string;
  node: string;
  cpu: string;
  cores: number;
  pinning: Pinning | null;
  signIn: {
    endpoint: string;
    connections: number;
    seconds: number;
    requestsPerSecond: number;
    completed: number;
    latencyP50Ms: number;
    latencyP99Ms: number;
    non2xx: number;
    errors: number;
    timeouts: number;
    statusCodes: Record<string, number>;
  };
  hashBound: HashBound;
  ratio: number;
}

/** Child processes still running, so that an interrupt or the watchdog can end them. */
const children = new Set<ChildProcess>();

async function main(): Promise<void> {
  const settings = readSettings(process.env);
  const pinning = choosePinning();
  if (pinning !== null) pinThisProcess(pinning.load);

  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-'));
  installEmergencyStop(dataDir, budgetMs(settings));
  const admin: Credentials = { email: 'bench@example.com', password: `bench-${randomBytes(24).toString('base64url')}` };
  let server: Server | undefined;
  try {
    const env = serverEnv(dataDir, await findFreePort(), admin);
    server = await startServer(env, dataDir, pinning?.server ?? null);
    // One sign-in first: a load run against wrong credentials would measure fast 401s.
    await checkSignIn(server.url, admin);
    const hashBound = await measureHashBound(env, dataDir, pinning?.server ?? null, settings);
    const load = await runSignInLoad(server.url, admin, settings);

    const report = buildReport(load, hashBound, pinning, settings);
    printTable(report);
    printServerLogs(server.output());
    writeResults(report);
    if (report.signIn.non2xx > 0 || report.signIn.errors > 0) {
      process.stderr.write('bench: some sign-ins did not answer 200 (see non-2xx / errors above)\n');
      process.exitCode = 1;
    }
  } finally {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function readSettings(env: NodeJS.ProcessEnv): Settings {
  const raw = env.BENCH_DURATION_SECONDS?.trim();
  const loadSeconds = raw === undefined || raw === '' ? 10 : Number(raw);
  if (!Number.isInteger(loadSeconds) || loadSeconds < 1 || loadSeconds > 30) {
    throw new Error(`BENCH_DURATION_SECONDS must be an integer from 1 to 30 (got "${raw}")`);
  }
  return {
    loadSeconds,
    loadWarmupSeconds: Math.min(2, loadSeconds),
    hashSeconds: Math.min(5, loadSeconds),
    hashWarmupSeconds: 1,
  };
}

/** Start-up, both measurements with their warm-ups, and slack; past it something hangs. */
function budgetMs(settings: Settings): number {
  const measuring = settings.loadWarmupSeconds + settings.loadSeconds + settings.hashWarmupSeconds + settings.hashSeconds;
  return (STARTUP_TIMEOUT_MS + STOP_TIMEOUT_MS) + measuring * 1000 * 2;
}

// ---- CPU pinning -------------------------------------------------------------------------------

/**
 * Two CPUs apart when taskset exists and we may use at least two: otherwise autocannon and the
 * server would share (and fight over) the CPU whose hash rate we compare against.
 */
function choosePinning(): Pinning | null {
  if (availableParallelism() < 2) return null;
  const allowed = allowedCpus();
  if (allowed === null || allowed.length < 2) return null;
  return { server: String(allowed[0]), load: String(allowed[1]) };
}

/** The CPUs this process may run on (taskset's view); null when taskset is missing or fails. */
function allowedCpus(): number[] | null {
  try {
    const out = execFileSync('taskset', ['-c', '-p', String(process.pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    // "pid 123's current affinity list: 0-3,6"
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
function pinThisProcess(cpuList: string): void {
  execFileSync('taskset', ['-a', '-c', '-p', cpuList, String(process.pid)], { stdio: 'ignore' });
}

// ---- child processes ---------------------------------------------------------------------------

function spawnNode(script: string, args: string[], options: { env: NodeJS.ProcessEnv; cwd: string; cpus: string | null }): ChildProcess {
  // process.execPath is the Node 24 that runs this file; taskset execs it, so the pid stays node's.
  const [command, argv] =
    options.cpus === null
      ? [process.execPath, [script, ...args]]
      : ['taskset', ['-c', options.cpus, process.execPath, script, ...args]];
  const child = spawn(command, argv, { env: options.env, cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** Keeps the last `KEPT_OUTPUT_CHARS` of the given streams, so a chatty child cannot fill memory. */
function collectOutput(...streams: (NodeJS.ReadableStream | null)[]): () => string {
  let kept = '';
  for (const stream of streams) {
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      kept = (kept + chunk).slice(-KEPT_OUTPUT_CHARS);
    });
  }
  return () => kept;
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    // SIGTERM lets the server close gracefully; SIGKILL if that takes too long.
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** On Ctrl-C, SIGTERM or a hang past the budget: kill the children and remove the data. */
function installEmergencyStop(dataDir: string, budget: number): void {
  const stop = (why: string, exitCode: number): void => {
    process.stderr.write(`bench: ${why}; stopping\n`);
    for (const child of children) child.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
    process.exit(exitCode);
  };
  process.once('SIGINT', () => stop('interrupted', 130));
  process.once('SIGTERM', () => stop('terminated', 143));
  setTimeout(() => stop(`still running after ${Math.round(budget / 1000)} s`, 1), budget).unref();
}

// ---- the server --------------------------------------------------------------------------------

/**
 * Only what the server needs: passing the caller's environment through would let a DATABASE_URL
 * or HASH_* in the shell silently benchmark another database or configuration.
 */
function serverEnv(dataDir: string, port: number, admin: Credentials): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    NODE_ENV: 'development',
    LOG_LEVEL: 'warn',
    AUTH_SECRET: randomBytes(36).toString('base64url'),
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST,
    ADMIN_EMAIL: admin.email,
    ADMIN_PASSWORD: admin.password,
  };
}

/** A port the kernel just handed out; free unless something grabs it in the next milliseconds. */
async function findFreePort(): Promise<number> {
  const probe = createServer();
  probe.listen(0, HOST);
  await once(probe, 'listening');
  const address = probe.address();
  probe.close();
  if (address === null || typeof address === 'string') throw new Error('could not find a free port');
  return address.port;
}

/** The working directory is the temp dir, so a developer's `.env` in the repository is not read. */
async function startServer(env: NodeJS.ProcessEnv, dataDir: string, cpus: string | null): Promise<Server> {
  const child = spawnNode(SERVER_ENTRY, [], { env, cwd: dataDir, cpus });
  const output = collectOutput(child.stdout, child.stderr);
  const server: Server = { url: `http://${HOST}:${env.PORT}`, output, stop: () => stopChild(child) };
  try {
    await waitForHealth(server.url, child);
  } catch (error) {
    await server.stop();
    throw new Error(`${(error as Error).message}\n--- server output ---\n${output()}`);
  }
  return server;
}

async function waitForHealth(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`the server exited during start-up (${child.exitCode ?? child.signalCode})`);
    }
    try {
      const response = await fetch(`${url}/api/health`, { signal: AbortSignal.timeout(1_000) });
      await response.body?.cancel();
      if (response.status === 200) return;
    } catch {
      // Not listening yet.
    }
    await sleep(100);
  }
  throw new Error(`GET /api/health did not answer 200 within ${STARTUP_TIMEOUT_MS / 1000} s`);
}

async function checkSignIn(url: string, admin: Credentials): Promise<void> {
  const response = await fetch(`${url}/api/auth`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(admin),
  });
  const body = (await response.json()) as { token?: unknown };
  if (response.status !== 200 || typeof body.token !== 'string') {
    throw new Error(`a single sign-in failed: ${response.status} ${JSON.stringify(body)}`);
  }
}

// ---- the measurements --------------------------------------------------------------------------

async function measureHashBound(env: NodeJS.ProcessEnv, cwd: string, cpus: string | null, settings: Settings): Promise<HashBound> {
  const child = spawnNode(HASH_BOUND_ENTRY, [String(settings.hashWarmupSeconds), String(settings.hashSeconds)], { env, cwd, cpus });
  const stdout = collectOutput(child.stdout);
  const stderr = collectOutput(child.stderr);
  const [code] = (await once(child, 'close')) as [number | null];
  if (code !== 0) throw new Error(`the hash-bound measurement failed (exit ${code}):\n${stderr()}`);
  const lastLine = stdout().trim().split('\n').at(-1) ?? '';
  return JSON.parse(lastLine) as HashBound;
}

function runSignInLoad(url: string, admin: Credentials, settings: Settings): Promise<Result> {
  return autocannon({
    url: `${url}/api/auth`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(admin),
    connections: CONNECTIONS,
    duration: settings.loadSeconds,
    timeout: 10,
    warmup: { connections: CONNECTIONS, duration: settings.loadWarmupSeconds },
  });
}

// ---- the report --------------------------------------------------------------------------------

function buildReport(load: Result, hashBound: HashBound, pinning: Pinning | null, settings: Settings): Report {
  const statusCodes = Object.fromEntries(Object.entries(load.statusCodeStats).map(([code, { count }]) => [code, count]));
  return {
    date: new Date().toISOString(),
    node: process.version,
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    cores: cpus().length,
    pinning,
    signIn: {
      endpoint: 'POST /api/auth',
      connections: CONNECTIONS,
      seconds: settings.loadSeconds,
      requestsPerSecond: load.requests.mean,
      completed: load.requests.total ?? 0,
      latencyP50Ms: load.latency.p50,
      latencyP99Ms: load.latency.p99,
      non2xx: load.non2xx,
      errors: load.errors,
      timeouts: load.timeouts,
      statusCodes,
    },
    hashBound: { ...hashBound, verifiesPerSecond: round(hashBound.verifiesPerSecond, 2), seconds: round(hashBound.seconds, 2) },
    ratio: round(load.requests.mean / hashBound.verifiesPerSecond, 3),
  };
}

function printTable(report: Report): void {
  const { signIn, hashBound } = report;
  const where = report.pinning === null ? 'not pinned' : `server on CPU ${report.pinning.server}, load on CPU ${report.pinning.load}`;
  const { memoryKib, iterations, parallelism } = hashBound.argon2;
  const rows: [string, string][] = [
    ['sign-ins/s', signIn.requestsPerSecond.toFixed(1)],
    ['p50 latency', `${signIn.latencyP50Ms} ms`],
    ['p99 latency', `${signIn.latencyP99Ms} ms`],
    ['hash-bound verifies/s', hashBound.verifiesPerSecond.toFixed(1)],
    ['ratio', report.ratio.toFixed(3)],
    ['non-2xx / errors / timeouts', `${signIn.non2xx} / ${signIn.errors} / ${signIn.timeouts}`],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  const lines = [
    `${signIn.endpoint}: ${signIn.connections} connections, ${signIn.seconds} s; ${where}`,
    `argon2id m=${memoryKib} KiB t=${iterations} p=${parallelism}, ${hashBound.concurrency} verifies in flight`,
    ...rows.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`),
  ];
  process.stdout.write(`\n${lines.join('\n')}\n\n`);
}

/** At LOG_LEVEL=warn every JSON line the server wrote is a warning or worse: worth seeing. */
function printServerLogs(output: string): void {
  const logLines = output.split('\n').filter((line) => line.startsWith('{'));
  if (logLines.length === 0) return;
  process.stdout.write(`server logged ${logLines.length} warning(s) or error(s); the first:\n${logLines.slice(0, 5).join('\n')}\n`);
}

function writeResults(report: Report): void {
  mkdirSync(dirname(RESULTS_FILE), { recursive: true });
  writeFileSync(RESULTS_FILE, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`wrote ${RESULTS_FILE}\n`);
}

function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

if (import.meta.main) {
  await main().catch((error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  });
}
