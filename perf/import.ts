/**
 * `BENCH_ONLY=import`: `gatehouse import` of IMPORT_USERS (default 1,000,000) generated users (issue
 * 36) as an operator runs it, on SQLite: the file is read as a stream and written in batches, so the
 * process must not grow past its idle figure (the same command on an empty file: configuration,
 * storage and services loaded) by more than ~100 MB; then the same file into a fresh store, the
 * process killed (SIGKILL) halfway, and run again: the second run skips what the first wrote and
 * imports the rest, and the store ends with every user once. Memory is the peak RSS read from
 * /proc every 50 ms. Not a test: it takes minutes.
 *
 * Its throughput is set beside a hash-less bulk-insert bound (issue 38 part 6): the same number of
 * users written straight into a fresh store of the same schema by perf/seed.ts (SEED_SHAPE=users:
 * multi-row INSERTs, many per transaction, one precomputed hash for all), on the same core. The
 * bound does none of an import's work per row (parsing and checking a record, the existing-user
 * lookup, roles, the report, resumable progress), so the ratio says what that work costs.
 */
import { once } from 'node:events';
import { createWriteStream, readFileSync } from 'node:fs';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { collectOutput, makeTempDir, REPO_DIR, spawnNode } from './harness.ts';
import { runSeed } from './growth.ts';
import { result, type Context, type ScenarioResult, type Target } from './scenarios.ts';

const CLI_ENTRY = join(REPO_DIR, 'src', 'cli', 'gatehouse.js');
const GROWTH_LIMIT_MB = 100;

async function writeUsers(file: string, count: number): Promise<void> {
  // One bcrypt hash for all (the import checks a hash's shape and bounds, it does not verify it).
  const hash = await bcrypt.hash('a generated password', 10);
  const out = createWriteStream(file);
  for (let i = 0; i < count; i++) {
    const line = `${JSON.stringify({ email: `user${i}@example.com`, name: `User ${i}`, emailVerified: i % 2 === 0, createdAt: 1_600_000_000_000 + i, roles: i % 100 === 0 ? ['EDITOR'] : [], passwordHash: hash })}\n`;
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

function rssMb(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match === null ? 0 : Math.round(Number(match[1]) / 1024);
  } catch {
    return 0;
  }
}

interface ImportRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  peakRssMb: number;
  seconds: number;
  output: string;
}

/** Runs `gatehouse import --from json file`; `killAt` read rows: SIGKILL once the progress says so. */
async function runImport(ctx: Context, dir: string, database: string, file: string, killAt?: number): Promise<ImportRun> {
  const env = { ...process.env, NODE_ENV: 'development', AUTH_SECRET: 'bench-import-secret-that-is-long-enough-0123', DATA_DIR: dir, DATABASE_URL: `sqlite:${database}`, LOG_LEVEL: 'warn' };
  const started = performance.now();
  const child = spawnNode(CLI_ENTRY, ['import', '--from', 'json', file, '--report', join(dir, 'report.json')], { env, cwd: REPO_DIR, cpus: ctx.pinning?.server ?? null });
  const output = collectOutput(child.stdout, child.stderr);
  let peak = 0;
  const timer = setInterval(() => {
    peak = Math.max(peak, rssMb(child.pid!));
    const read = [...output().matchAll(/progress: (\d+) read/g)].at(-1)?.[1];
    if (killAt !== undefined && read !== undefined && Number(read) >= killAt) child.kill('SIGKILL');
  }, 50);
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
  clearInterval(timer);
  return { code, signal, peakRssMb: peak, seconds: Math.round((performance.now() - started) / 100) / 10, output: output() };
}

export async function importScenario(ctx: Context): Promise<ScenarioResult> {
  const count = Number(process.env.IMPORT_USERS ?? 1_000_000);
  const dir = makeTempDir('gatehouse-bench-import-');
  const file = join(dir, 'users.ndjson');
  const empty = join(dir, 'empty.ndjson');
  await writeUsers(file, count);
  await writeUsers(empty, 0);

  const idle = await runImport(ctx, dir, join(dir, 'idle.db'), empty);
  const full = await runImport(ctx, dir, join(dir, 'full.db'), file);
  const killed = await runImport(ctx, dir, join(dir, 'resumed.db'), file, Math.floor(count / 2));
  const resumed = await runImport(ctx, dir, join(dir, 'resumed.db'), file);
  const bound = await runSeed({ dataDir: dir, databaseUrl: `sqlite:${join(dir, 'bound.db')}`, authSecret: '', admin: { email: '', password: '' } }, count, ctx.pinning?.server ?? null, { SEED_SHAPE: 'users', SEED_BATCH: '2000' });
  const counts = (run: ImportRun) => /imported (\d+) new, \d+ updated, (\d+) skipped/.exec(run.output);
  const [, created = '0'] = counts(full) ?? [];
  const [, resumedNew = '0', resumedSkipped = '0'] = counts(resumed) ?? [];

  const growth = full.peakRssMb - idle.peakRssMb;
  const targets: Target[] = [
    {
      id: 'import:memory',
      target: `a ${count.toLocaleString('en')}-user file imports without the process growing past the idle figure by more than ~${GROWTH_LIMIT_MB} MB`,
      measured: `peak RSS ${full.peakRssMb} MB vs ${idle.peakRssMb} MB idle (+${growth} MB); ${created} users in ${full.seconds} s (${Math.round(Number(created) / full.seconds)}/s), exit ${full.code}`,
      met: full.code === 0 && Number(created) === count && growth <= GROWTH_LIMIT_MB,
    },
    {
      id: 'import:resume',
      target: 'killed halfway, a re-run resumes: skips what was written, imports the rest, every user once',
      measured: `killed (${killed.signal}) after ${killed.seconds} s; re-run: ${resumedNew} new + ${resumedSkipped} skipped = ${Number(resumedNew) + Number(resumedSkipped)} of ${count}, exit ${resumed.code}`,
      met: killed.signal === 'SIGKILL' && resumed.code === 0 && Number(resumedNew) + Number(resumedSkipped) === count && Number(resumedSkipped) > 0,
    },
    {
      id: 'import:vs-bulk-insert',
      target: 'import throughput set beside a hash-less bulk-insert bound in the same run (issue 38)',
      measured: `${Math.round(Number(created) / full.seconds)} users/s imported vs ${Math.round(bound.users / bound.seconds)} users/s bulk-inserted (${bound.users} users in ${bound.seconds} s, migrations included) → ${Math.round((Number(created) / full.seconds / (bound.users / bound.seconds)) * 1000) / 1000} ×`,
      met: full.code === 0 && Number(created) === count && bound.users === count,
    },
  ];
  return result(ctx, 'import', `gatehouse import of ${count.toLocaleString('en')} users (SQLite)`, [], targets, {
    notes: [
      `Generated JSON Lines, one bcrypt hash shared by all rows (an import checks a hash's shape and bounds; it does not verify it). Batches of 500 rows per transaction.`,
      'The bound: perf/seed.ts with SEED_SHAPE=users writes the same number of users (no sessions) into a fresh store by multi-row INSERTs of 2,000 rows, pinned to the same core; its time includes the migrations and the one precomputed hash.',
    ],
  });
}
