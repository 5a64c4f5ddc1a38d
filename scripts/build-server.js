/**
 * Builds the server `npm start` runs: Gatehouse's own source (from src/main.ts: src/ and the route
 * rules it shares with packages/protect) bundled by esbuild into chunks under dist/server/, the
 * npm packages left as they are (imported from node_modules at run time, as from source). `npm
 * install`, `npm ci`, `npm test` and `npm run bench` run it.
 *
 * Why: a process that loads our ~500 source files one by one keeps, for each, a module record, its
 * loader state, its type-stripped source (comments and all) and its compile-cache entry; the same
 * code in chunks idles about 10 MB lighter and starts about a fifth sooner (perf/analysis.md,
 * issue 38 part 3). Identifiers are not minified and `keepNames` holds every function's and
 * class's `name`, so stack traces and error names read as in the source; the `.map` files map
 * their places back (`node --enable-source-maps`).
 *
 * What the source reads beside itself (templates, catalogs, the password-strength worker, packages
 * through `createRequire`) it finds through `import.meta`. Each file's `import.meta` becomes, in the
 * bundle, an object that names the source file (found from the chunk's own place at run time), so
 * those files are still read from src/. An `import()` or `require()` of a computed name, which would
 * resolve from dist/server/ instead, fails the build.
 *
 * A build goes to a folder named by its content's hash, so an unchanged source builds the same
 * folder (and Node's compile cache keeps its entries). The manifest, replaced last and at once,
 * names the folder and lists every source file with its size and modification time as they were
 * before esbuild read them: `src/start.js` runs the bundle only while they are all unchanged, and
 * the source otherwise (a file edited since, a checkout, a failed build). A file changed while the
 * build read it fails the build. Earlier folders stay while they are recent (an instance started
 * before an upgrade imports its lazy chunks from its own). A failure never fails the install,
 * except under CI, where it must not pass unnoticed: the server then runs from source.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUNDLE_DIRECTORY, BUNDLE_MANIFEST, BUNDLE_MANIFEST_VERSION, unsupportedNodeMessage } from '../src/start.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = join(ROOT, BUNDLE_DIRECTORY);
/** A build folder other than the current and the previous one is removed once it has been retired this long. */
export const KEEP_RETIRED_MS = 24 * 60 * 60 * 1000;
/** Files the bundle depends on that esbuild does not read as modules (package.json's `sideEffects` among them). */
const BUILD_INPUTS = ['scripts/build-server.js', 'package.json', 'tsconfig.json', 'packages/protect/package.json'];
/** The parts of `import.meta` the bundle gives each file (importMetaOf); any other would be undefined there. */
const IMPORT_META_PARTS = /__gatehouseImportMeta(?!\.(?:url|dirname|filename|main)\b)/;

/** Each chunk finds the project from its own place (dist/server/<build>/ → ../../..). */
const BANNER = [
  "import { fileURLToPath as __gatehouseToPath, pathToFileURL as __gatehouseToUrl } from 'node:url';",
  "import { join as __gatehouseJoin } from 'node:path';",
  "const __gatehouseRoot = __gatehouseToPath(new URL('../../../', import.meta.url));",
].join(' ');

const posix = (path) => relative(ROOT, path).split(sep).join('/');

/** The `import.meta` of `path`, as it is when the source runs: every part named from the project's place at run time. */
function importMetaOf(path) {
  const fromRoot = (target) => `__gatehouseJoin(__gatehouseRoot, ${posix(target).split('/').map((part) => JSON.stringify(part)).join(', ')})`;
  const file = fromRoot(path);
  const directory = fromRoot(dirname(path));
  // On the file's first line (no line break), so the source map's lines stay the file's.
  return `const __gatehouseImportMeta = { dirname: ${directory}, filename: ${file}, url: __gatehouseToUrl(${file}).href, main: false }; `;
}

