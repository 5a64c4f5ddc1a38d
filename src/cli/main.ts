#!/usr/bin/env node
/**
 * The `gatehouse` command. Passwords are read from standard input only (`--password-stdin`):
 * an argument would be visible to every user of the machine in the process list and shell history.
 */
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';
import { ConfigError, loadDotEnv, type Config } from '../config.ts';
import { openStorage } from '../storage/database.ts';
import { migrateToLatest, loadConfig } from '../modules.ts';
import { createServices, type Services } from '../services.ts';
import { runServer } from '../main.ts';
import { createLogger } from '../http/logging.ts';
import { emailField } from '../users/email.ts';
import { nameProblem } from '../users/name.ts';
import { isValidRole, type User } from '../users/user.service.ts';
import { CLI_SOURCE } from '../audit/audit.service.ts';
import type { KeysetPosition } from '../lib/keyset-cursor.ts';
import { describeSigningKeys, rotateSigningKey } from '../sessions/signing-keys.ts';
import { isoTime, systemClock } from '../lib/clock.ts';
import { CLIENTS_USAGE, runClientsCommand } from '../oidc-clients/clients.cli.ts';
import { ORGS_USAGE, runOrgsCommand } from '../organizations/organizations.cli.ts';
import { WEBHOOKS_USAGE, runWebhooksCommand } from '../webhooks/webhooks.cli.ts';

const USAGE = `Usage:
  gatehouse [serve]                 start the server (same as npm start)
  gatehouse migrate                 apply pending database migrations and exit
  gatehouse users create --email E --name N [--role R]... --password-stdin
                                    create a user; the password is read from standard input,
                                    e.g. printf '%s' "$PASSWORD" | gatehouse users create ...
  gatehouse users roles --email E [--add R]... [--remove R]...
                                    add and remove roles (they apply on the user's next request,
                                    or next token refresh with SESSION_STRATEGY=jwt)
  gatehouse users disable --email E disable a user and end all their sessions
  gatehouse users enable --email E  enable a disabled user
  gatehouse users delete --email E --yes
                                    delete the account for good: sessions and app grants ended,
                                    memberships, sign-in methods and factors removed, personal
                                    data erased from the audit log (see docs/guides/admin-and-audit.md)
  gatehouse users list [--query Q]  list users, newest first; Q matches part of a name or e-mail
  gatehouse keys rotate             new signing keys (Ed25519 and RSA): published now, signing new
                                    tokens in 2 minutes (every instance has loaded them by then);
                                    the old keys stay published until their tokens have expired
  gatehouse keys list               the signing keys: kid, algorithm, created, state
${CLIENTS_USAGE}
${ORGS_USAGE}
${WEBHOOKS_USAGE}
  gatehouse help                    show this text

Reads the same environment as the server (DATABASE_URL, DATA_DIR, AUTH_SECRET, ...).`;

/** Exit codes: 0 done, 1 the operation failed, 2 the command line is wrong. */
class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.exitCode = exitCode;
  }
}

