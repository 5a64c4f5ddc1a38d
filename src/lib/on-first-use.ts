import { createRequire } from 'node:module';

/**
 * A library loaded when it is first used rather than when the module that needs it is imported, so
 * that a start which never uses it never holds it (idle memory is a budget: perf/analysis.md). The
 * loader keeps what it loaded; `from` is the caller's `import.meta.url` (where `name` is resolved).
 * test/start-footprint.test.ts checks that the start loads none of these libraries.
 */
export function onFirstUse<T>(from: string | URL, name: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= createRequire(from)(name) as T);
}
