/**
 * The `gatehouse` command as an operator runs it: `node src/cli/main.ts ...` in a child process,
 * passwords piped on standard input, on every backend. Exit codes: 0 done, 1 failed, 2 bad usage.
 */
import { after, before, describe, it } from 'node:test';
import { setImmediate } from 'node:timers/promises';
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import assert from 'node:assert/strict';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { backends, type TestDatabase } from './helpers/databases.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { freePort, randomSecret, REPO_ROOT, runCli, startScriptNodeArgs, type ChildEnv, type RegisterCleanup, type RunResult } from './helpers/process.ts';
import { findOnPath } from '../src/storage/backup.ts';
import { CLI_SOURCE } from '../src/audit/audit.service.ts';
import { COMMANDS_WITH_START_FLAGS, reasonToRunAsStarted, restartArguments, START_NODE_FLAGS, unsupportedNodeMessage } from '../src/start.js';
import { findModuleCliGroups } from '../src/cli/main.ts';

const CLI_TIMEOUT_MS = 30_000;
const PASSWORD = 'quiet-meadow-copper-kettle-7';
const EMAIL = 'alice@example.test';

function assertNotEchoed(result: RunResult, ...secrets: string[]): void {
  for (const secret of secrets) {
    assert.ok(!result.stdout.includes(secret), 'the password is not printed on stdout');
    assert.ok(!result.stderr.includes(secret), 'the password is not printed on stderr');
  }
}

function describeRun(result: RunResult): string {
  return `exit ${result.code} (signal ${result.signal})\n--- stdout ---\n${result.stdout}\n--- stderr ---\n${result.stderr}`;
}

