#!/usr/bin/env node
/**
 * The `gatehouse` command's entry (the package's `bin`). Plain JavaScript for the reason
 * src/start.js is: Node's compile cache goes on before the first TypeScript module loads, so a
 * warm run reads the stripped modules from disk instead of loading Node's type-stripping compiler
 * (WebAssembly) first. `gatehouse help` and `--version` took about 290 ms through src/cli/main.ts
 * directly and take about 115 ms this way (Node alone starts in about 75 ms). The command itself
 * is src/cli/main.ts, which still runs on its own (`node src/cli/main.ts …`).
 */
import { enableCompileCache } from '../start.js';

enableCompileCache();
const { runCli } = await import('./main.ts');
process.exitCode = await runCli(process.argv.slice(2), { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr });
