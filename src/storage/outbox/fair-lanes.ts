/**
 * Fair lanes for an outbox: one lane per key (for webhooks, the endpoint; for mail, each claim), as
 * many lanes as there are keys with claimable work, and never two items of one key at once.
 *
 * A lane is one item in flight. Claiming goes on, one claim at a time (the set of busy keys is then
 * exact), until nothing is claimable for a key without a lane: the work of every other key is
 * started at once, whatever one key's item is doing. When an item ends its lane ends, and claiming
 * starts again (that key's next item, or anyone's); `fill()` starts it on demand (new work was
 * written, a retry fell due), even while lanes are in flight. So an item that hangs (a receiver that
 * never answers) holds its own key's lane and nothing else: no fixed pool of lanes for it to fill,
 * no other key's backlog queued behind it.
 *
 * What is claimable, and the lease that keeps other instances off a key while its lane is busy,
 * are the claim's business (outbox.store.ts): this unit only knows keys. It has no store, clock or
 * logger of its own (the outbox worker, outbox-worker.ts, gives it those).
 */

export interface FairLanes {
  /**
   * Claims and starts items until nothing more is claimable (now, or after the claim in progress:
   * a call during a claim is never lost).
   */
  fill(): void;
  /** Resolves once no item is in flight and the last claim found nothing. */
  settled(): Promise<void>;
  /** Stops claiming; resolves once every item in flight has ended. */
  close(): Promise<void>;
  /** The keys with an item in flight. */
  readonly busyKeys: ReadonlySet<string>;
}

export interface FairLanesOptions<Item> {
  /** The next claimable item whose key is not one of `busyKeys`, claimed; null when there is none. */
  claim(busyKeys: readonly string[]): Promise<Item | null>;
  keyOf(item: Item): string;
  /** Handles one claimed item; its key's lane is free once this settles. */
  work(item: Item): Promise<void>;
  /** A claim or a `work` threw: the claim's lease runs out and the item is claimed again. */
  onError(error: unknown): void;
}

export function createFairLanes<Item>(options: FairLanesOptions<Item>): FairLanes {
  const { claim, keyOf, work, onError } = options;
  const busy = new Set<string>();
  const inFlight = new Set<Promise<void>>();
  /** The claiming in progress, if any; at most one at a time. */
  let filling: Promise<void> | undefined;
  let isFillRequested = false;
  let isClosed = false;
  let waiters: Array<() => void> = [];

  const isSettled = () => inFlight.size === 0 && filling === undefined && !isFillRequested;
  function notifyIfSettled(): void {
    if (!isSettled()) return;
    const done = waiters;
    waiters = [];
    for (const resolve of done) resolve();
  }

  function start(item: Item): void {
    const key = keyOf(item);
    busy.add(key);
    const lane: Promise<void> = new Promise<void>((resolve) => resolve(work(item)))
      .catch(onError)
      .finally(() => {
        busy.delete(key);
        inFlight.delete(lane);
        requestFill();
        notifyIfSettled();
      });
    inFlight.add(lane);
  }

  /** Claims until nothing is claimable, and again while fills were asked for meanwhile. */
  async function claimUntilNone(): Promise<void> {
    // On the next turn: a backlog whose items all end at once must not starve the event loop.
    await new Promise((resolve) => setImmediate(resolve));
    try {
      while (isFillRequested && !isClosed) {
        isFillRequested = false;
        let item: Item | null;
        do {
          item = await claim([...busy]);
          // Started even when closing meanwhile: it is claimed, and close() waits for it.
          if (item !== null) start(item);
        } while (item !== null && !isClosed);
      }
    } catch (error) {
      // The storage is failing: the next fill (new work, the poll, a lane ending) tries again.
      onError(error);
    } finally {
      isFillRequested = false;
      filling = undefined;
    }
    notifyIfSettled();
  }

  function requestFill(): void {
    if (isClosed) return;
    isFillRequested = true;
    filling ??= claimUntilNone();
  }

  return {
    fill: requestFill,
    settled() {
      if (isSettled()) return Promise.resolve();
      return new Promise((resolve) => waiters.push(resolve));
    },
    async close() {
      isClosed = true;
      while (filling !== undefined || inFlight.size > 0) await Promise.allSettled([filling, ...inFlight]);
      notifyIfSettled();
    },
    busyKeys: busy,
  };
}
