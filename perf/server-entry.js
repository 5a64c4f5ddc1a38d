/**
 * Gatehouse as `npm start` runs it (src/start.js: the compile cache on, then `runServer`, from the
 * server's bundle, which `npm run bench` builds first, or from src/main.ts when that is stale:
 * config from the environment, storage, migrations, `WORKERS` cluster), with the bench's
 * event-loop probe loaded first. `node:cluster` forks workers from this same file, so every
 * worker carries the probe too. JavaScript for the same reason as src/start.js.
 */
import { enableCompileCache, processServerEntry } from '../src/start.js';

enableCompileCache();
await import('./probe.ts');
const { runServer } = await import(processServerEntry());
await runServer();
