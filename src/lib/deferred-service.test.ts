import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { deferredService } from './deferred-service.ts';

interface Counter {
  add(by: number): Promise<number>;
  readonly group: { readonly read: () => Promise<number>; readonly self: () => Promise<unknown> };
}

/** A service built by `load`, counting the builds; `fail` makes the next builds fail. */
function counted() {
  const state = { builds: 0, fail: 0 };
  const build = async (): Promise<Counter> => {
    state.builds += 1;
    await Promise.resolve();
    if (state.fail > 0) {
      state.fail -= 1;
      throw new Error('import failed');
    }
    let total = 0;
    const group = {
      read: async () => total,
      async self(this: unknown) {
        return this;
      },
    };
    return {
      async add(by: number) {
        total += by;
        return total;
      },
      group,
    };
  };
  return { state, service: deferredService(build) };
}

describe('deferredService', () => {
  it('builds nothing until a method is called, then builds once for concurrent first calls', async () => {
    const { state, service } = counted();
    const add = service.add;
    const read = service.group.read;
    assert.equal(state.builds, 0, 'reading members builds nothing');
    assert.deepEqual(await Promise.all([add(1), service.add(2), read()]), [1, 3, 3]);
    assert.equal(state.builds, 1);
    assert.equal(await service.add(4), 7);
    assert.equal(state.builds, 1);
  });

  it('calls a method with its own owner as `this`, before and after the build', async () => {
    const { service } = counted();
    const before = await service.group.self();
    const after = await service.group.self();
    assert.equal(before, after);
    assert.equal(typeof (before as { read?: unknown }).read, 'function');
  });

  it('after the build, a member read is the real method (no stand-in in the way)', async () => {
    const { service } = counted();
    await service.add(0);
    assert.equal(service.add, service.add, 'the same bound method on every read');
    assert.equal(service.add.name, 'bound add');
  });

  it('tries a failed import again at the next call, and the call that saw it fails', async () => {
    const { state, service } = counted();
    state.fail = 1;
    await assert.rejects(service.add(1), /import failed/);
    assert.equal(await service.add(1), 1);
    assert.equal(state.builds, 2);
  });

  it('is not thenable: an async function can return it as the service itself', async () => {
    const { state, service } = counted();
    const returned = await (async () => service)();
    assert.equal(returned, service);
    assert.equal(state.builds, 0);
    assert.equal((service as unknown as { then?: unknown }).then, undefined);
  });

  it('answers none of the names every object has: serialising it starts no import', async () => {
    const { state, service } = counted();
    assert.equal(JSON.stringify({ service }), '{"service":{}}');
    assert.equal((service as unknown as { toString?: unknown }).toString, undefined);
    assert.equal((service.group as unknown as { toJSON?: unknown }).toJSON, undefined);
    assert.equal(state.builds, 0);
  });

  it('a member the built service lacks fails its call, with its name', async () => {
    const { service } = counted();
    await assert.rejects((service as unknown as { missing: () => Promise<void> }).missing(), { name: 'TypeError', message: 'missing is not a method of the service' });
  });

  it('refuses at compile time a member that could not wait for the code', () => {
    // @ts-expect-error: a synchronous method cannot be called before the import has finished.
    deferredService(async () => ({ now: () => 1 }));
    // @ts-expect-error: nor can a property be read.
    deferredService(async () => ({ size: 3 }));
    // @ts-expect-error: nor a method that answers at once when it can (a promise only sometimes).
    deferredService(async () => ({ maybe: (): number | Promise<number> => 1 }));
    deferredService(async () => ({ later: async () => 1, nested: { later: async () => 2 } }));
  });
});
