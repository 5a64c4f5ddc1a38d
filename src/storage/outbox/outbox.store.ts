/**
 * The queries of a durable outbox, for any table with the outbox columns (`OutboxItem`: the mail
 * outbox, webhook deliveries): claim with a lease, give a lane back, finish, retry, purge. Functions
 * take `db` so callers can pass a transaction; the queue (`OutboxQueue`) names the table and the
 * columns that differ.
 *
 * A claim is one conditional UPDATE that re-checks every condition on the row itself (and, on
 * PostgreSQL, skips rows another worker is locking), so of two workers racing for the same row
 * exactly one gets it, on SQLite and on PostgreSQL. It leases the row to the claim's token until
 * `lockedUntil` and counts the attempt; every later write about the attempt names the token, so a
 * worker whose lease ran out and was taken over changes nothing. A row whose holder died becomes
 * claimable when its lease runs out: at least once, never silently dropped.
 *
 * A queue with lanes (`OutboxLanes`) first leases a destination (a webhook endpoint) the same way,
 * then one of its items: one attempt per destination at a time, across instances.
 */
import type { ExpressionBuilder, Kysely } from 'kysely';

/** The columns every outbox table has, named alike. Times are epoch milliseconds. */
export interface OutboxItem {
  id: string;
  /** `pending`, then the queue's `doneStatus` or `failed`. */
  status: string;
  /** Tries started so far: a try is counted when a worker claims the row. */
  attempts: number;
  next_attempt_at: number;
  /** The lease: a worker holds the row until then; after it, another may take it over. */
  locked_until: number | null;
  /** The holder's lease token. */
  locked_by: string | null;
  created_at: number;
}

/** Destinations with a lease of their own (webhooks: `webhook_endpoints`), keyed by their `id`. */
export interface OutboxLanes<Item> {
  readonly table: string;
  /** The item's column naming its destination (`endpoint_id`). */
  readonly keyColumn: keyof Item & string;
  /** The destination's lane lease, like the item's `locked_until` / `locked_by`. */
  readonly leaseUntilColumn: string;
  readonly leaseByColumn: string;
  /** A destination with this column set (`disabled_at`) is not claimed. */
  readonly closedColumn?: string;
}

export interface OutboxQueue<Item extends OutboxItem> {
  readonly table: string;
  /** The status of an item handed over for good (`sent`, `delivered`). */
  readonly doneStatus: string;
  /** Set to the time it was handed over (`sent_at`, `delivered_at`). */
  readonly doneAtColumn: keyof Item & string;
  /** Without lanes every item is a lane of its own, and a worker claims up to its `slots` (default one at a time). */
  readonly lanes?: OutboxLanes<Item>;
}

export interface ClaimOptions {
  now: number;
  /** The claim's lease token. */
  owner: string;
  lockedUntil: number;
  isPostgres: boolean;
  /** The lanes this worker has an item in flight on: left out. */
  busyKeys?: readonly string[];
  /** Without lanes: how many items the worker may have in flight at once (default 1); none is claimed past that. */
  slots?: number;
}

// The queue's table is a value, not a type: the queries are written once for any of them.
type AnyDb = Kysely<any>;
type Where = (eb: ExpressionBuilder<any, any>) => ReturnType<ExpressionBuilder<any, any>['and']>;

/**
 * The lane an item goes out on: its destination; without lanes, its claim (the lease token, unique
 * per claim), so that a worker's items in flight are counted against its `slots`.
 */
export function laneKeyOf<Item extends OutboxItem>(queue: OutboxQueue<Item>, item: Item): string {
  return queue.lanes === undefined ? `${queue.table}:${item.locked_by}` : String(item[queue.lanes.keyColumn]);
}

/** An item that can be attempted now: pending, due, and not leased to a live attempt. */
const isClaimableAt =
  (table: string, now: number): Where =>
  (eb) =>
    eb.and([
      eb(`${table}.status`, '=', 'pending'),
      eb(`${table}.next_attempt_at`, '<=', now),
      eb.or([eb(`${table}.locked_until`, 'is', null), eb(`${table}.locked_until`, '<', now)]),
    ]);

