/**
 * Keeps the password hasher's dummy (the unknown-address path) costing what real accounts cost:
 * after ARGON2_* changes, accounts keep their old parameters until their next sign-in, and an
 * account whose hash is 4x dearer than the dummy would stand out by its timing. Reads how many
 * stored hashes use each parameter set, at start and then hourly: a scan of `users` in short
 * slices, with a turn of the event loop between them, that ends when the server stops (and then
 * changes nothing).
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Logger } from '../lib/logger.ts';
import { createPeriodicJob } from '../lib/periodic-job.ts';
import type { UserService } from '../users/user.service.ts';
import type { PasswordHasher } from './password-hasher.ts';

const INTERVAL_MS = 60 * 60 * 1000;

export function createStoredHashParametersJob(deps: { users: UserService; hasher: PasswordHasher; logger: Logger }) {
  const { users, hasher, logger } = deps;
  const job = createPeriodicJob({
    name: 'stored hash parameters',
    intervalMs: INTERVAL_MS,
    firstDelayMs: 0,
    logger,
    run: async () => {
      const mix = await users.countPasswordHashParameters({ between: () => nextTurn(), shouldStop: () => job.isStopped });
      if (mix !== null) await hasher.useStoredParameters(mix);
      return mix;
    },
  });
  return job;
}
