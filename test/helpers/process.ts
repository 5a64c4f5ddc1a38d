/**
 * Real child processes for tests: the server (`node src/start.js`, as `npm start` runs it) and the CLI (`node src/cli/main.ts`).
 * Every child has a hard deadline after which it is killed, every wait has a timeout, and every
 * child is killed when the test that started it ends (and, as a last resort, when this process
 * exits), so no process outlives its test. Children get a clean environment: only PATH plus the
 * variables the test names, never the runner's own environment. Loopback only.
 */
import { tmpdir } from 'node:os';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { TEST_POOL_SIZE } from './databases.ts';

/** The repository root: the working directory of every child, as for `npm start`. */
export const REPO_ROOT = resolve(import.meta.dirname, '../..');
export const SERVER_ENTRY = resolve(REPO_ROOT, 'src/start.js');

/**
 * The Node flags `npm start` runs the server with (package.json `scripts.start`, e.g.
 * `--max-semi-space-size=8`), for measurements (bench, soak) of what operators run.
 */
export function startScriptNodeArgs(): string[] {
  const manifest = JSON.parse(readFileSync(resolve(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const words = manifest.scripts.start.trim().split(/\s+/);
  if (words[0] !== 'node' || words.at(-1) !== 'src/start.js') throw new Error(`package.json start script is not "node [flags] src/start.js": ${manifest.scripts.start}`);
  return words.slice(1, -1);
}
export const CLI_ENTRY = resolve(REPO_ROOT, 'src/cli/main.ts');

/** Default hard limit on a child's lifetime. */
const DEFAULT_DEADLINE_MS = 60_000;

export type ChildEnv = Readonly<Record<string, string | undefined>>;

export interface ExitInfo {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** One parsed JSON log line (pino). */
export interface LogEntry {
  readonly msg?: string;
  readonly level?: number;
  readonly [key: string]: unknown;
}

/** Registers cleanup for the end of a test or suite: pass `t.after` bound, or node:test's `after`. */
export type RegisterCleanup = (fn: () => unknown) => void;

export interface StartOptions {
  env: ChildEnv;
  /** Written to stdin, which is then closed. Without it, stdin is closed at once. */
  stdin?: string;
  cwd?: string;
  /** The child is SIGKILLed after this long, whatever it is doing. */
  deadlineMs?: number;
  /** Where to register the kill-on-test-end cleanup; strongly recommended. */
  cleanup?: RegisterCleanup;
}

export interface Child {
  readonly process: ChildProcess;
  readonly pid: number;
  stdout(): string;
  stderr(): string;
  /** stdout and stderr together (for "this never appears anywhere" checks). */
  output(): string;
  /** Every stdout line that parsed as a JSON object. */
  logs(): LogEntry[];
  /** Settles when the process has exited and its output streams have closed. */
  readonly exited: Promise<ExitInfo>;
  hasExited(): boolean;
  /** Resolves with the first JSON log line (past or future) that matches; rejects on exit or timeout. */
  waitForLog(predicate: (entry: LogEntry) => boolean, timeoutMs: number, what?: string): Promise<LogEntry>;
  waitForExit(timeoutMs: number): Promise<ExitInfo>;
  /** SIGTERM, then waits up to `timeoutMs` for the exit; on timeout SIGKILLs and rejects. */
  stop(timeoutMs: number): Promise<ExitInfo>;
  /** SIGKILL if still running; never throws. */
  kill(): void;
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Last resort: if the test process ends while children still run, take them with it.
  process.on('exit', () => {
    for (const child of live) {
      try {
        child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  });
}

/** A clean environment for a child: PATH and the given variables, nothing inherited. */
export function childEnv(vars: ChildEnv): Record<string, string> {
  const env: Record<string, string> = {};
  if (process.env.PATH !== undefined) env.PATH = process.env.PATH;
  for (const [key, value] of Object.entries(vars)) if (value !== undefined) env[key] = value;
  return env;
}

/** Starts `node <args>` (the running Node, i.e. Node 24) with a deadline and collected output. */
export function startNode(args: readonly string[], options: StartOptions): Child {
  installExitHook();
  const child = spawn(process.execPath, [...args], {
    // Not the repository: a developer's .env there must not leak into what a test configures.
    cwd: options.cwd ?? tmpdir(),
    env: childEnv(options.env),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) {
    // spawn failed synchronously (e.g. ENOENT); 'error' follows, but fail loudly now.
    throw new Error(`could not start ${process.execPath} ${args.join(' ')}`);
  }
  live.add(child);
  const pid = child.pid;

  let stdout = '';
  let stderr = '';
  let partialLine = '';
  const logs: LogEntry[] = [];
  type Waiter = { predicate: (entry: LogEntry) => boolean; resolve: (entry: LogEntry) => void };
  const waiters = new Set<Waiter>();

  const onLine = (line: string) => {
    const trimmed = line.trim();
    if (!trimmed.startsWith('{')) return;
    let entry: LogEntry;
    try {
      const parsed: unknown = JSON.parse(trimmed);
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return;
      entry = parsed as LogEntry;
    } catch {
      return;
    }
    logs.push(entry);
    for (const waiter of waiters) {
      if (waiter.predicate(entry)) {
        waiters.delete(waiter);
        waiter.resolve(entry);
      }
    }
  };

  child.stdout!.setEncoding('utf8');
  child.stderr!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => {
    stdout += chunk;
    const lines = (partialLine + chunk).split('\n');
    partialLine = lines.pop() ?? '';
    for (const line of lines) onLine(line);
  });
  child.stderr!.on('data', (chunk: string) => {
    stderr += chunk;
  });

  // stdin: the given text, or nothing; a child that exits early must not crash us with EPIPE.
  child.stdin!.on('error', () => {});
  if (options.stdin !== undefined) child.stdin!.end(options.stdin);
  else child.stdin!.end();

  let exitInfo: ExitInfo | undefined;
  const deadline = setTimeout(() => {
    stderr += `\n[test harness: killed after the ${options.deadlineMs ?? DEFAULT_DEADLINE_MS} ms deadline]\n`;
    child.kill('SIGKILL');
  }, options.deadlineMs ?? DEFAULT_DEADLINE_MS);
  deadline.unref();

  const exited = new Promise<ExitInfo>((resolveExit) => {
    child.on('error', (error) => {
      stderr += `\n[test harness: spawn error: ${error.message}]\n`;
    });
    // 'close' fires after 'exit' and after stdio has closed, so the output is complete.
    child.on('close', (code, signal) => {
      if (partialLine !== '') onLine(partialLine);
      partialLine = '';
      clearTimeout(deadline);
      live.delete(child);
      exitInfo = { code, signal };
      resolveExit(exitInfo);
    });
  });

  const describeOutput = () => `--- stdout ---\n${tail(stdout)}\n--- stderr ---\n${tail(stderr)}`;

  const self: Child = {
    process: child,
    pid,
    stdout: () => stdout,
    stderr: () => stderr,
    output: () => `${stdout}\n${stderr}`,
    logs: () => [...logs],
    exited,
    hasExited: () => exitInfo !== undefined,

    waitForLog(predicate, timeoutMs, what = 'the expected log line') {
      const found = logs.find(predicate);
      if (found !== undefined) return Promise.resolve(found);
      return new Promise<LogEntry>((resolveLog, reject) => {
        const waiter: Waiter = {
          predicate,
          resolve: (entry) => {
            clearTimeout(timer);
            resolveLog(entry);
          },
        };
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what} from pid ${pid}\n${describeOutput()}`));
        }, timeoutMs);
        waiters.add(waiter);
        void exited.then((info) => {
          if (!waiters.delete(waiter)) return;
          clearTimeout(timer);
          reject(new Error(`process exited (code ${info.code}, signal ${info.signal}) before ${what}\n${describeOutput()}`));
        });
      });
    },

    waitForExit(timeoutMs) {
      return withTimeout(exited, timeoutMs, () => `pid ${pid} did not exit within ${timeoutMs} ms\n${describeOutput()}`);
    },

    async stop(timeoutMs) {
      if (exitInfo !== undefined) return exitInfo;
      child.kill('SIGTERM');
      try {
        return await self.waitForExit(timeoutMs);
      } catch (error) {
        self.kill();
        await withTimeout(exited, 5_000, () => `pid ${pid} survived SIGKILL`).catch(() => {});
        throw error;
      }
    },

    kill() {
      if (exitInfo === undefined && child.exitCode === null && child.signalCode === null) {
        try {
          child.kill('SIGKILL');
        } catch {
          // already gone
        }
      }
    },
  };

  options.cleanup?.(async () => {
    self.kill();
    await withTimeout(exited, 5_000, () => `pid ${pid} did not exit after SIGKILL`).catch(() => {});
  });
  return self;
}

export interface RunResult extends ExitInfo {
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `node <args>` to completion (or kills it at `timeoutMs` and rejects). */
export async function runNode(
  args: readonly string[],
  options: { env: ChildEnv; stdin?: string; timeoutMs?: number; cleanup?: RegisterCleanup; cwd?: string },
): Promise<RunResult> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const child = startNode(args, { ...options, deadlineMs: timeoutMs + 5_000 });
  try {
    const info = await child.waitForExit(timeoutMs);
    return { ...info, stdout: child.stdout(), stderr: child.stderr() };
  } finally {
    child.kill();
  }
}

/** Runs the `gatehouse` command. */
export function runCli(args: readonly string[], options: { env: ChildEnv; stdin?: string; timeoutMs?: number; cleanup?: RegisterCleanup }): Promise<RunResult> {
  return runNode([CLI_ENTRY, ...args], options);
}

/** A TCP port that was free on 127.0.0.1 a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error('no port'));
        return;
      }
      server.close(() => resolvePort(address.port));
    });
  });
}

/** A random AUTH_SECRET of exactly 48 characters. */
export function randomSecret(): string {
  return randomBytes(36).toString('base64url');
}

/**
 * What a test that runs real servers starts from: `cleanup` registers what to undo, all of it run
 * last-registered first when the test ends; a fresh data directory, removed last; and the
 * environment of a development server on it (a random AUTH_SECRET, logs at info).
 */
export function serverScratch(t: { after(fn: () => unknown): void }, name: string): { cleanup: RegisterCleanup; dataDir: string; env: ChildEnv } {
  const cleanups: Array<() => unknown> = [];
  t.after(async () => {
    for (const undo of cleanups.reverse()) await undo();
  });
  const dataDir = mkdtempSync(join(tmpdir(), `gatehouse-${name}-`));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  return {
    cleanup: (fn) => void cleanups.push(fn),
    dataDir,
    env: { NODE_ENV: 'development', LOG_LEVEL: 'info', AUTH_SECRET: randomSecret(), DATA_DIR: dataDir },
  };
}

export interface RunningGatehouse {
  readonly child: Child;
  readonly port: number;
  /** `http://127.0.0.1:<port>`, from the "Gatehouse listening" log line. */
  readonly base: string;
  /** The AUTH_URL it was started with. */
  readonly authUrl: string;
}

export const LISTENING_MESSAGE = 'Gatehouse listening';

/**
 * Starts `node src/start.js` on a free loopback port and waits for it to listen. PORT and HOST are
 * set here; AUTH_URL defaults to `http://127.0.0.1:<port>` unless `env` sets it. A start lost to
 * another process taking the port in between is retried with a new port.
 */
export async function startGatehouse(options: {
  env: ChildEnv;
  cleanup: RegisterCleanup;
  startTimeoutMs?: number;
  deadlineMs?: number;
  /** Node flags before the entry (`startScriptNodeArgs()` for what `npm start` runs). */
  nodeArgs?: readonly string[];
  /** Called with the child as soon as it is spawned, before it is ready (to act on what it prints while starting). */
  onSpawned?: (child: Child) => void;
}): Promise<RunningGatehouse> {
  const startTimeoutMs = options.startTimeoutMs ?? 30_000;
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const authUrl = options.env.AUTH_URL ?? `http://127.0.0.1:${port}`;
    const child = startNode([...(options.nodeArgs ?? []), SERVER_ENTRY], {
      env: { ...poolOf(options.env), ...options.env, HOST: '127.0.0.1', PORT: String(port), AUTH_URL: authUrl },
      deadlineMs: options.deadlineMs ?? 120_000,
      cleanup: options.cleanup,
    });
    options.onSpawned?.(child);
    try {
      const line = await child.waitForLog((entry) => entry.msg === LISTENING_MESSAGE, startTimeoutMs, `"${LISTENING_MESSAGE}"`);
      const address = new URL(String(line.address));
      if (address.hostname !== '127.0.0.1') throw new Error(`server listens on ${address.hostname}, not loopback`);
      return { child, port: Number(address.port), base: `http://127.0.0.1:${address.port}`, authUrl };
    } catch (error) {
      child.kill();
      if (attempt < 3 && child.hasExited() && /EADDRINUSE/.test(child.output())) continue;
      throw error;
    }
  }
}

/** A server on PostgreSQL opens the tests' pool size (databases.ts) unless its env names one. */
function poolOf(env: ChildEnv): ChildEnv {
  return env.DATABASE_URL?.startsWith('postgres') === true ? { DATABASE_POOL_SIZE: String(TEST_POOL_SIZE) } : {};
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message())), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function tail(text: string, max = 4_000): string {
  return text.length <= max ? text : `…${text.slice(-max)}`;
}
