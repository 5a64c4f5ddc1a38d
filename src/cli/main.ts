#!/usr/bin/env node
/**
 * The `gatehouse` command. Passwords are read from standard input only (`--password-stdin`):
 * an argument would be visible to every user of the machine in the process list and shell history.
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, loadDotEnv, type Config } from '../config.ts';
import { migrateToLatest, openStorage } from '../storage/database.ts';
import { createServices } from '../services.ts';
import { runServer } from '../main.ts';
import { emailField } from '../users/email.ts';
import { isValidRole } from '../users/user.service.ts';

const USAGE = `Usage:
  gatehouse [serve]                 start the server (same as npm start)
  gatehouse migrate                 apply pending database migrations and exit
  gatehouse users create --email E --name N [--role R]... --password-stdin
                                    create a user; the password is read from standard input,
                                    e.g. printf '%s' "$PASSWORD" | gatehouse users create ...
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
      case 'users':
        if (rest[0] !== 'create') throw new CliError(`unknown users command "${rest[0] ?? ''}"\n\n${USAGE}`, 2);
        await createUser(rest.slice(1), io);
        return 0;
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

async function createUser(args: string[], io: { stdin: NodeJS.ReadableStream; stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream }): Promise<void> {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        email: { type: 'string' },
        name: { type: 'string' },
        role: { type: 'string', multiple: true },
        'password-stdin': { type: 'boolean' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    // parseArgs quotes the offending word, which may be a password typed by mistake: never echo it.
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL' ? 'unexpected argument' : code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? 'unknown option' : 'invalid arguments';
    throw new CliError(`${reason} (passwords are read from standard input only)\n\n${USAGE}`, 2);
  }
  if (values.email === undefined) throw new CliError('--email is required', 2);
  if (values.name === undefined || values.name.trim() === '') throw new CliError('--name is required', 2);
  if (!values['password-stdin']) {
    throw new CliError('--password-stdin is required: pipe the password in, never pass it as an argument', 2);
  }
  const email = emailField.safeParse(values.email);
  if (!email.success) throw new CliError(`--email ${email.error.issues[0]?.message ?? 'is invalid'}`, 2);
  const roles = (values.role ?? []).map((role) => role.trim().toUpperCase());
  const badRole = roles.find((role) => !isValidRole(role));
  if (badRole !== undefined) throw new CliError(`--role "${badRole}" is not a valid role (A-Z, 0-9 and _, starting with a letter)`, 2);

  const password = await readPassword(io.stdin);
  if (password === '') throw new CliError('no password on standard input');

  const config = readConfig(io.stderr);
  const storage = openStorage(config.database);
  try {
    await migrateToLatest(storage.db);
    const { credentials } = await createServices({ config, storage });
    const result = await credentials.createPasswordUser({
      email: email.data,
      name: values.name,
      password,
      roles,
      // An operator vouches for the address they type.
      emailVerified: true,
    });
    if (!result.ok) {
      if (result.reason === 'EMAIL_TAKEN') throw new CliError(`a user with the e-mail ${email.data} already exists`);
      if (result.reason === 'WEAK_PASSWORD') throw new CliError(`the password ${result.rejection.message}`);
      throw new CliError('invalid role');
    }
    const { user } = result;
    io.stdout.write(`Created user ${user.id} <${user.email}>${user.roles.length > 0 ? ` with roles ${user.roles.join(', ')}` : ''}\n`);
  } finally {
    await storage.close();
  }
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
