/**
 * Gatehouse as `npm start` runs it (src/start.js: the compile cache on, then src/main.ts
 * `runServer`: config from the environment, storage, migrations, `WORKERS` cluster), with the
 * bench's event-loop probe loaded first. `node:cluster` forks workers from this same file, so every
 * worker carries the probe too. JavaScript for the same reason as src/start.js.
 */
import { enableCompileCache } from '../src/start.js';

enableCompileCache();
await import('./probe.ts');
const { runServer } = await import('../src/main.ts');
await runServer();
