/**
 * Fills Node's compile cache when the project is installed (`npm install` and `npm ci` run it from
 * the `prepare` script), so the first `npx gatehouse …` or `npm start` after an install is as quick
 * as the later ones: without it, that first run strips the types of every TypeScript file it loads
 * and compiles them (about twice the time: issue 38 asks for a first run within 2 s).
 *
 * It loads (never runs) what the server and the `gatehouse` command load: the server's bundle
 * (scripts/build-server.js; the source when there is none), the entries, every
 * module, the code of every command group and what services load at their first call, with the same cache `src/start.js` and
 * `src/cli/gatehouse.js` turn on (NODE_COMPILE_CACHE moves it; NODE_DISABLE_COMPILE_CACHE=1 turns
 * it off, and this script then does nothing). Plain JavaScript, like those entries. A failure here
 * never fails the install: the cache is only a speed-up, and the first run fills it anyway.
 */
import { readFileSync } from 'node:fs';
import { BUNDLE_DIRECTORY, BUNDLE_MANIFEST, enableCompileCache, serverModule, unsupportedNodeMessage } from '../src/start.js';

/** What the server imports before its first request (src/main.ts imports the server when the config is read). */
const SERVER_ENTRIES = ['src/main.ts', 'src/server.ts'];

/** What the server and the command import before their first request or command runs. */
const ENTRIES = ['../src/main.ts', '../src/server.ts', '../src/app.ts', '../src/cli/main.ts', '../src/cli/context.ts'];

async function warm() {
  enableCompileCache();
  // The server as `npm start` runs it: its bundle (scripts/build-server.js runs first) where it has one.
  for (const entry of SERVER_ENTRIES) await import(serverModule(entry));
  for (const entry of ENTRIES) await import(new URL(entry, import.meta.url).href);
  // Each command group's code, as running one of its commands loads it (the core's and the modules').
  const { findModuleCliGroups } = await import('../src/cli/main.ts');
  for (const core of ['../src/cli/migrate.ts', '../src/cli/backup.ts', '../src/cli/doctor.ts']) await import(new URL(core, import.meta.url).href);
  for (const group of await findModuleCliGroups()) await group.load();
  // The code a service loads at its first call (src/lib/deferred-service.ts), which a command that
  // calls it imports from source: every source file the server's bundle was built from.
  for (const source of bundledSources()) await import(new URL(`../${source}`, import.meta.url).href);
}

/** The TypeScript files the server's bundle lists as its inputs (its manifest, scripts/build-server.js); none without one. */
function bundledSources() {
  try {
    const manifest = JSON.parse(readFileSync(new URL(`../${BUNDLE_DIRECTORY}/${BUNDLE_MANIFEST}`, import.meta.url), 'utf8'));
    return Object.keys(manifest.inputs ?? {}).filter((file) => file.endsWith('.ts'));
  } catch {
    return [];
  }
}

// Another Node.js (an `npm install` run outside npm's PATH, say) has no compile cache to fill.
if (process.env.NODE_DISABLE_COMPILE_CACHE !== '1' && unsupportedNodeMessage(process.version, '') === null) {
  const started = performance.now();
  try {
    await warm();
    process.stderr.write(`gatehouse: compile cache filled in ${Math.round(performance.now() - started)} ms\n`);
  } catch (error) {
    process.stderr.write(`gatehouse: the compile cache was not filled (the first run will fill it): ${error instanceof Error ? error.message : String(error)}\n`);
  }
}
