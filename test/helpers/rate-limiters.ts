/**
 * Inside a `describe`: storage-backed rate limiters (no Redis) on a database of their own on
 * `backend`, made before the tests and closed and dropped after. Read `storage` and `limiters`
 * inside a test.
 */
import { after, before } from 'node:test';
import type { Backend, TestDatabase } from './databases.ts';
import { openStorage, type Storage } from '../../src/storage/database.ts';
import { migrateToLatest } from '../../src/modules.ts';
import { createRateLimiters, type RateLimiters } from '../../src/http/rate-limit.ts';
import { silentLogger } from '../../src/lib/logger.ts';
import type { Clock } from '../../src/lib/clock.ts';

export function useStorageRateLimiters(backend: Backend, clock: Clock): { readonly storage: Storage; readonly limiters: RateLimiters } {
  let database: TestDatabase | undefined;
  let storage: Storage | undefined;
  let limiters: RateLimiters | undefined;
  before(async () => {
    database = await backend.create();
    storage = openStorage(database.config);
    await migrateToLatest(storage.db);
    limiters = await createRateLimiters({ db: storage.db, clock, logger: silentLogger, redisUrl: null });
  });
  after(async () => {
    await limiters?.close();
    await storage?.close();
    await database?.drop();
  });
  return {
    get storage() {
      if (storage === undefined) throw new Error('useStorageRateLimiters: built in `before`; use it inside a test');
      return storage;
    },
    get limiters() {
      if (limiters === undefined) throw new Error('useStorageRateLimiters: built in `before`; use it inside a test');
      return limiters;
    },
  };
}
