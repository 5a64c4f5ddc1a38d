/**
 * `BENCH_ONLY=magic-link`: passwordless sign-in (issue 38 part 6, "magic-link verify").
 * `POST /api/auth/email/verify` with a mailed link's token signs its user in (a session, the
 * cookies, an audit event, the link spent); it is measured beside a bare Fastify app answering the
 * same JSON to the same POST, on the same core, in interleaved rounds.
 *
 * Every measured verify is a real one that succeeds (200): a link works once, and a new link for an
 * address replaces the one before it. So before each run (unmeasured) as many users as the run
 * needs ask for a link (`POST /api/auth/email/start`), and each link's token is read from the mail
 * the server wrote to its dev outbox (no EMAIL_SERVER_HOST: the mail stays in the outbox table,
 * sealed under AUTH_SECRET, as `/dev/outbox` shows it), opened with the server's own seal. Mail is
 * not sent over SMTP here: the outbox sends one message at a time on a fresh connection (a
 * trickle by design), far slower than verifies are spent. The rounds run by count
 * (autocannon `amount`): as many verifies as the subject's previous run fills a round with, one per
 * user. The users are seeded (perf/seed.ts, verified, no second factor); the server runs with
 * EMAIL_SIGNIN on and its e-mail sign-in limits raised so the load measures the path.
 */
import { DatabaseSync } from 'node:sqlite';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Request as AutocannonRequest, Result } from 'autocannon';
import { createStore, inParallel, postJson, sizedAmount, type App, type Gatehouse, type LoadSpec } from './harness.ts';
import { runSeed } from './growth.ts';
import { seededEmail } from './seed.ts';
import { compare, describeServer, gatehouse, measureRuns, pathTarget, result, startBare, withApps, type Context, type NamedSubject, type RunRecord, type ScenarioResult } from './scenarios.ts';
import { createPayloadSeal } from '../src/mail/payload-seal.ts';

const VERIFY_PATH = '/api/auth/email/verify';
const START_PATH = '/api/auth/email/start';
/** Users seeded: a run uses each at most once (a second link would replace the first). */
const USERS = 6_000;
/** Verifies in the first warm-up run, before any rate is known. */
const FIRST_WARMUP_VERIFIES = 300;
/** Link requests in flight while a run's links are made. */
const PREPARE_CONCURRENCY = 8;
/** How long the mails of a run's link requests may take to reach the outbox table. */
const OUTBOX_WAIT_MS = 30_000;
const LINK = /\/auth\/email-signin\/link\?token=([\w-]+)/;
const RAISED = '1000000/1s';
const MAGIC_ENV = {
  EMAIL_SIGNIN: 'true',
  RATE_LIMIT_EMAIL_SIGNIN_PER_ADDRESS: RAISED,
  RATE_LIMIT_EMAIL_SIGNIN_PER_IP: RAISED,
  RATE_LIMIT_EMAIL_SIGNIN_VERIFY_PER_IP: RAISED,
};

/** The server's dev outbox, read as `/dev/outbox` reads it: the newest mail to each address, opened. */
function outboxReader(server: Gatehouse): { newestLinks(since: number): Map<string, string>; close(): void } {
  const database = new DatabaseSync(server.store.databaseUrl.slice('sqlite:'.length), { readOnly: true });
  const rows = database.prepare('select id, to_address, payload from mail_outbox where created_at >= ? and payload is not null order by created_at');
  const seal = createPayloadSeal(server.store.authSecret);
  return {
    newestLinks(since) {
      const links = new Map<string, string>();
      for (const row of rows.all(since) as { id: string; to_address: string; payload: string }[]) {
        const token = LINK.exec(seal.open(row.id, row.payload)?.text ?? '')?.[1];
        if (token !== undefined) links.set(row.to_address, token);
      }
      return links;
    },
    close: () => database.close(),
  };
}

/** Asks for a link for each address and returns the links' tokens, read from the outbox. */
async function mailLinks(server: Gatehouse, outbox: ReturnType<typeof outboxReader>, addresses: string[]): Promise<string[]> {
  const since = Date.now() - 1;
  await inParallel(addresses.length, PREPARE_CONCURRENCY, async (i) => {
    const answer = await postJson(`${server.url}${START_PATH}`, { email: addresses[i] });
    if (answer.status !== 202) throw new Error(`${START_PATH} for ${addresses[i]}: ${answer.status} ${JSON.stringify(answer.body)}`);
  });
  // The answer does not wait for the mail (its timing is the same for every address): poll briefly.
  let links = outbox.newestLinks(since);
  for (let waited = 0; addresses.some((address) => !links.has(address)) && waited < OUTBOX_WAIT_MS; waited += 50) {
    await sleep(50);
    links = outbox.newestLinks(since);
  }
  return addresses.map((address) => {
    const token = links.get(address);
    if (token === undefined) throw new Error(`no sign-in mail to ${address} in the outbox`);
    return token;
  });
}

