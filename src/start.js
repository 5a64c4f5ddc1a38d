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

const DEFAULT_CACHE_DIRECTORY = fileURLToPath(new URL('../node_modules/.cache/node-compile-cache', import.meta.url));

/** Call before importing any TypeScript module. */
export function enableCompileCache() {
  module.enableCompileCache(process.env.NODE_COMPILE_CACHE || DEFAULT_CACHE_DIRECTORY);
}

if (import.meta.main) {
  enableCompileCache();
  const { runServer } = await import('./main.ts');
  await runServer();
}