export async function runCli(argv: readonly string[], io: { stdin: NodeJS.ReadableStream; stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream }): Promise<number> {
  const [command = 'serve', ...rest] = argv;
  try {
    switch (command) {
      case 'serve':
        await runServer();
        return 0;
      case 'migrate':
        await migrate(io.stdout);
        return 0;
      case 'users': {
        const run = USER_COMMANDS[rest[0] ?? ''];
        if (run === undefined) throw new CliError(`unknown users command "${rest[0] ?? ''}"\n\n${USAGE}`, 2);
        await run(rest.slice(1), io);
        return 0;
      }
      case 'keys': {
        const run = KEY_COMMANDS[rest[0] ?? ''];
        if (run === undefined) throw new CliError(`unknown keys command "${rest[0] ?? ''}"\n\n${USAGE}`, 2);
        parseOptions(rest.slice(1), {});
        await run(io);
        return 0;
      }
      case 'clients':
        return await runClientsCommand(rest, io, { withServices, usage: USAGE });
      case 'orgs':
        return await runOrgsCommand(rest, io, { withServices, usage: USAGE });
      case 'webhooks':
        return await runWebhooksCommand(rest, io, { withServices, usage: USAGE });
      case 'help':
      case '--help':
      case '-h':
        io.stdout.write(`${USAGE}\n`);
        return 0;
      default:
        throw new CliError(`unknown command "${command}"\n\n${USAGE}`, 2);
    }
  } catch (error) {
    if (error instanceof CliError) {
      io.stderr.write(`gatehouse: ${error.message}\n`);
      return error.exitCode;
    }
    if (error instanceof ConfigError) {
      io.stderr.write(`${error.message}\n`);
      return 1;
    }
    io.stderr.write(`gatehouse: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

function readConfig(stderr: NodeJS.WritableStream): Config {
  loadDotEnv();
  return loadConfig(process.env, { onWarning: (message) => stderr.write(`warning: ${message}\n`) });
}

async function migrate(stdout: NodeJS.WritableStream): Promise<void> {
  const config = readConfig(process.stderr);
  const storage = openStorage(config.database);
  try {
    const { results = [] } = await migrateToLatest(storage.db);
    stdout.write(results.length === 0 ? 'Database is up to date.\n' : results.map((r) => `applied ${r.migrationName}\n`).join(''));
  } finally {
    await storage.close();
  }
}

type Io = { stdin: NodeJS.ReadableStream; stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream };

const USER_COMMANDS: Record<string, (args: string[], io: Io) => Promise<void>> = {
  create: createUser,
  roles: changeRoles,
  disable: (args, io) => setDisabled(args, io, true),
  delete: deleteUser,
  enable: (args, io) => setDisabled(args, io, false),
  list: listUsers,
};

const KEY_COMMANDS: Record<string, (io: Io) => Promise<void>> = {
  async rotate(io) {
    const config = readConfig(io.stderr);
    const storage = openStorage(config.database);
    try {
      await migrateToLatest(storage.db);
      const { kids, activeFrom } = await rotateSigningKey({ db: storage.db, authSecret: config.authSecret, clock: systemClock });
      for (const [algorithm, kid] of Object.entries(kids)) {
        io.stdout.write(`New signing key ${kid} (${algorithm}): published now, signing from ${isoTime(activeFrom)}.\n`);
      }
    } finally {
      await storage.close();
    }
  },
  async list(io) {
    const config = readConfig(io.stderr);
    const storage = openStorage(config.database);
    try {
      await migrateToLatest(storage.db);
      for (const key of await describeSigningKeys(storage.db, Date.now())) {
        io.stdout.write(`${key.kid}  ${key.algorithm}  created ${isoTime(key.createdAt)}  ${key.state}\n`);
      }
    } finally {
      await storage.close();
    }
  },
};

/** Parses options strictly; a usage error never quotes the offending word (it may be a password). */
function parseOptions<T extends ParseArgsOptionsConfig>(args: string[], options: T) {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL' ? 'unexpected argument' : code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? 'unknown option' : 'invalid arguments';
    throw new CliError(`${reason} (passwords are read from standard input only)\n\n${USAGE}`, 2);
  }
}

function parseEmail(value: string | undefined): string {
  if (value === undefined) throw new CliError('--email is required', 2);
  const email = emailField.safeParse(value);
  if (!email.success) throw new CliError(`--email ${email.error.issues[0]?.message ?? 'is invalid'}`, 2);
  return email.data;
}

function parseRoles(values: string[] | undefined, option: string): string[] {
  const roles = (values ?? []).map((role) => role.trim().toUpperCase());
  const badRole = roles.find((role) => !isValidRole(role));
  if (badRole !== undefined) throw new CliError(`${option} "${badRole}" is not a valid role (A-Z, 0-9 and _, starting with a letter)`, 2);
  return roles;
}

/**
 * Runs `fn` with the server's wiring on the configured database (migrated first); logs go to
 * stderr, stdout stays the command's output. Changes are recorded in the audit log as made at the
 * command line (no actor, `details.via = "cli"`).
 */
async function withServices<T>(io: Io, fn: (services: Services) => Promise<T>): Promise<T> {
  const config = readConfig(io.stderr);
  const storage = openStorage(config.database);
  try {
    await migrateToLatest(storage.db);
    const services = await createServices({ config, storage, logger: createLogger(config, 2) });
    try {
      return await fn(services);
    } finally {
      await services.stop();
    }
  } finally {
    await storage.close();
  }
}

async function findUserOrFail(services: Services, email: string): Promise<User> {
  const user = await services.users.findUserByEmail(email);
  if (user === null) throw new CliError(`no user with the e-mail ${email}`);
  return user;
}

async function createUser(args: string[], io: Io): Promise<void> {
  const values = parseOptions(args, {
    email: { type: 'string' },
    name: { type: 'string' },
    role: { type: 'string', multiple: true },
    'password-stdin': { type: 'boolean' },
  });
  if (values.email === undefined) throw new CliError('--email is required', 2);
  if (values.name === undefined || values.name.trim() === '') throw new CliError('--name is required', 2);
  // The rule every way of naming a user applies (users/name.ts); the name itself is not echoed.
  const nameRefusal = nameProblem(values.name);
  if (nameRefusal !== null) throw new CliError(`--name ${nameRefusal}`);
  if (!values['password-stdin']) {
    throw new CliError('--password-stdin is required: pipe the password in, never pass it as an argument', 2);
  }
  const email = parseEmail(values.email);
  const roles = parseRoles(values.role, '--role');

  const password = await readPassword(io.stdin);
  if (password === '') throw new CliError('no password on standard input');

  await withServices(io, async ({ credentials, audit }) => {
    const result = await credentials.createPasswordUser({
      email,
      name: values.name!,
      password,
      roles,
      // An operator vouches for the address they type.
      emailVerified: true,
    });
    if (!result.ok) {
      if (result.reason === 'EMAIL_TAKEN') throw new CliError(`a user with the e-mail ${email} already exists`);
      if (result.reason === 'WEAK_PASSWORD') throw new CliError(`the password ${result.rejection.message}`);
      // Not for this command (it names no client), but handled rather than called a role problem.
      if (result.reason === 'RATE_LIMITED') throw new CliError(`too many password checks; try again in ${result.retryAfterSeconds}s`);
      throw new CliError('invalid role');
    }
    const { user } = result;
    await audit.record({ type: 'user.created', userId: user.id, source: CLI_SOURCE, details: { roles: user.roles, signIn: 'password' } });
    io.stdout.write(`Created user ${user.id} <${user.email}>${user.roles.length > 0 ? ` with roles ${user.roles.join(', ')}` : ''}\n`);
  });
}

async function changeRoles(args: string[], io: Io): Promise<void> {
  const values = parseOptions(args, { email: { type: 'string' }, add: { type: 'string', multiple: true }, remove: { type: 'string', multiple: true } });
  const email = parseEmail(values.email);
  const added = parseRoles(values.add, '--add');
  const removed = parseRoles(values.remove, '--remove');
  if (added.length === 0 && removed.length === 0) throw new CliError('name at least one role to --add or --remove', 2);
  const both = added.find((role) => removed.includes(role));
  if (both !== undefined) throw new CliError(`${both} is both added and removed`, 2);

  await withServices(io, async (services) => {
    const user = await findUserOrFail(services, email);
    const roles = [...new Set([...user.roles, ...added])].filter((role) => !removed.includes(role));
    const result = await services.admin.updateUser(user.id, { roles }, CLI_SOURCE);
    if (!result.ok) throw new CliError(result.reason === 'NOT_FOUND' ? `no user with the e-mail ${email}` : 'invalid role');
    const now = result.user.roles;
    io.stdout.write(`Roles of ${user.email}: ${now.length > 0 ? now.join(', ') : '(none)'}\n`);
  });
}

async function setDisabled(args: string[], io: Io, disabled: boolean): Promise<void> {
  const values = parseOptions(args, { email: { type: 'string' } });
  const email = parseEmail(values.email);
  await withServices(io, async (services) => {
    const user = await findUserOrFail(services, email);
    const result = await services.admin.updateUser(user.id, { disabled }, CLI_SOURCE);
    if (!result.ok) throw new CliError(`no user with the e-mail ${email}`);
    const wasChanged = (user.disabledAt !== null) !== disabled;
    if (disabled) {
      const ended = `ended ${result.sessionsEnded} session${result.sessionsEnded === 1 ? '' : 's'}`;
      io.stdout.write(wasChanged ? `Disabled ${user.email}; ${ended}\n` : `${user.email} was already disabled; ${ended}\n`);
    } else {
      io.stdout.write(wasChanged ? `Enabled ${user.email}\n` : `${user.email} was not disabled\n`);
    }
  });
}

async function deleteUser(args: string[], io: Io): Promise<void> {
  const values = parseOptions(args, { email: { type: 'string' }, yes: { type: 'boolean' } });
  const email = parseEmail(values.email);
  if (values.yes !== true) throw new CliError('deleting an account cannot be undone: add --yes to confirm', 2);
  await withServices(io, async (services) => {
    const user = await findUserOrFail(services, email);
    const result = await services.accountDeletion.deleteUser(user.id, CLI_SOURCE);
    if (result.ok) {
      io.stdout.write(`Deleted ${email}\n`);
      return;
    }
    switch (result.reason) {
      case 'NOT_FOUND':
        throw new CliError(`no user with the e-mail ${email}`);
      case 'LAST_ADMIN':
        throw new CliError(`${email} is the only enabled ADMIN: make someone else an ADMIN first`);
      case 'ORGANIZATION_OWNERSHIP_TRANSFER_REQUIRED':
        throw new CliError(`${email} is the only OWNER of ${result.organizations.map((org) => org.slug).join(', ')}: transfer ownership or delete the organization first`);
      case 'FORBIDDEN':
        throw new CliError('not allowed');
    }
  });
}

const LIST_PAGE_SIZE = 200;

async function listUsers(args: string[], io: Io): Promise<void> {
  const values = parseOptions(args, { query: { type: 'string' } });
  await withServices(io, async ({ admin }) => {
    const rows: string[][] = [];
    let before: KeysetPosition | undefined;
    do {
      const page = await admin.listUsers({ ...(values.query !== undefined && { query: values.query }), ...(before !== undefined && { before }), limit: LIST_PAGE_SIZE });
      for (const user of page.users) {
        rows.push([
          user.id,
          user.email,
          user.name,
          user.roles.join(',') || '-',
          user.disabledAt !== null ? 'disabled' : 'active',
          new Date(user.createdAt).toISOString().slice(0, 16).replace('T', ' '),
        ]);
      }
      before = page.next ?? undefined;
    } while (before !== undefined);
    if (rows.length === 0) {
      io.stdout.write('No users.\n');
      return;
    }
    io.stdout.write(formatTable(['ID', 'EMAIL', 'NAME', 'ROLES', 'STATUS', 'CREATED (UTC)'], rows));
    io.stdout.write(`${rows.length} user${rows.length === 1 ? '' : 's'}\n`);
  });
}

/** Left-aligned columns; control characters in values (a name can hold anything) are shown as `?`. */
function formatTable(header: string[], rows: string[][]): string {
  const clean = (value: string) => value.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
  const cells = [header, ...rows.map((row) => row.map(clean))];
  const widths = header.map((_, column) => Math.max(...cells.map((row) => [...row[column]!].length)));
  return cells.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell + ' '.repeat(widths[column]! - [...cell].length))).join('  ')).join('\n') + '\n';
}

/** The whole of standard input, less one trailing newline (as `echo` or a here-string adds). */
async function readPassword(stdin: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string));
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

if (import.meta.main) {
  const code = await runCli(process.argv.slice(2), { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr });
  process.exitCode = code;
}
