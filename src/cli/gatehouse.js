#!/usr/bin/env node
/**
 * The `gatehouse` command's entry (the package's `bin`). Plain JavaScript for the reason
 * src/start.js is: Node's compile cache goes on before the first TypeScript module loads, so a
 * warm run reads the stripped modules from disk instead of loading Node's type-stripping compiler
 * (WebAssembly) first. `gatehouse help` and `--version` took about 290 ms through src/cli/main.ts
 * directly and take about 115 ms this way (Node alone starts in about 75 ms). The command itself
 * is src/cli/main.ts, which still runs on its own (`node src/cli/main.ts …`).
 */
import { COMMANDS_WITH_START_FLAGS, enableCompileCache, processServerEntry, requireSupportedNode, restartWithStartFlags } from '../start.js';

// Run with an older Node.js (the machine's own, say) it says which one it needs, not a TypeError.
requireSupportedNode('npx gatehouse');
const args = process.argv.slice(2);
// The server and the commands over large inputs run with `npm start`'s Node.js flags: the process
// is replaced by itself with them, before it loads anything (src/start.js).
if (COMMANDS_WITH_START_FLAGS.includes(args[0] ?? 'serve')) restartWithStartFlags();
enableCompileCache();
if (args.length === 0 || (args.length === 1 && args[0] === 'serve')) {
  // `gatehouse serve` is the server as `npm start` runs it (its bundle while current), without the command's own code.
  const { runServer } = await import(processServerEntry());
  await runServer();
} else {
  const { runCli } = await import('./main.ts');
  process.exitCode = await runCli(args, { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr });
}