/** A destination no attempt is in flight to (or only one whose holder died: its lease ran out). */
const isLaneFreeAt =
  <Item>(lanes: OutboxLanes<Item>, now: number): Where =>
  (eb) =>
    eb.and([
      ...(lanes.closedColumn === undefined ? [] : [eb(`${lanes.table}.${lanes.closedColumn}`, 'is', null)]),
      eb.or([eb(`${lanes.table}.${lanes.leaseUntilColumn}`, 'is', null), eb(`${lanes.table}.${lanes.leaseUntilColumn}`, '<', now)]),
    ]);

/**
 * Claims the next due item whose lane is not busy, for `owner` until `lockedUntil`, and counts the
 * attempt; null when there is none. With lanes: takes the lane of a destination that has a
 * claimable item and whose lane is free, then that destination's oldest claimable item. The lane
 * keeps every other worker, on any instance, off the destination until releaseLane (or until its
 * lease runs out, when its holder died): a receiver that never answers holds one attempt, never a
 * backlog of them.
 */
export async function claimNext<Item extends OutboxItem>(db: AnyDb, queue: OutboxQueue<Item>, options: ClaimOptions): Promise<Item | null> {
  const busy = options.busyKeys ?? [];
  if (queue.lanes === undefined) return busy.length >= (options.slots ?? 1) ? null : claimItem(db, queue, options);
  const excluded = [...busy];
  // Bounded: each turn either claims, or leaves out one more destination whose lane it gave back.
  for (;;) {
    const key = await claimLane(db, queue, queue.lanes, options, excluded);
    if (key === null) return null;
    const item = await claimItem(db, queue, options, key);
    if (item !== null) return item;
    // Its claimable item went meanwhile (finished by a worker whose lane lease had run out, the
    // destination deleted): give the lane back and look at the other destinations.
    await releaseLane(db, queue, key, options.owner);
    excluded.push(key);
  }
}

async function claimLane<Item extends OutboxItem>(db: AnyDb, queue: OutboxQueue<Item>, lanes: OutboxLanes<Item>, options: ClaimOptions, excluded: readonly string[]): Promise<string | null> {
  const { now, owner, lockedUntil } = options;
  let candidate = db
    .selectFrom(lanes.table)
    .select(`${lanes.table}.id`)
    .where(isLaneFreeAt(lanes, now))
    .$if(excluded.length > 0, (query) => query.where(`${lanes.table}.id`, 'not in', [...excluded]))
    .where((eb) =>
      eb.exists(eb.selectFrom(queue.table).select(`${queue.table}.id`).whereRef(`${queue.table}.${lanes.keyColumn}`, '=', `${lanes.table}.id`).where(isClaimableAt(queue.table, now))),
    )
    .orderBy(`${lanes.table}.id`)
    .limit(1);
  // PostgreSQL: skip a destination another worker is claiming instead of waiting for its transaction.
  if (options.isPostgres) candidate = candidate.forUpdate(lanes.table).skipLocked();
  const lane = await db
    .updateTable(lanes.table)
    .set({ [lanes.leaseUntilColumn]: lockedUntil, [lanes.leaseByColumn]: owner })
    // `=` and not `in`: PostgreSQL then runs the locking sub-select once (an InitPlan); under `in`
    // it may re-run it for every outer row of a semi-join and match nothing, or more than one row.
    .where('id', '=', candidate)
    // Re-checked on the row as it is when the UPDATE takes it, whatever the sub-select saw.
    .where(isLaneFreeAt(lanes, now))
    .returning('id')
    .executeTakeFirst();
  return (lane?.id as string | undefined) ?? null;
}

