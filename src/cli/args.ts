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
      // A password given as an option gets the note on standard input, not a guess at another option.
      if (spec === undefined) refuse(`unknown option --${name}${note === '' ? didYouMean(name, Object.keys(options), '--') : note}${known(options)}`);
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

/** Damerau–Levenshtein distance (adjacent swaps count one), for suggestions: short words only. */
function distance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i += 1) {
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = best;
    }
  }
  return rows[a.length]![b.length]!;
}

/**
 * The candidate `word` was most likely meant to be, or null: the closest within a distance of one
 * for short words (two from six letters), or the only candidate it begins (`user` for `users`).
 */
export function closestMatch(word: string, candidates: readonly string[]): string | null {
  if (word === '' || word.length > 64) return null;
  const lower = word.toLowerCase();
  const limit = lower.length >= 6 ? 2 : 1;
  let best: { candidate: string; distance: number } | null = null;
  for (const candidate of candidates) {
    const d = distance(lower, candidate.toLowerCase());
    if (d <= limit && (best === null || d < best.distance)) best = { candidate, distance: d };
  }
  if (best !== null) return best.candidate;
  if (lower.length < 3) return null;
  const prefixed = candidates.filter((candidate) => candidate.startsWith(lower) || lower.startsWith(candidate));
  return prefixed.length === 1 ? prefixed[0]! : null;
}

/** ` (did you mean "users"?)`, or nothing when no candidate is close. */
export function didYouMean(word: string, candidates: readonly string[], prefix = ''): string {
  const match = closestMatch(word, candidates);
  return match === null ? '' : ` (did you mean "${prefix}${match}"?)`;
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
  if (command === undefined) throw unknownSubcommand(group, name, Object.keys(commands), usage);
  await command(rest, io);
}

/** The refusal of `gatehouse <group> <name>` when the group has no such command: a suggestion, then the group's usage. */
export function unknownSubcommand(group: string, name: string, commands: readonly string[], usage: string): CliError {
  const what = name === '' ? `${group} needs a command` : `unknown ${group} command "${name}"${didYouMean(name, commands)}`;
  return new CliError(`${what}\n\nUsage:\n${usage}`, 2);
}
