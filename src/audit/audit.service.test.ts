import { describe, it, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { openStorage, type Storage } from '../storage/database.ts';
import { migrateToLatest } from '../modules.ts';
import type { Logger } from '../lib/logger.ts';
import { createAuditService, SYSTEM_SOURCE, type AuditService } from './audit.service.ts';
import { createAuditRetentionJob } from './audit-retention.ts';

const DAY_MS = 86_400_000;

/** A clock tests move by hand. */
function fakeClock(start = 1_700_000_000_000) {
  let now = start;
  return Object.assign(() => now, {
    advance(ms: number) {
      now += ms;
    },
    set(ms: number) {
      now = ms;
    },
  });
}

/** A logger that keeps what it is told. */
function recordingLogger() {
  const lines: Array<{ level: string; details: object; message: string }> = [];
  const logger: Logger = {
    error: (details, message) => lines.push({ level: 'error', details, message }),
    warn: (details, message) => lines.push({ level: 'warn', details, message }),
    info: (details, message) => lines.push({ level: 'info', details, message }),
  };
  return Object.assign(logger, { lines });
}

for (const backend of await backends()) {
  describe(`audit log on ${backend.name}`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let storage: Storage;
    let audit: AuditService;
    const clock = fakeClock();
    const logger = recordingLogger();

    before(async () => {
      database = await backend.create();
      storage = openStorage(database.config);
      await migrateToLatest(storage.db);
      audit = createAuditService({ db: storage.db, clock, logger });
    });
    after(async () => {
      await storage?.close();
      await database?.drop();
    });
    beforeEach(async () => {
      await storage.db.deleteFrom('audit_events').execute();
      logger.lines.length = 0;
    });

    it('records an event with its source, reason and details, and reads it back', async () => {
      await audit.record({
        type: 'user.roles_changed',
        userId: 'user-1',
        source: { actorUserId: 'admin-1', ip: '203.0.113.9', userAgent: 'curl/8', via: 'cli' },
        reason: 'SOME_REASON',
        details: { before: ['A'], after: ['A', 'B'] },
      });
      const { events, next } = await audit.listEvents({ limit: 10 });
      assert.equal(next, null);
      assert.equal(events.length, 1);
      const { id, ...rest } = events[0]!;
      assert.match(id, /^[\w-]{22}$/);
      assert.deepEqual(rest, {
        type: 'user.roles_changed',
        userId: 'user-1',
        actorUserId: 'admin-1',
        email: null,
        ip: '203.0.113.9',
        userAgent: 'curl/8',
        reason: 'SOME_REASON',
        details: { before: ['A'], after: ['A', 'B'], via: 'cli' },
        createdAt: clock(),
      });
      assert.equal(typeof events[0]!.createdAt, 'number');
    });

    it('keeps the address only on sign-in failures, and drops details keys that name secrets', async () => {
      await audit.record({ type: 'signin.failure', email: 'who@example.com', reason: 'INVALID_CREDENTIALS', source: SYSTEM_SOURCE });
      await audit.record({ type: 'signin.success', userId: 'u', email: 'who@example.com', details: { password: 'p', refreshToken: 't', nested: { secret: 's', kept: 1 }, sessionId: 'sid' } });
      const { events } = await audit.listEvents({ limit: 10 });
      const failure = events.find((e) => e.type === 'signin.failure')!;
      const success = events.find((e) => e.type === 'signin.success')!;
      assert.equal(failure.email, 'who@example.com');
      assert.equal(failure.userId, null);
      assert.equal(success.email, null);
      assert.deepEqual(success.details, { nested: { kept: 1 }, sessionId: 'sid' });
    });

    it('cuts over-long client values to their columns and replaces oversized details', async () => {
      await audit.record({ type: 'signout', userId: 'u', source: { actorUserId: 'u', ip: '1'.repeat(100), userAgent: 'A'.repeat(2_000) }, details: { list: 'x'.repeat(5_000) } });
      const [event] = (await audit.listEvents({ limit: 1 })).events;
      assert.equal(event!.ip!.length, 64);
      assert.equal(event!.userAgent!.length, 512);
      assert.deepEqual(event!.details, { truncated: true });
    });

    it('pages newest first with a keyset cursor, stable for events at the same millisecond, filtered by user and type', async () => {
      clock.set(1_700_000_100_000);
      for (let i = 0; i < 7; i++) await audit.record({ type: 'signin.success', userId: i % 2 === 0 ? 'even' : 'odd' });
      clock.advance(1);
      for (let i = 0; i < 3; i++) await audit.record({ type: 'signout', userId: 'even' });
      const seen: string[] = [];
      let before;
      let pages = 0;
      do {
        const page = await audit.listEvents({ limit: 3, ...(before && { before }) });
        assert.ok(page.events.length <= 3);
        seen.push(...page.events.map((e) => e.id));
        before = page.next ?? undefined;
        pages++;
      } while (before !== undefined);
      assert.equal(pages, 4);
      assert.equal(new Set(seen).size, 10, 'every event exactly once');
      const all = (await audit.listEvents({ limit: 100 })).events;
      assert.deepEqual(seen, all.map((e) => e.id));
      assert.deepEqual(all.slice(0, 3).map((e) => e.type), ['signout', 'signout', 'signout'], 'newest first');

      const even = await audit.listEvents({ userId: 'even', limit: 100 });
      assert.equal(even.events.length, 7);
      const evenSignIns = await audit.listEvents({ userId: 'even', type: 'signin.success', limit: 100 });
      assert.equal(evenSignIns.events.length, 4);
      assert.ok(evenSignIns.events.every((e) => e.userId === 'even' && e.type === 'signin.success'));
    });

    it('logs a failed write and carries on, without the event details', async () => {
      const broken = createAuditService({
        db: { insertInto: () => { throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }); } } as never,
        clock,
        logger,
      });
      await broken.record({ type: 'signin.failure', email: 'x@example.com', reason: 'INVALID_CREDENTIALS' });
      assert.equal(logger.lines.length, 1);
      assert.equal(logger.lines[0]!.level, 'error');
      assert.equal(logger.lines[0]!.message, 'audit event not recorded');
      assert.ok(!JSON.stringify(logger.lines[0]!.details).includes('x@example.com'), 'the address is not logged');
    });

    it('fails with the transaction it was given, so the change and its event go together', async () => {
      await assert.rejects(
        storage.db.transaction().execute(async (trx) => {
          await audit.record({ type: 'user.disabled', userId: 'tx-user' }, { db: trx });
          throw new Error('the change failed');
        }),
        /the change failed/,
      );
      assert.equal((await audit.listEvents({ userId: 'tx-user', limit: 10 })).events.length, 0, 'rolled back');
      await storage.db.transaction().execute((trx) => audit.record({ type: 'user.disabled', userId: 'tx-user' }, { db: trx }));
      assert.equal((await audit.listEvents({ userId: 'tx-user', limit: 10 })).events.length, 1);
    });

    it('purges events older than the cutoff in bounded batches, oldest first, leaving newer ones', async () => {
      clock.set(1_700_000_000_000);
      for (let i = 0; i < 25; i++) {
        clock.advance(1_000);
        await audit.record({ type: 'signin.success', userId: `old-${i}` });
      }
      const cutoff = clock() + 1;
      clock.advance(DAY_MS);
      for (let i = 0; i < 5; i++) await audit.record({ type: 'signin.success', userId: 'recent' });

      const first = await audit.purgeOlderThan(cutoff, { batchSize: 10, maxBatches: 2 });
      assert.deepEqual(first, { deleted: 20, isDone: false });
      const left = (await audit.listEvents({ limit: 100 })).events.map((e) => e.userId);
      assert.deepEqual(left.filter((id) => id !== 'recent').sort(), ['old-20', 'old-21', 'old-22', 'old-23', 'old-24'], 'the oldest went first');
      const second = await audit.purgeOlderThan(cutoff, { batchSize: 10, maxBatches: 2 });
      assert.deepEqual(second, { deleted: 5, isDone: true });
      assert.deepEqual((await audit.listEvents({ limit: 100 })).events.map((e) => e.userId), Array(5).fill('recent'));
      assert.deepEqual(await audit.purgeOlderThan(cutoff, { batchSize: 10 }), { deleted: 0, isDone: true });
    });

    it('runs the retention job against the clock: at most its batches per run, and stops cleanly', async () => {
      clock.set(1_700_000_000_000);
      for (let i = 0; i < 12; i++) await audit.record({ type: 'signout', userId: 'u' });
      const job = createAuditRetentionJob({ audit, clock, logger, retentionMs: 90 * DAY_MS, batchSize: 5, maxBatchesPerRun: 2 });
      clock.advance(90 * DAY_MS - 1);
      assert.equal(await job.runOnce(), 0, 'not yet past the retention period');
      clock.advance(2);
      assert.equal(await job.runOnce(), 10, 'two batches of five');
      assert.equal(await job.runOnce(), 2, 'the rest on the next run');
      assert.ok(logger.lines.some((line) => line.level === 'info' && line.message === 'purged old audit events'));
      job.start();
      await job.stop();
    });
  });
}
