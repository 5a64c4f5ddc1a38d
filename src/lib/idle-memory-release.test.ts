import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { getHeapSpaceStatistics } from 'node:v8';
import { createIdleMemoryRelease, type IdleMemoryReleaseOptions } from './idle-memory-release.ts';

const MIB = 1024 * 1024;

/** A release driven by hand: each `tick(utilization)` is one one-second sample. */
function harness(options: Partial<IdleMemoryReleaseOptions> = {}) {
  let clock = 0;
  let rss = 150 * MIB;
  let heap = 50 * MIB;
  let requests = 0;
  let nextUtilization = 0;
  let collections = 0;
  const release = createIdleMemoryRelease({
    quietMs: 5_000,
    now: () => clock,
    residentBytes: () => rss,
    heapBytes: () => heap,
    activity: () => requests,
    utilization: () => nextUtilization,
    collect: () => {
      collections++;
      clock += 80;
      rss -= 20 * MIB;
      heap -= 20 * MIB;
    },
    ...options,
  });
  return {
    release,
    get collections() {
      return collections;
    },
    /** V8's heap grows by this much (the resident set with it). */
    grow(bytes: number) {
      heap += bytes;
      rss += bytes;
    },
    /** Memory outside V8's heap: only the resident set grows. */
    growResident(bytes: number) {
      rss += bytes;
    },
    /** Requests begin (the loop stays under the busy share). */
    begin(count: number) {
      requests += count;
    },
    /** Advances the clock by seconds of samples at this utilization; returns the releases made. */
    tick(seconds: number, utilization = 0) {
      const made = [];
      for (let second = 0; second < seconds; second++) {
        clock += 1_000;
        nextUtilization = utilization;
        const result = release.sample();
        if (result !== null) made.push(result);
      }
      return made;
    },
  };
}

describe('idle memory release', () => {
  it('collects once the loop has been idle for the quiet time, and tells what it gave back', () => {
    const h = harness();
    assert.deepEqual(h.tick(3, 0.6), [], 'busy: nothing');
    assert.deepEqual(h.tick(4), [], 'idle 4 s of 5: nothing yet');
    const [made, ...more] = h.tick(1);
    assert.deepEqual(more, []);
    assert.deepEqual(made, { rssBeforeBytes: 150 * MIB, rssAfterBytes: 130 * MIB, pauseMs: 80 });
    assert.equal(h.collections, 1);
  });

  it('starts the quiet time again at every busy sample', () => {
    const h = harness();
    h.tick(4);
    h.tick(1, 0.05);
    assert.deepEqual(h.tick(4), []);
    assert.equal(h.tick(1).length, 1);
  });

  it('does not count a second as quiet when a request began in it, however little it cost the loop', () => {
    const h = harness();
    h.tick(4);
    h.begin(1);
    assert.deepEqual(h.tick(1), [], 'a request began: busy');
    assert.deepEqual(h.tick(4), []);
    assert.equal(h.tick(1).length, 1);
  });

  it("collects again only after V8's heap grew, and not within the least interval", () => {
    const h = harness({ minIntervalMs: 60_000 });
    assert.equal(h.tick(5).length, 1);
    // Idle for long, memory as it was left: no second pause.
    assert.deepEqual(h.tick(120), []);
    // A busy spell that left 5 MB more on the heap: not worth a pause.
    h.grow(5 * MIB);
    h.tick(10, 0.5);
    assert.deepEqual(h.tick(30), []);
    // 12 MB more than after the last release: collected once idle again.
    h.grow(7 * MIB);
    h.tick(10, 0.5);
    const [made] = h.tick(5);
    assert.equal(made?.rssBeforeBytes, 142 * MIB);
    assert.equal(h.collections, 2);
    // Grown again at once: the least interval holds it back until 60 s after the last release.
    h.grow(60 * MIB);
    h.tick(1, 0.5);
    assert.deepEqual(h.tick(50), []);
    assert.equal(h.tick(10).length, 1);
    assert.equal(h.collections, 3);
  });

  it('does not count growth outside the heap (native memory, another thread) as a reason to pause', () => {
    const h = harness();
    assert.equal(h.tick(5).length, 1);
    // The resident set grows by 40 MB that a collection cannot free (a hash's arena, a worker thread).
    h.growResident(40 * MIB);
    h.tick(10, 0.5);
    assert.deepEqual(h.tick(120), []);
    assert.equal(h.collections, 1);
  });

  it('stops trying, without throwing from its timer, when a release fails', () => {
    for (const broken of ['collect', 'residentBytes'] as const) {
      const failures: unknown[] = [];
      const release = createIdleMemoryRelease({
        quietMs: 0,
        utilization: () => 0,
        heapBytes: () => 0,
        [broken]: () => {
          throw new Error(`${broken} failed (EMFILE)`);
        },
        ...(broken === 'collect' ? {} : { collect: () => {} }),
        onFailure: (error: unknown) => failures.push(error),
      });
      assert.equal(release.sample(), null);
      assert.equal(release.sample(), null);
      assert.equal(failures.length, 1, broken);
      assert.match(String(failures[0]), new RegExp(broken));
    }
  });

  it("uses the gc an operator exposed under a name of their own, and leaves that flag as it was", () => {
    const script = `
      import { createIdleMemoryRelease } from ${JSON.stringify(new URL('./idle-memory-release.ts', import.meta.url).href)};
      import { runInNewContext } from 'node:vm';
      let calls = 0;
      const own = globalThis.collectNow;
      globalThis.collectNow = (options) => { calls++; own(options); };
      const made = createIdleMemoryRelease({ quietMs: 0, utilization: () => 0 }).sample();
      console.log(JSON.stringify({ made: made !== null, calls, gc: typeof globalThis.gc, later: runInNewContext('typeof collectNow + " " + typeof gc') }));
    `;
    const run = spawnSync(process.execPath, ['--expose-gc-as=collectNow', '--input-type=module', '-e', script], { encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), { made: true, calls: 1, gc: 'undefined', later: 'function undefined' });
  });

  it('collects for real: V8 gives back the young generation a burst grew, and no global gc is left', () => {
    const youngGeneration = () => getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')!.space_size;
    let released = 0;
    const release = createIdleMemoryRelease({ quietMs: 0, utilization: () => 0, onRelease: () => released++ });
    // A burst of short-lived allocation, as a start makes.
    let keep: unknown[] = [];
    for (let index = 0; index < 200_000; index++) keep.push({ index, text: `item ${index}` });
    keep = [];
    const grown = youngGeneration();
    const made = release.sample();
    assert.ok(youngGeneration() < grown, `the young generation shrank from ${grown} bytes (now ${youngGeneration()})`);
    assert.ok(made !== null && made.pauseMs >= 0 && made.rssAfterBytes > 0);
    assert.equal(released, 1);
    assert.equal(typeof (globalThis as { gc?: unknown }).gc, 'undefined', 'no global gc is left behind');
    assert.equal(keep.length, 0);
  });
});
