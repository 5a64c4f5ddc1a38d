/**
 * The command line's plumbing, shared by every `gatehouse` command (and loaded by `gatehouse help`,
 * so it imports nothing but types): the error that carries an exit code, and a strict option parser
 * whose messages name the bad option, never a value (a value may be a password).
 *
 * Exit codes: 0 done, 1 the operation failed, 2 the command line is wrong.
 */

export interface CliIo {
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

/** A failure the command reports as `gatehouse: <message>` on standard error, ending with `exitCode`. */
export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 1) {
    super(message);
    this.name = 'CliError';
    this.exitCode = exitCode;
  }
}

export interface OptionSpec {
  readonly type: 'string' | 'boolean';
  /** May be given more than once (the values are collected in order). */
  readonly multiple?: boolean;
}

export type OptionSpecs = Readonly<Record<string, OptionSpec>>;

type ValueOf<S extends OptionSpec> = S extends { type: 'string' } ? (S extends { multiple: true } ? string[] : string) : S extends { multiple: true } ? boolean[] : boolean;

export type OptionValues<T extends OptionSpecs> = { -readonly [K in keyof T]?: ValueOf<T[K]> };

export interface ParseSettings {
  /** The command as the messages name it, e.g. `users create`. */
  readonly command: string;
  /** What follows a usage error: the lines of `gatehouse help` about this command. */
  readonly usage: string;
  /** How many positional arguments the command takes (default 0). */
  readonly positionals?: number;
  /** What a positional is, for "name exactly one …" (default "argument"). */
  readonly what?: string;
  /** The command reads a password: its usage errors say that passwords come from standard input only. */
  readonly readsPassword?: boolean;
}

const PASSWORD_NOTE = ' (passwords are read from standard input only: --password-stdin)';

/**
 * Parses `args` against `options` (long options only: `--name value`, `--name=value`, `--flag`).
 * Refused with exit 2, naming the option and never its value: an unknown option, a flag given a
 * value, a string option without one (or followed by another `--option`: write `--name=--x` for a
 * value that starts with `--`), a single-valued option given twice, and the wrong number of
 * positional arguments. Where the command takes positionals (ids), an argument that starts with a
 * single `-` is one of them: ids are base64url, so one in 64 starts with `-`. `--` ends the options.
 */
export function parseCommandLine<const T extends OptionSpecs>(args: readonly string[], options: T, settings: ParseSettings): { values: OptionValues<T>; positionals: string[] } {
  const wanted = settings.positionals ?? 0;
  const note = settings.readsPassword === true ? PASSWORD_NOTE : '';
  const refuse = (message: string): never => {
    throw new CliError(`${settings.command}: ${message}\n\nUsage:\n${usageOf(settings.usage, settings.command)}`, 2);
  };
  const values: Record<string, string | boolean | Array<string | boolean>> = {};
  const positionals: string[] = [];
  const set = (name: string, spec: OptionSpec, value: string | boolean) => {
    if (spec.multiple === true) {
      ((values[name] ??= []) as Array<string | boolean>).push(value);
      return;
    }
    if (Object.hasOwn(values, name)) refuse(`--${name} may be given only once`);
    values[name] = value;
  };
  const tooMany = () => refuse(wanted === 0 ? `unexpected argument${note}` : `name exactly ${wanted === 1 ? 'one' : wanted} ${settings.what ?? 'argument'}${wanted === 1 ? '' : 's'}`);

  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') {
      for (const rest of args.slice(i + 1)) {
        if (positionals.length >= wanted) tooMany();
        positionals.push(rest);
      }
      break;
    }
    if (arg.startsWith('--')) {
      const equals = arg.indexOf('=');
      const name = arg.slice(2, equals < 0 ? undefined : equals);
      const inline = equals < 0 ? undefined : arg.slice(equals + 1);
      const spec = Object.hasOwn(options, name) ? options[name] : undefined;
      if (spec === undefined) refuse(`unknown option --${name}${note}${known(options)}`);
      if (spec!.type === 'boolean') {
        if (inline !== undefined) refuse(`--${name} takes no value`);
        set(name, spec!, true);
        continue;
      }
      if (inline !== undefined) {
        set(name, spec!, inline);
        continue;
      }
      const next = args[i + 1];
      if (next === undefined || next.startsWith('--')) refuse(`--${name} needs a value`);
      set(name, spec!, next!);
      i++;
      continue;
    }
    if (arg.startsWith('-') && arg !== '-' && positionals.length >= wanted) {
      // Only the option letter: `-pSECRET` must not print SECRET.
      refuse(`unknown option ${arg.slice(0, 2)}${note}${known(options)}`);
    }
    if (positionals.length >= wanted) tooMany();
    positionals.push(arg);
  }
  if (positionals.length !== wanted) {
    if (wanted === 0) tooMany();
    refuse(`name exactly ${wanted === 1 ? 'one' : wanted} ${settings.what ?? 'argument'}${wanted === 1 ? '' : 's'}`);
  }
  return { values: values as OptionValues<T>, positionals };
}

function known(options: OptionSpecs): string {
  const names = Object.keys(options);
  return names.length === 0 ? '; this command takes no options' : `; its options: ${names.map((name) => `--${name}`).join(', ')}`;
}

/**
 * The entries of `usage` (lines that start with `  gatehouse `, each with the more indented lines
 * after it) about `command`; all of `usage` when none is.
 */
export function usageOf(usage: string, command: string): string {
  const entries: string[][] = [];
  for (const line of usage.split('\n')) {
    if (line.startsWith('  gatehouse ') || entries.length === 0) entries.push([line]);
    else entries.at(-1)!.push(line);
  }
  const prefix = `  gatehouse ${command}`;
  const mine = entries.filter(([first]) => first === prefix || first!.startsWith(`${prefix} `));
  return mine.length === 0 ? usage : mine.map((entry) => entry.join('\n')).join('\n');
}

/** True when `args` ask for help (`--help` or `-h` before any `--`). */
export function asksForHelp(args: readonly string[]): boolean {
  const end = args.indexOf('--');
  return (end < 0 ? args : args.slice(0, end)).some((arg) => arg === '--help' || arg === '-h');
}

/** Left-aligned columns; control characters in values (a name can hold anything) are shown as `?`. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const clean = (value: string) => value.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
  const cells = [header, ...rows.map((row) => row.map(clean))];
  const widths = header.map((_, column) => Math.max(...cells.map((row) => [...row[column]!].length)));
  return cells.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell + ' '.repeat(widths[column]! - [...cell].length))).join('  ')).join('\n') + '\n';
}

/** One line of JSON: what `--json` prints. */
export function writeJson(io: Pick<CliIo, 'stdout'>, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value)}\n`);
}

/** A group's commands by name (`create`, `list`…), each given the rest of the command line. */
export type Subcommands = Readonly<Record<string, (args: string[], io: CliIo) => Promise<void>>>;

/** Runs the command of `group` its first argument names; an unknown one is a wrong command line, answered with the group's usage. */
export async function runSubcommand(group: string, usage: string, commands: Subcommands, [name = '', ...rest]: readonly string[], io: CliIo): Promise<void> {
  const command = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (command === undefined) throw new CliError(`unknown ${group} command "${name}"\n\nUsage:\n${usage}`, 2);
  await command(rest, io);
}
