/**
 * Fair lanes on their own, with an in-memory queue for a claim: an item that hangs holds its own
 * key's lane and nothing else, whatever the number of keys; a key never has two items in flight;
 * a fill asked for while a claim is in progress is not lost; a claim that throws ends the fill
 * without a settled() that never comes; close() stops claiming and waits for what is in flight.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createFairLanes } from './fair-lanes.ts';

interface Item {
  key: string;
  n: number;
}

/** A queue to claim from, oldest first, skipping busy keys; `hold(key)` makes that key's items hang until released. */
function fixture() {
  const queue: Item[] = [];
  const done: Item[] = [];
  const errors: unknown[] = [];
  const held = new Map<string, { release: () => void; released: Promise<void> }>();
  const inFlight = new Map<string, number>();
  let maxPerKey = 0;
  let claimFails = false;
  /** Runs inside a claim that found nothing, before it answers. */
  let onNothing: (() => void) | undefined;
  const lanes = createFairLanes<Item>({
    async claim(busyKeys) {
      if (claimFails) throw new Error('storage down');
      const index = queue.findIndex((item) => !busyKeys.includes(item.key));
      if (index !== -1) return queue.splice(index, 1)[0]!;
      await Promise.resolve();
      const hook = onNothing;
      onNothing = undefined;
      hook?.();
      return null;
    },
    keyOf: (item) => item.key,
    async work(item) {
      inFlight.set(item.key, (inFlight.get(item.key) ?? 0) + 1);
      maxPerKey = Math.max(maxPerKey, inFlight.get(item.key)!);
      await held.get(item.key)?.released;
      inFlight.set(item.key, inFlight.get(item.key)! - 1);
      done.push(item);
    },
    onError: (error) => errors.push(error),
  });
  return {
    lanes,
    queue,
    done,
    errors,
    add: (key: string, count: number) => queue.push(...Array.from({ length: count }, (_, n) => ({ key, n }))),
    hold(key: string) {
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      held.set(key, { release, released });
    },
    release: (key: string) => held.get(key)!.release(),
    get maxPerKey() {
      return maxPerKey;
    },
    failClaims: (fails: boolean) => (claimFails = fails),
    whenNothingClaimed: (hook: () => void) => (onNothing = hook),
  };
}

/** Resolves once `predicate` holds, checking after each turn of the event loop (at most `turns`). */
async function until(predicate: () => boolean, turns = 1_000): Promise<void> {
  for (let i = 0; i < turns && !predicate(); i++) await new Promise((resolve) => setImmediate(resolve));
  assert.ok(predicate(), 'never came');
}

describe('fair lanes', () => {
  it('an item that hangs holds its own key only: every other key is served meanwhile, however many hang', async () => {
    const f = fixture();
    for (const key of ['dead1', 'dead2', 'dead3', 'dead4', 'dead5']) {
      f.hold(key);
      f.add(key, 3);
    }
    f.add('healthy', 20);
    f.add('other', 5);
    f.lanes.fill();
    await until(() => f.done.length === 25);
    assert.deepEqual([...f.lanes.busyKeys].sort(), ['dead1', 'dead2', 'dead3', 'dead4', 'dead5']);
    assert.equal(f.queue.filter((item) => item.key.startsWith('dead')).length, 10, 'each dead key’s backlog waits for its own lane');
    // New work for a free key, while the dead ones still hang.
    f.add('healthy', 1);
    f.lanes.fill();
    await until(() => f.done.length === 26);
    for (const key of ['dead1', 'dead2', 'dead3', 'dead4', 'dead5']) f.release(key);
    await f.lanes.settled();
    assert.equal(f.done.length, 41);
    assert.equal(f.maxPerKey, 1, 'never two items of one key at once');
  });

  it('does not lose a fill asked for while a claim is in progress', async () => {
    const f = fixture();
    f.hold('a'); // no lane ends meanwhile, to ask for a fill of its own
    f.add('a', 1);
    // New work, and its fill, arrive while the claim that found nothing more is answering.
    f.whenNothingClaimed(() => {
      f.add('b', 1);
      f.lanes.fill();
    });
    f.lanes.fill();
    await until(() => f.done.length === 1);
    assert.equal(f.done[0]!.key, 'b');
    f.release('a');
    await f.lanes.settled();
  });

  it('a claim that throws ends the fill (reported); the next fill claims again', async () => {
    const f = fixture();
    f.add('a', 2);
    f.failClaims(true);
    f.lanes.fill();
    await f.lanes.settled();
    assert.equal(f.errors.length, 1);
    assert.equal(f.done.length, 0);
    f.failClaims(false);
    f.lanes.fill();
    await f.lanes.settled();
    assert.equal(f.done.length, 2);
  });

  it('close() stops claiming and waits for the items in flight', async () => {
    const f = fixture();
    f.hold('slow');
    f.add('slow', 2);
    f.lanes.fill();
    await until(() => f.lanes.busyKeys.has('slow'));
    const closed = f.lanes.close();
    f.add('late', 1);
    f.lanes.fill();
    f.release('slow');
    await closed;
    assert.deepEqual(f.done.map((item) => item.key), ['slow']);
    assert.equal(f.queue.length, 2, 'nothing claimed after close');
  });
});
