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
import module from 'node:module';
import { fileURLToPath } from 'node:url';

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

const DEFAULT_CACHE_DIRECTORY = fileURLToPath(new URL('../node_modules/.cache/node-compile-cache', import.meta.url));

/** Call before importing any TypeScript module. */
export function enableCompileCache() {
  module.enableCompileCache(process.env.NODE_COMPILE_CACHE || DEFAULT_CACHE_DIRECTORY);
}

// `import.meta.main` is Node 24's; on an older Node.js it is undefined, so the entry is also
// recognised by its path there, to say which Node.js is needed instead of doing nothing.
if (import.meta.main ?? process.argv[1] === fileURLToPath(import.meta.url)) {
  requireSupportedNode('npm start');
  enableCompileCache();
  const { runServer } = await import('./main.ts');
  await runServer();
}
