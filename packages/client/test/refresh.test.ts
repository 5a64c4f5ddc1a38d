/**
 * Single-flight refresh against a live Gatehouse whose reuse grace is at its minimum (1 s): parallel
 * requests in one client, two clients on one storage (one realm, as in Node), two clients on one
 * localStorage in a runtime without Web Locks (the queue of the realm) each make exactly one
 * rotation; the service catches no reuse and the session lives on. A control shows what the
 * service does when two holders of the same refresh token do not coordinate. Real tabs (Web Locks,
 * BroadcastChannel, each tab's own copy of localStorage) are in Chromium: browser.test.ts.
 */
import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { backends } from '../../../test/helpers/databases.ts';
import { createGatehouseClient, localStorageAdapter, memoryStorage, type GatehouseClient, type StoredTokens, type TokenStorage } from '../src/index.ts';
import { PASSWORD, recordingFetch, startService, storageDouble, type LiveService } from './live.ts';

const PARALLEL = 10;

for (const backend of await backends()) {
  describe(`single-flight refresh against a live service on ${backend.name}`, { skip: backend.skip }, () => {
    let live: LiveService;
    before(async () => {
      live = await startService(await backend.create());
    });
    after(() => live?.close());

    /** Signs a new user in through `client`; returns the tokens it stored. */
    async function signIn(client: GatehouseClient, storage: TokenStorage): Promise<StoredTokens> {
      const user = await live.user();
      const result = await client.signIn({ email: user.email, password: PASSWORD });
      assert.equal(result.status, 'signed-in', JSON.stringify(result));
      const tokens = await storage.get();
      assert.ok(tokens !== null);
      return tokens;
    }

    /** Makes the stored access token one the service refuses (as an expired one would be). */
    async function spoilAccessToken(storage: TokenStorage, tokens: StoredTokens): Promise<void> {
      await storage.set({ ...tokens, accessToken: `${tokens.accessToken}x` });
    }

    /** The session goes on: the current tokens work, and their refresh token rotates again. */
    async function assertAlive(client: GatehouseClient): Promise<void> {
      assert.equal((await client.getSession()).status, 'signed-in');
      assert.equal((await client.refresh()).status, 'refreshed');
      assert.equal((await client.getSession()).status, 'signed-in');
    }

    it(`${PARALLEL} parallel fetches with a refused access token: one POST /api/auth/refresh, every request succeeds`, async () => {
      const reusesBefore = await live.reuseDetections();
      const recorder = recordingFetch();
      const storage = memoryStorage();
      const client = createGatehouseClient({ baseUrl: live.url, fetch: recorder.fetch, storage });
      await spoilAccessToken(storage, await signIn(client, storage));
      recorder.calls.length = 0;

      const responses = await Promise.all(Array.from({ length: PARALLEL }, () => client.fetch('/api/auth/session')));
      assert.deepEqual(responses.map((response) => response.status), Array(PARALLEL).fill(200));
      assert.equal(recorder.refreshes(), 1);
      assert.equal(recorder.count('GET', '/api/auth/session'), 2 * PARALLEL, 'each request: the 401, then the retry');
      await assertAlive(client);
      assert.equal(await live.reuseDetections(), reusesBefore);
    });

    it('two clients sharing one storage object (one realm, as in Node): one rotation between them', async () => {
      const reusesBefore = await live.reuseDetections();
      const recorder = recordingFetch();
      const storage = memoryStorage();
      const a = createGatehouseClient({ baseUrl: live.url, fetch: recorder.fetch, storage });
      const b = createGatehouseClient({ baseUrl: live.url, fetch: recorder.fetch, storage });
      await spoilAccessToken(storage, await signIn(a, storage));
      recorder.calls.length = 0;

      const results = await Promise.all([a.refresh(), b.refresh(), ...[a, b, a, b].map((client) => client.fetch('/api/auth/session'))]);
      assert.deepEqual(results.slice(0, 2), [{ status: 'refreshed' }, { status: 'refreshed' }]);
      assert.deepEqual(results.slice(2).map((response) => (response as Response).status), [200, 200, 200, 200]);
      assert.equal(recorder.refreshes(), 1);
      await assertAlive(b);
      assert.equal(await live.reuseDetections(), reusesBefore);
    });

    /** Two "tabs": two clients, each with its own adapter over one localStorage. */
    function twoTabs(t: TestContext) {
      const local = storageDouble();
      const key = `gatehouse.test.${Math.random().toString(36).slice(2)}`;
      const recorder = recordingFetch();
      const tabs = [0, 1].map(() => {
        const storage = localStorageAdapter({ key, storage: local });
        return { storage, client: createGatehouseClient({ baseUrl: live.url, fetch: recorder.fetch, storage }) };
      });
      t.after(() => tabs.forEach((tab) => tab.client.close()));
      return { tabs: tabs as [(typeof tabs)[0], (typeof tabs)[0]], recorder, local };
    }

    it('two tabs where the runtime has no Web Locks: the queue of this realm still makes one rotation', async (t) => {
      // Shadows Navigator.prototype.locks on this instance for the test.
      Object.defineProperty(navigator, 'locks', { value: undefined, configurable: true });
      t.after(() => {
        delete (navigator as { locks?: unknown }).locks;
      });
      const reusesBefore = await live.reuseDetections();
      const { tabs, recorder } = twoTabs(t);
      const [a, b] = tabs;
      await spoilAccessToken(a.storage, await signIn(a.client, a.storage));
      recorder.calls.length = 0;
      const results = await Promise.all([a.client.refresh(), b.client.refresh(), a.client.fetch('/api/auth/session'), b.client.fetch('/api/auth/session')]);
      assert.deepEqual(results.slice(0, 2), [{ status: 'refreshed' }, { status: 'refreshed' }]);
      assert.equal(recorder.refreshes(), 1);
      await assertAlive(a.client);
      assert.equal(await live.reuseDetections(), reusesBefore);
    });

    it('control: two holders of one refresh token that do not coordinate present it twice, and the service ends the session', async () => {
      const reusesBefore = await live.reuseDetections();
      const recorder = recordingFetch();
      const first = memoryStorage();
      const a = createGatehouseClient({ baseUrl: live.url, fetch: recorder.fetch, storage: first });
      const tokens = await signIn(a, first);
      // A copy, not a shared storage: nothing tells b that a rotated.
      const b = createGatehouseClient({ baseUrl: live.url, fetch: recorder.fetch, storage: memoryStorage({ ...tokens }) });
      recorder.calls.length = 0;
      assert.equal((await a.refresh()).status, 'refreshed');
      await sleep(1_100); // past REFRESH_REUSE_GRACE
      const reused = await b.refresh();
      assert.equal(recorder.refreshes(), 2);
      assert.equal(reused.status, 'signed-out');
      assert.equal(reused.error.code, 'TOKEN_REUSED');
      assert.equal(await live.reuseDetections(), reusesBefore + 1);
      assert.equal((await a.getSession()).status, 'signed-out', 'the whole session was ended, a included');
    });
  });
}
