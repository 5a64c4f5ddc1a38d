/**
 * Finding: "REDIS_URL naming a database that does not exist logs an error, then silently uses
 * database 0". Start-up must refuse it; an unreachable Redis must not stop the start (the limits
 * count in memory until it is back).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { ConfigError } from '../config.ts';
import { loadConfig } from '../modules.ts';
import { systemClock } from '../lib/clock.ts';
import { openStorage, type Storage } from '../storage/database.ts';
import { createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { freePort } from '../../test/helpers/process.ts';
import { redisSkip, startRedis, stopRedis } from '../../test/helpers/redis.ts';
import { createLogger } from './logging.ts';
import { createRateLimiters } from './rate-limit.ts';

describe('REDIS_URL naming a database that does not exist is refused at start', { skip: redisSkip }, () => {
  let database: TestDatabase;
  let storage: Storage;
  let redis: ChildProcess;
  let redisPort: number;
  let deps: Omit<Parameters<typeof createRateLimiters>[0], 'redisUrl'>;

  before(async () => {
    database = await createSqliteDatabase();
    const config = loadConfig({ NODE_ENV: 'test', AUTH_SECRET: 'a-test-secret-that-is-long-enough-0123456789', DATABASE_URL: database.url, LOG_LEVEL: 'silent' });
    storage = openStorage(config.database);
    deps = { db: storage.db, clock: systemClock, logger: createLogger(config) };
    redisPort = await freePort();
    redis = await startRedis(redisPort);
  });
  after(async () => {
    if (redis) await stopRedis(redis);
    await storage?.close();
    await database?.drop();
  });

  it('refuses database 99 with a ConfigError that names REDIS_URL, not the URL', async () => {
    const limiters = await createRateLimiters({ ...deps, redisUrl: `redis://:s3cret-pass@127.0.0.1:${redisPort}/99` });
    await assert.rejects(limiters.start(), (error: unknown) => {
      assert.ok(error instanceof ConfigError, String(error));
      assert.match(error.message, /REDIS_URL/);
      assert.match(error.message, /DB index is out of range/);
      assert.doesNotMatch(error.message, /s3cret-pass/);
      return true;
    });
  });

  it('accepts a database that exists', async () => {
    const limiters = await createRateLimiters({ ...deps, redisUrl: `redis://127.0.0.1:${redisPort}/2` });
    await limiters.start();
    await limiters.close();
  });

  it('starts when Redis cannot be reached (a closed port)', async () => {
    const limiters = await createRateLimiters({ ...deps, redisUrl: `redis://127.0.0.1:${await freePort()}/0` });
    await limiters.start();
    await limiters.close();
  });

  it('starts, after a bounded wait, when Redis accepts connections but never answers', async () => {
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as { port: number };
    try {
      const limiters = await createRateLimiters({ ...deps, redisUrl: `redis://127.0.0.1:${port}/0` });
      await limiters.start();
      await limiters.close();
    } finally {
      silent.close();
    }
  });
});
