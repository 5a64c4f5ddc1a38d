#!/usr/bin/env node
/**
 * The `gatehouse` command. Each command loads only what it needs: `help` and `--version` load
 * nothing but the usage text; the others import their code, the configuration, storage and the
 * services when they run (`serve` the server). Passwords are read from standard input only
 * (`--password-stdin`): an argument would be visible to every user of the machine in the process
 * list and shell history.
 *
 * Exit codes: 0 done, 1 the operation failed, 2 the command line is wrong.
 */
import { readFileSync } from 'node:fs';
import { asksForHelp, CliError, parseCommandLine, type CliIo } from './args.ts';
import { BACKUP_USAGE, DOCTOR_USAGE, HELP_USAGE, KEYS_USAGE, MIGRATE_USAGE, SERVE_USAGE, USERS_USAGE } from './usage.ts';
import { CLIENTS_USAGE, runClientsCommand } from '../oidc-clients/clients.cli.ts';
import { ORGS_USAGE, runOrgsCommand } from '../organizations/organizations.cli.ts';
import { WEBHOOKS_USAGE, runWebhooksCommand } from '../webhooks/webhooks.cli.ts';

const USAGE = `Usage:
${SERVE_USAGE}
${MIGRATE_USAGE}
${USERS_USAGE}
${KEYS_USAGE}
${CLIENTS_USAGE}
${ORGS_USAGE}
${WEBHOOKS_USAGE}
${BACKUP_USAGE}
${DOCTOR_USAGE}
${HELP_USAGE}

Options are strict: an unknown one is refused (exit 2). Where a command names an ID, an ID that
starts with "-" is taken as one; "--" ends the options. --json prints one line of JSON.
Reads the same environment as the server (DATABASE_URL, DATA_DIR, AUTH_SECRET, ...).
Exit codes: 0 done, 1 the operation failed, 2 the command line is wrong.`;

type Group = {
  readonly usage: string;
  run(args: string[], io: CliIo): Promise<number | void>;
};

/** Runs one of `commands` (the group's first argument), loaded from `load` only now. */
function subcommands(group: string, usage: string, load: () => Promise<Readonly<Record<string, (args: string[], io: CliIo) => Promise<void>>>>): Group {
  return {
    usage,
    async run([name = '', ...rest], io) {
      const commands = await load();
      const command = Object.hasOwn(commands, name) ? commands[name] : undefined;
      if (command === undefined) throw new CliError(`unknown ${group} command "${name}"\n\nUsage:\n${usage}`, 2);
      await command(rest, io);
    },
  };
}

/** context.ts's `withServices`, imported (with the configuration, storage and services) on first use. */
async function withServices<T>(io: CliIo, fn: (services: import('../services.ts').Services) => Promise<T>): Promise<T> {
  return (await import('./context.ts')).withServices(io, fn);
}

const GROUPS: Readonly<Record<string, Group>> = {
  serve: {
    usage: SERVE_USAGE,
    async run(args) {
      parseCommandLine(args, {}, { command: 'serve', usage: SERVE_USAGE });
      const { runServer } = await import('../main.ts');
      await runServer();
    },
  },
  migrate: { usage: MIGRATE_USAGE, run: async (args, io) => (await import('./migrate.ts')).migrate(args, io) },
  users: subcommands('users', USERS_USAGE, async () => (await import('./users.ts')).USER_COMMANDS),
  keys: subcommands('keys', KEYS_USAGE, async () => (await import('./keys.ts')).KEY_COMMANDS),
  clients: { usage: CLIENTS_USAGE, run: (args, io) => runClientsCommand(args, io, { withServices, usage: CLIENTS_USAGE }) },
  orgs: { usage: ORGS_USAGE, run: (args, io) => runOrgsCommand(args, io, { withServices, usage: ORGS_USAGE }) },
  webhooks: { usage: WEBHOOKS_USAGE, run: (args, io) => runWebhooksCommand(args, io, { withServices, usage: WEBHOOKS_USAGE }) },
  backup: { usage: BACKUP_USAGE, run: async (args, io) => (await import('./backup.ts')).backup(args, io) },
  restore: { usage: BACKUP_USAGE, run: async (args, io) => (await import('./backup.ts')).restore(args, io) },
  doctor: { usage: DOCTOR_USAGE, run: async (args, io) => (await import('./doctor.ts')).doctor(args, io) },
};

/** `gatehouse <version>`, from package.json. */
export function versionLine(): string {
  const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return `gatehouse ${version}`;
}

export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const [command = 'serve', ...rest] = argv;
  try {
    switch (command) {
      case 'help':
      case '--help':
      case '-h': {
        const topic = rest[0];
        if (topic !== undefined && command === 'help') {
          const group = Object.hasOwn(GROUPS, topic) ? GROUPS[topic] : undefined;
          if (group === undefined) throw new CliError(`no such command "${topic}"\n\n${USAGE}`, 2);
          io.stdout.write(`Usage:\n${group.usage}\n`);
          return 0;
        }
        io.stdout.write(`${USAGE}\n`);
        return 0;
      }
      case '--version':
      case '-v':
      case 'version':
        parseCommandLine(rest, {}, { command: 'version', usage: HELP_USAGE });
        io.stdout.write(`${versionLine()}\n`);
        return 0;
    }
    const group = Object.hasOwn(GROUPS, command) ? GROUPS[command] : undefined;
    if (group === undefined) {
      const hint = command.startsWith('-') ? `unknown option ${command.startsWith('--') ? command.split('=')[0] : command.slice(0, 2)}` : `unknown command "${command}"`;
      throw new CliError(`${hint}\n\n${USAGE}`, 2);
    }
    if (asksForHelp(rest)) {
      io.stdout.write(`Usage:\n${group.usage}\n`);
      return 0;
    }
    return (await group.run(rest, io)) ?? 0;
  } catch (error) {
    if (error instanceof CliError) {
      io.stderr.write(`gatehouse: ${error.message}\n`);
      return error.exitCode;
    }
    if (error instanceof Error && error.name === 'ConfigError') {
      io.stderr.write(`${error.message}\n`);
      return 1;
    }
    io.stderr.write(`gatehouse: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

if (import.meta.main) {
  const code = await runCli(process.argv.slice(2), { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr });
  process.exitCode = code;
}
