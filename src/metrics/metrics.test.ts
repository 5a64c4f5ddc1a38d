/**
 * Metrics, scraped and parsed after real traffic on each storage backend: `/metrics` with the token
 * (404 without METRICS_TOKEN, 401 with a wrong one), the METRICS_PORT listener (no token, stops with
 * the app), and no label carrying the user's address or id.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { backends } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, useTestApp, type TestApp } from '../../test/helpers/app.ts';
import { createLease, enterWithin } from '../http/rate-limit.ts';
import { parseExposition, valueOf, type MetricFamily } from './exposition.ts';

const TOKEN = 'metrics-token-for-tests-0123456789abcdef';
const EMAIL = 'metrics.person@example.com';
const PASSWORD = 'a long and unguessable passphrase 42';

async function scrape(t: Pick<TestApp, 'app'>): Promise<Map<string, MetricFamily>> {
  const response = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(response.statusCode, 200, response.body);
  assert.match(String(response.headers['content-type']), /^text\/plain; version=0\.0\.4/);
  assert.equal(response.headers['cache-control'], 'no-store');
  return parseExposition(response.body);
}

/** A counter's value, 0 when the series does not exist yet. */
const count = (families: Map<string, MetricFamily>, name: string, labels: Record<string, string> = {}) => valueOf(families, name, labels) ?? 0;

