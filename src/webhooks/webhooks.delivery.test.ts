/**
 * Webhooks end to end on the real app, on SQLite and PostgreSQL, with a receiver on 127.0.0.1
 * verifying every signature with the `standardwebhooks` library: events from real actions (an
 * admin creates a user, the user signs in and changes their password), the payloads' allow-list
 * (no e-mail, password, token, IP or User-Agent), retries after the receiver was down with the
 * same webhook-id (the test's clock, `runOnce()`), giving up after 3 days, disabling an endpoint
 * that failed for WEBHOOK_DISABLE_AFTER with mail to every admin, rotation (two signatures for
 * 24 h), redelivery, two workers on one database delivering each webhook exactly once, and the
 * retention purge.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../../test/helpers/databases.ts';
import { createSignedInUser, useTestApp, type TestApp } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';
import { startReceiver, verifyWithLibrary, type Receiver } from './test-receiver.ts';
import { createDeliveryWorker, RETRY_WINDOW_MS } from './delivery-worker.ts';
import { createSender } from '../http/outbound/sender.ts';
import { createSecretSeal, newWebhookSecret } from './signing.ts';
import { TEST_SECRET } from '../../test/helpers/app.ts';
import type { WebhookEventType } from './events.ts';
import { insertDeliveries } from './webhooks.store.ts';
import type { SendOutcome, SendRequest } from '../http/outbound/sender.ts';
import { randomId } from '../lib/random.ts';

const PASSWORD = 'correct horse battery staple';
const DAY = 86_400_000;

for (const backend of await backends()) {
  describe(`webhook delivery on ${backend.name}`, { skip: backend.skip }, () => {
    const clock = fakeClock();
    const t = useTestApp(backend, { clock, env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_POLL_INTERVAL_MS: '600000' } });
    let count = 0;

    /** Runs the worker until a run finds nothing due. */
    async function drain(app: TestApp = t): Promise<void> {
      // The app's own worker, woken by an earlier event, may be in a run that began before what the
      // test just did; runOnce() hands back that run, whose empty result would prove nothing. Let
      // it finish first: every run counted below began after this call. (A full-suite run caught
      // the purge test reading its rows while such a run ended.)
      await app.services.webhooks.runOnce();
      for (let i = 0; i < 50; i++) {
        const result = await app.services.webhooks.runOnce();
        if (result.delivered + result.retried + result.failed === 0) return;
      }
      assert.fail('the outbox did not drain');
    }

    /** A receiver and an endpoint for it, both gone when the test ends. */
    async function endpointFor(test: { after(fn: () => unknown): void }, eventTypes: WebhookEventType[]): Promise<{ receiver: Receiver; id: string; secret: string }> {
      const receiver = await startReceiver((fn) => test.after(fn));
      const created = await t.services.webhooks.create({ url: receiver.url, eventTypes, description: 'test' }, SYSTEM_SOURCE);
      assert.ok(created.ok, JSON.stringify(created));
      test.after(() => t.services.webhooks.delete(created.endpoint.id, SYSTEM_SOURCE));
      return { receiver, id: created.endpoint.id, secret: created.secret };
    }

    const deliveries = async (id: string) => (await t.services.webhooks.listDeliveries(id, 500))!;

    it('sends signed webhooks for real actions, with only ids and facts in them', async (test) => {
      const { receiver, secret, id } = await endpointFor(test, ['user.created', 'session.created', 'password.changed', 'session.revoked']);
      const admin = await createSignedInUser(t, { email: `admin${++count}@example.com`, password: PASSWORD, roles: ['ADMIN'] });
      await drain(); // the admin's own creation and sign-in are not what this test is about
      receiver.received.length = 0;

      const email = `new${++count}@example.com`;
      const created = await t.app.inject({ method: 'POST', url: '/api/admin/users', headers: { authorization: `Bearer ${admin.token}` }, payload: { email, name: 'New Person', password: PASSWORD, roles: ['EDITOR'] } });
      assert.equal(created.statusCode, 201, created.body);
      const userId = created.json().id as string;
      const signedIn = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email, password: PASSWORD } });
      assert.equal(signedIn.statusCode, 200, signedIn.body);
      const newPassword = 'a different horse battery staple';
      const changed = await t.app.inject({ method: 'POST', url: '/api/auth/change-password', headers: { authorization: `Bearer ${signedIn.json().token}` }, payload: { currentPassword: PASSWORD, newPassword } });
      assert.equal(changed.statusCode, 200, changed.body);
      await drain();

      const events = receiver.received.map((request) => verifyWithLibrary(request, secret));
      const ofUser = events.filter((event) => event.data.userId === userId);
      assert.deepEqual(ofUser.map((event) => event.type).sort(), ['password.changed', 'session.created', 'user.created']);
      const byType = Object.fromEntries(ofUser.map((event) => [event.type, event]));
      assert.deepEqual(byType['user.created']!.data, { userId, roles: ['EDITOR'], method: 'admin', actorUserId: admin.id });
      assert.equal(typeof byType['session.created']!.data.sessionId, 'string');
      assert.deepEqual(byType['session.created']!.data.amr, ['pwd']);
      assert.deepEqual(Object.keys(byType['password.changed']!.data).sort(), ['sessionsEnded', 'userId']);
      for (const event of ofUser) assert.match(event.timestamp, /^\d{4}-\d\d-\d\dT/);
      for (const request of receiver.received) {
        assert.match(request.headers['webhook-id']!, /^msg_[A-Za-z0-9_-]{22}$/);
        assert.match(request.headers['webhook-signature']!, /^v1,[A-Za-z0-9+/]+={0,2}$/);
        assert.equal(request.headers['content-type'], 'application/json');
        // Never a secret, token, hash, address or client detail.
        for (const forbidden of [email, PASSWORD, newPassword, 'token', 'hash', '127.0.0.1', 'lightMyRequest', secret, signedIn.json().token]) {
          assert.ok(!request.body.includes(forbidden), `${JSON.parse(request.body).type} carries ${forbidden.slice(0, 12)}`);
        }
      }
      // Each delivery is recorded as delivered with the receiver's answer.
      const rows = await deliveries(id);
      assert.ok(rows.length >= 3);
      for (const row of rows) {
        assert.equal(row.status, 'delivered');
        assert.equal(row.lastResponseCode, 204);
        assert.equal(row.attempts, 1);
      }
    });

    it('retries a receiver that was down, with backoff and the same webhook-id, until it answers 2xx', async (test) => {
      const { receiver, secret, id } = await endpointFor(test, ['email.verified']);
      receiver.answer({ status: 503, body: 'down\nfor maintenance' });
      await t.services.audit.record({ type: 'email.verified', userId: 'user-down-1', details: { wasUnverified: true } });
      await drain();
      let [row] = await deliveries(id);
      assert.equal(row!.status, 'pending');
      assert.equal(row!.attempts, 1);
      assert.equal(row!.lastResponseCode, 503);
      assert.equal(row!.lastError, 'HTTP_STATUS');
      assert.equal(row!.lastResponseSnippet, 'down for maintenance');
      const wait = row!.nextAttemptAt! - clock();
      assert.ok(wait > 20_000 && wait <= 30_000, `first retry in 24-30 s, not ${wait}`);
      assert.ok((await t.services.webhooks.show(id))!.failingSince !== null);

      await drain();
      assert.equal(receiver.received.length, 1, 'nothing before the retry is due');
      clock.advance(30_000);
      await drain();
      assert.equal(receiver.received.length, 2);
      [row] = await deliveries(id);
      const second = row!.nextAttemptAt! - clock();
      assert.ok(second > 45_000 && second <= 60_000, `second retry in 48-60 s, not ${second}`);

      receiver.answer({ status: 200, body: 'ok' });
      clock.advance(60_000);
      await drain();
      [row] = await deliveries(id);
      assert.equal(row!.status, 'delivered');
      assert.equal(row!.attempts, 3);
      assert.equal(row!.lastResponseCode, 200);
      assert.equal(row!.lastError, null);
      assert.equal(receiver.received.length, 3);
      const ids = new Set(receiver.received.map((request) => request.headers['webhook-id']));
      assert.equal(ids.size, 1, 'the same webhook-id on every attempt');
      const timestamps = receiver.received.map((request) => Number(request.headers['webhook-timestamp']));
      assert.ok(timestamps[2]! > timestamps[0]!, 'each attempt has its own timestamp');
      for (const request of receiver.received) assert.equal(verifyWithLibrary(request, secret).data.userId, 'user-down-1');
      assert.equal((await t.services.webhooks.show(id))!.failingSince, null, 'healthy again');
    });

    it('gives up 3 days after the first attempt (one last attempt at the end), then failed', async (test) => {
      const { receiver, id } = await endpointFor(test, ['email.verified']);
      receiver.answer({ status: 500 });
      await t.services.audit.record({ type: 'email.verified', userId: 'user-never' });
      await drain();
      const first = (await deliveries(id))[0]!.firstAttemptAt!;
      for (let i = 0; i < 40 && (await deliveries(id))[0]!.status === 'pending'; i++) {
        clock.advance(7 * 3_600_000);
        await drain();
      }
      const [row] = await deliveries(id);
      assert.equal(row!.status, 'failed');
      assert.equal(row!.lastResponseCode, 500);
      assert.ok(row!.lastAttemptAt! - first >= RETRY_WINDOW_MS, 'the last attempt is at least 3 days after the first');
      assert.ok(row!.attempts >= 12 && row!.attempts <= 25, `${row!.attempts} attempts`);
      assert.equal(receiver.received.length, row!.attempts);
      assert.equal((await t.services.webhooks.show(id))!.isEnabled, true, 'not failing for 5 days yet');
    });

    it('disables an endpoint whose deliveries all failed for WEBHOOK_DISABLE_AFTER, audits it and mails every admin', async (test) => {
      const admins = [await createSignedInUser(t, { email: `boss${++count}@example.com`, password: PASSWORD, roles: ['ADMIN'] }), await createSignedInUser(t, { email: `boss${++count}@example.com`, password: PASSWORD, roles: ['ADMIN'] })];
      const { receiver, id } = await endpointFor(test, ['email.verified']);
      receiver.answer({ status: 500 });
      const start = clock();
      for (let day = 0; day <= 6 && (await t.services.webhooks.show(id))!.isEnabled; day++) {
        await t.services.audit.record({ type: 'email.verified', userId: `user-day-${day}` });
        await drain();
        clock.advance(DAY);
      }
      const endpoint = (await t.services.webhooks.show(id))!;
      assert.equal(endpoint.isEnabled, false);
      assert.equal(endpoint.disabledReason, 'FAILING');
      assert.ok(endpoint.disabledAt! - start >= 5 * DAY && endpoint.disabledAt! - start < 6 * DAY + 3_600_000);
      const rows = await deliveries(id);
      assert.ok(rows.every((row) => row.status === 'failed'), 'no delivery is left pending');
      assert.ok(rows.some((row) => row.lastError === 'ENDPOINT_DISABLED'));
      const audit = (await t.services.audit.listEvents({ type: 'webhook.endpoint_auto_disabled', limit: 10 })).events.find((event) => event.details?.endpointId === id);
      assert.ok(audit);
      assert.equal(audit.details?.host, new URL(receiver.url).host);
      const mails = (await t.services.mail.listRecent(200)).filter((mail) => mail.template === 'webhook-endpoint-disabled' && mail.text?.includes(id));
      for (const admin of admins) assert.ok(mails.some((mail) => mail.to === admin.email), `mailed ${admin.email}`);
      assert.ok(mails[0]!.text!.includes(`/admin/webhooks/${id}`));
      // Nothing more is sent while disabled.
      const before = receiver.received.length;
      await t.services.audit.record({ type: 'email.verified', userId: 'user-after' });
      await drain();
      assert.equal(receiver.received.length, before);
      // Enabled again, it starts healthy.
      const enabled = await t.services.webhooks.enable(id, SYSTEM_SOURCE);
      assert.equal(enabled!.isEnabled, true);
      assert.equal(enabled!.failingSince, null);
    });

    it('signs with both secrets for 24 hours after a rotation, then with the new one only', async (test) => {
      const { receiver, id, secret: oldSecret } = await endpointFor(test, ['email.verified']);
      const rotated = await t.services.webhooks.rotateSecret(id, SYSTEM_SOURCE);
      assert.ok(rotated.ok);
      assert.notEqual(rotated.secret, oldSecret);
      assert.match(rotated.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
      await t.services.audit.record({ type: 'email.verified', userId: 'user-rotation' });
      await drain();
      const during = receiver.received[0]!;
      assert.equal(during.headers['webhook-signature']!.split(' ').length, 2);
      verifyWithLibrary(during, oldSecret);
      verifyWithLibrary(during, rotated.secret);
      clock.advance(24 * 3_600_000 + 1000);
      await t.services.audit.record({ type: 'email.verified', userId: 'user-rotation-2' });
      await drain();
      const after = receiver.received[1]!;
      assert.equal(after.headers['webhook-signature']!.split(' ').length, 1);
      verifyWithLibrary(after, rotated.secret);
      assert.throws(() => verifyWithLibrary(after, oldSecret), /No matching signature/);
      // The database holds no secret in clear.
      const row = await t.services.storage.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      const stored = JSON.stringify(row);
      for (const secret of [oldSecret, rotated.secret]) {
        assert.ok(!stored.includes(secret) && !stored.includes(secret.slice('whsec_'.length)));
      }
    });

    it('after AUTH_SECRET changed, rotating the secret makes deliveries work at once (the unreadable secret is dropped)', async (test) => {
      const { receiver, id } = await endpointFor(test, ['email.verified']);
      // The stored secret as another AUTH_SECRET sealed it.
      const foreign = createSecretSeal('an AUTH_SECRET that is no longer the one in use, long enough').seal(id, newWebhookSecret());
      await t.services.storage.db.updateTable('webhook_endpoints').set({ secret_sealed: foreign }).where('id', '=', id).execute();
      await t.services.audit.record({ type: 'email.verified', userId: 'user-unreadable' });
      await drain();
      assert.equal((await deliveries(id))[0]!.lastError, 'SECRET_UNREADABLE');
      const rotated = await t.services.webhooks.rotateSecret(id, SYSTEM_SOURCE);
      assert.ok(rotated.ok);
      assert.equal(rotated.endpoint.previousSecretExpiresAt, null);
      clock.advance(1_000); // newest first
      await t.services.audit.record({ type: 'email.verified', userId: 'user-after-rotation' });
      await drain();
      const [latest] = await deliveries(id);
      assert.equal(latest!.status, 'delivered', `${latest!.status} ${latest!.lastError}`);
      assert.equal(receiver.received.length, 1);
      assert.equal(receiver.received[0]!.headers['webhook-signature']!.split(' ').length, 1);
      verifyWithLibrary(receiver.received[0]!, rotated.secret);
    });

    /**
     * Pending deliveries written straight into the outbox, due an hour from now: only the test's
     * worker, whose clock is two hours ahead, finds them due (the app's own worker may be woken by
     * an earlier test's events meanwhile).
     */
    const HOUR = 3_600_000;
    const aheadClock = Object.assign(() => clock() + 2 * HOUR, { advance: (ms: number) => clock.advance(ms) });
    async function queue(endpointId: string, count: number): Promise<void> {
      const now = clock() + HOUR;
      await insertDeliveries(
        t.services.storage.db,
        Array.from({ length: count }, (_, index) => ({
          id: randomId(),
          endpoint_id: endpointId,
          message_id: `msg_${randomId()}`,
          event_type: 'email.verified',
          event_id: null,
          payload: '{"type":"email.verified","timestamp":"2026-01-01T00:00:00.000Z","data":{}}',
          status: 'pending' as const,
          attempts: 0,
          next_attempt_at: now + index,
          first_attempt_at: null,
          last_attempt_at: null,
          locked_until: null,
          locked_by: null,
          last_response_code: null,
          last_error: null,
          last_response_snippet: null,
          redelivery_of: null,
          created_at: now,
          delivered_at: null,
        })),
      );
    }

    function workerWith(sender: (request: SendRequest) => Promise<SendOutcome>, options: { timeoutMs?: number } = {}) {
      const seal = createSecretSeal(TEST_SECRET);
      return createDeliveryWorker({
        db: t.services.storage.db,
        isPostgres: t.services.storage.dialect === 'postgres',
        sender,
        secretsOf: (endpoint) => [seal.open(endpoint.id, endpoint.secret_sealed)],
        clock: aheadClock,
        logger: t.services.logger,
        pollIntervalMs: 600_000,
        retentionMs: 30 * DAY,
        disableAfterMs: 5 * DAY,
        onEndpointFailing: async () => {},
        ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
      });
    }
    const delivered: SendOutcome = { delivered: true, responseCode: 204, error: null, snippet: null };

    async function endpointAt(test: { after(fn: () => unknown): void }, url: string): Promise<string> {
      const created = await t.services.webhooks.create({ url, eventTypes: ['email.verified'] }, SYSTEM_SOURCE);
      assert.ok(created.ok, JSON.stringify(created));
      test.after(() => t.services.webhooks.delete(created.endpoint.id, SYSTEM_SOURCE));
      return created.endpoint.id;
    }

    it('a receiver that does not answer holds one lane, not all: other endpoints are delivered meanwhile', async (test) => {
      const slow = await endpointAt(test, 'https://slow.example.com/in');
      const fast = await endpointAt(test, 'https://fast.example.com/in');
      await queue(slow, 6); // due first
      clock.advance(10);
      await queue(fast, 3);
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let fastSent = 0;
      let slowInFlight = 0;
      let slowInFlightMax = 0;
      const worker = workerWith(async (request) => {
        if (request.url.includes('fast')) {
          fastSent += 1;
          return delivered;
        }
        slowInFlight += 1;
        slowInFlightMax = Math.max(slowInFlight, slowInFlightMax);
        await released;
        slowInFlight -= 1;
        return { delivered: false, responseCode: null, error: 'TIMEOUT', snippet: null };
      });
      const run = worker.runOnce();
      for (let i = 0; i < 100 && fastSent < 3; i++) await new Promise((resolve) => setTimeout(resolve, 20));
      const fastWhileSlowHeld = fastSent;
      release();
      await run;
      assert.equal(fastWhileSlowHeld, 3, 'the healthy endpoint waited behind the one that does not answer');
      assert.equal(slowInFlightMax, 1, 'one lane at a time for one endpoint');
    });

    it('two lanes of one worker never send the same delivery at once, even when its lease ran out mid-attempt', async (test) => {
      const a = await endpointAt(test, 'https://a.example.com/in');
      const b = await endpointAt(test, 'https://b.example.com/in');
      await queue(a, 1);
      clock.advance(10);
      await queue(b, 1);
      const sentTo: string[] = [];
      const worker = workerWith(
        async (request) => {
          sentTo.push(new URL(request.url).hostname);
          if (request.url.includes('a.example')) {
            clock.advance(10_000); // a stalled attempt outlives its 3 s lease
            await new Promise((resolve) => setTimeout(resolve, 300));
          } else {
            await new Promise((resolve) => setTimeout(resolve, 30));
          }
          return delivered;
        },
        { timeoutMs: 1_000 },
      );
      await worker.runOnce();
      assert.deepEqual(sentTo.sort(), ['a.example.com', 'b.example.com']);
    });

    it('redelivers a delivered or failed webhook with the same payload and webhook-id; refuses a pending one', async (test) => {
      const { receiver, id, secret } = await endpointFor(test, ['email.verified']);
      receiver.answer({ status: 400 });
      await t.services.audit.record({ type: 'email.verified', userId: 'user-redo' });
      await drain();
      const [pending] = await deliveries(id);
      assert.deepEqual(await t.services.webhooks.redeliver(pending!.id, SYSTEM_SOURCE), { ok: false, reason: 'PENDING' });
      await t.services.webhooks.disable(id, SYSTEM_SOURCE);
      const [failed] = await deliveries(id);
      assert.equal(failed!.status, 'failed');
      assert.deepEqual(await t.services.webhooks.redeliver(failed!.id, SYSTEM_SOURCE), { ok: false, reason: 'ENDPOINT_DISABLED' });
      await t.services.webhooks.enable(id, SYSTEM_SOURCE);
      receiver.answer({ status: 202 });
      const again = await t.services.webhooks.redeliver(failed!.id, SYSTEM_SOURCE);
      assert.ok(again.ok);
      assert.equal(again.delivery.redeliveryOf, failed!.id);
      await drain();
      const [first, second] = receiver.received;
      assert.equal(second!.body, first!.body);
      assert.equal(second!.headers['webhook-id'], first!.headers['webhook-id']);
      verifyWithLibrary(second!, secret);
      assert.equal((await t.services.webhooks.showDelivery(again.delivery.id))!.status, 'delivered');
      assert.deepEqual(await t.services.webhooks.redeliver('no-such-delivery', SYSTEM_SOURCE), { ok: false, reason: 'NOT_FOUND' });
    });

    it('two workers on one database deliver each webhook exactly once', async (test) => {
      const { receiver, secret } = await endpointFor(test, ['email.verified']);
      const seal = createSecretSeal(TEST_SECRET);
      const workers = ['worker-a', 'worker-b'].map((owner) =>
        createDeliveryWorker({
          db: t.services.storage.db,
          isPostgres: t.services.storage.dialect === 'postgres',
          sender: createSender({ policy: { allowHttp: true, allowPrivate: true } }),
          secretsOf: (endpoint) => [seal.open(endpoint.id, endpoint.secret_sealed)],
          clock,
          logger: t.services.logger,
          pollIntervalMs: 600_000,
          retentionMs: 30 * DAY,
          disableAfterMs: 5 * DAY,
          onEndpointFailing: async () => assert.fail('nothing fails here'),
          owner,
        }),
      );
      const total = 30;
      for (let i = 0; i < total; i++) await t.services.audit.record({ type: 'email.verified', userId: `user-pair-${i}` });
      for (let round = 0; round < 20 && receiver.received.length < total; round++) await Promise.all(workers.map((worker) => worker.runOnce()));
      await drain(); // the app's own worker, woken by the events, counts as a third instance
      assert.equal(receiver.received.length, total);
      assert.equal(new Set(receiver.received.map((request) => request.headers['webhook-id'])).size, total);
      for (const request of receiver.received) verifyWithLibrary(request, secret);
    });

    it('purges delivered and failed deliveries after WEBHOOK_RETENTION', async (test) => {
      const { id } = await endpointFor(test, ['email.verified']);
      await t.services.audit.record({ type: 'email.verified', userId: 'user-old' });
      await drain();
      assert.equal((await deliveries(id)).length, 1);
      clock.advance(31 * DAY);
      await t.services.audit.record({ type: 'email.verified', userId: 'user-new' });
      await drain();
      const rows = await deliveries(id);
      assert.deepEqual(rows.map((row) => (row.payload as { data: { userId: string } }).data.userId), ['user-new']);
    });
  });
}

