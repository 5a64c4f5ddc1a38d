/**
 * `BENCH_ONLY=growth`: do sign-in and session-check latency hold when storage is full? For SQLite
 * and PostgreSQL: seed one store with SEED_COUNT users and sessions (perf/seed.ts), keep another
 * empty (just the admin), run a server on each, pinned to the same core, and measure both in
 * interleaved rounds. Target (issue 8): within 20 % of the empty-store figures.
 */
import { once } from 'node:events';
import { join } from 'node:path';
import type { HashBound } from './hash-bound.ts';
import {
  BENCH_DIR,
  collectOutput,
  createStore,
  measureHashBound,
  measureInterleaved,
  pairedRatio,
  ratio,
  signIn,
  spawnNode,
  startGatehouse,
  type Gatehouse,
  type GatehouseStore,
  type Measurement,
  type Subject,
} from './harness.ts';
import type { Context, RunRecord, ScenarioResult, Target } from './scenarios.ts';
import type { SeedReport } from './seed.ts';

const SIGNIN_CONNECTIONS = 8;
const GROWTH_LIMIT = 1.2;

type Named = Subject & { name: string; label: string; server: string };

/** Sign-in and session check against `server`, named for its phase. */
async function subjectsOf(ctx: Context, server: Gatehouse, database: string, phase: 'empty' | 'seeded', description: string): Promise<Named[]> {
  const { token } = await signIn(server);
  return [
    {
      app: server,
      spec: {
        url: `${server.url}/api/auth`,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(server.store.admin),
        connections: SIGNIN_CONNECTIONS,
      },
      name: `signin-${database}-${phase}`,
      label: `sign-in, ${database}, ${phase}`,
      server: description,
    },
    {
      app: server,
      spec: { url: `${server.url}/api/auth/session`, headers: { authorization: `Bearer ${token}` }, connections: ctx.settings.connections },
      name: `session-${database}-${phase}`,
      label: `session check, ${database}, ${phase}`,
      server: description,
    },
  ];
}

/** Fills `store` with `count` users and sessions (perf/seed.ts, in a child); `env` adds SEED_* settings. */
export async function runSeed(store: GatehouseStore, count: number, cpus: string | null, env: Readonly<Record<string, string>> = {}): Promise<SeedReport> {
  const child = spawnNode(join(BENCH_DIR, 'seed.ts'), [], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', DATABASE_URL: store.databaseUrl, SEED_COUNT: String(count), ...env },
    cwd: store.dataDir,
    cpus,
  });
  const stdout = collectOutput(child.stdout);
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => process.stdout.write(`    ${chunk.trimEnd()}\n`));
  const [code] = (await once(child, 'close')) as [number | null];
  if (code !== 0) throw new Error(`seeding failed (exit ${code})`);
  return JSON.parse(stdout().trim().split('\n').at(-1) ?? '') as SeedReport;
}

/** Within 20 %: mean latency, and p99 allowing autocannon's 1 ms resolution. */
function isWithin(seeded: Measurement, empty: Measurement): boolean {
  return seeded.latencyMeanMs <= GROWTH_LIMIT * empty.latencyMeanMs && seeded.latencyP99Ms <= Math.max(GROWTH_LIMIT * empty.latencyP99Ms, empty.latencyP99Ms + 1);
}

