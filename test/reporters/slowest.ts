/**
 * A test reporter that closes the run with its slowest tests, its slowest files and the time of the
 * whole run, so a test creeping towards the per-test timeout (120 s, test/run.ts) is seen long
 * before it fails on a busy machine, and the files that hold the run's length are named: the
 * slowest, and the last to end (when each started and ended), with how many files ran
 * at once on average; a long file that starts late holds the end of the run alone. Used next
 * to the spec reporter by `npm test`; it prints nothing else.
 */
import { relative } from 'node:path';

interface TestEventData {
  name: string;
  file?: string;
  nesting: number;
  details: { duration_ms: number; type?: 'suite' | 'test' };
}

type TestEvent = { type: 'test:pass' | 'test:fail'; data: TestEventData } | { type: string; data: unknown };

const SHOWN = 15;
const FILES_SHOWN = 12;
const LAST_SHOWN = 8;
/** The per-test timeout test/run.ts sets: a test above half of it is named as a warning. */
const TIMEOUT_MS = 120_000;

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

export default async function* slowestTests(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const started = performance.now();
  const tests: Array<{ name: string; file: string; ms: number }> = [];
  // A file's time: its top-level tests and suites, which run one after another in its process.
  const files = new Map<string, number>();
  const heard = new Map<string, { first: number; last: number }>();
  for await (const event of source) {
    // When each file started and ended, from the run's start: its process starts when it leaves
    // the queue (test:dequeue), and test:complete comes as each test ends. (test:pass and
    // test:fail are held back until the files before them are reported, so they come late.)
    const named = (event.data as { file?: unknown } | undefined)?.file;
    if (typeof named === 'string' && (event.type === 'test:dequeue' || event.type === 'test:complete')) {
      const file = relative(process.cwd(), named);
      const now = performance.now() - started;
      const span = heard.get(file);
      if (span === undefined) heard.set(file, { first: now, last: now });
      else span.last = Math.max(span.last, now);
    }
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const data = event.data as TestEventData;
    if (data.nesting === 0 && data.file !== undefined) {
      const file = relative(process.cwd(), data.file);
      files.set(file, (files.get(file) ?? 0) + data.details.duration_ms);
    }
    if (data.details.type === 'suite') continue;
    tests.push({ name: data.name, file: data.file === undefined ? '?' : relative(process.cwd(), data.file), ms: data.details.duration_ms });
  }
  if (tests.length === 0) return;
  tests.sort((a, b) => b.ms - a.ms);
  const lines = [`\nslowest tests (of ${tests.length}; the per-test timeout is ${seconds(TIMEOUT_MS)}):`];
  for (const test of tests.slice(0, SHOWN)) {
    const warning = test.ms > TIMEOUT_MS / 2 ? '  ← over half the timeout' : '';
    lines.push(`  ${seconds(test.ms).padStart(8)}  ${test.file}: ${test.name}${warning}`);
  }
  lines.push(`slowest files (their top-level tests and suites):`);
  for (const [file, ms] of [...files].sort((a, b) => b[1] - a[1]).slice(0, FILES_SHOWN)) lines.push(`  ${seconds(ms).padStart(8)}  ${file}`);
  const wholeMs = performance.now() - started;
  const sum = [...files.values()].reduce((total, ms) => total + ms, 0);
  lines.push(`the last files to end (started → ended; their time):`);
  for (const [file, span] of [...heard].sort((a, b) => b[1].last - a[1].last).slice(0, LAST_SHOWN)) {
    lines.push(`  ${seconds(span.first).padStart(8)} → ${seconds(span.last).padStart(8)}  ${file} (${seconds(files.get(file) ?? 0)})`);
  }
  lines.push(`${files.size} files, ${seconds(sum)} in all: ${(sum / wholeMs).toFixed(1)} at once on average`);
  lines.push(`whole run: ${seconds(wholeMs)}\n`);
  yield `${lines.join('\n')}\n`;
}