/** Loads our files: their size and time before reading (for the manifest), `import.meta` made the source's. */
function sourceFiles(esbuild, seen) {
  return {
    name: 'gatehouse-source',
    setup(build) {
      build.onLoad({ filter: /\.[cm]?[jt]s$/ }, async (args) => {
        if (args.path.includes(`${sep}node_modules${sep}`)) return undefined;
        const before = await stat(args.path);
        seen.set(posix(args.path), { size: before.size, mtimeMs: before.mtimeMs });
        const text = await readFile(args.path, 'utf8');
        // A syntax-aware rewrite: strings and comments that mention import.meta are left as they are.
        const { code } = await esbuild.transform(text, {
          loader: /\.[cm]?ts$/.test(args.path) ? 'ts' : 'js',
          format: 'esm',
          target: 'node24',
          define: { 'import.meta': '__gatehouseImportMeta' },
          sourcefile: args.path,
          sourcemap: 'inline',
          // As Node runs the source: every import kept as written (a type-only one says `import type`), class fields as defined.
          tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true, useDefineForClassFields: true } },
        });
        if (!code.includes('__gatehouseImportMeta')) return { contents: code, loader: 'js' };
        if (IMPORT_META_PARTS.test(code)) throw new Error(`${posix(args.path)} uses a part of import.meta the bundle does not give (only url, dirname, filename and main)`);
        // After a hashbang line, which must stay the first.
        const hashbang = /^#!.*\n/.exec(code)?.[0] ?? '';
        return { contents: hashbang + importMetaOf(args.path) + code.slice(hashbang.length), loader: 'js' };
      });
    },
  };
}

/**
 * A cycle of static imports among the bundled files, or null. Node evaluates such a cycle in an
 * order esbuild's chunks need not reproduce (evanw/esbuild#399), so the server would run
 * differently bundled; the source has none, and a new one fails the build instead. Outside cycles
 * esbuild may still run a chunk's imported chunks before modules Node would have run first; that
 * is accepted because no module of the server changes shared state when it is loaded (its
 * top-level code declares; the start's work is in functions main.ts calls).
 */
function importCycle(inputs) {
  const state = new Map();
  const path = [];
  const visit = (file) => {
    if (state.get(file) === 'done') return null;
    if (state.get(file) === 'open') return [...path.slice(path.indexOf(file)), file];
    state.set(file, 'open');
    path.push(file);
    for (const { path: next, kind, external } of inputs[file]?.imports ?? []) {
      if (external || kind !== 'import-statement' || !(next in inputs)) continue;
      const found = visit(next);
      if (found !== null) return found;
    }
    path.pop();
    state.set(file, 'done');
    return null;
  };
  for (const file of Object.keys(inputs)) {
    const found = visit(file);
    if (found !== null) return found;
  }
  return null;
}

/** A hash of every file a build wrote (paths and contents): the build's folder name. */
function contentHash(directory) {
  const hash = createHash('sha256');
  for (const name of readdirSync(directory).sort()) hash.update(name).update('\0').update(readFileSync(join(directory, name))).update('\0');
  return hash.digest('hex').slice(0, 16);
}

/** The current manifest's build folder, and the one before it, if any: neither is removed by the next build. */
function manifestBuilds() {
  try {
    const manifest = JSON.parse(readFileSync(join(OUT, BUNDLE_MANIFEST), 'utf8'));
    return { current: manifest.entry.split('/')[0], previous: typeof manifest.previous === 'string' ? manifest.previous : undefined };
  } catch {
    return { current: undefined, previous: undefined };
  }
}

/**
 * Which build the new manifest names as the one before `folder`: the build that was current until
 * now, or, when the same source built the same folder again, the one that was before it (so a
 * second `npm ci` or `npm test` before a restart keeps what a running instance loads from).
 */
export function previousBuild(builds, folder) {
  return builds.current !== undefined && builds.current !== folder ? builds.current : builds.previous;
}

/**
 * Removes from `directory` the build folders (and build leftovers) that are neither in `kept` nor
 * retired less than KEEP_RETIRED_MS ago. A folder's modification time says when it stopped being
 * current (the build that retires one touches it). Never fails a build: a folder another build
 * removed meanwhile is simply gone.
 */
export function removeOldBuilds(directory, kept, now = Date.now()) {
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    if (kept.includes(entry.name) || entry.name === BUNDLE_MANIFEST) continue;
    const path = join(directory, entry.name);
    try {
      if (now - statSync(path).mtimeMs > KEEP_RETIRED_MS) rmSync(path, { recursive: true, force: true });
    } catch {
      // Removed by another build meanwhile, or not ours to remove: left for the next build.
    }
  }
}

