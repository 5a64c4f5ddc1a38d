/**
 * `/api/admin/webhooks` on the real app and storage (private targets not allowed here, as by
 * default): ADMIN only (401 / 403 before the body is read), the secret in the create and rotate
 * answers only (no-store), never in a list or a show, the URL and event rules as 422 with stable
 * codes, disable / enable / delete, deliveries and redelivery, and every change audited without
 * the secret.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../../test/helpers/databases.ts';
import { createSignedInUser, useTestApp } from '../../test/helpers/app.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';

const PASSWORD = 'correct horse battery staple';
const API = '/api/admin/webhooks';
const URL_ = 'https://hooks.example.com/gatehouse';

for (const backend of await backends()) {
  describe(`webhooks admin API on ${backend.name}`, { skip: backend.skip }, () => {
    const t = useTestApp(backend, { env: { WEBHOOK_POLL_INTERVAL_MS: '600000' } });
    let count = 0;
    const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, token?: string, payload?: object) =>
      t.app.inject({ method, url, ...(payload !== undefined && { payload }), headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
    const signedIn = (roles: string[]) => createSignedInUser(t, { email: `api${++count}@example.com`, password: PASSWORD, roles });

    it('answers 401 without a session and 403 to a non-admin, before reading the body', async () => {
      const { token } = await signedIn(['EDITOR']);
      for (const [method, url] of [
        ['GET', API],
        ['GET', `${API}/event-types`],
        ['POST', API],
        ['GET', `${API}/x`],
        ['PATCH', `${API}/x`],
        ['POST', `${API}/x/disable`],
        ['POST', `${API}/x/enable`],
        ['POST', `${API}/x/rotate-secret`],
        ['DELETE', `${API}/x`],
        ['GET', `${API}/x/deliveries`],
        ['POST', `${API}/deliveries/x/redeliver`],
      ] as const) {
        const payload = method === 'POST' || method === 'PATCH' ? { nonsense: true } : undefined;
        assert.equal((await call(method, url, undefined, payload)).json().error, 'UNAUTHENTICATED', `${method} ${url}`);
        const plain = await call(method, url, token, payload);
        assert.equal(plain.statusCode, 403, `${method} ${url}`);
        assert.equal(plain.json().error, 'FORBIDDEN');
      }
    });

    it('registers an endpoint (201, its secret this once), lists and shows it without the secret, and audits it', async () => {
      const { token } = await signedIn(['ADMIN']);
      const types = (await call('GET', `${API}/event-types`, token)).json().eventTypes as string[];
      assert.ok(types.includes('user.created') && types.includes('session.revoked') && types.includes('mfa.enabled'));
      const created = await call('POST', API, token, { url: URL_, eventTypes: ['user.created', 'password.changed', 'user.created'], description: '  CRM  sync ' });
      assert.equal(created.statusCode, 201, created.body);
      assert.equal(created.headers['cache-control'], 'no-store');
      const { endpoint, secret } = created.json();
      assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
      assert.deepEqual({ ...endpoint, id: undefined, createdAt: undefined, updatedAt: undefined }, {
        id: undefined,
        url: URL_,
        description: 'CRM sync',
        eventTypes: ['user.created', 'password.changed'],
        enabled: true,
        disabledAt: null,
        disabledReason: null,
        failingSince: null,
        createdAt: undefined,
        updatedAt: undefined,
        secretRotatedAt: null,
        previousSecretExpiresAt: null,
      });
      const list = await call('GET', API, token);
      assert.ok(list.json().endpoints.some((item: { id: string }) => item.id === endpoint.id));
      const shown = await call('GET', `${API}/${endpoint.id}`, token);
      assert.deepEqual(shown.json(), endpoint);
      for (const response of [list, shown]) assert.ok(!response.body.includes(secret.slice(6, 20)));
      const event = (await t.services.audit.listEvents({ type: 'webhook.endpoint_created', limit: 10 })).events.find((e) => e.details?.endpointId === endpoint.id);
      assert.equal(event?.details?.host, 'hooks.example.com');
      assert.ok(!JSON.stringify(event).includes(secret.slice(6, 20)));
    });

    it('refuses bad URLs and unknown event types with stable codes', async () => {
      const { token } = await signedIn(['ADMIN']);
      const cases: Array<[object, number, string]> = [
        [{ url: 'not a url', eventTypes: ['user.created'] }, 422, 'WEBHOOK_URL_INVALID'],
        [{ url: 'https://u:p@hooks.example.com/', eventTypes: ['user.created'] }, 422, 'WEBHOOK_URL_INVALID'],
        [{ url: 'http://127.0.0.1:9/', eventTypes: ['user.created'] }, 422, 'WEBHOOK_URL_NOT_ALLOWED'],
        [{ url: 'https://[::ffff:10.0.0.1]/', eventTypes: ['user.created'] }, 422, 'WEBHOOK_URL_NOT_ALLOWED'],
        // Short enough as sent, too long once percent-encoded (what is stored): a 422, not a 500 on PostgreSQL.
        [{ url: `https://hooks.example.com/${'ä'.repeat(1000)}`, eventTypes: ['user.created'] }, 422, 'WEBHOOK_URL_INVALID'],
        [{ url: URL_, eventTypes: ['user.created', 'user.exploded'] }, 422, 'WEBHOOK_EVENT_UNKNOWN'],
        [{ url: URL_, eventTypes: [] }, 422, 'VALIDATION_ERROR'],
        [{ url: URL_ }, 422, 'VALIDATION_ERROR'],
      ];
      for (const [payload, status, code] of cases) {
        const response = await call('POST', API, token, payload);
        assert.equal(response.statusCode, status, JSON.stringify(payload));
        assert.equal(response.json().error, code, JSON.stringify(payload));
        assert.ok(Array.isArray(response.json().errors));
      }
    });

    it('changes, disables, enables, rotates and deletes an endpoint', async () => {
      const { token } = await signedIn(['ADMIN']);
      const { endpoint, secret } = (await call('POST', API, token, { url: URL_, eventTypes: ['user.created'] })).json();
      const changed = await call('PATCH', `${API}/${endpoint.id}`, token, { eventTypes: ['user.disabled'], url: 'https://other.example.com/in' });
      assert.equal(changed.statusCode, 200, changed.body);
      assert.deepEqual([changed.json().url, changed.json().eventTypes], ['https://other.example.com/in', ['user.disabled']]);
      assert.equal((await call('PATCH', `${API}/${endpoint.id}`, token, { url: 'http://localhost/' })).json().error, 'WEBHOOK_URL_NOT_ALLOWED');

      const disabled = await call('POST', `${API}/${endpoint.id}/disable`, token);
      assert.deepEqual([disabled.json().enabled, disabled.json().disabledReason], [false, 'ADMIN']);
      assert.equal((await call('POST', `${API}/${endpoint.id}/disable`, token)).statusCode, 200, 'idempotent');
      assert.equal((await call('POST', `${API}/${endpoint.id}/enable`, token)).json().enabled, true);

      const rotated = await call('POST', `${API}/${endpoint.id}/rotate-secret`, token);
      assert.equal(rotated.statusCode, 200);
      assert.equal(rotated.headers['cache-control'], 'no-store');
      assert.notEqual(rotated.json().secret, secret);
      const expires = Date.parse(rotated.json().previousSecretExpiresAt) - Date.now();
      assert.ok(expires > 23.9 * 3_600_000 && expires <= 24 * 3_600_000);
      assert.equal((await call('GET', `${API}/${endpoint.id}`, token)).json().previousSecretExpiresAt, rotated.json().previousSecretExpiresAt);

      const types = (await t.services.audit.listEvents({ limit: 50 })).events.filter((event) => event.details?.endpointId === endpoint.id).map((event) => event.type);
      for (const type of ['webhook.endpoint_created', 'webhook.endpoint_updated', 'webhook.endpoint_disabled', 'webhook.endpoint_enabled', 'webhook.endpoint_secret_rotated']) assert.ok(types.includes(type), type);
      assert.equal(types.filter((type) => type === 'webhook.endpoint_disabled').length, 1, 'a repeated disable changes nothing');

      assert.deepEqual((await call('DELETE', `${API}/${endpoint.id}`, token)).json(), { ok: true });
      for (const [method, url] of [['GET', `${API}/${endpoint.id}`], ['DELETE', `${API}/${endpoint.id}`], ['POST', `${API}/${endpoint.id}/rotate-secret`], ['GET', `${API}/${endpoint.id}/deliveries`]] as const) {
        const gone = await call(method, url, token);
        assert.equal(gone.statusCode, 404, `${method} ${url}`);
        assert.equal(gone.json().error, 'WEBHOOK_NOT_FOUND');
      }
    });

    it('lists deliveries (status, attempts, response) and redelivers one', async () => {
      const { token } = await signedIn(['ADMIN']);
      const { endpoint } = (await call('POST', API, token, { url: URL_, eventTypes: ['email.verified'] })).json();
      await t.services.audit.record({ type: 'email.verified', userId: 'user-api' });
      const listed = await call('GET', `${API}/${endpoint.id}/deliveries`, token);
      assert.equal(listed.statusCode, 200);
      const [delivery] = listed.json().deliveries;
      assert.equal(delivery.status, 'pending');
      assert.equal(delivery.eventType, 'email.verified');
      assert.deepEqual(delivery.payload.data, { userId: 'user-api' });
      assert.match(delivery.webhookId, /^msg_/);
      const pending = await call('POST', `${API}/deliveries/${delivery.id}/redeliver`, token);
      assert.deepEqual([pending.statusCode, pending.json().error], [409, 'WEBHOOK_DELIVERY_PENDING']);
      await t.services.webhooks.disable(endpoint.id, SYSTEM_SOURCE);
      const refused = await call('POST', `${API}/deliveries/${delivery.id}/redeliver`, token);
      assert.deepEqual([refused.statusCode, refused.json().error], [409, 'WEBHOOK_ENDPOINT_DISABLED']);
      await t.services.webhooks.enable(endpoint.id, SYSTEM_SOURCE);
      const again = await call('POST', `${API}/deliveries/${delivery.id}/redeliver`, token);
      assert.equal(again.statusCode, 201, again.body);
      assert.deepEqual([again.json().delivery.redeliveryOf, again.json().delivery.webhookId, again.json().delivery.status], [delivery.id, delivery.webhookId, 'pending']);
      assert.equal((await call('POST', `${API}/deliveries/nope/redeliver`, token)).json().error, 'WEBHOOK_DELIVERY_NOT_FOUND');
      await t.services.webhooks.delete(endpoint.id, SYSTEM_SOURCE);
    });
  });
}
