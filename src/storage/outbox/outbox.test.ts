/**
 * The shared outbox on its own, on SQLite and PostgreSQL, over tables of its own (an item table and
 * a lane table made here, not the mail or webhook ones): two workers never attempt one item twice
 * nor two items of one lane at once; a killed worker's lease runs out and the item is attempted
 * again, the late answer of the killed one changing nothing; retries back off with jitter within
 * bounds until the tries run out (the policy alone: retry-policy.test.ts); a stuck destination holds its own lane only, on every instance;
 * finished items are purged after the retention; a wake after an enqueue (or its transaction)
 * claims at once; stop waits for the attempt in flight and claims nothing more. The test's clock
 * and explicit gates, never a sleep.
 */
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { backends, type TestDatabase } from '../../../test/helpers/databases.ts';
import { fakeClock } from '../../../test/helpers/clock.ts';
import { openStorage, type Storage } from '../database.ts';
import { claimNext, finishItem, type OutboxItem, type OutboxQueue } from './outbox.store.ts';
import { createOutboxWorker, type OutboxVerdict } from './outbox-worker.ts';
import type { RetryPolicy } from './retry-policy.ts';

interface TestItem extends OutboxItem {
  lane_id: string;
  last_error: string | null;
  done_at: number | null;
}
interface TestLane {
  id: string;
  closed_at: number | null;
  lane_locked_until: number | null;
  lane_locked_by: string | null;
}
type TestDb = Kysely<{ outbox_test_items: TestItem; outbox_test_lanes: TestLane }>;

const LANED: OutboxQueue<TestItem> = {
  table: 'outbox_test_items',
  doneStatus: 'done',
  doneAtColumn: 'done_at',
  lanes: { table: 'outbox_test_lanes', keyColumn: 'lane_id', leaseUntilColumn: 'lane_locked_until', leaseByColumn: 'lane_locked_by', closedColumn: 'closed_at' },
};
const SINGLE: OutboxQueue<TestItem> = { table: 'outbox_test_items', doneStatus: 'done', doneAtColumn: 'done_at' };
const LEASE_MS = 30_000;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const RETRY: RetryPolicy<TestItem> = { firstDelayMs: 1_000, maxDelayMs: 60_000, jitter: 0.2, maxAttempts: 4 };

/** A promise opened by hand. */
function gate() {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** An attempt that hangs until released: `started` resolves once it is in flight. */
function hangingAttempt() {
  const started = gate();
  const held = gate();
  const behave = async () => {
    started.open();
    await held.promise;
    return 'done' as const;
  };
  return { behave, started: started.promise, release: held.open };
}

/** What the handlers saw: attempts per item, and the most in flight at once per lane and per worker. */
function tracker() {
  const attemptsOf = new Map<string, number>();
  const inFlight = new Map<string, number>();
  let maxPerKey = 0;
  let total = 0;
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const change = (key: string, by: number) => {
    inFlight.set(key, (inFlight.get(key) ?? 0) + by);
    maxPerKey = Math.max(maxPerKey, inFlight.get(key)!);
  };
  return {
    attemptsOf,
    begin(item: TestItem, worker: string, perLane: boolean) {
      attemptsOf.set(item.id, (attemptsOf.get(item.id) ?? 0) + 1);
      change(perLane ? `lane:${item.lane_id}` : `worker:${worker}`, 1);
    },
    end(item: TestItem, worker: string, perLane: boolean) {
      change(perLane ? `lane:${item.lane_id}` : `worker:${worker}`, -1);
      total += 1;
      for (const waiter of waiters.filter((w) => total >= w.count)) waiter.resolve();
    },
    /** Resolves once `count` attempts have ended. */
    reach: (count: number) => (total >= count ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ count, resolve }))),
    get maxPerKey() {
      return maxPerKey;
    },
    get total() {
      return total;
    },
  };
}

const silent = { error() {}, warn() {}, info() {} };

