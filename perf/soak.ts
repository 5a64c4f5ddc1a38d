/**
 * Soak (issue 9, item 2): mixed traffic against a real server process for a bounded time, at a
 * share of the capacity measured first, reporting errors, memory growth per hour and table sizes.
 *
 *   node perf/soak.ts [--duration=10m] [--load=0.7] [--strategy=database|jwt]
 *                        [--database=<postgres://… scratch database>] [--out=<file.json>]
 *
 * Duration: `90s`, `10m`, `1h` (at most 24 h; default 10 minutes). Without --database the server
 * runs on a fresh SQLite file. The server is started with the test harness (clean environment,
 * loopback, a hard deadline of duration + 2 minutes) and stopped with SIGTERM at the end.
 *
 * Each virtual user loops: sign in, check the session three times, refresh, check with the new
 * token, sign out, check that the signed-out token is refused; one flow in five also asks for a
 * password reset. Flows start at a fixed rate (open loop): `--load` × the flows per second measured
 * in a short closed-loop calibration of the same flows (the load generator shares the machine, so
 * the capacity is measured as the run will see it). It runs from one loopback address, so the
 * per-IP limits are raised for the run.
 *
 * Memory: the server's RSS (from /proc) every 5 s; growth per hour is the least-squares slope
 * over the samples after the first fifth of the run (warm-up: JIT, caches, pools).
 * Exit code 0 when no request failed (no 5xx, no network error, no unexpected status), else 1.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DatabaseSync } from 'node:sqlite';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { GENEROUS_LIMITS } from '../test/helpers/app.ts';
import { randomSecret, startGatehouse, startScriptNodeArgs, type RunningGatehouse } from '../test/helpers/process.ts';
import { call, countOutcomes, sleep, type Outcome } from '../test/helpers/traffic.ts';

const TABLES = ['users', 'sessions', 'revoked_sessions', 'audit_events', 'mail_outbox', 'action_tokens', 'rate_limits'] as const;
const USERS = 50;
const PASSWORD = 'soak-harbour-lantern-violet';
const SAMPLE_INTERVAL_MS = 5_000;
const CALIBRATION_MS = 8_000;
const CALIBRATION_CONCURRENCY = 8;
const MAX_IN_FLIGHT_FLOWS = 256;

/** What each step should answer; anything else counts as an error. */
const EXPECTED: Record<string, number> = {
  signin: 200,
  session: 200,
  refresh: 200,
  'session-refreshed': 200,
  signout: 200,
  'session-signed-out': 401,
  'forgot-password': 202,
};

