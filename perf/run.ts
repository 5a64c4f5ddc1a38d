/**
 * `npm run bench`: the benchmark suite. Autocannon on loopback drives the real server (pinned to
 * one CPU with taskset; the load generator, this process, on another) and sets every figure
 * beside a baseline measured in the same run: the hash-bound limit for sign-in, a bare Fastify app
 * answering the same JSON for the other routes, or the baseline a scenario names. Results go to
 * perf/results/<scenario>.json, and perf/report.ts writes BENCHMARKS.md (and the results part of
 * docs/operations/performance.md) from every result file there.
 *
 * Scenarios (the default run is all but growth and import, about 22 minutes):
 *   signin, signin-workers   sign-in (default settings) vs the hash-bound limit; 1 and 2 workers
 *   session, protected, jwks, protect, flood
 *                            session checks, the route guard, the JWKS, gatehouse-protect downstream,
 *                            session checks during a sign-in flood; vs bare Fastify
 *   mfa                      the second-factor verify (TOTP), every verify real (perf/mfa.ts)
 *   oidc                     the OpenID Provider's token endpoint (code exchange, refresh, client
 *                            credentials) and introspection (perf/oidc.ts)
 *   webhooks                 webhook delivery throughput, event to receipt (perf/webhooks.ts)
 *   cli                      wall time of gatehouse help, --version, users list --json (perf/cli-timing.ts)
 *   idle                     a default instance after a restart: cold start to ready and idle RSS vs bare
 *                            Fastify, and RSS under sign-in load (perf/idle.ts)
 *   growth                   sign-in, session check, admin users search and audit filter on 10,000,000
 *                            users (PostgreSQL) vs 10,000 (perf/growth.ts)
 *   import                   gatehouse import of 1,000,000 users: memory vs idle, resume after a kill (perf/import.ts)
 *   paths                    issue 38's new paths: the API-key check vs the jwt check, SCIM list and patch vs
 *                            bare Fastify (perf/paths.ts)
 *   magic-link               passwordless sign-in: a mailed link's verify vs bare Fastify (perf/magic-link.ts)
 *
 * Environment:
 *   BENCH_ONLY=<name>[,<name>]   run only these scenarios
 *   BENCH_SECONDS=9              measured seconds of each load run (plus a short warm-up); the
 *                                runs by count (mfa, oidc code exchange, webhooks) are sized to last
 *                                about as long; the cli scenario runs each command this long
 *   BENCH_CONNECTIONS=32         connections for the fast endpoints (and mfa, oidc)
 *   BENCH_SIGNIN_CONNECTIONS=8,64  sign-in concurrencies
 *   BENCH_ROUNDS=3               rounds each figure is split into, interleaved with its baseline
 *   BENCH_CPU_PROF=1             profile the servers (perf/probe.ts); summaries and this run's results go
 *                                to perf/results/profiles/ (BENCHMARKS.md and docs/ are left alone)
 *   GROWTH_USERS=10000000        users the growth scenario seeds (with a session each, an organization
 *                                per 10, 5 audit events each: perf/seed.ts, shape growth)
 *   GROWTH_BASELINE_USERS=10000  users of the store it is compared with
 *   GROWTH_DATABASES=postgres    the databases it runs on (sqlite,postgres for both)
 *   GROWTH_SEEDED_DATABASE_URL   a PostgreSQL database perf/seed.ts already filled with GROWTH_USERS
 *                                users (SEED_SHAPE=growth): used as the large store, not seeded again
 *   IMPORT_USERS=1000000         users the import scenario's file holds
 *   BENCH_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test
 *                                where the PostgreSQL scenarios (session, growth) make scratch
 *                                databases; PostgreSQL must be reachable there
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { publishable } from './publishable.ts';
import { join } from 'node:path';
import {
  RESULTS_DIR,
  choosePinning,
  cleanUp,
  describeMachine,
  installEmergencyStop,
  makeTempDir,
  pinThisProcess,
  readSettings,
} from './harness.ts';
import {
  DEFAULT_SCENARIOS,
  floodScenario,
  jwksScenario,
  protectScenario,
  protectedScenario,
  sessionScenario,
  signInScenario,
  signInWorkersScenario,
  type Context,
  type ScenarioName,
  type ScenarioResult,
} from './scenarios.ts';
import { growthScenario } from './growth.ts';
import { mfaScenario } from './mfa.ts';
import { oidcScenario } from './oidc.ts';
import { webhooksScenario } from './webhooks.ts';
import { cliScenario } from './cli-timing.ts';
import { idleScenario } from './idle.ts';
import { importScenario } from './import.ts';
import { pathsScenario } from './paths.ts';
import { magicLinkScenario } from './magic-link.ts';
import { summariseProfiles } from './profile-summary.ts';
import { writeBenchmarksMarkdown } from './report.ts';

const RUNNERS: Record<ScenarioName, (ctx: Context) => Promise<ScenarioResult>> = {
  signin: signInScenario,
  'signin-workers': signInWorkersScenario,
  session: sessionScenario,
  protected: protectedScenario,
  jwks: jwksScenario,
  protect: protectScenario,
  flood: floodScenario,
  mfa: mfaScenario,
  oidc: oidcScenario,
  webhooks: webhooksScenario,
  cli: cliScenario,
  idle: idleScenario,
  growth: growthScenario,
  import: importScenario,
  paths: pathsScenario,
  'magic-link': magicLinkScenario,
};

function selectScenarios(only: string | undefined): ScenarioName[] {
  if (only === undefined || only.trim() === '') return DEFAULT_SCENARIOS;
  const names = only.split(',').map((name) => name.trim());
  const unknown = names.filter((name) => !(name in RUNNERS));
  if (unknown.length > 0) throw new Error(`BENCH_ONLY: unknown scenario ${unknown.join(', ')} (known: ${Object.keys(RUNNERS).join(', ')})`);
  return names as ScenarioName[];
}

async function main(): Promise<void> {
  const settings = readSettings(process.env);
  const scenarios = selectScenarios(process.env.BENCH_ONLY);
  const pinning = choosePinning();
  if (pinning !== null) pinThisProcess(pinning.load);
  const machine = describeMachine();
  // Profiled runs are slower: their results go beside the profile summaries, never over the
  // figures of BENCHMARKS.md. Raw profiles (large) stay in a temp dir; summaries are kept.
  const summaryDir = join(RESULTS_DIR, 'profiles');
  const profileRoot = settings.cpuProfile ? makeTempDir('gatehouse-cpu-prof-') : null;
  const resultsDir = settings.cpuProfile ? summaryDir : RESULTS_DIR;
  if (settings.cpuProfile) mkdirSync(summaryDir, { recursive: true });
  // Generous: growth seeds for minutes; the default run takes 18-22 on the hosts measured (twice that is the budget).
  installEmergencyStop((scenarios.includes('growth') ? 60 : 45) * 60_000);

  process.stdout.write(
    `${machine.cpu}, ${machine.cores} cores, Node ${machine.node}, load average ${machine.loadAverage1m}; ` +
      `${pinning === null ? 'no pinning' : `server on CPU ${pinning.server}, load generator on CPU ${pinning.load}`}; ` +
      `${settings.seconds} s per run; scenarios: ${scenarios.join(', ')}\n`,
  );
  const ctx: Context = { settings, pinning, machine, profileRoot };
  mkdirSync(resultsDir, { recursive: true });
  let failed = false;
  try {
    for (const name of scenarios) {
      const started = Date.now();
      const scenarioResult = await RUNNERS[name](ctx);
      const file = join(resultsDir, `${name}.json`);
      // The figures and the settings that shape them; no secret, local path, port or pid.
      writeFileSync(file, `${JSON.stringify(scenarioResult, publishable, 2)}\n`);
      for (const target of scenarioResult.targets) {
        process.stdout.write(`  [${target.met ? 'met' : 'MISSED'}] ${target.target}: ${target.measured}\n`);
      }
      process.stdout.write(`  wrote ${file} (${Math.round((Date.now() - started) / 1000)} s)\n`);
      if (scenarioResult.runs.some((r) => r.non2xx + r.errors + r.timeouts > 0)) failed = true;
    }
    if (profileRoot !== null) summariseProfiles(profileRoot, summaryDir);
  } finally {
    await cleanUp();
  }
  if (profileRoot === null) process.stdout.write(`wrote ${writeBenchmarksMarkdown().join(' and ')}\n`);
  if (failed) {
    process.stderr.write('bench: some requests did not answer 2xx (see the !! lines above)\n');
    process.exitCode = 1;
  }
}

await main().catch(async (error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  await cleanUp();
  process.exitCode = 1;
});
