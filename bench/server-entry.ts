/**
 * Gatehouse as `npm start` runs it (src/main.ts `runServer`: config from the environment, storage,
 * migrations, `WORKERS` cluster), with the bench's event-loop probe loaded first. `node:cluster`
 * forks workers from this same file, so every worker carries the probe too.
 */
import './probe.ts';
import { runServer } from '../src/main.ts';

await runServer();
