/**
 * The `gatehouse` command as an operator runs it: `node src/cli/main.ts ...` in a child process,
 * passwords piped on standard input, on every backend. Exit codes: 0 done, 1 failed, 2 bad usage.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { backends, type TestDatabase } from './helpers/databases.ts';
import { createTestApp, type TestApp } from './helpers/app.ts';
import { randomSecret, runCli, type ChildEnv, type RegisterCleanup, type RunResult } from './helpers/process.ts';

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

  it('an unknown command exits 2', async (t) => {
    const result = await runCli(['frobnicate'], { env: env(), timeoutMs: CLI_TIMEOUT_MS, cleanup: (fn) => t.after(fn) });
    assert.equal(result.code, 2, describeRun(result));
    assert.match(result.stderr, /frobnicate/);
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

    it('migrate applies the migrations, then reports the database up to date', async (t) => {
      const first = await cli(['migrate'], (fn) => t.after(fn));
      assert.equal(first.code, 0, describeRun(first));
      assert.doesNotMatch(first.stdout, /up to date/i, 'the first run applied something');
      const second = await cli(['migrate'], (fn) => t.after(fn));
      assert.equal(second.code, 0, describeRun(second));
      assert.match(second.stdout, /up to date/i);
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
