#!/usr/bin/env node
/**
 * The `gatehouse` command. Each command loads only what it needs: `help` and `--version` load
 * nothing but the usage text; the others import their code, the configuration, storage and the
 * services when they run (`serve` the server). Passwords are read from standard input only
 * (`--password-stdin`): an argument would be visible to every user of the machine in the process
 * list and shell history.
 *
 * The core's commands are here (serve, migrate, backup, restore, doctor); every other group is a
 * module's (`gatehouse webhooks …`: module.ts, `CliCommandGroup`). Walking the module list would
 * load every module's code (most of a second), so the command finds the modules' groups by their
 * files instead: the `cli` each `src/<folder>/*.cli.ts` exports, the same array its module names in
 * its `cli` slot (cli/module-commands.test.ts checks they agree). It knows no module by name.
 *
 * Exit codes: 0 done, 1 the operation failed, 2 the command line is wrong.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { asksForHelp, CliError, didYouMean, parseCommandLine, type CliIo } from './args.ts';
import { BACKUP_USAGE, DOCTOR_USAGE, HELP_USAGE, MIGRATE_USAGE, SERVE_USAGE } from './usage.ts';
import type { CliCommandGroup } from '../module.ts';
import { withServices } from './on-demand.ts';

/** A group of commands: a module's, or one of the core's (which have no `order`: their place is fixed). */
type Group = Omit<CliCommandGroup, 'order'>;

const SERVE: Group = {
  name: 'serve',
  usage: SERVE_USAGE,
  load: async () => async (args) => {
    parseCommandLine(args, {}, { command: 'serve', usage: SERVE_USAGE });
    const { runServer } = await import('../main.ts');
    await runServer();
  },
};

/** The core's groups before the modules' in `gatehouse help`, and after them. */
const CORE_BEFORE: readonly Group[] = [SERVE, { name: 'migrate', usage: MIGRATE_USAGE, load: async () => (await import('./migrate.ts')).migrate }];
const CORE_AFTER: readonly Group[] = [
  { name: 'backup', usage: BACKUP_USAGE, load: async () => (await import('./backup.ts')).backup },
  { name: 'restore', usage: BACKUP_USAGE, load: async () => (await import('./backup.ts')).restore },
  { name: 'doctor', usage: DOCTOR_USAGE, load: async () => (await import('./doctor.ts')).doctor },
];

/** The modules' command groups, in their order: the `cli` of every `*.cli.ts` in a folder of src/. */
export async function findModuleCliGroups(): Promise<CliCommandGroup[]> {
  const src = new URL('../', import.meta.url);
  const files = readdirSync(src, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((folder) => readdirSync(new URL(`${folder.name}/`, src)).filter((file) => file.endsWith('.cli.ts')).map((file) => new URL(`${folder.name}/${file}`, src).href));
  const declared = await Promise.all(files.map(async (file) => ((await import(file)) as { cli?: readonly CliCommandGroup[] }).cli ?? []));
  return declared.flat().sort((a, b) => a.order - b.order || a.name.localeCompare(b.name));
}

/** Every group by name: the core's and `moduleGroups`; a name two claim is refused. */
function groupsByName(moduleGroups: readonly CliCommandGroup[]): ReadonlyMap<string, Group> {
  const groups = new Map<string, Group>();
  for (const group of [...CORE_BEFORE, ...moduleGroups, ...CORE_AFTER]) {
    if (groups.has(group.name)) throw new Error(`two command groups are named "${group.name}"`);
    groups.set(group.name, group);
  }
  return groups;
}

/** `gatehouse help`: every group's lines, in order (backup's and restore's are the same lines, shown once). */
function usageText(groups: ReadonlyMap<string, Group>): string {
  return `Usage:
${[...new Set([...groups.values()].map((group) => group.usage)), HELP_USAGE].join('\n')}

Options are strict: an unknown one is refused (exit 2). Where a command names an ID, an ID that
starts with "-" is taken as one; "--" ends the options. --json prints one line of JSON.
Reads the same environment as the server (DATABASE_URL, DATA_DIR, AUTH_SECRET, ...).
Exit codes: 0 done, 1 the operation failed, 2 the command line is wrong.`;
}


/** `gatehouse <version>`, from package.json. */
export function versionLine(): string {
  const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return `gatehouse ${version}`;
}

/**
 * Runs `gatehouse …` (`argv`: the arguments after the program's): its exit code. The modules'
 * groups are those `findModuleCliGroups` finds, unless `moduleGroups` are given (a module list's:
 * `collectCliGroups`, module.ts).
 */
export async function runCli(argv: readonly string[], io: CliIo, options: { moduleGroups?: readonly CliCommandGroup[] } = {}): Promise<number> {
  const [command = 'serve', ...rest] = argv;
  try {
    if (command === '--version' || command === '-v' || command === 'version') {
      parseCommandLine(rest, {}, { command: 'version', usage: HELP_USAGE });
      io.stdout.write(`${versionLine()}\n`);
      return 0;
    }
    const groups = groupsByName(options.moduleGroups ?? (await findModuleCliGroups()));
    const usage = usageText(groups);
    if (command === 'help' || command === '--help' || command === '-h') {
      const topic = rest[0];
      if (topic !== undefined && command === 'help') {
        const group = groups.get(topic);
        if (group === undefined) throw new CliError(`no such command "${topic}"\n\n${usage}`, 2);
        io.stdout.write(`Usage:\n${group.usage}\n`);
        return 0;
      }
      io.stdout.write(`${usage}\n`);
      return 0;
    }
    const group = groups.get(command);
    if (group === undefined) {
      // A short answer with the likely command, not every command's usage (`gatehouse help` has that).
      const option = command.startsWith('--') ? command.split('=')[0]! : command.slice(0, 2);
      const hint = command.startsWith('-')
        ? `unknown option ${option}${didYouMean(option.replace(/^-+/, ''), ['help', 'version'], '--')}`
        : `unknown command "${command}"${didYouMean(command, [...groups.keys(), 'help', 'version'])}`;
      throw new CliError(`${hint}\nRun "gatehouse help" for every command.`, 2);
    }
    if (asksForHelp(rest)) {
      io.stdout.write(`Usage:\n${group.usage}\n`);
      return 0;
    }
    const run = await group.load();
    return (await run(rest, io, { usage: group.usage, withServices })) ?? 0;
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
