/**
 * Summarises the CPU profiles of a BENCH_CPU_PROF=1 run (`.cpuprofile`, the format `--cpu-prof`
 * writes; perf/probe.ts records one per measured window): per server, self time by package, the
 * functions with the most self time, and the src/ functions with the most inclusive time (counted
 * once per stack, so recursion does not inflate it), with file and line.
 *
 *   node perf/profile-summary.ts <folder of server folders>   (run.ts runs it after a profiled run)
 */
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { REPO_DIR } from './harness.ts';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
}

const TOP = 30;

function frameKey(frame: CallFrame): string {
  const name = frame.functionName === '' ? '(anonymous)' : frame.functionName;
  if (frame.url === '') return name;
  let where = frame.url.startsWith('file://') ? relative(REPO_DIR, new URL(frame.url).pathname) : frame.url;
  const nodeModules = where.lastIndexOf('node_modules/');
  if (nodeModules !== -1) where = where.slice(nodeModules + 'node_modules/'.length);
  return `${name}  ${where}:${frame.lineNumber + 1}`;
}

/** One summary over `files` (the windows of one server), samples summed. */
export function summariseProfile(files: string[]): string {
  const self = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let totalSamples = 0;
  let totalMs = 0;
  for (const file of files) {
    const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
    const byId = new Map(profile.nodes.map((node) => [node.id, node]));
    totalSamples += profile.samples.length;
    totalMs += (profile.endTime - profile.startTime) / 1000;
    const hits = new Map<number, number>();
    for (const id of profile.samples) hits.set(id, (hits.get(id) ?? 0) + 1);

    // Depth-first with the keys already on the stack, so a recursive function counts once.
    const subtreeHits = (node: ProfileNode, onStack: Set<string>): number => {
      const key = frameKey(node.callFrame);
      const own = hits.get(node.id) ?? 0;
      self.set(key, (self.get(key) ?? 0) + own);
      const isNew = !onStack.has(key);
      if (isNew) onStack.add(key);
      let total = own;
      for (const childId of node.children ?? []) total += subtreeHits(byId.get(childId)!, onStack);
      if (isNew) {
        onStack.delete(key);
        inclusive.set(key, (inclusive.get(key) ?? 0) + total);
      }
      return total;
    };
    subtreeHits(profile.nodes[0]!, new Set());
  }
  const msPerSample = totalSamples === 0 ? 0 : totalMs / totalSamples;
  const file = `${files.length} window(s) of ${basename(dirname(files[0] ?? ''))}`;

  // Percentages are of the busy samples: a server idles while its neighbours are measured.
  const idleSamples = self.get('(idle)') ?? 0;
  const busy = totalSamples - idleSamples;
  const byPackage = new Map<string, number>();
  for (const [key, count] of self) {
    if (key === '(idle)') continue;
    byPackage.set(packageOf(key), (byPackage.get(packageOf(key)) ?? 0) + count);
  }
  const lines = [
    `${basename(file)}: ${Math.round(totalMs)} ms, ${totalSamples} samples (${msPerSample.toFixed(2)} ms each), ${pct(busy, totalSamples)} busy; percentages below are of the busy samples`,
    '',
    'self time by package:',
    ...top(byPackage, busy, []).slice(0, 15),
    '',
    `top ${TOP} functions by self time:`,
    ...top(self, busy, ['(idle)', '(root)']),
    '',
    `top ${TOP} by inclusive time (src/ and perf/ only):`,
    ...top(new Map([...inclusive].filter(([key]) => /\s(src|bench)\//.test(key))), busy, []),
  ];
  return lines.join('\n');
}

/** `kysely`, `@fastify/helmet`, `src/storage`, `node:internal` ... for a frame key. */
function packageOf(key: string): string {
  const where = key.split(/\s+/).at(-1) ?? key;
  if (!where.includes(':') && !where.includes('/')) return key; // (garbage collector), (program), native
  if (where.startsWith('node:')) return 'node: (core)';
  if (where.startsWith('src/') || where.startsWith('perf/')) return where.split('/').slice(0, 2).join('/');
  const parts = where.split('/');
  return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
}

function pct(count: number, total: number): string {
  return `${total === 0 ? 0 : ((100 * count) / total).toFixed(1)}%`;
}

function top(counts: Map<string, number>, total: number, skip: string[]): string[] {
  return [...counts]
    .filter(([key]) => !skip.includes(key))
    .sort((a, b) => b[1] - a[1])
    .slice(0, TOP)
    .map(([key, count]) => `  ${pct(count, total).padStart(6)}  ${key}`);
}

function profilesUnder(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path).flatMap((entry) => {
    const full = join(path, entry);
    return statSync(full).isDirectory() ? profilesUnder(full) : entry.endsWith('.cpuprofile') ? [full] : [];
  });
}

/**
 * Writes one `.txt` summary per server (a folder of profiles under `root`) into `outDir`
 * (default: `root`), and prints the head of each.
 */
export function summariseProfiles(root: string, outDir = root): void {
  const byServer = new Map<string, string[]>();
  for (const file of profilesUnder(root)) byServer.set(dirname(file), [...(byServer.get(dirname(file)) ?? []), file]);
  for (const [dir, files] of byServer) {
    const summary = summariseProfile(files);
    const name = join(outDir, `${basename(dir)}.txt`);
    writeFileSync(name, `${summary}\n`);
    process.stdout.write(`\n${summary.split('\n').slice(0, 16).join('\n')}\n  (full: ${relative(REPO_DIR, name)})\n`);
  }
}

if (import.meta.main) {
  const target = process.argv[2];
  if (target === undefined) throw new Error('usage: node perf/profile-summary.ts <profile or folder>');
  summariseProfiles(target);
}