export async function growthScenario(ctx: Context): Promise<ScenarioResult> {
  const count = Number(process.env.SEED_COUNT ?? 1_000_000);
  if (!Number.isInteger(count) || count < 1) throw new Error(`SEED_COUNT must be a positive integer (got "${process.env.SEED_COUNT}")`);
  const seededText = `${count.toLocaleString('en')} users + sessions`;
  process.stdout.write(`\ngrowth: empty store vs ${seededText} (database strategy), measured side by side\n`);
  const runs: RunRecord[] = [];
  const targets: Target[] = [];
  const seeds: SeedReport[] = [];
  const hashBound: HashBound[] = [];

  for (const database of ['sqlite', 'postgres'] as const) {
    const emptyStore = await createStore(`growth-${database}-empty`, database);
    const seededStore = await createStore(`growth-${database}-seeded`, database);
    process.stdout.write(`  seeding ${database}...\n`);
    const report = await runSeed(seededStore, count, ctx.pinning?.all ?? null);
    seeds.push(report);
    process.stdout.write(`  seeded ${report.users} users and ${report.sessions} sessions in ${report.seconds} s (${report.rowsPerSecond} rows/s)\n`);

    const start = (phase: 'empty' | 'seeded', store: GatehouseStore) =>
      startGatehouse({
        name: `growth-${database}-${phase}`,
        database,
        strategy: 'database',
        cpus: ctx.pinning?.server ?? null,
        store,
        profileDir: ctx.profileRoot === null ? null : join(ctx.profileRoot, `growth-${database}-${phase}`),
      });
    const empty = await start('empty', emptyStore);
    let seeded: Gatehouse | undefined;
    try {
      seeded = await start('seeded', seededStore);
      hashBound.push(await measureHashBound(empty.env, empty.store.dataDir, ctx.pinning?.server ?? null, ctx.settings.hashSeconds));
      const subjects = [
        ...(await subjectsOf(ctx, empty, database, 'empty', `gatehouse (${database}, database, 1 worker), empty store`)),
        ...(await subjectsOf(ctx, seeded, database, 'seeded', `gatehouse (${database}, database, 1 worker), ${seededText}`)),
      ];
      // Round-robin: empty sign-in, empty session, seeded sign-in, seeded session, again and again,
      // so a change in the machine's load lands on both stores alike.
      const measured = await measureInterleaved(subjects, ctx.settings);
      const records: RunRecord[] = measured.map((m, i) => ({ ...m, name: subjects[i]!.name, label: subjects[i]!.label, server: subjects[i]!.server, isService: true }));
      const [emptySignIn, emptySession, seededSignIn, seededSession] = records as [RunRecord, RunRecord, RunRecord, RunRecord];
      for (const [full, base] of [
        [seededSignIn, emptySignIn],
        [seededSession, emptySession],
      ] as const) {
        full.baseline = { name: base.name, label: base.label, value: base.requestsPerSecond, unit: 'req/s' };
        full.ratio = pairedRatio(full.rounds.map((r) => r.requestsPerSecond), base.rounds.map((r) => r.requestsPerSecond));
        const kind = full === seededSignIn ? 'sign-in' : 'session-check';
        targets.push({
          id: `growth:${kind}-${database}`,
          target: `${kind} latency within 20 % of the empty store (${database === 'sqlite' ? 'SQLite' : 'PostgreSQL'}, ${seededText})`,
          measured: `mean ${full.latencyMeanMs} vs ${base.latencyMeanMs} ms (${ratio(full.latencyMeanMs, base.latencyMeanMs)}×), p99 ${full.latencyP99Ms} vs ${base.latencyP99Ms} ms; ${full.requestsPerSecond} vs ${base.requestsPerSecond} req/s`,
          met: isWithin(full, base),
        });
      }
      for (const r of records) {
        process.stdout.write(`  ${r.label.padEnd(34)} ${String(r.requestsPerSecond).padStart(9)} req/s  mean ${r.latencyMeanMs} ms  p50 ${r.latencyP50Ms} ms  p99 ${r.latencyP99Ms} ms  rss ${r.peakRssMb} MB, loop max ${r.eventLoopDelayMaxMs} ms\n`);
      }
      runs.push(...records);
    } finally {
      await empty.stop();
      await seeded?.stop();
    }
  }
  const signInBound = hashBound.map((h) => h.verifiesPerSecond).join(', ');
  return {
    scenario: 'growth',
    title: `Growth: empty store vs ${seededText}`,
    machine: ctx.machine,
    pinning: ctx.pinning,
    settings: ctx.settings,
    hashBound,
    runs,
    targets,
    notes: [
      `Two servers run side by side on the same core, one on an empty store (just the admin) and one on a seeded store, and are measured in interleaved rounds; the seeded figures carry the empty ones as their baseline. "Within 20 %" is checked on mean latency (≤ ${GROWTH_LIMIT} × empty) and p99 (≤ ${GROWTH_LIMIT} × empty, or empty + 1 ms: autocannon records whole milliseconds). Sign-in at ${SIGNIN_CONNECTIONS} connections; the session check uses the database strategy, which reads the session row and the user on every request. Hash bound on the server core before the rounds: ${signInBound} verifies/s.`,
      `Seeded with perf/seed.ts (multi-row INSERTs of 1,000 rows, one shared argon2id hash; PostgreSQL then VACUUM (ANALYZE)): ${seeds.map((x) => `${x.database} ${x.users.toLocaleString('en')} users + ${x.sessions.toLocaleString('en')} sessions in ${x.seconds} s (${x.rowsPerSecond.toLocaleString('en')} rows/s)`).join('; ')}.`,
    ],
    seeds,
  };
}