async function build() {
  const esbuild = await import('esbuild');
  const builds = manifestBuilds();
  const seen = new Map();
  for (const file of BUILD_INPUTS) {
    const { size, mtimeMs } = statSync(join(ROOT, file));
    seen.set(file, { size, mtimeMs });
  }
  const scratch = join(OUT, `.building-${process.pid}`);
  rmSync(scratch, { recursive: true, force: true });
  mkdirSync(scratch, { recursive: true });
  try {
    const result = await esbuild.build({
      absWorkingDir: ROOT,
      entryPoints: { main: 'src/main.ts' },
      outdir: scratch,
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      target: 'node24',
      packages: 'external',
      minifyWhitespace: true,
      minifySyntax: true,
      keepNames: true,
      sourcemap: 'linked',
      sourcesContent: false,
      banner: { js: BANNER },
      // What src/lib/runs-from.ts reads: the start's log line says the server runs its bundle.
      define: { __GATEHOUSE_BUNDLE__: 'true' },
      plugins: [sourceFiles(esbuild, seen)],
      metafile: true,
      logLevel: 'silent',
      // An import() or require() of a computed name would be left to resolve from dist/server/ at run time: refused.
      logOverride: { 'unsupported-dynamic-import': 'error', 'unsupported-require-call': 'error' },
    });
    const warnings = result.warnings.map((warning) => `${warning.location?.file ?? ''}: ${warning.text}`);
    if (warnings.length > 0) throw new Error(`esbuild warned:\n${warnings.join('\n')}`);
    const cycle = importCycle(result.metafile.inputs);
    if (cycle !== null) throw new Error(`an import cycle, whose evaluation order a bundle need not keep: ${cycle.join(' → ')}`);
    const inputs = {};
    for (const file of [...Object.keys(result.metafile.inputs), ...BUILD_INPUTS].sort()) {
      if (file.includes('node_modules')) throw new Error(`a package was bundled: ${file}`);
      const before = seen.get(file);
      if (before === undefined) throw new Error(`${file} was bundled without being recorded`);
      const after = statSync(join(ROOT, file));
      if (after.size !== before.size || after.mtimeMs !== before.mtimeMs) throw new Error(`${file} changed while it was bundled; build again`);
      inputs[file] = before;
    }
    const folder = contentHash(scratch);
    if (existsSync(join(OUT, folder))) rmSync(scratch, { recursive: true, force: true });
    else {
      try {
        renameSync(scratch, join(OUT, folder));
      } catch (error) {
        // Another build of the same source got there first: the same files.
        if (!['ENOTEMPTY', 'EEXIST'].includes(error?.code)) throw error;
      }
    }
    // Each source file that starts a chunk (the entry, and every one imported with `import()`): the chunk, for the install step to compile.
    const chunks = {};
    for (const [output, { entryPoint }] of Object.entries(result.metafile.outputs)) {
      if (entryPoint !== undefined) chunks[entryPoint] = `${folder}/${relative(scratch, join(ROOT, output)).split(sep).join('/')}`;
    }
    if (chunks['src/main.ts'] === undefined) throw new Error('no chunk for src/main.ts');
    const previous = previousBuild(builds, folder);
    const manifest = { version: BUNDLE_MANIFEST_VERSION, entry: chunks['src/main.ts'], ...(previous !== undefined && { previous }), chunks, inputs };
    const temporary = join(OUT, `${BUNDLE_MANIFEST}.${process.pid}.tmp`);
    writeFileSync(temporary, `${JSON.stringify(manifest)}\n`);
    renameSync(temporary, join(OUT, BUNDLE_MANIFEST));
    // The folder that stops being current now is retired now: touched, it stays at least KEEP_RETIRED_MS.
    const touch = (name) => {
      try {
        const now = new Date();
        utimesSync(join(OUT, name), now, now);
      } catch {
        // Gone already: nothing to keep.
      }
    };
    touch(folder);
    if (builds.current !== undefined && builds.current !== folder) touch(builds.current);
    removeOldBuilds(OUT, [folder, ...(previous !== undefined ? [previous] : [])]);
    return { files: Object.keys(inputs).length, chunks: readdirSync(join(OUT, folder)).filter((name) => name.endsWith('.js')).length };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

// Another Node.js (an `npm install` run outside npm's PATH, say) cannot run the server anyway.
if (import.meta.main && unsupportedNodeMessage(process.version, '') === null) {
  const started = performance.now();
  try {
    const { files, chunks } = await build();
    process.stderr.write(`gatehouse: server bundled from ${files} files into ${chunks} chunks in ${Math.round(performance.now() - started)} ms\n`);
  } catch (error) {
    // No manifest, no bundle: src/start.js runs the source (the folders of earlier builds stay for a server still running one).
    rmSync(join(OUT, BUNDLE_MANIFEST), { force: true });
    process.stderr.write(`gatehouse: the server was not bundled (npm start runs it from source): ${error instanceof Error ? error.message : String(error)}\n`);
    if (process.env.CI && process.env.CI !== 'false') process.exitCode = 1;
  }
}
