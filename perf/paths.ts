/**
 * `BENCH_ONLY=paths`: issue 38's "the new paths have figures", each beside a baseline measured on
 * the same core in interleaved rounds:
 * - an API-key check (`GET /api/organizations`, the owner's organizations, with a personal key)
 *   beside the same route with an access token on the same server, jwt strategy (the issue's
 *   target: ≥ 0.8 × that; a key has no session, so the session endpoint is not its route);
 * - SCIM: listing users (`GET /scim/v2/Users?count=50`, a directory of SCIM_USERS) and a PATCH of
 *   one user (replace `name.givenName`), beside bare Fastify answering the same JSON.
 * On SQLite (here) the key's row and its owner are kept between uses while nothing is committed
 * (api-keys/api-key-use.ts); the SCIM PATCH rows commit, but in turns of their own.
 * The key and the SCIM token are made with the CLI, as an operator would (`gatehouse api-keys
 * create`, `gatehouse scim tokens create`); the SCIM users through SCIM itself. Every measured
 * request is a real success (2xx), counted.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO_DIR, type App, type Gatehouse, type LoadSpec } from './harness.ts';
import { cliEnv } from './cli-timing.ts';
import { compare, describeServer, gatehouse, measureRuns, pathTarget, result, startBare, withApps, type Context, type NamedSubject, type ScenarioResult, type Target } from './scenarios.ts';

const SCIM_USERS = 500;
const SCIM_TYPE = 'application/scim+json';
const CLI_ENTRY = join(REPO_DIR, 'src', 'cli', 'gatehouse.js');
/** Limits the load would otherwise hit (they are measured elsewhere): per key, per SCIM token. */
const PATHS_ENV = { SESSION_STRATEGY: 'jwt', RATE_LIMIT_API_KEY: '1000000/1s', RATE_LIMIT_SCIM_PER_TOKEN: '1000000/1s' };

