/**
 * `npm test`'s runner: node:test's own `run()`, four files at once, 120 s a test, the spec reporter
 * and test/reporters/slowest.ts on standard output, exit 1 when anything failed. What it adds to
 * `node --test` is the order: the CLI sorts the files by name, which started the longest (the
 * browser tours, the packages' examples, the command-line suites, all under test/) last, so that
 * near the end one or two of them ran alone while the other slots were empty. Here the files named
 * in LONGEST start first, longest first, and the many short ones fill the slots after them.
 *
 * `node test/run.ts [file or glob]...` runs those instead, in the order given.
 */
import { globSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { PassThrough } from 'node:stream';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import slowest from './reporters/slowest.ts';

const PATTERNS = ['src/**/*.test.ts', 'test/**/*.test.ts', 'packages/*/test/**/*.test.ts'];

/**
 * The files that take longest, longest first, as the slowest reporter names them at the end of a
 * run ("slowest files"; here from a run of 2026-11-30 on two cores). A name here that no file has
 * fails the run: a renamed file must be renamed here, or it would quietly start last again.
 */
const LONGEST = [
  'test/flows/accessibility.test.ts',
  'src/app.fuzz.test.ts',
  'test/cli.test.ts',
  'src/webhooks/webhooks.cli.test.ts',
  'src/oidc-clients/clients.cli.test.ts',
  'test/packages/nextjs-example.test.ts',
  'test/packages/nextjs-authjs-example.test.ts',
  'src/admin/admin.routes.test.ts',
  'src/organizations/organizations.cli.test.ts',
  'test/packages/express-example.test.ts',
  'src/sso/sso.cli.test.ts',
  'src/org-domains/org-domains.cli.test.ts',
];

const root = resolve(import.meta.dirname, '..');
const asked = process.argv.slice(2);

function filesOf(patterns: readonly string[]): string[] {
  return [...new Set(patterns.flatMap((pattern) => globSync(pattern, { cwd: root }).toSorted()))].filter((file) => !file.includes('node_modules'));
}

function ordered(): string[] {
  if (asked.length > 0) return filesOf(asked);
  const all = filesOf(PATTERNS);
  const missing = LONGEST.filter((file) => !all.includes(file));
  if (missing.length > 0) throw new Error(`test/run.ts: LONGEST names files that are not there: ${missing.join(', ')}`);
  return [...LONGEST, ...all.filter((file) => !LONGEST.includes(file))];
}

const files = ordered().map((file) => resolve(root, file));
if (files.length === 0) throw new Error(`no test file matches ${asked.join(' ')}`);

const stream = run({ files, concurrency: 4, timeout: 120_000, cwd: root });
let succeeded: boolean | undefined;
stream.on('test:summary', (summary: { file?: string; success: boolean }) => {
  // One summary per file, then the whole run's (no file).
  if (summary.file === undefined) succeeded = summary.success;
});
for (const reporter of [spec, slowest]) {
  const branch = new PassThrough({ objectMode: true });
  stream.pipe(branch);
  branch.compose(reporter).pipe(process.stdout, { end: false });
}
stream.once('end', () => {
  process.exitCode = succeeded === true ? 0 : 1;
});
process.once('beforeExit', () => {
  if (succeeded === undefined) {
    process.stderr.write(`test/run.ts: the run ended without its summary (${relative(root, files[0]!)} …)\n`);
    process.exitCode = 1;
  }
});
