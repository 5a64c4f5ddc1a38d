/**
 * Children on the machine's own Node and npm (not ours), for the tests that install our packages
 * from `npm pack` tarballs as another team would: each child in a process group of its own (npm,
 * TypeScript 7's tsc and next start children of their own), killed whole at its deadline, at the
 * end of the suite, and when this process exits.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { skipUnlessChromium } from './browser.ts';

export const MACHINE_PATH = '/usr/bin:/bin';
export const MACHINE_NODE = '/usr/bin/node';
export const MACHINE_NPM = '/usr/bin/npm';

// this process exits.

export interface Ran {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface Started {
  readonly child: ChildProcess;
  output(): string;
  readonly exited: Promise<Ran>;
  /** Resolves once stdout matches; rejects if the process exits first or after `timeoutMs`. */
  waitForOutput(pattern: RegExp, timeoutMs: number): Promise<void>;
  /** SIGTERM to the group, SIGKILL after `timeoutMs`. */
  stop(timeoutMs: number): Promise<void>;
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of live) killGroup(child, 'SIGKILL');
});

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

/** Only PATH (the machine's), HOME (npm's cache and settings) and what is named: no npm_config_* of ours. */
export function machineEnv(vars: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: MACHINE_PATH,
    HOME: process.env.HOME ?? tmpdir(),
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
    ...vars,
  };
}

export function tail(text: string, max = 4_000): string {
  return text.length <= max ? text : `…${text.slice(-max)}`;
}

export function start(command: string, args: readonly string[], options: { cwd: string; env?: Record<string, string>; deadlineMs: number }): Started {
  const child = spawn(command, [...args], { cwd: options.cwd, env: machineEnv(options.env), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  live.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const deadline = setTimeout(() => {
    stderr += `\n[test: killed after its ${options.deadlineMs} ms deadline]\n`;
    killGroup(child, 'SIGKILL');
  }, options.deadlineMs);
  const exited = new Promise<Ran>((resolve) => {
    child.on('error', (error) => {
      stderr += `\n[test: spawn error: ${error.message}]\n`;
    });
    child.on('close', (code, signal) => {
      clearTimeout(deadline);
      live.delete(child);
      killGroup(child, 'SIGKILL'); // anything the child left behind in its group
      resolve({ code, signal, stdout, stderr });
    });
  });
  const output = () => `$ ${command} ${args.join(' ')}  (in ${options.cwd})\n--- stdout ---\n${tail(stdout)}\n--- stderr ---\n${tail(stderr)}`;
  let done = false;
  void exited.then(() => (done = true));
  return {
    child,
    output,
    exited,
    waitForOutput(pattern, timeoutMs) {
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => finish(new Error(`no ${pattern} within ${timeoutMs} ms\n${output()}`)), timeoutMs);
        const check = () => pattern.test(stdout) && finish();
        function finish(error?: Error) {
          clearTimeout(timer);
          child.stdout!.off('data', check);
          if (error) reject(error);
          else resolve();
        }
        child.stdout!.on('data', check);
        void exited.then(() => finish(new Error(`exited before printing ${pattern}\n${output()}`)));
        check();
      });
    },
    async stop(timeoutMs) {
      if (done) return;
      killGroup(child, 'SIGTERM');
      const timer = setTimeout(() => killGroup(child, 'SIGKILL'), timeoutMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Runs a command to its end (killed at `timeoutMs`). */
export function run(command: string, args: readonly string[], options: { cwd: string; env?: Record<string, string>; timeoutMs: number }): Promise<Ran & { output: string }> {
  const started = start(command, args, { ...options, deadlineMs: options.timeoutMs });
  return started.exited.then((ran) => ({ ...ran, output: started.output() }));
}

/** True, or why this cannot run here: the machine's Node and npm, and the npm registry (asked for `spec`). */
export async function prerequisites(spec: string): Promise<true | string> {
  if (!existsSync(MACHINE_NODE) || !existsSync(MACHINE_NPM)) return `the machine's own Node and npm are not at ${MACHINE_NODE} and ${MACHINE_NPM}`;
  const view = await run(MACHINE_NPM, ['view', spec, 'version'], { cwd: tmpdir(), timeoutMs: 60_000 });
  if (view.code !== 0) {
    const why = view.stderr.split('\n').filter((line) => line.startsWith('npm error')).slice(0, 3).join('; ') || tail(view.stderr, 300).trim();
    return `the npm registry cannot be reached (npm view ${spec} version: exit ${view.code ?? view.signal}: ${why})`;
  }
  return true;
}

/** Kills every child still running (a suite's `after`, whatever happened). */
export function killAll(): void {
  for (const child of live) killGroup(child, 'SIGKILL');
}

/** Times the named steps of a suite (npm install, next build…), for one diagnostic line at its end. */
export function stopwatch(): { time<T>(what: string, fn: () => Promise<T>): Promise<T>; summary(): string } {
  const timings: string[] = [];
  return {
    async time(what, fn) {
      const began = Date.now();
      try {
        return await fn();
      } finally {
        timings.push(`${what}: ${((Date.now() - began) / 1000).toFixed(1)} s`);
      }
    },
    summary: () => `timings: ${timings.join('; ')}`,
  };
}

/**
 * What an example's suite needs (the npm registry, for `spec`, and Chromium): `skip` is the reason
 * to skip where one is missing, or false; in CI (CI set) it is always false, and `requireAll()`,
 * called in the suite's `before`, fails it with the reason instead of skipping.
 */
export async function examplePrerequisites(spec: string): Promise<{ skip: false | string; requireAll(): void }> {
  const inCi = process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false';
  const registry = await prerequisites(spec);
  const chromium = skipUnlessChromium();
  const missing = registry !== true ? registry : chromium;
  return {
    skip: inCi ? false : missing,
    requireAll() {
      if (missing !== false) throw new Error(`${missing}; CI is set, so this fails instead of skipping`);
    },
  };
}