describe('gatehouse (no database)', () => {
  let dataDir: string;
  before(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-cli-'));
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  const env = (): ChildEnv => ({ NODE_ENV: 'development', LOG_LEVEL: 'info', AUTH_SECRET: randomSecret(), DATA_DIR: dataDir });

  it('help exits 0 and prints the usage', async (t) => {
    const result = await runCli(['help'], { env: env(), timeoutMs: CLI_TIMEOUT_MS, cleanup: (fn) => t.after(fn) });
    assert.equal(result.code, 0, describeRun(result));
    assert.match(result.stdout, /gatehouse/);
    assert.match(result.stdout, /users create/);
  });

  it('an unknown command exits 2 with a short answer, suggesting the command meant', async (t) => {
    const result = await runCli(['frobnicate'], { env: env(), timeoutMs: CLI_TIMEOUT_MS, cleanup: (fn) => t.after(fn) });
    assert.equal(result.code, 2, describeRun(result));
    assert.equal(result.stderr, 'gatehouse: unknown command "frobnicate"\nRun "gatehouse help" for every command.\n');
    const typo = await runCli(['user', 'list'], { env: env(), timeoutMs: CLI_TIMEOUT_MS, cleanup: (fn) => t.after(fn) });
    assert.equal(typo.code, 2);
    assert.equal(typo.stderr.split('\n')[0], 'gatehouse: unknown command "user" (did you mean "users"?)');
    assert.ok(typo.stderr.split('\n').length <= 3, 'not every command\'s usage');
    const sub = await runCli(['clients', 'lst'], { env: env(), timeoutMs: CLI_TIMEOUT_MS, cleanup: (fn) => t.after(fn) });
    assert.match(sub.stderr, /unknown clients command "lst" \(did you mean "list"\?\)/);
  });

  it('--version and -v print the version from package.json; help COMMAND prints that command', async (t) => {
    const { version } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-v']) {
      const result = await runCli([flag], { env: env(), timeoutMs: CLI_TIMEOUT_MS, cleanup: (fn) => t.after(fn) });
      assert.equal(result.code, 0, describeRun(result));
      assert.equal(result.stdout, `gatehouse ${version}\n`);
    }
    const users = await runCli(['help', 'users'], { env: env(), timeoutMs: CLI_TIMEOUT_MS, cleanup: (fn) => t.after(fn) });
    assert.equal(users.code, 0, describeRun(users));
    assert.match(users.stdout, /users create/);
    assert.doesNotMatch(users.stdout, /webhooks/);
    const help = await runCli(['keys', 'list', '--help'], { env: env(), timeoutMs: CLI_TIMEOUT_MS, cleanup: (fn) => t.after(fn) });
    assert.equal(help.code, 0, describeRun(help));
    assert.match(help.stdout, /keys list \[--json\]/);
  });

  it("the package's bin (src/cli/gatehouse.js) runs the same command and passes its exit code on", async () => {
    const { bin, version } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { bin: { gatehouse: string }; version: string };
    const run = (...args: string[]) => spawnSync(process.execPath, [join(REPO_ROOT, bin.gatehouse), ...args], { env: { ...process.env, ...env() }, encoding: 'utf8', timeout: CLI_TIMEOUT_MS });
    const shown = run('--version');
    assert.equal(shown.status, 0, shown.stderr);
    assert.equal(shown.stdout, `gatehouse ${version}\n`);
    const wrong = run('frobnicate');
    assert.equal(wrong.status, 2);
    assert.match(wrong.stderr, /frobnicate/);
  });

  it("runs an import with npm start's Node.js flag, in place; one given a descriptor of its parent's as it was started", (t) => {
    if (process.platform !== 'linux') {
      t.skip('the restart reads /proc/self/fd: Linux only');
      return;
    }
    const { bin } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { bin: { gatehouse: string } };
    const scratch = mkdtempSync(join(tmpdir(), 'gatehouse-restart-'));
    try {
      const file = join(scratch, 'users.ndjson');
      writeFileSync(file, `${JSON.stringify({ email: 'restarted@example.com', name: 'Restarted' })}\n`);
      // A preload that records each start of the program: the pid and its flags.
      const record = join(scratch, 'starts.jsonl');
      const preload = join(scratch, 'record-start.mjs');
      writeFileSync(preload, `import { appendFileSync } from 'node:fs'; appendFileSync(${JSON.stringify(record)}, JSON.stringify({ pid: process.pid, flags: process.execArgv.filter((flag) => flag.startsWith('--max')) }) + '\\n');`);
      const starts = () => readFileSync(record, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { pid: number; flags: string[] });
      const store = { ...process.env, ...env(), DATA_DIR: scratch };

      const imported = spawnSync(process.execPath, ['--import', preload, join(REPO_ROOT, bin.gatehouse), 'import', '--from', 'json', file], { env: store, encoding: 'utf8', timeout: CLI_TIMEOUT_MS });
      assert.equal(imported.status, 0, imported.stderr);
      assert.match(imported.stdout + imported.stderr, /imported 1 new/);
      const [first, second, ...more] = starts();
      assert.deepEqual(more, []);
      assert.deepEqual(first?.flags, []);
      assert.deepEqual(second, { pid: first?.pid, flags: [...START_NODE_FLAGS] }, 'started again, as the same process, with the flag');

      // The same file as descriptor 3 (`3< users.ndjson`): Node closes 3-16 on exec, so no restart.
      rmSync(record);
      const descriptor = openSync(file, 'r');
      try {
        const fromDescriptor = spawnSync(process.execPath, ['--import', preload, join(REPO_ROOT, bin.gatehouse), 'import', '--from', 'json', '/dev/fd/3', '--on-conflict', 'update'], {
          env: store,
          stdio: ['ignore', 'pipe', 'pipe', descriptor],
          encoding: 'utf8',
          timeout: CLI_TIMEOUT_MS,
        });
        assert.equal(fromDescriptor.status, 0, fromDescriptor.stderr);
        assert.match(fromDescriptor.stdout + fromDescriptor.stderr, /1 updated/);
      } finally {
        closeSync(descriptor);
      }
      assert.equal(starts().length, 1, 'run as started');

      // A failed import passes its exit code on through the restart.
      const missing = spawnSync(process.execPath, [join(REPO_ROOT, bin.gatehouse), 'import', '--from', 'json', join(scratch, 'none.ndjson')], { env: store, encoding: 'utf8', timeout: CLI_TIMEOUT_MS });
      assert.equal(missing.status, 1, missing.stderr);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it("runs with npm start's Node.js flags: added when missing, an operator's own value kept", () => {
    assert.deepEqual(startScriptNodeArgs(), [...START_NODE_FLAGS], "package.json's start script and the bin's restart use the same flags");
    const argv = ['/usr/bin/node', '/srv/gatehouse/src/cli/gatehouse.js', 'import', '--from', 'json', 'users.ndjson'];
    assert.deepEqual(restartArguments(argv, ['--enable-source-maps'], {}), ['/usr/bin/node', ...START_NODE_FLAGS, '--enable-source-maps', ...argv.slice(1)]);
    assert.equal(restartArguments(argv, ['--max-semi-space-size=32'], {}), null);
    assert.equal(restartArguments(argv, ['--max_semi_space_size=4'], {}), null);
    assert.equal(restartArguments(argv, [], { NODE_OPTIONS: '--enable-source-maps  --max-semi-space-size=16' }), null);
    assert.equal(restartArguments(argv, [], { NODE_OPTIONS: '"--max-semi-space-size=16"' }), null, 'quoted, as NODE_OPTIONS allows');
  });

  it('replaces the process only where nothing it holds would be lost', () => {
    const own = new Map([
      [0, '/dev/null'],
      [1, 'pipe:[10]'],
      [2, 'pipe:[11]'],
      [3, 'anon_inode:[eventpoll]'],
      [4, 'anon_inode:[io_uring]'],
      [5, 'pipe:[20]'],
      [6, 'pipe:[20]'],
      [7, 'anon_inode:[eventfd]'],
      [63, '/tmp/from-a-shell (a descriptor past 16 survives the exec)'],
    ]);
    const proc = { execve: () => undefined as never, channel: undefined, permission: undefined, execArgv: [], env: {}, execPath: process.execPath };
    assert.equal(reasonToRunAsStarted(proc, () => own), null);
    assert.match(reasonToRunAsStarted(proc, () => new Map([...own, [8, '/srv/users.ndjson']])) ?? '', /descriptor 8 was inherited/);
    assert.match(reasonToRunAsStarted(proc, () => new Map([...own, [9, 'pipe:[30]']])) ?? '', /descriptor 9/, "one end of a parent's pipe");
    assert.match(reasonToRunAsStarted(proc, () => new Map([...own, [3, 'socket:[40]']])) ?? '', /descriptor 3/, "systemd's socket");
    assert.match(reasonToRunAsStarted(proc, () => null) ?? '', /cannot be read/);
    assert.match(reasonToRunAsStarted({ ...proc, execve: undefined }, () => own) ?? '', /Windows/);
    assert.match(reasonToRunAsStarted({ ...proc, channel: {} as NodeJS.Process['channel'] }, () => own) ?? '', /IPC/);
    assert.match(reasonToRunAsStarted({ ...proc, env: { NODE_OPTIONS: '--inspect=9229' } }, () => own) ?? '', /debugger/);
    assert.match(reasonToRunAsStarted({ ...proc, execPath: '/nonexistent/node' }, () => own) ?? '', /binary is gone/);
  });

  it('runs the server and the commands over large inputs with the flag, and they are commands', async () => {
    const names = new Set(['serve', ...(await findModuleCliGroups()).map((group) => group.name)]);
    assert.deepEqual(COMMANDS_WITH_START_FLAGS.filter((name) => !names.has(name)), []);
  });

  it('regression (issue 30.9): on an older Node.js, the bin and npm start say which Node.js they need', async (t) => {
    assert.equal(unsupportedNodeMessage(process.version, 'npx gatehouse'), null, 'the Node.js the tests run on is supported');
    assert.equal(unsupportedNodeMessage('v24.0.0', 'npx gatehouse'), null);
    assert.match(unsupportedNodeMessage('v20.20.2', 'npx gatehouse') ?? '', /Node\.js 24 or later; this is Node\.js v20\.20\.2\.[\s\S]*`npx gatehouse`/);
    assert.match(unsupportedNodeMessage('v22.18.0', 'npm start') ?? '', /`npm start`/);
    // The machine's own Node.js, outside node_modules (these machines have Node 20 there).
    const systemPath = (process.env.PATH ?? '').split(':').filter((directory) => !directory.includes('node_modules')).join(':');
    const systemNode = findOnPath('node', systemPath);
    const systemVersion = systemNode === null ? null : spawnSync(systemNode, ['--version'], { encoding: 'utf8' }).stdout.trim();
    if (systemNode === null || systemVersion === null || unsupportedNodeMessage(systemVersion, '') === null) {
      t.skip('no Node.js older than 24 on this machine outside node_modules');
      return;
    }
    for (const [entry, command] of [['src/cli/gatehouse.js', 'npx gatehouse'], ['src/start.js', 'npm start']] as const) {
      const refused: SpawnSyncReturns<string> = spawnSync(systemNode, [join(REPO_ROOT, entry), '--version'], { env: { ...process.env, ...env() }, encoding: 'utf8', timeout: CLI_TIMEOUT_MS });
      assert.equal(refused.status, 1, refused.stderr);
      assert.equal(refused.stdout, '');
      assert.equal(refused.stderr, unsupportedNodeMessage(systemVersion, command), `${entry} names the Node.js it needs and how to run it`);
      assert.doesNotMatch(refused.stderr, /TypeError|at file:/, 'no stack trace');
    }
  });

  it('refuses a bad option with exit 2, naming it; only a command that reads a password mentions standard input', async (t) => {
    const cases: Array<[string[], RegExp]> = [
      [['users', 'list', '--frobnicate'], /users list: unknown option --frobnicate; its options: --query, --json/],
      [['keys', 'rotate', '--now'], /keys rotate: unknown option --now; this command takes no options/],
      [['keys', 'list', '--json=yes'], /keys list: --json takes no value/],
      [['users', 'roles', '--email'], /users roles: --email needs a value/],
      [['migrate', '--status'], /unknown option --status; the status is `gatehouse migrate status`/],
      [['migrate', 'status', '--verbose'], /migrate status: unknown option --verbose/],
      [['migrate', 'sideways'], /migrate: unexpected argument/],
      [['serve', '--port', '8080'], /serve: unknown option --port/],
      [['doctor', '--fix'], /doctor: unknown option --fix/],
      [['backup'], /backup: name exactly one backup file/],
      [['restore', 'a.db', '--force-it'], /restore: unknown option --force-it/],
      [['orgs', 'list', '--jsn'], /orgs list: unknown option --jsn \(did you mean "--json"\?\); its options: --json/],
      [['webhooks', 'deliveries', 'abc', '--limit'], /webhooks deliveries: --limit needs a value/],
      [['clients', 'show', 'abc', '--secret'], /clients show: unknown option --secret/],
    ];
    for (const [args, message] of cases) {
      const result = await runCli(args, { env: env(), timeoutMs: CLI_TIMEOUT_MS, cleanup: (fn) => t.after(fn) });
      assert.equal(result.code, 2, `${args.join(' ')}\n${describeRun(result)}`);
      assert.match(result.stderr, message, args.join(' '));
      assert.doesNotMatch(result.stderr, /standard input/, `${args.join(' ')} reads no password`);
    }
    const secret = 'a-password-on-the-command-line';
    const password = await runCli(['users', 'create', '--email', 'x@example.test', '--name', 'X', `--password=${secret}`], { env: env(), timeoutMs: CLI_TIMEOUT_MS, cleanup: (fn) => t.after(fn) });
    assert.equal(password.code, 2, describeRun(password));
    assert.match(password.stderr, /users create: unknown option --password \(passwords are read from standard input only: --password-stdin\)/);
    assertNotEchoed(password, secret);
  });

  it('migrate down is refused (exit 2): migrations are forward-only, restore a backup instead', async (t) => {
    for (const word of ['down', 'rollback']) {
      const result = await runCli(['migrate', word], { env: env(), timeoutMs: CLI_TIMEOUT_MS, cleanup: (fn) => t.after(fn) });
      assert.equal(result.code, 2, describeRun(result));
      assert.match(result.stderr, /forward-only/);
      assert.match(result.stderr, /gatehouse restore FILE --yes/);
    }
  });

  it('doctor names an unreachable database and Redis (exit 1), and never prints their passwords', async (t) => {
    const [databasePort, redisPort] = [await freePort(), await freePort()];
    const dbPassword = 'db-Pa55word-never-shown';
    const redisPassword = 'redis-Pa55word-never-shown';
    const unreachable = {
      ...env(),
      DATABASE_URL: `postgres://gatehouse:${dbPassword}@127.0.0.1:${databasePort}/gatehouse`,
      REDIS_URL: `redis://:${redisPassword}@127.0.0.1:${redisPort}/0`,
    };
    const result = await runCli(['doctor'], { env: unreachable, timeoutMs: CLI_TIMEOUT_MS, cleanup: (fn) => t.after(fn) });
    assert.equal(result.code, 1, describeRun(result));
    assert.match(result.stdout, /^config +ok/m);
    assert.match(result.stdout, new RegExp(`^storage +FAIL: PostgreSQL gatehouse@127\\.0\\.0\\.1:${databasePort}/gatehouse is unreachable: .*ECONNREFUSED`, 'm'));
    assert.match(result.stdout, /^migrations +skipped/m);
    assert.match(result.stdout, new RegExp(`^redis +FAIL: 127\\.0\\.0\\.1:${redisPort} is unreachable: .*ECONNREFUSED`, 'm'));
    assert.match(result.stdout, /^2 checks failed\.$/m);
    assertNotEchoed(result, dbPassword, redisPassword);

    const json = await runCli(['doctor', '--json'], { env: unreachable, timeoutMs: CLI_TIMEOUT_MS, cleanup: (fn) => t.after(fn) });
    assert.equal(json.code, 1, describeRun(json));
    const report = JSON.parse(json.stdout) as { ok: boolean; checks: Array<{ name: string; status: string; detail: string }> };
    assert.equal(report.ok, false);
    assert.deepEqual(
      report.checks.filter((check) => check.status === 'fail').map((check) => check.name),
      ['storage', 'redis'],
    );
    assertNotEchoed(json, dbPassword, redisPassword);
  });
});

const allBackends = await backends();

for (const backend of allBackends) {
  describe(`gatehouse CLI (${backend.name})`, { skip: backend.skip }, () => {
    const authSecret = randomSecret();
    let database: TestDatabase;
    let dataDir: string;
    let env: ChildEnv;
    let inspector: TestApp | undefined;

    before(async () => {
      database = await backend.create();
      dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-cli-'));
      env = { NODE_ENV: 'development', LOG_LEVEL: 'info', AUTH_SECRET: authSecret, DATA_DIR: dataDir, DATABASE_URL: database.url };
    });

    after(async () => {
      await inspector?.close();
      rmSync(dataDir, { recursive: true, force: true });
      await database.drop();
    });

    /** The real app on the same database and secret, to check what the CLI wrote. */
    async function app(): Promise<TestApp> {
      inspector ??= await createTestApp(database, { env: { AUTH_SECRET: authSecret } });
      return inspector;
    }

    function cli(args: readonly string[], cleanup: RegisterCleanup, stdin?: string): Promise<RunResult> {
      return runCli(args, { env, timeoutMs: CLI_TIMEOUT_MS, cleanup, ...(stdin !== undefined && { stdin }) });
    }

    it('migrate status lists every migration pending; migrate applies them, then reports the database up to date and status says when each was applied', async (t) => {
      const before = await cli(['migrate', 'status', '--json'], (fn) => t.after(fn));
      assert.equal(before.code, 0, describeRun(before));
      const pending = JSON.parse(before.stdout) as { applied: number; pending: number; migrations: Array<{ name: string; status: string; appliedAt: string | null }> };
      assert.equal(pending.applied, 0);
      assert.ok(pending.pending > 0);
      assert.ok(pending.migrations.every((m) => m.status === 'pending' && m.appliedAt === null));
      assert.ok(pending.migrations.some((m) => m.name === '0001-initial'));

      const first = await cli(['migrate'], (fn) => t.after(fn));
      assert.equal(first.code, 0, describeRun(first));
      assert.doesNotMatch(first.stdout, /up to date/i, 'the first run applied something');
      const second = await cli(['migrate'], (fn) => t.after(fn));
      assert.equal(second.code, 0, describeRun(second));
      assert.match(second.stdout, /up to date/i);

      const after = await cli(['migrate', 'status', '--json'], (fn) => t.after(fn));
      assert.equal(after.code, 0, describeRun(after));
      const applied = JSON.parse(after.stdout) as typeof pending;
      assert.deepEqual([applied.applied, applied.pending], [pending.pending, 0]);
      assert.deepEqual(applied.migrations.map((m) => m.name), pending.migrations.map((m) => m.name));
      for (const migration of applied.migrations) {
        assert.equal(migration.status, 'applied');
        assert.ok(migration.appliedAt !== null && !Number.isNaN(Date.parse(migration.appliedAt)), migration.name);
      }
      const text = await cli(['migrate', 'status'], (fn) => t.after(fn));
      assert.equal(text.code, 0, describeRun(text));
      assert.match(text.stdout, /^0001-initial +applied \d{4}-\d\d-\d\dT/m);
      assert.match(text.stdout, new RegExp(`^${pending.pending} applied, 0 pending$`, 'm'));
    });

    it('keys rotate adds a key that the JWKS publishes at once; keys list shows both', async (t) => {
      const jwks = async () => ((await (await app()).app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json().keys as Array<{ kid: string }>).map((k) => k.kid);
      await (await app()).services.keys.reload();
      const before = await jwks();
      const rotated = await cli(['keys', 'rotate'], (fn) => t.after(fn));
      assert.equal(rotated.code, 0, describeRun(rotated));
      const kid = /New signing key (\S+) \(EdDSA\): published now, signing from \S+\./.exec(rotated.stdout)?.[1];
      const rsaKid = /New signing key (\S+) \(RS256\): published now, signing from \S+\./.exec(rotated.stdout)?.[1];
      assert.ok(kid && rsaKid, rotated.stdout);
      await (await app()).services.keys.reload();
      assert.deepEqual(new Set(await jwks()), new Set([...before, kid, rsaKid]));
      const listed = await cli(['keys', 'list'], (fn) => t.after(fn));
      assert.equal(listed.code, 0, describeRun(listed));
      assert.match(listed.stdout, new RegExp(`^${kid}  EdDSA  created \\S+  in service$`, 'm'));
      assert.match(listed.stdout, new RegExp(`^${rsaKid}  RS256  created \\S+  in service$`, 'm'));
      assert.match(listed.stdout, /retiring \S+$/m);
      const wrong = await cli(['keys', 'shred'], (fn) => t.after(fn));
      assert.equal(wrong.code, 2);
    });

    it('users create reads the password from stdin, and the user can sign in with it', async (t) => {
      const result = await cli(
        ['users', 'create', '--email', EMAIL, '--name', 'Alice Example', '--role', 'ADMIN', '--password-stdin'],
        (fn) => t.after(fn),
        `${PASSWORD}\n`,
      );
      assert.equal(result.code, 0, describeRun(result));
      assert.ok(result.stdout.includes(EMAIL), `prints the created user:\n${result.stdout}`);
      assertNotEchoed(result, PASSWORD);

      const { app: fastify, services } = await app();
      const user = await services.users.findUserByEmail(EMAIL);
      assert.ok(user, 'the user is stored');
      assert.ok(result.stdout.includes(user.id), 'prints the new user id');
      assert.equal(user.name, 'Alice Example');
      assert.deepEqual(user.roles, ['ADMIN']);

      const signIn = await fastify.inject({ method: 'POST', url: '/api/auth', payload: { email: EMAIL, password: PASSWORD } });
      assert.equal(signIn.statusCode, 200, signIn.body);
      const body = signIn.json<{ token: string; user: { id: string; email: string } }>();
      assert.equal(body.user.id, user.id);
      assert.equal(body.user.email, EMAIL);
      assert.deepEqual(decodeJwt(body.token).roles, ['ADMIN']);

      // The trailing newline was not part of the password.
      const withNewline = await fastify.inject({ method: 'POST', url: '/api/auth', payload: { email: EMAIL, password: `${PASSWORD}\n` } });
      assert.equal(withNewline.statusCode, 401);
    });

    it('refuses a duplicate e-mail, however it is cased or padded, with exit 1', async (t) => {
      const result = await cli(
        ['users', 'create', '--email', `  ${EMAIL.toUpperCase()} `, '--name', 'Alice Again', '--password-stdin'],
        (fn) => t.after(fn),
        'another-long-passphrase-9',
      );
      assert.equal(result.code, 1, describeRun(result));
      assert.match(result.stderr, /already exists/);
      assertNotEchoed(result, 'another-long-passphrase-9');
      assert.equal(await (await app()).services.users.countUsers(), 1);
    });

    for (const [why, weak] of [
      ['too short', 'short-pw'],
      ['too short and common', 'password123'],
      ['common', 'password1234'],
    ] as const) {
      it(`refuses a weak password (${why}) with exit 1 and a message about the password`, async (t) => {
        const email = `weak-${weak}@example.test`;
        const result = await cli(['users', 'create', '--email', email, '--name', 'Weak', '--password-stdin'], (fn) => t.after(fn), weak);
        assert.equal(result.code, 1, describeRun(result));
        assert.match(result.stderr, /password/i);
        assertNotEchoed(result, weak);
        assert.equal(await (await app()).services.users.findUserByEmail(email), null, 'no user was created');
      });
    }

    it('refuses to create a user without --password-stdin (exit 2)', async (t) => {
      const email = 'no-stdin@example.test';
      const result = await cli(['users', 'create', '--email', email, '--name', 'No Stdin'], (fn) => t.after(fn), PASSWORD);
      assert.equal(result.code, 2, describeRun(result));
      assert.match(result.stderr, /--password-stdin/);
      assertNotEchoed(result, PASSWORD);
      assert.equal(await (await app()).services.users.findUserByEmail(email), null);
    });

    it('refuses a password given as an argument (unknown option, exit 2) without echoing it', async (t) => {
      const email = 'argv@example.test';
      for (const args of [
        ['--password', PASSWORD],
        [`--password=${PASSWORD}`],
      ]) {
        const result = await cli(['users', 'create', '--email', email, '--name', 'Argv', ...args, '--password-stdin'], (fn) => t.after(fn), PASSWORD);
        assert.equal(result.code, 2, describeRun(result));
        assert.match(result.stderr, /--password\b/);
        assertNotEchoed(result, PASSWORD);
      }
      assert.equal(await (await app()).services.users.findUserByEmail(email), null);
    });

    it('refuses an empty password on stdin (exit 1)', async (t) => {
      const email = 'empty@example.test';
      const result = await cli(['users', 'create', '--email', email, '--name', 'Empty', '--password-stdin'], (fn) => t.after(fn), '');
      assert.equal(result.code, 1, describeRun(result));
      assert.equal(await (await app()).services.users.findUserByEmail(email), null);
    });

    it('records the user it created in the audit log, as done at the command line', async () => {
      const { services } = await app();
      const user = (await services.users.findUserByEmail(EMAIL))!;
      const [event] = (await services.audit.listEvents({ userId: user.id, type: 'user.created', limit: 10 })).events;
      assert.ok(event, 'user.created recorded');
      assert.equal(event.actorUserId, null);
      assert.deepEqual(event.details, { roles: ['ADMIN'], signIn: 'password', via: 'cli' });
    });

    it('users roles adds and removes roles (repeatable flags) and records the change', async (t) => {
      const result = await cli(['users', 'roles', '--email', EMAIL.toUpperCase(), '--add', 'editor', '--add', 'VIEWER', '--remove', 'ADMIN'], (fn) => t.after(fn));
      assert.equal(result.code, 0, describeRun(result));
      assert.match(result.stdout, /EDITOR, VIEWER/);
      const { services } = await app();
      const user = (await services.users.findUserByEmail(EMAIL))!;
      assert.deepEqual(user.roles, ['EDITOR', 'VIEWER']);
      const [event] = (await services.audit.listEvents({ userId: user.id, type: 'user.roles_changed', limit: 10 })).events;
      assert.equal(event?.actorUserId, null);
      assert.deepEqual(event?.details, { before: ['ADMIN'], after: ['EDITOR', 'VIEWER'], via: 'cli' });

      const back = await cli(['users', 'roles', '--email', EMAIL, '--add', 'ADMIN', '--remove', 'VIEWER'], (fn) => t.after(fn));
      assert.equal(back.code, 0, describeRun(back));
      assert.deepEqual((await services.users.findUserByEmail(EMAIL))!.roles, ['ADMIN', 'EDITOR']);
    });

    it('users roles, disable and enable: exit 2 for a wrong command line, 1 for an unknown user', async (t) => {
      for (const args of [
        ['users', 'roles', '--email', EMAIL],
        ['users', 'roles', '--email', EMAIL, '--add', 'not a role'],
        ['users', 'roles', '--email', EMAIL, '--add', 'X', '--remove', 'X'],
        ['users', 'disable'],
        ['users', 'enable', '--email', 'not-an-address'],
        ['users', 'list', '--frobnicate'],
      ]) {
        const result = await cli(args, (fn) => t.after(fn));
        assert.equal(result.code, 2, `${args.join(' ')}\n${describeRun(result)}`);
      }
      for (const command of ['disable', 'enable']) {
        const result = await cli(['users', command, '--email', 'nobody@example.test'], (fn) => t.after(fn));
        assert.equal(result.code, 1, describeRun(result));
        assert.match(result.stderr, /no user/);
      }
      const roles = await cli(['users', 'roles', '--email', 'nobody@example.test', '--add', 'EDITOR'], (fn) => t.after(fn));
      assert.equal(roles.code, 1, describeRun(roles));
    });

    it('users disable ends the user’s sessions at once and refuses sign-in; users enable lets them back', async (t) => {
      const { app: fastify, services } = await app();
      const signIn = () => fastify.inject({ method: 'POST', url: '/api/auth', payload: { email: EMAIL, password: PASSWORD } });
      const { token } = (await signIn()).json();
      const session = () => fastify.inject({ method: 'GET', url: '/api/auth/session', headers: { authorization: `Bearer ${token}` } });
      assert.equal((await session()).statusCode, 200);
      const user = (await services.users.findUserByEmail(EMAIL))!;
      const active = (await services.sessions.listSessions(user.id)).length;
      assert.ok(active >= 1);

      const disabled = await cli(['users', 'disable', '--email', EMAIL], (fn) => t.after(fn));
      assert.equal(disabled.code, 0, describeRun(disabled));
      assert.equal(disabled.stdout, `Disabled ${EMAIL}; ended ${active} session${active === 1 ? '' : 's'}\n`);
      assert.equal((await session()).statusCode, 401, 'the session ended');
      const refused = await signIn();
      assert.equal(refused.statusCode, 403);
      assert.equal(refused.json().error, 'ACCOUNT_DISABLED');

      const again = await cli(['users', 'disable', '--email', EMAIL], (fn) => t.after(fn));
      assert.equal(again.code, 0, describeRun(again));
      assert.match(again.stdout, /already disabled/);

      const enabled = await cli(['users', 'enable', '--email', EMAIL], (fn) => t.after(fn));
      assert.equal(enabled.code, 0, describeRun(enabled));
      assert.equal((await signIn()).statusCode, 200);

      const events = (await services.audit.listEvents({ userId: user.id, limit: 50 })).events;
      for (const type of ['user.disabled', 'user.sessions_ended', 'user.enabled']) {
        const event = events.find((e) => e.type === type);
        assert.ok(event, type);
        assert.equal(event.actorUserId, null);
        assert.equal(event.details?.via, 'cli');
      }
      assert.equal(events.find((e) => e.type === 'user.sessions_ended')!.reason, 'ACCOUNT_DISABLED');
    });

    it('users list prints a table, filtered by --query', async (t) => {
      const all = await cli(['users', 'list'], (fn) => t.after(fn));
      assert.equal(all.code, 0, describeRun(all));
      const lines = all.stdout.trimEnd().split('\n');
      assert.match(lines[0]!, /^ID\s+EMAIL\s+NAME\s+ROLES\s+STATUS\s+CREATED/);
      const row = lines.find((line) => line.includes(EMAIL));
      assert.ok(row, all.stdout);
      assert.match(row, /Alice Example\s+ADMIN,EDITOR\s+active/);
      assert.match(lines.at(-1)!, /^1 user$/);

      const found = await cli(['users', 'list', '--query', 'ALICE'], (fn) => t.after(fn));
      assert.equal(found.code, 0, describeRun(found));
      assert.ok(found.stdout.includes(EMAIL));
      const none = await cli(['users', 'list', '--query', 'nobody-matches'], (fn) => t.after(fn));
      assert.equal(none.code, 0, describeRun(none));
      assert.equal(none.stdout, 'No users.\n');
    });

    it('users list --json and keys list --json print stable JSON, without secrets', async (t) => {
      const users = await cli(['users', 'list', '--json'], (fn) => t.after(fn));
      assert.equal(users.code, 0, describeRun(users));
      const { users: list } = JSON.parse(users.stdout) as { users: Array<Record<string, unknown>> };
      const alice = list.find((user) => user.email === EMAIL);
      assert.ok(alice, users.stdout);
      assert.deepEqual(Object.keys(alice), ['id', 'email', 'name', 'roles', 'emailVerified', 'disabled', 'createdAt', 'updatedAt']);
      assert.deepEqual([alice.name, alice.roles, alice.disabled], ['Alice Example', ['ADMIN', 'EDITOR'], false]);
      assert.doesNotMatch(users.stdout, /hash|argon2/i);
      const none = await cli(['users', 'list', '--query', 'nobody-matches', '--json'], (fn) => t.after(fn));
      assert.equal(none.stdout, '{"users":[]}\n');

      const keys = await cli(['keys', 'list', '--json'], (fn) => t.after(fn));
      assert.equal(keys.code, 0, describeRun(keys));
      const { keys: listed } = JSON.parse(keys.stdout) as { keys: Array<Record<string, unknown>> };
      assert.ok(listed.length >= 4, keys.stdout);
      for (const key of listed) {
        assert.deepEqual(Object.keys(key), ['kid', 'algorithm', 'createdAt', 'state', 'retiredAt']);
        assert.ok(['in service', 'retiring', 'retired'].includes(key.state as string), keys.stdout);
        assert.equal(key.retiredAt === null, key.state === 'in service');
      }
      assert.deepEqual(new Set(listed.filter((key) => key.state === 'in service').map((key) => key.algorithm)), new Set(['EdDSA', 'RS256']));
    });

    it('doctor passes on a healthy setup, one line per check', async (t) => {
      const result = await cli(['doctor'], (fn) => t.after(fn));
      assert.equal(result.code, 0, describeRun(result));
      for (const check of ['config', 'storage', 'migrations', 'signing keys']) assert.match(result.stdout, new RegExp(`^${check} +ok`, 'm'));
      for (const check of ['smtp', 'redis', 'oauth']) assert.match(result.stdout, new RegExp(`^${check} +skipped: `, 'm'));
      assert.match(result.stdout, /^All checks passed\.$/m);
      assert.ok(!result.stdout.includes(authSecret) && !result.stderr.includes(authSecret));
      const json = await cli(['doctor', '--json'], (fn) => t.after(fn));
      assert.equal(json.code, 0, describeRun(json));
      assert.equal((JSON.parse(json.stdout) as { ok: boolean }).ok, true);
    });

    const canDump = backend.name === 'sqlite' || (findOnPath('pg_dump') !== null && findOnPath('pg_restore') !== null);

    it('backup copies the live database while it is being written; restore puts it in place elsewhere with the data', { skip: canDump ? false : 'pg_dump or pg_restore is not on PATH' }, async (t) => {
      const { services } = await app();
      const alice = (await services.users.findUserByEmail(EMAIL))!;
      const countEvents = async () => Number((await services.storage.db.selectFrom('audit_events').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
      const file = join(dataDir, backend.name === 'sqlite' ? 'backup.db' : 'backup.dump');
      // Writes go on, one after another, for as long as the backup runs.
      let writing = true;
      let written = 0;
      const writer = (async () => {
        while (writing) {
          await services.audit.record({ type: 'user.created', userId: alice.id, source: CLI_SOURCE, details: { roles: [], signIn: 'password' } });
          written++;
          // SQLite answers synchronously: without a turn of the event loop the child's exit would never be heard.
          await setImmediate();
        }
      })();
      const atStart = await countEvents();
      const backedUp = await cli(['backup', file], (fn) => t.after(fn));
      writing = false;
      await writer;
      const atEnd = await countEvents();
      assert.equal(backedUp.code, 0, describeRun(backedUp));
      assert.ok(written > 0, 'writes happened while the backup ran');
      assert.ok(backedUp.stdout.startsWith('Backed up ') && backedUp.stdout.includes(` to ${file} (`), backedUp.stdout);
      assert.ok(statSync(file).size > 0);

      const again = await cli(['backup', file], (fn) => t.after(fn));
      assert.equal(again.code, 1, describeRun(again));
      assert.match(again.stderr, /exists: choose another name, or add --force/);

      // Restored into another database: a fresh DATA_DIR (SQLite) or a fresh database (PostgreSQL).
      const restoredDir = mkdtempSync(join(tmpdir(), 'gatehouse-cli-restored-'));
      t.after(() => rmSync(restoredDir, { recursive: true, force: true }));
      let target: TestDatabase | undefined;
      if (backend.name === 'postgres') {
        target = await backend.create();
        t.after(() => target!.drop());
      }
      const restoredEnv: ChildEnv = { ...env, DATA_DIR: restoredDir, DATABASE_URL: target?.url };
      const run = (args: string[]) => runCli(args, { env: restoredEnv, timeoutMs: CLI_TIMEOUT_MS, cleanup: (fn) => t.after(fn) });
      const restored = await run(backend.name === 'sqlite' ? ['restore', file] : ['restore', file, '--yes']);
      assert.equal(restored.code, 0, describeRun(restored));
      assert.match(restored.stdout, /^Restored /m);
      assert.match(restored.stdout, /up to date/);
      if (backend.name === 'sqlite') assert.ok(existsSync(join(restoredDir, 'gatehouse.db')));

      const users = await run(['users', 'list', '--json']);
      assert.equal(users.code, 0, describeRun(users));
      assert.ok((JSON.parse(users.stdout) as { users: Array<{ email: string }> }).users.some((user) => user.email === EMAIL), users.stdout);
      const doctor = await run(['doctor', '--json']);
      assert.equal(doctor.code, 0, describeRun(doctor));
      // A consistent snapshot from one moment of the run: every event before it, none after it.
      const restoredApp = await createTestApp(target ?? { config: { kind: 'sqlite', path: join(restoredDir, 'gatehouse.db') }, url: `sqlite:${join(restoredDir, 'gatehouse.db')}`, drop: async () => {} }, { env: { AUTH_SECRET: authSecret } });
      try {
        const events = Number((await restoredApp.services.storage.db.selectFrom('audit_events').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
        assert.ok(events >= atStart && events <= atEnd, `${atStart} <= ${events} <= ${atEnd}`);
      } finally {
        await restoredApp.close();
      }

      // Restoring over the database in use: confirmation needed, and (SQLite) refused while it is open.
      const unconfirmed = await cli(['restore', file], (fn) => t.after(fn));
      assert.equal(unconfirmed.code, 2, describeRun(unconfirmed));
      assert.match(unconfirmed.stderr, /add --yes/);
      if (backend.name === 'sqlite') {
        const inUse = await cli(['restore', file, '--yes'], (fn) => t.after(fn));
        assert.equal(inUse.code, 1, describeRun(inUse));
        assert.match(inUse.stderr, /is in use \(is the server running\?\)/);
      } else {
        await countEvents(); // the app's pool holds a connection to this database
        const busy = await cli(['restore', file, '--yes'], (fn) => t.after(fn));
        assert.equal(busy.code, 1, describeRun(busy));
        assert.match(busy.stderr, /other sessions? (is|are) connected/);
      }
    });

    if (backend.name === 'postgres') {
      it('backup and restore without pg_dump / pg_restore on PATH exit 1 and say what to do', async (t) => {
        const noTools = { ...env, PATH: '/nonexistent' };
        for (const [args, tool] of [
          [['backup', join(dataDir, 'x.dump')], 'pg_dump'],
          [['restore', join(dataDir, 'x.dump'), '--yes'], 'pg_restore'],
        ] as const) {
          const result = await runCli(args, { env: noTools, timeoutMs: CLI_TIMEOUT_MS, cleanup: (fn) => t.after(fn) });
          assert.equal(result.code, 1, describeRun(result));
          assert.match(result.stderr, new RegExp(`${tool} is not on PATH`));
          assert.match(result.stderr, /PGPASSWORD=… /);
        }
      });
    }

    it('users delete needs --yes, then deletes the account for good (recorded as done at the command line)', async (t) => {
      const { services } = await app();
      const address = 'leaving@example.com';
      const created = await services.credentials.createPasswordUser({ email: address, name: 'Leaving User', password: PASSWORD, emailVerified: true });
      assert.ok(created.ok);
      const unconfirmed = await cli(['users', 'delete', '--email', address], (fn) => t.after(fn));
      assert.equal(unconfirmed.code, 2, describeRun(unconfirmed));
      assert.match(unconfirmed.stderr, /add --yes/);
      assert.ok((await services.users.findUserById(created.user.id)) !== null, 'nothing deleted');

      const deleted = await cli(['users', 'delete', '--email', address, '--yes'], (fn) => t.after(fn));
      assert.equal(deleted.code, 0, describeRun(deleted));
      assert.equal(deleted.stdout, `Deleted ${address}\n`);
      assert.equal(await services.users.findUserById(created.user.id), null);
      const event = (await services.audit.listEvents({ userId: created.user.id, type: 'user.deleted', limit: 5 })).events[0];
      assert.ok(event !== undefined);
      assert.equal(event.reason, 'CLI');
      assert.equal(event.details?.via, 'cli');

      const unknown = await cli(['users', 'delete', '--email', address, '--yes'], (fn) => t.after(fn));
      assert.equal(unknown.code, 1, describeRun(unknown));
    });
  });
}
