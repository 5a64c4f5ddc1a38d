/**
 * `gatehouse import …` and `gatehouse export users` (declared in user-import.cli.ts). Progress goes
 * to standard error: a bar redrawn in place on a terminal, a plain line per 10,000 rows otherwise.
 * The report (`--report`, default `import-report.json`) is written as the import goes: every
 * refused row with its line, reason and field, then the counts. It never holds a hash or an address.
 */
import { createReadStream, createWriteStream, statSync, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import { CliError, formatTable, parseCommandLine, writeJson, type CliIo } from '../cli/args.ts';
import type { CliCommandRunner } from '../module.ts';
import { CLI_SOURCE } from '../audit/audit-source.ts';
import { EXPORT_USAGE, IMPORT_USAGE } from './user-import.cli.ts';
import { FORMATS, type FormatOptions } from './formats.ts';
import { parseRoleRules } from './import-record.ts';
import { exitCodeOf, importDeps, runImport, type ImportCounts, type OnConflict } from './importer.ts';
import { countHashKinds } from './import.store.ts';
import { exportDeps, exportUsers } from './exporter.ts';
import { withServices } from '../cli/on-demand.ts';

const IMPORT_OPTIONS = {
  from: { type: 'string' },
  'dry-run': { type: 'boolean' },
  report: { type: 'string' },
  'on-conflict': { type: 'string' },
  'map-role': { type: 'string', multiple: true },
  'drop-unmapped-roles': { type: 'boolean' },
  'firebase-signer-key': { type: 'string' },
  'firebase-salt-separator': { type: 'string' },
  'firebase-rounds': { type: 'string' },
  'firebase-mem-cost': { type: 'string' },
} as const;

export const runImportCommand: CliCommandRunner = async (args, io) => {
  if (args[0] === 'hashes') return hashes(args.slice(1), io);
  const { values, positionals } = parseCommandLine(args, IMPORT_OPTIONS, { command: 'import', usage: IMPORT_USAGE, positionals: 1, what: 'file' });
  const format = values.from;
  if (format === undefined || !Object.hasOwn(FORMATS, format)) throw new CliError(`--from must be one of ${Object.keys(FORMATS).join(', ')}`, 2);
  const onConflict = values['on-conflict'] ?? 'skip';
  if (!['skip', 'update', 'fail'].includes(onConflict)) throw new CliError('--on-conflict must be skip, update or fail', 2);
  let roleRules;
  try {
    roleRules = parseRoleRules(values['map-role'] ?? [], values['drop-unmapped-roles'] === true);
  } catch (error) {
    throw new CliError((error as Error).message, 2);
  }
  const formatOptions = firebaseOptions(format, values);
  const file = positionals[0]!;
  const isDatabase = FORMATS[format]!.readDatabase !== undefined;
  let size = 0;
  try {
    if (!isDatabase || !/^postgres(ql)?:\/\//.test(file)) size = statSync(file.replace(/^sqlite:/, '')).size;
  } catch {
    throw new CliError(`cannot read ${file}`);
  }
  const dryRun = values['dry-run'] === true;
  const reportPath = values.report ?? 'import-report.json';
  const report = createWriteStream(reportPath);
  await writeAll(report, `{"format":${JSON.stringify(format)},"dryRun":${dryRun},"refused":[`);
  let first = true;
  const input = isDatabase ? file : createReadStream(file);
  const progress = createProgress(io.stderr, () => (typeof input === 'string' || size === 0 ? 0 : input.bytesRead / size));

  const counts = await withServices(io, async (services) => {
    const result = await runImport(importDeps(services), input, {
      format,
      dryRun,
      onConflict: onConflict as OnConflict,
      roleRules,
      formatOptions,
      onRefused: (refusal) => {
        const text = `${first ? '' : ','}\n${JSON.stringify(refusal)}`;
        first = false;
        return writeAll(report, text);
      },
      onProgress: progress.update,
    });
    if (!dryRun) {
      await services.audit.record({ type: 'users.imported', userId: null, source: CLI_SOURCE, details: { format, created: result.created, updated: result.updated, skipped: result.skipped, refused: result.refused } });
    }
    return result;
  });
  progress.done(counts);
  await writeAll(report, `\n],"counts":${JSON.stringify(counts)}}\n`);
  report.end();
  await once(report, 'finish');
  io.stdout.write(summary(counts, dryRun, reportPath));
  return exitCodeOf(counts);
};

function firebaseOptions(format: string, values: Record<string, unknown>): FormatOptions {
  if (format !== 'firebase') return {};
  const [signerKey, saltSeparator, rounds, memCost] = ['firebase-signer-key', 'firebase-salt-separator', 'firebase-rounds', 'firebase-mem-cost'].map((name) => values[name] as string | undefined);
  if (signerKey === undefined || saltSeparator === undefined || rounds === undefined || memCost === undefined) {
    throw new CliError('--from firebase needs --firebase-signer-key, --firebase-salt-separator, --firebase-rounds and --firebase-mem-cost (the project\'s password hash parameters)', 2);
  }
  if (!/^\d{1,2}$/.test(rounds) || !/^\d{1,2}$/.test(memCost)) throw new CliError('--firebase-rounds and --firebase-mem-cost must be small integers', 2);
  return { firebase: { signerKey, saltSeparator, rounds: Number(rounds), memCost: Number(memCost) } };
}

function summary(counts: ImportCounts, dryRun: boolean, reportPath: string): string {
  const lines = [
    `${dryRun ? 'dry run: would import' : 'imported'} ${counts.created} new, ${counts.updated} updated, ${counts.skipped} skipped (already present), ${counts.refused} refused, of ${counts.read} read`,
  ];
  for (const [reason, count] of Object.entries(counts.refusedByReason)) lines.push(`  refused ${reason}: ${count}`);
  lines.push(`  with them: ${counts.identities} linked identities, ${counts.totp} TOTP secrets, ${counts.organizations} memberships`);
  const { identities, totp, organizations } = counts.notImported;
  if (identities + totp + organizations > 0) lines.push(`  not imported: ${identities} identities (no configured provider matches, or linked already), ${totp} TOTP (no secret in the export, or not HMAC-SHA1/6 digits/30 s), ${organizations} memberships (no such organization here, or a member already)`);
  lines.push(`report: ${reportPath}`);
  return `${lines.join('\n')}\n`;
}

function createProgress(stderr: NodeJS.WritableStream, fraction: () => number) {
  const tty = (stderr as { isTTY?: boolean }).isTTY === true;
  let lastLine = 0;
  const line = (counts: ImportCounts) => `${counts.read} read, ${counts.created} new, ${counts.updated} updated, ${counts.skipped} skipped, ${counts.refused} refused`;
  return {
    update(counts: ImportCounts) {
      if (tty) {
        const share = Math.min(1, fraction());
        const filled = Math.round(share * 30);
        stderr.write(`\r[${'#'.repeat(filled)}${'.'.repeat(30 - filled)}] ${Math.round(share * 100)}% ${line(counts)}`);
      } else if (counts.read - lastLine >= 10_000) {
        lastLine = counts.read;
        stderr.write(`progress: ${line(counts)}\n`);
      }
    },
    done(counts: ImportCounts) {
      if (tty) stderr.write('\n');
      else stderr.write(`done: ${line(counts)}\n`);
    },
  };
}

async function writeAll(stream: WriteStream, text: string): Promise<void> {
  if (!stream.write(text)) await once(stream, 'drain');
}

/** How many stored password hashes are of each kind: `gatehouse import hashes`, also `gatehouse users hashes` (`usage`: that group's). */
export async function hashes(args: string[], io: CliIo, command = 'import hashes', usage = IMPORT_USAGE): Promise<number> {
  const { values } = parseCommandLine(args, { json: { type: 'boolean' } }, { command, usage });
  const kinds = await withServices(io, (services) => countHashKinds(services.storage.db));
  if (values.json === true) writeJson(io, Object.fromEntries(kinds.map(({ kind, count }) => [kind, count])));
  else io.stdout.write(formatTable(['KIND', 'COUNT'], kinds.map(({ kind, count }) => [kind, String(count)])));
  return 0;
}

export const runExportCommand: CliCommandRunner = async (args, io) => {
  if (args[0] !== 'users') throw new CliError(`unknown export command "${args[0] ?? ''}"\n\nUsage:\n${EXPORT_USAGE}`, 2);
  const { values } = parseCommandLine(args.slice(1), { output: { type: 'string' }, 'include-totp-secrets': { type: 'boolean' } }, { command: 'export users', usage: EXPORT_USAGE });
  const output: NodeJS.WritableStream = values.output === undefined ? io.stdout : createWriteStream(values.output, { mode: 0o600 });
  const { written, totpLeftOut } = await withServices(io, (services) => exportUsers(exportDeps(services, { totpSecrets: values['include-totp-secrets'] === true }), output));
  if (values.output !== undefined) {
    (output as WriteStream).end();
    await once(output, 'finish');
  }
  io.stderr.write(`exported ${written} users\n`);
  if (totpLeftOut > 0) io.stderr.write(`${totpLeftOut} have an authenticator app whose secret was left out (--include-totp-secrets exports them)\n`);
  return 0;
};