for (const backend of await backends()) {
  describe(`shared outbox on ${backend.name}`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let storage: Storage;
    let db: TestDb;
    const clock = fakeClock(1_800_000_000_000);
    const isPostgres = backend.name === 'postgres';

    before(async () => {
      database = await backend.create();
      storage = openStorage(database.config);
      db = storage.db as unknown as TestDb;
      await db.schema
        .createTable('outbox_test_lanes')
        .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
        .addColumn('closed_at', 'bigint')
        .addColumn('lane_locked_until', 'bigint')
        .addColumn('lane_locked_by', 'varchar(32)')
        .execute();
      await db.schema
        .createTable('outbox_test_items')
        .addColumn('id', 'varchar(32)', (c) => c.primaryKey())
        .addColumn('lane_id', 'varchar(32)', (c) => c.notNull())
        .addColumn('status', 'varchar(16)', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
        .addColumn('locked_until', 'bigint')
        .addColumn('locked_by', 'varchar(32)')
        .addColumn('last_error', 'varchar(64)')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('done_at', 'bigint')
        .execute();
    });
    after(async () => {
      await storage?.close();
      await database?.drop();
    });
    beforeEach(async () => {
      await db.deleteFrom('outbox_test_items').execute();
      await db.deleteFrom('outbox_test_lanes').execute();
    });

    /** `count` pending items on each lane, due now, in the order given. */
    async function addItems(lanes: string[], count: number, on: TestDb = db, fields: Partial<TestItem> = {}): Promise<string[]> {
      const ids: string[] = [];
      for (const lane of lanes) {
        await on.insertInto('outbox_test_lanes').values({ id: lane, closed_at: null, lane_locked_until: null, lane_locked_by: null }).onConflict((oc) => oc.column('id').doNothing()).execute();
        for (let n = 0; n < count; n++) {
          const id = `${lane}-${n}-${Math.random().toString(36).slice(2, 8)}`;
          ids.push(id);
          const now = clock();
          await on
            .insertInto('outbox_test_items')
            .values({ id, lane_id: lane, status: 'pending', attempts: 0, next_attempt_at: now + ids.length, locked_until: null, locked_by: null, last_error: null, created_at: now, done_at: null, ...fields })
            .execute();
        }
      }
      clock.advance(ids.length + 1);
      return ids;
    }

    const rows = () => db.selectFrom('outbox_test_items').selectAll().orderBy('id').execute();
    const rowOf = (id: string) => db.selectFrom('outbox_test_items').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

    /** A worker whose attempts do what `behave` says; it records what it recorded in `recorded`. */
    function workerOf(
      queue: OutboxQueue<TestItem>,
      behave: (item: TestItem, signal: AbortSignal) => Promise<'done' | 'retry' | 'fail'>,
      options: { owner?: string; on?: Storage; random?: () => number; retry?: RetryPolicy<TestItem>; parallel?: number } = {},
    ) {
      const recorded: Array<{ id: string; verdict: OutboxVerdict; isRecorded: boolean }> = [];
      const worker = createOutboxWorker<TestItem, null>({
        db: (options.on ?? storage).db,
        isPostgres,
        queue,
        retry: options.retry ?? RETRY,
        clock,
        logger: silent,
        pollIntervalMs: 600_000,
        retentionMs: DAY,
        leaseMs: LEASE_MS,
        messages: { purged: 'purged', storageFailed: 'storage failed', stopping: 'stopping' },
        ...(options.owner !== undefined && { owner: options.owner }),
        ...(options.random !== undefined && { random: options.random }),
        ...(options.parallel !== undefined && { parallel: options.parallel }),
        handler: {
          async attempt(item, { signal }) {
            const outcome = await behave(item, signal);
            return { outcome, set: { last_error: outcome === 'done' ? null : 'REFUSED' }, note: null };
          },
          async settled(item, { verdict, isRecorded }) {
            recorded.push({ id: item.id, verdict, isRecorded });
          },
        },
      });
      return Object.assign(worker, { recorded });
    }

    for (const queue of [LANED, SINGLE]) {
      const kind = queue.lanes === undefined ? 'one lane' : 'a lane per destination';
      it(`two workers on one database never attempt an item twice nor exceed one attempt per lane (${kind})`, async (test) => {
        const second = openStorage(database.config);
        test.after(() => second.close());
        const ids = await addItems(['a', 'b', 'c'], 8);
        const seen = tracker();
        const perLane = queue.lanes !== undefined;
        const workers = ['worker-a', 'worker-b'].map((owner, i) =>
          workerOf(
            queue,
            async (item) => {
              seen.begin(item, owner, perLane);
              await new Promise((resolve) => setImmediate(resolve));
              seen.end(item, owner, perLane);
              return 'done';
            },
            { owner, ...(i === 1 && { on: second }) },
          ),
        );
        for (let round = 0; round < 10 && seen.total < ids.length; round++) await Promise.all(workers.map((worker) => worker.runOnce()));
        assert.equal(seen.total, ids.length);
        assert.deepEqual([...seen.attemptsOf.values()].filter((n) => n !== 1), [], 'no item attempted twice');
        assert.equal(seen.maxPerKey, 1, perLane ? 'one attempt per lane, across workers' : 'one attempt per worker');
        assert.equal(workers[0]!.recorded.length + workers[1]!.recorded.length, ids.length, 'each outcome recorded once');
        for (const row of await rows()) assert.deepEqual([row.status, row.attempts, row.locked_by], ['done', 1, null]);
        const lanes = await db.selectFrom('outbox_test_lanes').select(['lane_locked_by']).execute();
        assert.ok(lanes.every((lane) => lane.lane_locked_by === null), 'every lane given back');
      });
    }

    it('gives a due item to exactly one of many concurrent claims', async (test) => {
      const second = openStorage(database.config);
      test.after(() => second.close());
      const [id] = await addItems(['a'], 1);
      const claims = await Promise.all(
        Array.from({ length: 8 }, (_, i) => claimNext((i % 2 === 0 ? storage : second).db, LANED, { now: clock(), owner: `owner-${i}`, lockedUntil: clock() + LEASE_MS, isPostgres })),
      );
      const winners = claims.filter((item) => item !== null);
      assert.deepEqual(winners.map((item) => [item.id, item.attempts]), [[id, 1]]);
      const lane = await db.selectFrom('outbox_test_lanes').selectAll().where('id', '=', 'a').executeTakeFirstOrThrow();
      assert.equal(lane.lane_locked_by, winners[0]!.locked_by, 'the lane and the item under one token');
    });

    it('a killed worker’s lease runs out: another attempts the item again, and the late answer of the killed one changes nothing', async () => {
      const [id] = await addItems(['a'], 1);
      // The "killed" worker: its attempt never ends while the other works (as if its process died).
      const hung = hangingAttempt();
      const killed = workerOf(LANED, hung.behave);
      const killedRun = killed.runOnce();
      await hung.started;
      const next = workerOf(LANED, async () => 'done');
      clock.advance(LEASE_MS - 1);
      assert.deepEqual(await next.runOnce(), { done: 0, retried: 0, failed: 0 }, 'the lane and the item are still leased');
      clock.advance(2);
      assert.deepEqual(await next.runOnce(), { done: 1, retried: 0, failed: 0 });
      const done = await rowOf(id!);
      assert.deepEqual([done.status, done.attempts, done.locked_by, done.done_at], ['done', 2, null, clock()]);

      clock.advance(1_000);
      hung.release();
      await killedRun;
      assert.deepEqual(killed.recorded, [{ id, verdict: 'done', isRecorded: false }], 'the late answer is not recorded');
      assert.deepEqual(await rowOf(id!), done, 'the row is as the second worker left it');
      assert.equal(await finishItem(db, LANED, id!, 'killed:token', { status: 'failed', at: clock() }), false);
    });

    it('backs off with jitter within its bounds, then gives up after the last try', async () => {
      const [id] = await addItems(['a'], 1);
      const worker = workerOf(LANED, async () => 'retry', { random: () => 0.999_999 });
      for (let attempt = 1; attempt <= 3; attempt++) {
        assert.deepEqual(await worker.runOnce(), { done: 0, retried: 1, failed: 0 });
        const row = await rowOf(id!);
        const nominal = 1_000 * 2 ** (attempt - 1);
        const wait = row.next_attempt_at - clock();
        assert.ok(wait <= nominal && wait >= nominal * 0.8, `try ${attempt}: ${wait} ms, within 80-100 % of ${nominal}`);
        assert.deepEqual([row.status, row.attempts, row.locked_by, row.last_error], ['pending', attempt, null, 'REFUSED']);
        clock.advance(wait - 1);
        assert.deepEqual(await worker.runOnce(), { done: 0, retried: 0, failed: 0 }, 'not before it is due');
        clock.advance(1);
      }
      assert.deepEqual(await worker.runOnce(), { done: 0, retried: 0, failed: 1 }, 'the fourth try is the last');
      assert.deepEqual([(await rowOf(id!)).status, (await rowOf(id!)).attempts], ['failed', 4]);
    });

    it('fails at once what the handler refuses for good', async () => {
      const [id] = await addItems(['a'], 1);
      assert.deepEqual(await workerOf(LANED, async () => 'fail').runOnce(), { done: 0, retried: 0, failed: 1 });
      assert.deepEqual([(await rowOf(id!)).status, (await rowOf(id!)).attempts], ['failed', 1]);
    });

    it('a stuck destination holds its own lane only, on every instance; a closed one is not claimed', async () => {
      const stuckIds = await addItems(['stuck'], 3); // due first
      const others = await addItems(['a', 'b'], 4);
      await addItems(['closed'], 2);
      await db.updateTable('outbox_test_lanes').set({ closed_at: clock() }).where('id', '=', 'closed').execute();
      const held = gate();
      const stuckStarted = gate();
      const seen = tracker();
      const behave = async (item: TestItem) => {
        seen.begin(item, 'any', true);
        if (item.lane_id === 'stuck') {
          stuckStarted.open();
          await held.promise;
        }
        seen.end(item, 'any', true);
        return 'done' as const;
      };
      const worker = workerOf(LANED, behave);
      const run = worker.runOnce();
      // The other lanes done and the stuck one's first item begun (either may come first).
      await Promise.all([seen.reach(others.length), stuckStarted.promise]);
      assert.equal(seen.attemptsOf.get(stuckIds[0]!), 1, 'the stuck lane’s first item is in flight');
      // Another instance finds nothing to do: the stuck lane is leased, the rest done.
      const other = workerOf(LANED, behave, { owner: 'other-instance' });
      assert.deepEqual(await other.runOnce(), { done: 0, retried: 0, failed: 0 });
      assert.deepEqual(stuckIds.map((id) => seen.attemptsOf.get(id) ?? 0), [1, 0, 0], 'its backlog waits behind it');
      held.open();
      assert.deepEqual(await run, { done: others.length + 3, retried: 0, failed: 0 });
      assert.equal(seen.maxPerKey, 1);
      const left = (await rows()).filter((row) => row.status === 'pending');
      assert.deepEqual(left.map((row) => [row.lane_id, row.attempts]), [['closed', 0], ['closed', 0]]);
    });

    it('purges done and failed items past the retention, never pending ones, at most once an hour', async () => {
      const [oldDone, oldFailed, oldPending] = await addItems(['a'], 3, db, { created_at: clock() - 2 * DAY });
      await db.updateTable('outbox_test_items').set({ status: 'done' }).where('id', '=', oldDone!).execute();
      await db.updateTable('outbox_test_items').set({ status: 'failed' }).where('id', '=', oldFailed!).execute();
      await db.updateTable('outbox_test_items').set({ next_attempt_at: clock() + DAY }).where('id', '=', oldPending!).execute();
      const [recent] = await addItems(['b'], 1);
      const worker = workerOf(LANED, async () => 'done');
      await worker.runOnce();
      assert.deepEqual((await rows()).map((row) => row.id).sort(), [oldPending!, recent!].sort());

      // Finished and past the retention, but the last purge was just now: it waits for the next one.
      const [late] = await addItems(['c'], 1, db, { created_at: clock() - 2 * DAY, status: 'done' });
      await worker.runOnce();
      assert.ok((await rows()).some((row) => row.id === late), 'one purge an hour');
      clock.advance(HOUR);
      await worker.runOnce();
      assert.deepEqual((await rows()).map((row) => row.id).sort(), [oldPending!, recent!].sort());
    });

    it('claims at once when woken after an enqueue (or just after its transaction), without waiting for the poll', async (test) => {
      const seen = tracker();
      const worker = workerOf(SINGLE, async (item) => {
        seen.begin(item, 'w', false);
        seen.end(item, 'w', false);
        return 'done';
      });
      worker.start();
      test.after(() => worker.stop());
      await worker.runOnce(); // the start's own run: what follows is woken by the enqueues
      await addItems(['a'], 1);
      worker.wake();
      await seen.reach(1);
      await storage.db.transaction().execute(async (trx) => {
        await addItems(['b'], 1, trx as unknown as TestDb);
        worker.wakeAfter(trx);
      });
      await seen.reach(2);
      await worker.runOnce(); // the attempt has ended; its outcome is being written
      assert.deepEqual((await rows()).map((row) => row.status), ['done', 'done']);
    });

    it('a queue without lanes attempts `parallel` items at once on each worker, never more, each once', async (test) => {
      const ids = await addItems(['a'], 8);
      let inFlight = 0;
      let most = 0;
      const attempts = new Map<string, number>();
      const held = gate();
      const three = gate();
      const worker = workerOf(SINGLE, async (item) => {
        attempts.set(item.id, (attempts.get(item.id) ?? 0) + 1);
        most = Math.max(most, ++inFlight);
        if (inFlight === 3) three.open();
        await held.promise;
        inFlight -= 1;
        return 'done';
      }, { parallel: 3 });
      worker.start();
      test.after(() => worker.stop());
      await three.promise;
      // Every attempt is held: a worker that claimed past its three would have claimed the other five by now.
      await new Promise((resolve) => setTimeout(resolve, 100));
      const claimed = (await rows()).filter((row) => row.locked_by !== null);
      assert.equal(claimed.length, 3, 'three claimed while three are in flight');
      assert.equal(most, 3);
      held.open();
      await worker.runOnce();
      assert.equal(most, 3, 'never more than three at once');
      assert.deepEqual([...attempts.values()], ids.map(() => 1), 'each attempted once');
      for (const row of await rows()) assert.deepEqual([row.status, row.attempts, row.locked_by], ['done', 1, null]);
    });

    it('stop() waits for the attempt in flight and claims nothing more', async () => {
      const [first] = await addItems(['a'], 1);
      const hung = hangingAttempt();
      const worker = workerOf(SINGLE, hung.behave);
      worker.start();
      await hung.started;
      const stopped = worker.stop();
      const [second] = await addItems(['a'], 1);
      worker.wake();
      hung.release();
      await stopped;
      assert.equal((await rowOf(first!)).status, 'done');
      assert.deepEqual(await worker.runOnce(), { done: 0, retried: 0, failed: 0 });
      const left = await rowOf(second!);
      assert.deepEqual([left.status, left.attempts], ['pending', 0]);
    });
  });
}