/** The oldest claimable item (of destination `key`, when given), claimed. */
async function claimItem<Item extends OutboxItem>(db: AnyDb, queue: OutboxQueue<Item>, options: ClaimOptions, key?: string): Promise<Item | null> {
  const { now, owner, lockedUntil } = options;
  const { table } = queue;
  let due = db
    .selectFrom(table)
    .select(`${table}.id`)
    .where(isClaimableAt(table, now))
    .$if(key !== undefined, (query) => query.where(`${table}.${queue.lanes!.keyColumn as string}`, '=', key!))
    .orderBy(`${table}.next_attempt_at`)
    .orderBy(`${table}.id`)
    .limit(1);
  // PostgreSQL: skip a row another worker is claiming (one whose lane lease ran out, say).
  if (options.isPostgres) due = due.forUpdate(table).skipLocked();
  const row = await db
    .updateTable(table)
    .set((eb) => ({ locked_until: lockedUntil, locked_by: owner, attempts: eb('attempts', '+', 1) }))
    .where('id', '=', due)
    .where(isClaimableAt(table, now))
    .returningAll()
    .executeTakeFirst();
  return (row as Item | undefined) ?? null;
}

/** Gives a destination's lane back once its attempt is recorded; only the holder's write counts. */
export async function releaseLane<Item extends OutboxItem>(db: AnyDb, queue: OutboxQueue<Item>, key: string, owner: string): Promise<void> {
  const lanes = queue.lanes;
  if (lanes === undefined) return;
  await db
    .updateTable(lanes.table)
    .set({ [lanes.leaseUntilColumn]: null, [lanes.leaseByColumn]: null })
    .where('id', '=', key)
    .where(lanes.leaseByColumn, '=', owner)
    .execute();
}

/**
 * Ends a held item: `done` (the queue's done status, its done time `at`) or `failed`, with the
 * queue's own columns in `set`; false when `owner` no longer holds it.
 */
export async function finishItem<Item extends OutboxItem>(
  db: AnyDb,
  queue: OutboxQueue<Item>,
  id: string,
  owner: string,
  outcome: { status: 'done' | 'failed'; at: number; set?: Partial<Item> },
): Promise<boolean> {
  const status = outcome.status === 'done' ? { status: queue.doneStatus, [queue.doneAtColumn]: outcome.at } : { status: 'failed' };
  return updateHeld(db, queue, id, owner, { ...outcome.set, ...status, locked_until: null, locked_by: null });
}

/** Gives a held item back, due again at `nextAttemptAt`; false when `owner` no longer holds it. */
export async function retryItem<Item extends OutboxItem>(db: AnyDb, queue: OutboxQueue<Item>, id: string, owner: string, nextAttemptAt: number, set?: Partial<Item>): Promise<boolean> {
  return updateHeld(db, queue, id, owner, { ...set, next_attempt_at: nextAttemptAt, locked_until: null, locked_by: null });
}

async function updateHeld<Item extends OutboxItem>(db: AnyDb, queue: OutboxQueue<Item>, id: string, owner: string, set: Record<string, unknown>): Promise<boolean> {
  const result = await db.updateTable(queue.table).set(set).where('id', '=', id).where('locked_by', '=', owner).where('status', '=', 'pending').executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Deletes at most `batchSize` of the oldest done or failed items created before `cutoff`. */
export async function purgeFinished<Item extends OutboxItem>(db: AnyDb, queue: OutboxQueue<Item>, cutoff: number, batchSize: number): Promise<number> {
  const { table } = queue;
  const result = await db
    .deleteFrom(table)
    .where(
      'id',
      'in',
      db
        .selectFrom(table)
        .select('id')
        .where('status', 'in', [queue.doneStatus, 'failed'])
        .where('created_at', '<', cutoff)
        .orderBy('created_at')
        .limit(batchSize),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** How many items of an outbox wait (`pending`) and how many gave up (`failed`, until purged), each counted up to `cap`. */
export interface OutboxCounts {
  readonly pending: number;
  readonly failed: number;
}

/**
 * The backlog of `table` for an operator's overview: two bounded counts on the `(status, …)` index
 * both outboxes have, at most `cap` rows read each (at `cap`, "at least").
 */
export async function countOutboxItems(db: AnyDb, table: string, cap: number): Promise<OutboxCounts> {
  const count = async (status: string) => {
    const row = await db
      .selectFrom(db.selectFrom(table).select('id').where('status', '=', status).limit(cap).as('capped'))
      .select((eb) => eb.fn.countAll<number | string>().as('count'))
      .executeTakeFirst();
    return Number(row?.count ?? 0);
  };
  const [pending, failed] = await Promise.all([count('pending'), count('failed')]);
  return { pending, failed };
}