function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (match === null) throw new Error(`--duration: "${text}" is not like 90s, 10m or 1h`);
  const unit = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[(match[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  const ms = Number(match[1]) * unit;
  if (ms < 10_000 || ms > 24 * 3_600_000) throw new Error('--duration must be between 10 s and 24 h');
  return ms;
}

function rssBytes(pid: number): number | null {
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** Least-squares slope of y over x. */
function slope(points: ReadonlyArray<[number, number]>): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

async function countRows(database: { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string }): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  if (database.kind === 'sqlite') {
    const db = new DatabaseSync(database.path, { readOnly: true });
    try {
      for (const table of TABLES) counts[table] = Number((db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n);
    } finally {
      db.close();
    }
    return counts;
  }
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    for (const table of TABLES) counts[table] = Number((await client.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);
  } finally {
    await client.end();
  }
  return counts;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '10m' },
      load: { type: 'string', default: '0.7' },
      strategy: { type: 'string', default: 'database' },
      database: { type: 'string' },
      out: { type: 'string' },
    },
  });
  const durationMs = parseDuration(values.duration!);
  const load = Number(values.load);
  if (!(load > 0 && load <= 1.5)) throw new Error('--load must be a number in (0, 1.5]');
  if (values.strategy !== 'database' && values.strategy !== 'jwt') throw new Error('--strategy must be database or jwt');

  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-soak-'));
  const database = values.database === undefined ? { kind: 'sqlite' as const, path: join(dataDir, 'gatehouse.db') } : { kind: 'postgres' as const, url: values.database };
  const cleanups: Array<() => unknown> = [];
  const log = (message: string) => process.stderr.write(`soak: ${message}\n`);

  try {
    const server: RunningGatehouse = await startGatehouse({
      env: {
        NODE_ENV: 'development',
        LOG_LEVEL: 'info',
        AUTH_SECRET: randomSecret(),
        DATA_DIR: dataDir,
        DATABASE_URL: database.kind === 'sqlite' ? `sqlite:${database.path}` : database.url,
        SESSION_STRATEGY: values.strategy,
        // One loopback client: per-IP limits would measure the limiter, not the service.
        ...GENEROUS_LIMITS,
      },
      cleanup: (fn) => cleanups.push(fn),
      deadlineMs: durationMs + 120_000,
      // As `npm start` runs it (its memory flags), so the RSS figures are what operators see.
      nodeArgs: startScriptNodeArgs(),
    });
    const { base } = server;
    const pid = server.child.pid;

    log(`server ${base} (pid ${pid}), ${database.kind}, ${values.strategy} sessions; creating ${USERS} users`);
    const emails = Array.from({ length: USERS }, (_, i) => `soak-${i}@example.test`);
    for (const email of emails) {
      const signup = await call(base, '/api/auth/signup', 'signup', { body: { email, password: PASSWORD, name: 'Soak' } });
      if (signup.status !== 202) throw new Error(`sign-up of ${email}: ${signup.status} ${signup.code ?? ''}`);
    }

    const outcomes: Outcome[] = [];
    const samples: Array<[number, number]> = [];
    let inFlight = 0;
    let skipped = 0;
    let flows = 0;

    let isCalibrating = true;
    const flow = async (n: number) => {
      const email = emails[n % USERS]!;
      const record = (o: Outcome) => {
        // Keep counts, not bodies: ten minutes of outcomes must not become the leak.
        if (!isCalibrating) outcomes.push({ ...o, body: undefined });
        return o;
      };
      const signin = await call(base, '/api/auth', 'signin', { body: { email, password: PASSWORD } });
      record(signin);
      if (signin.status !== 200) return;
      const token = signin.body!.token as string;
      for (let i = 0; i < 3; i++) record(await call(base, '/api/auth/session', 'session', { token }));
      const refresh = record(await call(base, '/api/auth/refresh', 'refresh', { body: { refreshToken: signin.body!.refreshToken as string } }));
      const refreshedToken = refresh.status === 200 ? (refresh.body?.token as string) : undefined;
      if (refreshedToken !== undefined) record(await call(base, '/api/auth/session', 'session-refreshed', { token: refreshedToken }));
      const current = refreshedToken ?? token;
      record(await call(base, '/api/auth/signout', 'signout', { method: 'POST', token: current }));
      record(await call(base, '/api/auth/session', 'session-signed-out', { token: current }));
      if (n % 5 === 0) record(await call(base, '/api/auth/forgot-password', 'forgot-password', { body: { email } }));
    };

    // Calibration: the same flows, closed loop, as fast as the server takes them.
    let calibrated = 0;
    const calibrationEnd = performance.now() + CALIBRATION_MS;
    await Promise.all(
      Array.from({ length: CALIBRATION_CONCURRENCY }, async (_, i) => {
        for (let n = i; performance.now() < calibrationEnd; n += CALIBRATION_CONCURRENCY) {
          await flow(n);
          calibrated++;
        }
      }),
    );
    isCalibrating = false;
    const rowsBefore = await countRows(database);
    const capacity = calibrated / (CALIBRATION_MS / 1000);
    const flowsPerSecond = Math.max(0.5, capacity * load);
    log(`capacity ≈ ${capacity.toFixed(1)} flows/s; soaking ${Math.round(durationMs / 1000)} s at ${flowsPerSecond.toFixed(1)} flows/s`);

    const started = performance.now();
    const end = started + durationMs;
    const sampler = setInterval(() => {
      const rss = rssBytes(pid);
      if (rss !== null) samples.push([(performance.now() - started) / 1000, rss]);
    }, SAMPLE_INTERVAL_MS);
    let lastReport = started;
    const running = new Set<Promise<void>>();
    for (let next = started; next < end; next += 1000 / flowsPerSecond) {
      const wait = next - performance.now();
      if (wait > 0) await sleep(wait);
      if (server.child.hasExited()) throw new Error(`the server exited during the soak:\n${server.child.stderr().slice(-2000)}`);
      if (inFlight >= MAX_IN_FLIGHT_FLOWS) {
        skipped++;
        continue;
      }
      inFlight++;
      const p = flow(flows++).finally(() => {
        inFlight--;
        running.delete(p);
      });
      running.add(p);
      if (performance.now() - lastReport > 60_000) {
        lastReport = performance.now();
        const errors = outcomes.filter((o) => o.status !== EXPECTED[o.kind]).length;
        log(`${Math.round((lastReport - started) / 1000)} s: ${flows} flows, ${outcomes.length} requests, ${errors} errors, rss ${((rssBytes(pid) ?? 0) / 2 ** 20).toFixed(1)} MiB`);
      }
    }
    await Promise.all(running);
    clearInterval(sampler);
    const elapsedS = (performance.now() - started) / 1000;
    const rowsAfter = await countRows(database);

    const stop = await server.child.stop(15_000);
    const afterWarmUp = samples.filter(([t]) => t >= (durationMs / 1000) * 0.2);
    const growthBytesPerHour = slope(afterWarmUp) * 3600;
    const errors = outcomes.filter((o) => o.status !== EXPECTED[o.kind]);
    const latencies = outcomes.map((o) => o.doneAt - o.sentAt).sort((a, b) => a - b);
    const pct = (p: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0);
    const report = {
      when: new Date().toISOString(),
      node: process.version,
      database: database.kind,
      strategy: values.strategy,
      durationS: Math.round(elapsedS),
      capacityFlowsPerS: Number(capacity.toFixed(1)),
      load,
      flows,
      flowsSkippedAtConcurrencyCap: skipped,
      requests: outcomes.length,
      requestsPerS: Number((outcomes.length / elapsedS).toFixed(1)),
      latencyMs: { p50: pct(0.5), p99: pct(0.99), max: pct(1) },
      statuses: countOutcomes(outcomes),
      errors: errors.length,
      errorKinds: countOutcomes(errors),
      rssMiB: {
        first: Number(((samples[0]?.[1] ?? 0) / 2 ** 20).toFixed(1)),
        last: Number(((samples.at(-1)?.[1] ?? 0) / 2 ** 20).toFixed(1)),
        max: Number((Math.max(0, ...samples.map(([, y]) => y)) / 2 ** 20).toFixed(1)),
        growthPerHourAfterWarmUp: Number((growthBytesPerHour / 2 ** 20).toFixed(1)),
        samples: samples.length,
      },
      rowsBefore,
      rowsAfter,
      serverErrorLogs: server.child.logs().filter((entry) => (entry.level ?? 0) >= 50).length,
      serverExit: stop,
    };
    const text = `${JSON.stringify(report, null, 2)}\n`;
    process.stdout.write(text);
    if (values.out !== undefined) writeFileSync(values.out, text);
    return errors.length === 0 && report.serverErrorLogs === 0 && stop.code === 0 ? 0 : 1;
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

process.exitCode = await main().catch((error: unknown) => {
  process.stderr.write(`soak failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  return 1;
});