/** Runs the CLI against the server's store, as an operator's shell would; its JSON answer. */
function cli(server: Gatehouse, args: string[]): Record<string, unknown> {
  const run = spawnSync(process.execPath, [CLI_ENTRY, ...args, '--json'], { env: cliEnv(server.store), cwd: server.store.dataDir, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`gatehouse ${args[0]} ${args[1]}: exit ${run.status}: ${run.stderr.slice(0, 500)}`);
  return JSON.parse(run.stdout) as Record<string, unknown>;
}

async function scim(server: Gatehouse, token: string, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${server.url}/scim/v2${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': SCIM_TYPE, accept: SCIM_TYPE },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`SCIM ${method} ${path}: ${response.status} ${text.slice(0, 300)}`);
  return JSON.parse(text) as Record<string, unknown>;
}

export async function pathsScenario(ctx: Context): Promise<ScenarioResult> {
  process.stdout.write('\nnew paths: an API key vs an access token on GET /api/organizations; SCIM list and patch vs bare Fastify\n');
  const apps: App[] = [];
  return withApps(apps, async () => {
    const connections = ctx.settings.connections;
    const server = await gatehouse(ctx, 'paths', { database: 'sqlite', strategy: 'jwt', env: PATHS_ENV });
    apps.push(server);
    const signedIn = await fetch(`${server.url}/api/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(server.store.admin) });
    const accessToken = String(((await signedIn.json()) as { token?: unknown }).token);

    // A personal key of the administrator (no ADMIN scope: the session endpoint needs none).
    const key = cli(server, ['api-keys', 'create', '--user', server.store.admin.email, '--name', 'bench']);
    const apiKey = String(key.secret);

    // An organization with a SCIM token and a directory of SCIM_USERS users, made through SCIM.
    const org = cli(server, ['orgs', 'create', '--name', 'Bench Directory', '--owner-email', server.store.admin.email]);
    const orgId = String((org.organization as { id?: unknown } | undefined)?.id ?? org.id);
    const scimIssued = cli(server, ['scim', 'tokens', 'create', '--org', orgId, '--name', 'bench']);
    const scimToken = String(scimIssued.token ?? scimIssued.secret);
    let lastUserId = '';
    for (let i = 0; i < SCIM_USERS; i++) {
      const user = await scim(server, scimToken, 'POST', '/Users', {
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
        userName: `scim-bench-${i}@example.com`,
        name: { givenName: `Given${i}`, familyName: `Family${i}` },
        emails: [{ value: `scim-bench-${i}@example.com`, primary: true }],
        active: true,
      });
      lastUserId = String(user.id);
    }
    const listPath = '/Users?startIndex=1&count=50';
    const listed = await scim(server, scimToken, 'GET', listPath);
    const patchBody = { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'replace', path: 'name.givenName', value: 'Patched' }] };
    const patched = await scim(server, scimToken, 'PATCH', `/Users/${lastUserId}`, patchBody);
    const bare = await startBare(ctx, { '/scim/v2/Users': listed, [`/scim/v2/Users/${lastUserId}`]: patched });
    apps.push(bare);

    const scimHeaders = { authorization: `Bearer ${scimToken}`, 'content-type': SCIM_TYPE, accept: SCIM_TYPE };
    const service = describeServer(server.options);
    const spec = (url: string, extra: Partial<LoadSpec> = {}): LoadSpec => ({ url, connections, ...extra });
    const subjects: NamedSubject[] = [
      { app: server, spec: spec(`${server.url}/api/organizations`, { headers: { authorization: `Bearer ${apiKey}` } }), name: 'api-key-check', label: 'API key, GET /api/organizations', server: service, isService: true },
      { app: server, spec: spec(`${server.url}/api/organizations`, { headers: { authorization: `Bearer ${accessToken}` } }), name: 'jwt-check', label: 'access token (jwt), the same route', server: service, isService: true },
      { app: server, spec: spec(`${server.url}/scim/v2${listPath}`, { headers: scimHeaders }), name: 'scim-list', label: `SCIM list, 50 of ${SCIM_USERS} users`, server: service, isService: true },
      { app: server, spec: spec(`${server.url}/scim/v2/Users/${lastUserId}`, { method: 'PATCH', headers: scimHeaders, body: JSON.stringify(patchBody) }), name: 'scim-patch', label: 'SCIM PATCH of one user', server: service, isService: true },
      { app: bare, spec: spec(`${bare.url}/scim/v2${listPath}`), name: 'bare-list', label: 'bare fastify, the SCIM list JSON', server: 'bare fastify', isService: false },
      { app: bare, spec: spec(`${bare.url}/scim/v2/Users/${lastUserId}`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify(patchBody) }), name: 'bare-patch', label: 'bare fastify, the SCIM PATCH JSON', server: 'bare fastify', isService: false },
    ];
    const runs = await measureRuns(ctx, subjects);
    const byName = (name: string) => runs.find((run) => run.name === name)!;
    compare([byName('api-key-check')], byName('jwt-check'));
    compare([byName('scim-list')], byName('bare-list'));
    compare([byName('scim-patch')], byName('bare-patch'));
    const apiKeyRun = byName('api-key-check');
    const targets: Target[] = [
      {
        id: 'paths:api-key',
        target: 'API-key check ≥ 0.8 × the jwt check on the same server and route (issue 38)',
        measured: `${apiKeyRun.requestsPerSecond} / ${byName('jwt-check').requestsPerSecond} req/s → ${apiKeyRun.ratio}; ${apiKeyRun.non2xx + apiKeyRun.errors + apiKeyRun.timeouts} failed`,
        met: (apiKeyRun.ratio ?? 0) >= 0.8 && apiKeyRun.non2xx + apiKeyRun.errors + apiKeyRun.timeouts === 0,
      },
      pathTarget('paths:scim-list', 'SCIM list users', byName('scim-list')),
      pathTarget('paths:scim-patch', 'SCIM PATCH a user', byName('scim-patch')),
    ];
    const notes = [
      'One server (SQLite, jwt strategy, 1 worker) answers every Gatehouse row, pinned to the server core; rows take turns round by round with their baselines. The per-key and per-SCIM-token rate limits are raised so the load measures the path, not the refusal.',
      `The key is a personal key of the bench administrator made with \`gatehouse api-keys create\`; the SCIM token one made with \`gatehouse scim tokens create\` for an organization whose directory of ${SCIM_USERS} users was provisioned through SCIM before the runs. The PATCH replaces the same user's given name each time (a real write and its audit event each time).`,
      'The other new paths of issue 38 item 6 are in their own scenarios: token exchange in oidc, magic-link verify in magic-link, import throughput against a hash-less bulk insert in import.',
    ];
    return result(ctx, 'paths', 'New paths: API-key check, SCIM list and patch (SQLite, jwt strategy, 1 worker)', runs, targets, { notes });
  });
}