export async function magicLinkScenario(ctx: Context): Promise<ScenarioResult> {
  process.stdout.write(`\nmagic-link verify POST ${VERIFY_PATH} (a mailed link's token) vs the same JSON from bare Fastify\n`);
  const store = await createStore('magic-link', 'sqlite');
  await runSeed(store, USERS, ctx.pinning?.all ?? null);
  const apps: App[] = [];
  let outbox: ReturnType<typeof outboxReader> | undefined;
  try {
    return await withApps(apps, async () => {
    const server = await gatehouse(ctx, 'magic-link', { database: 'sqlite', strategy: 'database', store, env: MAGIC_ENV });
    apps.push(server);
    outbox = outboxReader(server);
    // One verify by hand: it must succeed, and its answer is what the bare app answers.
    const [probeToken] = await mailLinks(server, outbox, [seededEmail(0)]);
    const answered = await postJson(`${server.url}${VERIFY_PATH}`, { token: probeToken });
    if (answered.status !== 200) throw new Error(`a single magic-link verify failed: ${answered.status} ${JSON.stringify(answered.body)}`);
    const bare = await startBare(ctx, { [VERIFY_PATH]: answered.body });
    apps.push(bare);

    let tokens: string[] = [];
    let sent = 0;
    let cursor = 1;
    const shortRuns: string[] = [];
    const request: AutocannonRequest = {
      setupRequest: (params) => ({ ...params, body: JSON.stringify({ token: tokens[sent++] }) }),
    };
    const headers = { 'content-type': 'application/json' };
    const verify: LoadSpec = { url: `${server.url}${VERIFY_PATH}`, method: 'POST', headers, connections: ctx.settings.connections, requests: [request] };
    const prepare = async (previous: Result | null) => {
      const wanted = sizedAmount(previous, ctx.settings, FIRST_WARMUP_VERIFIES, ctx.settings.connections);
      const count = Math.min(wanted, USERS - 1);
      if (count < wanted) shortRuns.push(`${count} of ${wanted}`);
      const addresses = Array.from({ length: count }, (_, i) => seededEmail(1 + ((cursor + i) % (USERS - 1))));
      cursor = (cursor + count) % (USERS - 1);
      tokens = await mailLinks(server, outbox!, addresses);
      sent = 0;
      verify.amount = tokens.length;
    };
    const bareBody = JSON.stringify({ token: probeToken });
    const subjects: NamedSubject[] = [
      { app: server, spec: verify, prepare, name: 'magic-link-verify', label: 'magic-link verify (a mailed token), sqlite', server: describeServer(server.options), isService: true },
      { app: bare, spec: { url: `${bare.url}${VERIFY_PATH}`, method: 'POST', headers, body: bareBody, connections: ctx.settings.connections }, name: 'bare', label: 'bare fastify, same POST and JSON', server: 'bare fastify', isService: false },
    ];
    const [run, baselineRun] = (await measureRuns(ctx, subjects)) as [RunRecord, RunRecord];
    compare([run], baselineRun);
    const targets = [pathTarget('magic-link:verify', 'magic-link verify (issue 38)', run)];
    const notes = [
      `Each measured verify spends a link mailed for it before its run (unmeasured): ${USERS} users were seeded (perf/seed.ts); for each verify of a run one of them asked for a link (POST ${START_PATH}) and the token was read from the mail in the server's dev outbox (opened with its seal, as /dev/outbox shows it; not sent over SMTP, which goes one message at a time). A link works once and a newer one for the same address replaces it, so a run gives each user at most one verify. The rounds run by count (autocannon \`amount\`, as many verifies as the previous run's rate fills a round with); the bare rounds by time.`,
      'The server runs with EMAIL_SIGNIN=true and its e-mail sign-in limits (per address, per IP, verifies per IP) raised to 1,000,000 a second, still counted; a verify computes no password hash.',
      ...(shortRuns.length > 0 ? [`Some runs had fewer users than the rate asked for (${shortRuns.join(', ')} verifies) and were shorter.`] : []),
    ];
    return result(ctx, 'magic-link', `Magic-link verify, POST ${VERIFY_PATH} (SQLite, database strategy, 1 worker)`, [run, baselineRun], targets, { notes });
    });
  } finally {
    outbox?.close();
  }
}
