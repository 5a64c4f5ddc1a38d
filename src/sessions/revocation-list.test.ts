import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { openStorage, type Storage } from '../storage/database.ts';
import { migrateToLatest } from '../modules.ts';
import { UnavailableError } from '../errors.ts';
import { createRevocationList } from './revocation-list.ts';

describe('revocation list', () => {
  let database: TestDatabase;
  let storage: Storage;
  before(async () => {
    const [sqlite] = await backends();
    database = await sqlite!.create();
    storage = openStorage(database.config);
    await migrateToLatest(storage.db);
  });
  after(async () => {
    await storage?.close().catch(() => {});
    await database?.drop();
  });

  it('drops entries once the tokens they revoke have expired', async () => {
    let now = 1_000_000;
    const list = createRevocationList({ db: storage.db, clock: () => now, syncIntervalMs: 60_000, staleAfterMs: 60_000 });
    await list.add(storage.db, 'session-a', now + 1_000);
    await list.add(storage.db, 'session-b', now + 5_000);
    await list.start();
    try {
      assert.equal(list.isRevoked('session-a'), true);
      assert.equal(list.isRevoked('session-c'), false);
      now += 2_000;
      await list.sync();
      assert.equal(list.isRevoked('session-a'), false, 'its tokens are all expired: nothing left to refuse');
      assert.equal(list.isRevoked('session-b'), true);
    } finally {
      list.stop();
    }
  });

  it('fails closed when it cannot hear from storage for longer than staleAfterMs', async () => {
    const list = createRevocationList({ db: storage.db, clock: () => Date.now(), syncIntervalMs: 20, staleAfterMs: 100 });
    await list.start();
    try {
      assert.equal(list.isRevoked('anything'), false);
      await storage.close();
      await sleep(200);
      assert.throws(() => list.isRevoked('anything'), UnavailableError);
    } finally {
      list.stop();
    }
  });
});
