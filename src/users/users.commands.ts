/**
 * `gatehouse users …` (declared in users.cli.ts, which loads this file when one runs). Passwords
 * are read from standard input only (`--password-stdin`): an argument would be visible to every
 * user of the machine in the process list and shell history.
 */
import { emailField } from './email.ts';
import { nameProblem } from './name.ts';
import { isValidRole } from './roles.ts';
import type { User } from './user.service.ts';
import { CLI_SOURCE } from '../audit/audit-source.ts';
import type { KeysetPosition } from '../lib/keyset-cursor.ts';
import { isoTime } from '../lib/clock.ts';
import type { Services } from '../services.ts';
import type { CliCommandRunner } from '../module.ts';
import { CliError, formatTable, parseCommandLine, runSubcommand, writeJson, type CliIo, type OptionSpecs, type Subcommands } from '../cli/args.ts';
import { withServices } from '../cli/on-demand.ts';
import { USERS_USAGE } from './users.cli.ts';
import { toUserJson } from './user-json.ts';

/** `gatehouse users <command> …`. */
export const runUsersCommand: CliCommandRunner = (args, io) => runSubcommand('users', USERS_USAGE, USER_COMMANDS, args, io);

const USER_COMMANDS: Subcommands = {
  create: createUser,
  roles: changeRoles,
  disable: (args, io) => setDisabled(args, io, true),
  delete: deleteUser,
  // The data-export module's command, in this group: a user's data is asked for by their address.
  export: async (args, io) => (await import('../data-export/data-export.commands.ts')).exportUserCommand(args, io),
  enable: (args, io) => setDisabled(args, io, false),
  // The user-import module's count, in this group too: how many passwords are still in a foreign hash.
  hashes: async (args, io) => void (await (await import('../user-import/user-import.commands.ts')).hashes(args, io, 'users hashes', USERS_USAGE)),
  list: listUsers,
};

const parse = <const T extends OptionSpecs>(command: string, args: string[], options: T, readsPassword = false) =>
  parseCommandLine(args, options, { command: `users ${command}`, usage: USERS_USAGE, readsPassword }).values;

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

async function findUserOrFail(services: Services, email: string): Promise<User> {
  const user = await services.users.findUserByEmail(email);
  if (user === null) throw new CliError(`no user with the e-mail ${email}`);
  return user;
}

async function createUser(args: string[], io: CliIo): Promise<void> {
  const values = parse(
    'create',
    args,
    {
      email: { type: 'string' },
      name: { type: 'string' },
      role: { type: 'string', multiple: true },
      'password-stdin': { type: 'boolean' },
    },
    true,
  );
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

async function changeRoles(args: string[], io: CliIo): Promise<void> {
  const values = parse('roles', args, { email: { type: 'string' }, add: { type: 'string', multiple: true }, remove: { type: 'string', multiple: true } });
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

async function setDisabled(args: string[], io: CliIo, disabled: boolean): Promise<void> {
  const values = parse(disabled ? 'disable' : 'enable', args, { email: { type: 'string' } });
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

async function deleteUser(args: string[], io: CliIo): Promise<void> {
  const values = parse('delete', args, { email: { type: 'string' }, yes: { type: 'boolean' } });
  const email = parseEmail(values.email);
  if (values.yes !== true) throw new CliError('deleting an account cannot be undone: add --yes to confirm', 2);
  await withServices(io, async (services) => {
    const user = await findUserOrFail(services, email);
    const result = await services.accountDeletion.deleteUser(user.id, CLI_SOURCE);
    if (result.ok) {
      io.stdout.write(`Deleted ${email}\n`);
      return;
    }
    // What a module blocks the deletion with says itself what to do (the only OWNER of an organization, say).
    if ('block' in result) throw new CliError(`${email} ${result.block.summary}`);
    switch (result.reason) {
      case 'NOT_FOUND':
        throw new CliError(`no user with the e-mail ${email}`);
      case 'LAST_ADMIN':
        throw new CliError(`${email} is the only enabled ADMIN: make someone else an ADMIN first`);
      case 'FORBIDDEN':
        throw new CliError('not allowed');
    }
  });
}

const LIST_PAGE_SIZE = 200;

/** A user as `users list --json` prints it: the admin API's shape (GET /api/admin/users). */
async function listUsers(args: string[], io: CliIo): Promise<void> {
  const values = parse('list', args, { query: { type: 'string' }, json: { type: 'boolean' } });
  await withServices(io, async ({ admin }) => {
    const users: User[] = [];
    let before: KeysetPosition | undefined;
    do {
      const page = await admin.listUsers({ ...(values.query !== undefined && { query: values.query }), ...(before !== undefined && { before }), limit: LIST_PAGE_SIZE });
      users.push(...page.users);
      before = page.next ?? undefined;
    } while (before !== undefined);
    if (values.json) {
      // The list's JSON has never had the stored language (the admin API's has).
      writeJson(io, {
        users: users.map((user) => {
          const { locale: _locale, ...json } = toUserJson(user);
          return json;
        }),
      });
      return;
    }
    if (users.length === 0) {
      io.stdout.write('No users.\n');
      return;
    }
    const rows = users.map((user) => [
      user.id,
      user.email,
      user.name,
      user.roles.join(',') || '-',
      user.disabledAt !== null ? 'disabled' : 'active',
      isoTime(user.createdAt).slice(0, 16).replace('T', ' '),
    ]);
    io.stdout.write(formatTable(['ID', 'EMAIL', 'NAME', 'ROLES', 'STATUS', 'CREATED (UTC)'], rows));
    io.stdout.write(`${rows.length} user${rows.length === 1 ? '' : 's'}\n`);
  });
}

/** The whole of standard input, less one trailing newline (as `echo` or a here-string adds). */
async function readPassword(stdin: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stdin) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string));
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}