for (const backend of await backends()) {
  /**
   * Fairness on the real clock, with real receivers: a silent receiver holds each attempt for
   * WEBHOOK_TIMEOUT_MS, here the longest allowed (60 s), so a healthy endpoint that had to wait
   * behind it could not pass by luck; each healthy webhook must arrive within 15 s of its event.
   */
  describe(`webhook delivery fairness on ${backend.name}`, { skip: backend.skip }, () => {
    const t = useTestApp(backend, { env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_TIMEOUT_MS: '60000', WEBHOOK_POLL_INTERVAL_MS: '600000', WEBHOOK_MAX_PENDING_PER_ENDPOINT: '10' } });

    async function endpointFor(test: { after(fn: () => unknown): void }, answer: 'hold' | 'ok'): Promise<{ receiver: Receiver; id: string; secret: string }> {
      const receiver = await startReceiver((fn) => test.after(fn));
      if (answer === 'hold') receiver.answer('hold');
      const created = await t.services.webhooks.create({ url: receiver.url, eventTypes: ['email.verified'], description: answer }, SYSTEM_SOURCE);
      assert.ok(created.ok, JSON.stringify(created));
      test.after(() => t.services.webhooks.delete(created.endpoint.id, SYSTEM_SOURCE));
      return { receiver, id: created.endpoint.id, secret: created.secret };
    }

    it('regression (issue 30.3): one silent receiver stalls every endpoint', async (test) => {
      const healthy = await endpointFor(test, 'ok');
      // More silent receivers than the worker once had lanes, and a second instance on the same
      // database (polling, as an instance that did not write the event does).
      const silent = await Promise.all(Array.from({ length: 5 }, () => endpointFor(test, 'hold')));
      const seal = createSecretSeal(TEST_SECRET);
      const other = createDeliveryWorker({
        db: t.services.storage.db,
        isPostgres: t.services.storage.dialect === 'postgres',
        sender: createSender({ policy: { allowHttp: true, allowPrivate: true }, timeoutMs: 60_000 }),
        secretsOf: (endpoint) => [seal.open(endpoint.id, endpoint.secret_sealed)],
        clock: Date.now,
        logger: t.services.logger,
        pollIntervalMs: 100,
        retentionMs: 30 * DAY,
        disableAfterMs: 5 * DAY,
        timeoutMs: 60_000,
        onEndpointFailing: async () => {},
        owner: 'other-instance',
      });
      other.start();
      test.after(() => other.stop());

      const events = 20;
      for (let i = 1; i <= events; i++) {
        await t.services.audit.record({ type: 'email.verified', userId: `user-stream-${i}` });
        const arrived = await healthy.receiver.waitFor(i, 15_000);
        assert.equal(verifyWithLibrary(arrived, healthy.secret).data.userId, `user-stream-${i}`);
      }
      assert.equal(healthy.receiver.received.length, events);
      // Each silent receiver holds one attempt, on one lane of one instance; the rest of its
      // backlog waits for that lane.
      for (const { receiver } of silent) assert.equal(receiver.received.length, 1);
    });

    it('bounds the backlog of a failing endpoint: events over WEBHOOK_MAX_PENDING_PER_ENDPOINT are recorded failed (BACKLOG_FULL), redeliverable; a healthy burst is never refused', async (test) => {
      const failing = await endpointFor(test, 'ok');
      failing.receiver.answer({ status: 503 });
      const healthy = await endpointFor(test, 'ok');
      await t.services.audit.record({ type: 'email.verified', userId: 'user-backlog-1' });
      await t.services.webhooks.runOnce();
      assert.notEqual((await t.services.webhooks.show(failing.id))!.failingSince, null);
      const events = 15;
      for (let i = 2; i <= events; i++) await t.services.audit.record({ type: 'email.verified', userId: `user-backlog-${i}` });
      await healthy.receiver.waitFor(events);
      await t.services.webhooks.runOnce();

      const rows = (await t.services.webhooks.listDeliveries(failing.id, 500))!;
      const userOf = (row: { payload: unknown }) => (row.payload as { data: { userId: string } }).data.userId;
      const users = (from: number, count: number) => Array.from({ length: count }, (_, i) => `user-backlog-${from + i}`).sort();
      const refused = rows.filter((row) => row.lastError === 'BACKLOG_FULL');
      // The first 10 stay pending, retried as ever; the later ones are on record, never sent.
      assert.deepEqual(rows.filter((row) => row.status === 'pending').map(userOf).sort(), users(1, 10));
      assert.deepEqual(refused.map(userOf).sort(), users(11, 5));
      for (const row of refused) assert.deepEqual([row.status, row.attempts, row.nextAttemptAt], ['failed', 0, null]);
      const sent = new Set(failing.receiver.received.map((request) => (JSON.parse(request.body) as { data: { userId: string } }).data.userId));
      assert.deepEqual([...sent].sort(), users(1, 10), 'each kept one attempted, no refused one sent');
      // The healthy endpoint got the same burst, all of it.
      const delivered = (await t.services.webhooks.listDeliveries(healthy.id, 500))!.filter((row) => row.status === 'delivered');
      assert.equal(delivered.length, events);
      // An administrator can send a refused one again.
      const again = await t.services.webhooks.redeliver(refused[0]!.id, SYSTEM_SOURCE);
      assert.ok(again.ok);
      assert.equal(again.delivery.status, 'pending');
    });
  });
}