for (const backend of await backends()) {
  describe(`metrics (${backend.name})`, { skip: backend.skip }, () => {
    describe('with METRICS_TOKEN', () => {
      const t = useTestApp(backend, { env: { METRICS_TOKEN: TOKEN, RATE_LIMIT_MAIL_PER_ADDRESS: '1/1h' } });
      let userId: string;
      let beforeTraffic: Map<string, MetricFamily>;
      let afterTraffic: Map<string, MetricFamily>;

      before(async () => {
        userId = (await createUser(t.services, { email: EMAIL, password: PASSWORD })).id;
        // The mail stays in the outbox, so its backlog shows.
        await t.services.mail.stop();
        beforeTraffic = await scrape(t);

        const signedIn = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: EMAIL, password: PASSWORD } });
        assert.equal(signedIn.statusCode, 200);
        const failed = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: EMAIL, password: 'not the password at all' } });
        assert.equal(failed.statusCode, 401);
        const mailed = await t.app.inject({ method: 'POST', url: '/api/auth/forgot-password', payload: { email: EMAIL } });
        assert.equal(mailed.statusCode, 202);
        const refused = await t.app.inject({ method: 'POST', url: '/api/auth/forgot-password', payload: { email: EMAIL } });
        assert.equal(refused.statusCode, 429);
        const signedOut = await t.app.inject({ method: 'POST', url: '/api/auth/signout', headers: { authorization: `Bearer ${signedIn.json().token}` } });
        assert.equal(signedOut.statusCode, 200);
        assert.equal((await t.app.inject({ method: 'GET', url: '/auth/signin' })).statusCode, 200);
        assert.equal((await t.app.inject({ method: 'GET', url: `/no/such/${userId}` })).statusCode, 404);

        afterTraffic = await scrape(t);
      });

      it('counts requests by method, route pattern and status, in both scopes, and the unmatched ones', () => {
        const requests = (labels: Record<string, string>) => count(afterTraffic, 'gatehouse_http_requests_total', labels) - count(beforeTraffic, 'gatehouse_http_requests_total', labels);
        assert.equal(requests({ method: 'POST', route: '/api/auth', status: '200' }), 1);
        assert.equal(requests({ method: 'POST', route: '/api/auth', status: '401' }), 1);
        assert.equal(requests({ method: 'POST', route: '/api/auth/forgot-password', status: '202' }), 1);
        assert.equal(requests({ method: 'POST', route: '/api/auth/forgot-password', status: '429' }), 1);
        assert.equal(requests({ method: 'GET', route: '/auth/signin', status: '200' }), 1);
        assert.equal(requests({ method: 'GET', route: 'unmatched', status: '404' }), 1);
        const histogram = afterTraffic.get('gatehouse_http_request_duration_seconds');
        assert.equal(histogram?.type, 'histogram');
        assert.equal(count(afterTraffic, 'gatehouse_http_request_duration_seconds_count', { method: 'POST', route: '/api/auth' }), 2);
        assert.ok(count(afterTraffic, 'gatehouse_http_request_duration_seconds_sum', { method: 'POST', route: '/api/auth' }) > 0);
        assert.deepEqual(Object.keys(histogram!.samples[0]!.labels).sort(), histogram!.samples[0]!.name.endsWith('_bucket') ? ['le', 'method', 'route'] : ['method', 'route']);
      });

      it('counts sign-ins by method and outcome, sessions created and ended', () => {
        const delta = (name: string, labels: Record<string, string>) => count(afterTraffic, name, labels) - count(beforeTraffic, name, labels);
        assert.equal(delta('gatehouse_signins_total', { method: 'password', outcome: 'success' }), 1);
        assert.equal(delta('gatehouse_signins_total', { method: 'password', outcome: 'invalid_credentials' }), 1);
        assert.equal(delta('gatehouse_sessions_created_total', { method: 'password' }), 1);
        assert.equal(delta('gatehouse_sessions_ended_total', { reason: 'signout' }), 1);
        assert.equal(afterTraffic.get('gatehouse_signins_total')?.type, 'counter');
      });

      it('counts rate-limit refusals by limiter', () => {
        assert.equal(count(afterTraffic, 'gatehouse_rate_limit_refusals_total', { limiter: 'forgot-address' }) - count(beforeTraffic, 'gatehouse_rate_limit_refusals_total', { limiter: 'forgot-address' }), 1);
      });

      it('counts a refusal once: a refusing consume and a refused entry, never a recorded failure', async () => {
        const limiters = t.services.rateLimiters;
        const limiter = limiters.create('metrics-test', { points: 1, durationSeconds: 60 });
        assert.equal(await limiter.consume('k1'), null);
        assert.notEqual(await limiter.consume('k1'), null); // refused: 1
        await limiter.increment('k2');
        await limiter.increment('k2'); // over the limit, but a record: 0
        const refused = await enterWithin(createLease(limiters, 'metrics-test-pending', t.services.clock), limiter, 'k2', 1); // refused: 1
        assert.equal(refused.ok, false);
        assert.equal(count(await scrape(t), 'gatehouse_rate_limit_refusals_total', { limiter: 'metrics-test' }), 2);
      });

      it('reads the outbox backlogs, the hash and estimate queues and the signing keys at scrape time', () => {
        assert.ok(count(afterTraffic, 'gatehouse_outbox_pending', { queue: 'mail' }) >= 1);
        assert.ok(count(afterTraffic, 'gatehouse_outbox_oldest_pending_age_seconds', { queue: 'mail' }) >= 0);
        assert.equal(valueOf(afterTraffic, 'gatehouse_outbox_pending', { queue: 'webhooks' }), 0);
        assert.ok(count(afterTraffic, 'gatehouse_password_hashes_total') >= count(beforeTraffic, 'gatehouse_password_hashes_total') + 2);
        assert.ok(count(afterTraffic, 'gatehouse_password_hash_wait_seconds_total') >= 0);
        assert.equal(valueOf(afterTraffic, 'gatehouse_password_hash_queued'), 0);
        assert.ok(count(afterTraffic, 'gatehouse_password_hash_concurrency') >= 1);
        assert.equal(afterTraffic.get('gatehouse_password_strength_queued')?.type, 'gauge');
        assert.ok(count(afterTraffic, 'gatehouse_signing_keys_published') >= 2);
        assert.equal(valueOf(afterTraffic, 'gatehouse_signing_keys_signing'), 2);
        assert.ok(count(afterTraffic, 'gatehouse_signing_key_age_seconds') >= 0);
      });

      it('times storage statements by operation, and the process and Node defaults', () => {
        assert.ok(count(afterTraffic, 'gatehouse_storage_query_duration_seconds_count', { operation: 'select' }) > count(beforeTraffic, 'gatehouse_storage_query_duration_seconds_count', { operation: 'select' }));
        assert.ok(count(afterTraffic, 'gatehouse_storage_query_duration_seconds_count', { operation: 'insert' }) > 0);
        assert.equal(afterTraffic.get('gatehouse_storage_query_errors_total')?.type, 'counter');
        assert.ok(count(afterTraffic, 'gatehouse_process_cpu_user_seconds_total') > 0);
        assert.ok(count(afterTraffic, 'gatehouse_nodejs_heap_size_used_bytes') > 0);
      });

      it('never puts the user’s address or id in a label', () => {
        for (const family of afterTraffic.values()) {
          for (const sample of family.samples) {
            for (const value of Object.values(sample.labels)) {
              assert.ok(!value.includes(EMAIL) && !value.includes('metrics.person') && !value.includes(userId), `${sample.name} carries ${value}`);
            }
          }
        }
      });

      it('serves every metric the docs, the alert rules and the dashboard name, and the docs name every one of ours', () => {
        const read = (file: string) => readFileSync(new URL(`../../docs/operations/${file}`, import.meta.url), 'utf8');
        const doc = read('metrics.md');
        const named = new Set([doc, read('alerts.yml'), read('grafana-dashboard.json')].flatMap((text) => text.match(/gatehouse_[a-z0-9_]+/g) ?? []));
        const served = (name: string) => afterTraffic.has(name) || afterTraffic.has(name.replace(/_(bucket|sum|count)$/, ''));
        for (const name of named) assert.ok(served(name), `${name} is named in docs/operations but not served`);
        for (const name of afterTraffic.keys()) {
          if (/^gatehouse_(process|nodejs)_/.test(name)) continue; // prom-client's defaults, documented as a set
          assert.ok(doc.includes(`\`${name}\``), `${name} is served but not in docs/operations/metrics.md`);
        }
      });

      it('answers 401 without the token or with a wrong one, and is not in the OpenAPI document', async () => {
        for (const headers of [{}, { authorization: 'Bearer wrong-token-wrong-token-wrong-token-00' }, { authorization: `Bearer ${TOKEN}x` }, { authorization: `Basic ${TOKEN}` }]) {
          const response = await t.app.inject({ method: 'GET', url: '/metrics', headers });
          assert.equal(response.statusCode, 401);
          assert.equal(response.json().error, 'UNAUTHENTICATED');
          assert.match(String(response.headers['www-authenticate']), /^Bearer/);
          assert.doesNotMatch(response.body, /gatehouse_/);
        }
        const openapi = await t.app.inject({ method: 'GET', url: '/api/docs/openapi.json' });
        assert.ok(!Object.keys(openapi.json().paths as object).includes('/metrics'));
      });
    });

    describe('without METRICS_TOKEN or METRICS_PORT', () => {
      const t = useTestApp(backend);

      it('has no metrics endpoint at all: 404 as for any unknown path, and nothing measured', async () => {
        for (const headers of [{}, { authorization: `Bearer ${TOKEN}` }]) {
          const response = await t.app.inject({ method: 'GET', url: '/metrics', headers });
          assert.equal(response.statusCode, 404);
          assert.equal(response.json().error, 'NOT_FOUND');
        }
        assert.equal(t.services.metrics, null);
        assert.equal(t.services.metricsListener, null);
      });
    });

    describe('with METRICS_PORT', () => {
      let database: Awaited<ReturnType<typeof backend.create>>;
      before(async () => {
        database = await backend.create();
      });
      after(async () => {
        await database?.drop();
      });

      it('serves /metrics on 127.0.0.1 without a token, only there, and stops with the app', async () => {
        const t = await createTestApp(database, { env: { METRICS_PORT: '0' } });
        let url: string;
        try {
          const address = t.services.metricsListener?.address();
          assert.ok(address);
          assert.equal(address.address, '127.0.0.1');
          url = `http://127.0.0.1:${address.port}`;
          await t.app.inject({ method: 'GET', url: '/api/health' });

          const response = await fetch(`${url}/metrics`);
          assert.equal(response.status, 200);
          assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
          const families = parseExposition(await response.text());
          assert.ok(count(families, 'gatehouse_http_requests_total', { method: 'GET', route: '/api/health', status: '200' }) >= 1);
          assert.equal((await fetch(`${url}/`)).status, 404);
          assert.equal((await fetch(`${url}/api/health`)).status, 404);
          assert.equal((await fetch(`${url}/metrics`, { method: 'POST' })).status, 405);
          // Not on the main port: no METRICS_TOKEN.
          assert.equal((await t.app.inject({ method: 'GET', url: '/metrics' })).statusCode, 404);
        } finally {
          await t.close();
        }
        assert.equal(t.services.metricsListener?.address(), null);
        await assert.rejects(fetch(`${url}/metrics`));
      });
    });
  });
}

describe('metrics configuration', () => {
  it('refuses a short METRICS_TOKEN and a bad METRICS_HOST or METRICS_PORT, naming each, never the token', async () => {
    const { loadConfig } = await import('../modules.ts');
    const base = { NODE_ENV: 'test', AUTH_SECRET: 'x'.repeat(40), DATABASE_URL: 'sqlite::memory:' };
    assert.throws(
      () => loadConfig({ ...base, METRICS_TOKEN: 'short-secret-value', METRICS_HOST: 'not a host!', METRICS_PORT: '70000' }),
      (error: Error & { problems?: string[] }) => {
        const problems = (error.problems ?? []).join('\n');
        assert.match(problems, /METRICS_TOKEN must be at least 32 characters/);
        assert.match(problems, /METRICS_HOST must be/);
        assert.match(problems, /METRICS_PORT must be an integer/);
        assert.doesNotMatch(problems, /short-secret-value/);
        return true;
      },
    );
    const config = loadConfig({ ...base, METRICS_PORT: '9464' });
    assert.deepEqual(config.metrics, { token: null, port: 9464, host: '127.0.0.1', isEnabled: true });
    assert.equal(loadConfig(base).metrics.isEnabled, false);
  });
});
