/**
 * `npm start`'s entry. Plain JavaScript on purpose: Node strips TypeScript's types with a
 * WebAssembly build of SWC that, once loaded, stays resident (about 18 MB in every process). With
 * Node's compile cache on before the first TypeScript module is imported, a warm start reads the
 * stripped modules (and V8's code cache) from disk and never loads that compiler. The cache is
 * keyed by each file's content, so an edited file is stripped afresh.
 *
 * The cache lives inside the installation (node_modules/.cache), not in a shared temporary
 * directory another local user could write to first; NODE_COMPILE_CACHE moves it (for example
 * when the installation is read-only) and NODE_DISABLE_COMPILE_CACHE=1 turns it off. If the
 * directory cannot be written, Node runs without the cache.
 */
import { accessSync, constants, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import cluster from 'node:cluster';
import module from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The oldest Node.js Gatehouse runs on: native TypeScript, `node:sqlite` and the compile cache. */
export const MINIMUM_NODE_MAJOR = 24;

/**
 * Why this Node.js cannot run Gatehouse (and what to run instead), or null when it can. `command`
 * is what the person typed, as npm would run it with the Node.js 24 it installs
 * (`npx gatehouse`, `npm start`).
 */
export function unsupportedNodeMessage(version, command) {
  const major = Number.parseInt(String(version).replace(/^v/, ''), 10);
  if (Number.isInteger(major) && major >= MINIMUM_NODE_MAJOR) return null;
  return (
    `Gatehouse needs Node.js ${MINIMUM_NODE_MAJOR} or later; this is Node.js ${version}.\n` +
    `Run it through npm, which uses the Node.js ${MINIMUM_NODE_MAJOR} that \`npm install\` put in node_modules: \`${command}\`.\n`
  );
}

/** Stops the process with that message (exit code 1) on an older Node.js; call before anything else. */
export function requireSupportedNode(command) {
  const message = unsupportedNodeMessage(process.version, command);
  if (message === null) return;
  process.stderr.write(message);
  process.exit(1);
}

/**
 * The Node.js flags `npm start` runs the server with (package.json's start script; a test keeps the
 * two the same): V8's young generation capped at 8 MB a semi-space. Without the cap V8 sizes it
 * from the machine's memory (64 MB a semi-space on 24 GiB), and a busy process keeps what it grew
 * to: an import of 400,000 users peaked at 226–310 MB without it, 184 MB with it, in no more time
 * (perf/analysis.md).
 */
export const START_NODE_FLAGS = Object.freeze(['--max-semi-space-size=8']);

/** The `gatehouse` commands that run long or over large inputs, which the bin runs with START_NODE_FLAGS (`serve` is also the bare `gatehouse`). */
export const COMMANDS_WITH_START_FLAGS = Object.freeze(['serve', 'import', 'export']);

/** A flag's name as Node reads it: `--max_semi_space_size=4` and `"--max-semi-space-size=4"` (quoted in NODE_OPTIONS) are `--max-semi-space-size`. */
const flagName = (flag) => flag.replace(/^["']|["']$/g, '').split('=')[0].replaceAll('_', '-');

/** Every flag the process was given: its command line's and NODE_OPTIONS'. */
const givenFlags = (execArgv, env) => [...execArgv, ...(env.NODE_OPTIONS ?? '').split(/\s+/).filter(Boolean)].map(flagName);

/**
 * The command line to run this process again with the START_NODE_FLAGS it was started without
 * (`npx gatehouse import …`, a process manager's `node src/cli/gatehouse.js serve`), or null when it
 * has them all. A flag the operator gave, on the command line or in NODE_OPTIONS, with any value, is
 * theirs: it is not added again.
 */
export function restartArguments(argv = process.argv, execArgv = process.execArgv, env = process.env) {
  const given = new Set(givenFlags(execArgv, env));
  const missing = START_NODE_FLAGS.filter((flag) => !given.has(flagName(flag)));
  return missing.length === 0 ? null : [argv[0], ...missing, ...execArgv, ...argv.slice(1)];
}

/**
 * Why this process must run as it was started rather than replaced (`restartWithStartFlags`), or
 * null when it may be. `process.execve` keeps the pid, the environment, the signal dispositions and
 * descriptors 0–2; Node marks 3–16 close-on-exec at its start, so a descriptor a parent handed over
 * there (`3< users.ndjson`, a supervisor's pipe, systemd's sockets) would be lost. Node's own
 * descriptors in that range are its event loop's (anonymous inodes) and its self-pipes (both ends
 * open here); anything else was inherited. Where that cannot be read (no /proc: not Linux), the
 * process is not replaced.
 */
export function reasonToRunAsStarted(proc = process, listDescriptors = descriptorTargets) {
  if (typeof proc.execve !== 'function') return 'no execve (Windows)';
  if (proc.channel !== undefined) return 'an IPC channel (a process manager\'s fork, node --watch)';
  if (proc.permission !== undefined) return 'the permission model';
  if (givenFlags(proc.execArgv, proc.env).some((flag) => /^--(inspect|debug)/.test(flag))) return 'a debugger';
  try {
    accessSync(proc.execPath, constants.X_OK);
  } catch {
    return 'the Node.js binary is gone'; // execve would abort the process, not throw
  }
  const targets = listDescriptors();
  if (targets === null) return 'its descriptors cannot be read';
  const pipes = new Map();
  for (const target of targets.values()) if (target.startsWith('pipe:')) pipes.set(target, (pipes.get(target) ?? 0) + 1);
  for (const [descriptor, target] of targets) {
    if (descriptor < 3 || descriptor > 16 || target.startsWith('anon_inode:') || (pipes.get(target) ?? 0) >= 2) continue;
    return `descriptor ${descriptor} was inherited`;
  }
  return null;
}

/** This process's open descriptors and what each is (`/proc/self/fd`), or null where there is no such list. */
function descriptorTargets() {
  try {
    const targets = new Map();
    for (const name of readdirSync('/proc/self/fd')) {
      try {
        targets.set(Number(name), readlinkSync(`/proc/self/fd/${name}`));
      } catch {
        // Closed since it was listed (the listing's own descriptor).
      }
    }
    return targets;
  } catch {
    return null;
  }
}

/**
 * Runs this process again, in place, with the START_NODE_FLAGS it lacks, before anything else is
 * loaded or written: the same pid, standard streams, signals and exit code (`process.execve`,
 * Node 24). Where it must run as started (`reasonToRunAsStarted`), it goes on without the flags, as
 * before.
 */
export function restartWithStartFlags() {
  const args = restartArguments();
  if (args === null || reasonToRunAsStarted() !== null) return;
  try {
    process.execve(process.execPath, args, process.env);
  } catch {
    // Refused before the exec (say, an argument too long): run as started.
  }
}

const DEFAULT_CACHE_DIRECTORY = fileURLToPath(new URL('../node_modules/.cache/node-compile-cache', import.meta.url));

/** Call before importing any TypeScript module. */
export function enableCompileCache() {
  module.enableCompileCache(process.env.NODE_COMPILE_CACHE || DEFAULT_CACHE_DIRECTORY);
}

/** Where scripts/build-server.js writes the bundled server, under the project. */
export const BUNDLE_DIRECTORY = 'dist/server';
/** The bundle's list of the source files it was built from (written last: no manifest, no bundle). */
export const BUNDLE_MANIFEST = 'manifest.json';
export const BUNDLE_MANIFEST_VERSION = 1;

const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * The module to run the server from: the bundle scripts/build-server.js made (lighter and quicker
 * to start: perf/analysis.md) while every source file it was built from has the size and the
 * modification time it had then, else `src/main.ts` itself (a file edited since the last
 * `npm install` or `npm run build`, a checkout, no bundle or a broken one). GATEHOUSE_FROM_SOURCE=1
 * always runs the source. About 500 `stat` calls: a few milliseconds.
 */
export function serverEntry(root = PROJECT_ROOT, env = process.env) {
  const bundle = currentBundle(root, env);
  return bundle === null ? pathToFileURL(join(root, 'src', 'main.ts')).href : bundle.url(bundle.manifest.entry);
}

/** The bundle's manifest while the bundle is current (see `serverEntry`), with a URL maker for its files; else null. */
function currentBundle(root, env) {
  if (env.GATEHOUSE_FROM_SOURCE === '1') return null;
  const directory = join(root, BUNDLE_DIRECTORY);
  try {
    const manifest = JSON.parse(readFileSync(join(directory, BUNDLE_MANIFEST), 'utf8'));
    if (manifest?.version !== BUNDLE_MANIFEST_VERSION || typeof manifest.entry !== 'string' || manifest.inputs === null || typeof manifest.inputs !== 'object') return null;
    for (const [file, built] of Object.entries(manifest.inputs)) {
      const now = statSync(join(root, file), { throwIfNoEntry: false });
      if (now === undefined || now.size !== built?.size || now.mtimeMs !== built?.mtimeMs) return null;
    }
    const url = (file) => pathToFileURL(join(directory, file)).href;
    return isFileAt(url(manifest.entry)) ? { manifest, url } : null;
  } catch {
    // No manifest, or one that cannot be read: the source.
    return null;
  }
}

/**
 * `serverEntry()`, chosen once for a `WORKERS` cluster: the primary hands its choice to the workers
 * it forks (they inherit its environment), so a worker started or replaced after a rebuild runs
 * what the primary runs.
 */
export function processServerEntry() {
  const inherited = process.env.GATEHOUSE_SERVER_ENTRY;
  // A build folder removed since the primary started (long retired) leaves the worker the current choice, not a crash loop.
  if (cluster.isWorker && inherited && isFileAt(inherited)) return inherited;
  const entry = serverEntry();
  process.env.GATEHOUSE_SERVER_ENTRY = entry;
  return entry;
}

function isFileAt(url) {
  try {
    return statSync(fileURLToPath(url), { throwIfNoEntry: false })?.isFile() === true;
  } catch {
    return false;
  }
}

/** The bundle's chunk that `source` (`src/server.ts`) starts, when the server runs its bundle; else the source file itself. */
export function serverModule(source, root = PROJECT_ROOT, env = process.env) {
  const bundle = currentBundle(root, env);
  const chunk = bundle?.manifest.chunks?.[source];
  return typeof chunk === 'string' ? bundle.url(chunk) : pathToFileURL(join(root, source)).href;
}

// `import.meta.main` is Node 24's; on an older Node.js it is undefined, so the entry is also
// recognised by its path there, to say which Node.js is needed instead of doing nothing.
if (import.meta.main ?? process.argv[1] === fileURLToPath(import.meta.url)) {
  requireSupportedNode('npm start');
  enableCompileCache();
  const { runServer } = await import(processServerEntry());
  await runServer();
}
