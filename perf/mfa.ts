/**
 * `BENCH_ONLY=mfa`: the second factor of a sign-in. `POST /api/auth/mfa/verify` answers the 403
 * MFA_REQUIRED of a password sign-in with a code from the user's authenticator app (TOTP) and
 * starts the session; it is measured beside a bare Fastify app answering the same JSON to the same
 * POST, on the same core, in interleaved rounds.
 *
 * Every measured verify is a real one that succeeds (200, a session). Two rules of the service
 * shape the load:
 * - a challenge (`mfaToken`) is spent by the verify that finishes it, so each verify needs a
 *   password sign-in of its own: they are made before each round (unmeasured), and the rounds
 *   run by count (autocannon `amount`), as many verifies as the subject's previous run would fit
 *   in a round;
 * - a TOTP code works once: the service keeps the last time step each user used and accepts only
 *   a later one (a replayed code gets 401 INVALID_CODE, and a code two steps old is out of the
 *   window). So one user can finish at most two sign-ins per 30-second step, with the codes of
 *   the current step and the next. Thousands of users are enrolled ahead (perf/mfa-enrol.ts);
 *   each run spreads its verifies over them, one per user (two of one user in flight together
 *   could land out of order), and each code is computed as its request is sent, for the earliest
 *   step its user has not used.
 *
 * The server's argon2id parameters are lowered here (ARGON2_MEMORY_KIB=1024,
 * ARGON2_ITERATIONS=1), which makes the thousands of unmeasured password sign-ins cheap. The
 * measured request computes no password hash (it compares a SHA-256 fingerprint of the stored
 * hash), so its figure does not depend on them.
 */
import { readFileSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import type { Request as AutocannonRequest, Result } from 'autocannon';
import { BENCH_DIR, collectOutput, createStore, gatehouseEnv, inParallel, postJson, sizedAmount, spawnNode, type App, type Gatehouse, type GatehouseStore, type LoadSpec } from './harness.ts';
import { runSeed } from './growth.ts';
import { SEED_PASSWORD } from './seed.ts';
import type { EnrolledUser } from './mfa-enrol.ts';
import { compare, describeServer, gatehouse, measureRuns, pathTarget, result, startBare, withApps, type Context, type NamedSubject, type RunRecord, type ScenarioResult } from './scenarios.ts';
import { base32Decode, hotp, TOTP_STEP_MS } from '../test/helpers/totp.ts';

const VERIFY_PATH = '/api/auth/mfa/verify';
/** Cheap hashes for the unmeasured password sign-ins (see above); the seeded hash uses the same, or every sign-in would rehash. */
const ARGON2 = { memoryKib: '1024', iterations: '1' };
const MFA_ENV = { ARGON2_MEMORY_KIB: ARGON2.memoryKib, ARGON2_ITERATIONS: ARGON2.iterations };
/** Verifies in the first warm-up run, before any rate is known. */
const FIRST_WARMUP_VERIFIES = 400;
/** Password sign-ins in flight while a round's challenges are made. */
const PREPARE_CONCURRENCY = 8;

/** An enrolled user as the load generator tracks it. */
interface TotpUser {
  email: string;
  key: Buffer;
  /** The latest step this user's codes were sent for (or enabled with). */
  lastStep: number;
}

/** A challenge waiting for its code. */
interface Challenge {
  user: TotpUser;
  mfaToken: string;
}

const currentStep = () => Math.floor(Date.now() / TOTP_STEP_MS);

/**
 * Users enrolled for the scenario: enough for a verify rate of about 500/s through the warm-up
 * and rounds, at two per user in the first 30 s (one more per user every 30 s after).
 */
function usersFor(ctx: Context): number {
  return 300 + 250 * ctx.settings.seconds;
}

/**
 * Picks who answers the next `wanted` challenges: users with a step left from the current one
 * to the next (an older step could fall out of the window if the step turned while its request
 * is in flight), each at most once a run: two verifies of one user in flight together could land
 * out of order, and the later step would refuse the earlier code. Scans from `cursor`, so
 * successive runs take different users. Fewer than `wanted` when the users run out.
 */
function pickUsers(users: TotpUser[], wanted: number, cursor: number): TotpUser[] {
  const current = currentStep();
  const picked: TotpUser[] = [];
  for (let k = 0; k < users.length && picked.length < wanted; k++) {
    const user = users[(cursor + k) % users.length]!;
    if (user.lastStep < current + 1) picked.push(user);
  }
  return picked;
}

/** The code for the earliest step `user` has not used, from the current one: computed as the request goes out. */
function nextCode(user: TotpUser): string {
  const step = Math.max(user.lastStep + 1, currentStep());
  user.lastStep = step;
  return hotp(user.key, step);
}

async function enrolUsers(ctx: Context, count: number): Promise<{ store: GatehouseStore; users: TotpUser[]; seconds: number }> {
  const started = performance.now();
  const store = await createStore('mfa', 'sqlite');
  await runSeed(store, count, ctx.pinning?.all ?? null, { SEED_ARGON2_MEMORY_KIB: ARGON2.memoryKib, SEED_ARGON2_ITERATIONS: ARGON2.iterations });
  const file = join(store.dataDir, 'mfa-users.jsonl');
  // The server's own environment (its AUTH_SECRET seals the secrets); the port is not used.
  const env = { ...gatehouseEnv(store, 1, { strategy: 'database', env: MFA_ENV }), MFA_USERS: String(count), MFA_USERS_FILE: file };
  const child = spawnNode(join(BENCH_DIR, 'mfa-enrol.ts'), [], { env, cwd: store.dataDir, cpus: ctx.pinning?.all ?? null });
  const output = collectOutput(child.stdout, child.stderr);
  const [code] = (await once(child, 'close')) as [number | null];
  if (code !== 0) throw new Error(`enrolling the users failed (exit ${code}):\n${output()}`);
  const enrolled = readFileSync(file, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as EnrolledUser);
  const users = enrolled.map((user) => ({ email: user.email, key: base32Decode(user.secret), lastStep: user.lastUsedStep }));
  return { store, users, seconds: Math.round((performance.now() - started) / 100) / 10 };
}

/** A password sign-in of `user`: the challenge it answers with (403 MFA_REQUIRED). */
async function challengeFor(server: Gatehouse, user: TotpUser): Promise<Challenge> {
  const answer = await postJson(`${server.url}/api/auth`, { email: user.email, password: SEED_PASSWORD });
  if (answer.status !== 403 || answer.body.error !== 'MFA_REQUIRED' || typeof answer.body.mfaToken !== 'string') {
    throw new Error(`${user.email}: the password step did not ask for the second factor: ${answer.status} ${JSON.stringify(answer.body)}`);
  }
  return { user, mfaToken: answer.body.mfaToken };
}

export async function mfaScenario(ctx: Context): Promise<ScenarioResult> {
  process.stdout.write(`\nsecond-factor verify POST ${VERIFY_PATH} (TOTP) vs the same JSON from bare Fastify\n`);
  const userCount = usersFor(ctx);
  const { store, users, seconds: enrolSeconds } = await enrolUsers(ctx, userCount);
  process.stdout.write(`  ${users.length} users seeded and enrolled (TOTP, through the MFA service) in ${enrolSeconds} s\n`);
  const apps: App[] = [];
  return withApps(apps, async () => {
    const server = await gatehouse(ctx, 'mfa', { database: 'sqlite', strategy: 'database', store, env: MFA_ENV });
    apps.push(server);
    // One verify by hand: it must succeed, and its answer is what the bare app answers.
    const probe = await challengeFor(server, users[0]!);
    const answered = await postJson(`${server.url}${VERIFY_PATH}`, { mfaToken: probe.mfaToken, code: nextCode(users[0]!) });
    if (answered.status !== 200) throw new Error(`a single second-factor verify failed: ${answered.status} ${JSON.stringify(answered.body)}`);
    const bare = await startBare(ctx, { [VERIFY_PATH]: answered.body });
    apps.push(bare);

    let challenges: Challenge[] = [];
    let sent = 0;
    let cursor = 1;
    const shortRounds: string[] = [];
    const request: AutocannonRequest = {
      setupRequest: (params) => {
        const challenge = challenges[sent++]!;
        return { ...params, body: JSON.stringify({ mfaToken: challenge.mfaToken, code: nextCode(challenge.user) }) };
      },
    };
    const headers = { 'content-type': 'application/json' };
    const verify: LoadSpec = { url: `${server.url}${VERIFY_PATH}`, method: 'POST', headers, connections: ctx.settings.connections, requests: [request] };
    const prepare = async (previous: Result | null) => {
      const wanted = sizedAmount(previous, ctx.settings, FIRST_WARMUP_VERIFIES, ctx.settings.connections);
      const picked = pickUsers(users, wanted, cursor);
      cursor = (cursor + picked.length) % users.length;
      if (picked.length < ctx.settings.connections) throw new Error(`only ${picked.length} enrolled users have a TOTP step left: enrol more (usersFor in perf/mfa.ts)`);
      if (picked.length < wanted) shortRounds.push(`${picked.length} of ${wanted}`);
      challenges = await inParallel(picked.length, PREPARE_CONCURRENCY, (i) => challengeFor(server, picked[i]!));
      sent = 0;
      verify.amount = challenges.length;
    };
    // The same request body shape (a token and a code); bare Fastify parses it and answers.
    const bareBody = JSON.stringify({ mfaToken: probe.mfaToken, code: '123456' });
    const subjects: NamedSubject[] = [
      { app: server, spec: verify, prepare, name: 'mfa-verify', label: 'second-factor verify (TOTP), sqlite', server: describeServer(server.options), isService: true },
      { app: bare, spec: { url: `${bare.url}${VERIFY_PATH}`, method: 'POST', headers, body: bareBody, connections: ctx.settings.connections }, name: 'bare', label: 'bare fastify, same POST and JSON', server: 'bare fastify', isService: false },
    ];
    const [run, baselineRun] = (await measureRuns(ctx, subjects)) as [RunRecord, RunRecord];
    compare([run], baselineRun);
    const targets = [pathTarget('mfa:verify', 'second-factor verify (TOTP)', run)];
    const notes = [
      `Each measured verify answers a challenge made for it by a password sign-in before its round (unmeasured), with the TOTP code of a step its user had not used: a challenge is spent by its verify, and each TOTP code works once. ${users.length} users were seeded (perf/seed.ts) and enrolled through the MFA service (perf/mfa-enrol.ts) in ${enrolSeconds} s; a run gives each user at most one verify. The rounds run by count (autocannon \`amount\`, as many verifies as the previous run's rate fills a round with); the bare rounds by time.`,
      `The server runs with ARGON2_MEMORY_KIB=${ARGON2.memoryKib} and ARGON2_ITERATIONS=${ARGON2.iterations}, so that the unmeasured password sign-ins are cheap; the verify computes no password hash.`,
      ...(shortRounds.length > 0 ? [`Some runs had fewer users with a step left than the rate asked for (${shortRounds.join(', ')} verifies) and were shorter.`] : []),
    ];
    return result(ctx, 'mfa', `Second-factor verify, POST ${VERIFY_PATH} (TOTP; SQLite, database strategy, 1 worker)`, [run, baselineRun], targets, { notes });
  });
}
