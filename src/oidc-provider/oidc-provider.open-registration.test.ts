/**
 * Open dynamic client registration (OIDC_PROVIDER_REGISTRATION=open), over real HTTP on loopback,
 * on SQLite and PostgreSQL: anyone registers (openid-client's `dynamicClientRegistration`, no
 * initial access token), and the client signs a person in with the consent page shown (never
 * first-party); what open mode refuses (client_credentials, the device flow); the cap on live
 * self-registered clients (403 `access_denied`, while everything else answers); last use recorded
 * when a code or token is issued and shown by the admin API, CLI view and page; and the job that
 * deletes self-registered clients nobody used, driven by a test clock. And the rates, in a suite of
 * their own: per IP, and from all addresses together, each answering 429 in the OAuth error shape
 * while discovery and the token endpoint go on answering.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import { backends } from '../../test/helpers/databases.ts';
import { createTestApp, createSignedInUser } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { authorize, Browser, createRpUser, freePort, type ListeningApp } from '../../test/helpers/oidc-rp.ts';
import type { TestDatabase } from '../../test/helpers/databases.ts';
import type { Env } from '../config.ts';
import type { Clock } from '../lib/clock.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';

const REDIRECT = 'https://mcp-client.example/callback';
const MAX_CLIENTS = 4;
const HOUR_MS = 3_600_000;

/** The service on a loopback port that is its AUTH_URL, on `clock`. */
async function listeningAppOn(database: TestDatabase, env: Env, clock?: Clock): Promise<ListeningApp> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const t = await createTestApp(database, { env: { AUTH_URL: url, ...env }, ...(clock !== undefined && { clock }) });
  await t.app.listen({ port, host: '127.0.0.1' });
  return { ...t, url };
}

/** A plain RFC 7591 registration, as any client may send it in open mode. */
async function register(t: ListeningApp, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; json: Record<string, unknown> }> {
  const response = await fetch(`${t.url}/oidc/reg`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: response.status, headers: response.headers, json: (await response.json()) as Record<string, unknown> };
}

for (const backend of await backends()) {
  describe(`open dynamic client registration on ${backend.name}`, { skip: backend.skip }, () => {
    const clock = fakeClock();
    let database: TestDatabase;
    let t: ListeningApp;
    let adminToken: string;
    /** The client that signed a person in (used), and those that never did. */
    let used: string;
    const unused: string[] = [];

    before(async () => {
      database = await backend.create();
      t = await listeningAppOn(
        database,
        { OIDC_PROVIDER_REGISTRATION: 'open', OIDC_PROVIDER_REGISTRATION_MAX_CLIENTS: String(MAX_CLIENTS), RATE_LIMIT_OIDC_REGISTRATION: '100/1h', RATE_LIMIT_OIDC_REGISTRATION_GLOBAL: '100/1h' },
        clock,
      );
      await createRpUser(t);
      adminToken = (await createSignedInUser(t, { email: 'admin@example.com', password: 'correct horse battery staple', roles: ['ADMIN'] })).token;
    });
    after(async () => {
      await t?.close();
      await database?.drop();
    });

    const adminGet = async (path: string) => {
      const response = await fetch(`${t.url}${path}`, { headers: { authorization: `Bearer ${adminToken}` } });
      assert.equal(response.status, 200, path);
      return (await response.json()) as Record<string, unknown>;
    };

    it('advertises the registration endpoint and takes a registration without any token; the client signs a person in with consent, and its use is recorded', async () => {
      const metadata = (await (await fetch(`${t.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
      assert.equal(metadata.registration_endpoint, `${t.url}/oidc/reg`);

      const config = await client.dynamicClientRegistration(
        new URL(t.url),
        { client_name: 'Agent', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], token_endpoint_auth_method: 'none' },
        client.None(),
        { execute: [client.allowInsecureRequests] },
      );
      used = config.clientMetadata().client_id;
      const registered = await t.services.oidcClients.show(used);
      assert.equal(registered?.isFirstParty, false);
      assert.equal(registered?.origin, 'open_registration');
      assert.equal(registered?.lastUsedAt, null);

      const browser = new Browser(t.url);
      const { callback, codeVerifier, state, nonce, consentPages } = await authorize(browser, config, { redirectUri: REDIRECT });
      assert.equal(consentPages, 1, 'the consent page is shown: a self-registered client is never first-party');
      const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: codeVerifier, expectedState: state, expectedNonce: nonce });
      assert.ok(tokens.access_token);

      const shown = await adminGet(`/api/admin/clients/${used}`);
      assert.equal(shown.origin, 'open_registration');
      assert.equal(shown.lastUsedAt, new Date(clock()).toISOString());
      const listed = (await adminGet('/api/admin/clients')).clients as Array<Record<string, unknown>>;
      assert.equal(listed.find((item) => item.clientId === used)?.lastUsedAt, new Date(clock()).toISOString());
    });

    it('records a busy client’s use at most once an hour', async () => {
      const before = (await t.services.oidcClients.show(used))!.lastUsedAt!;
      clock.advance(10 * 60_000);
      await t.services.oidcClients.recordUse(used);
      assert.equal((await t.services.oidcClients.show(used))!.lastUsedAt, before, 'not written again within the hour');
      clock.advance(HOUR_MS);
      await t.services.oidcClients.recordUse(used);
      assert.equal((await t.services.oidcClients.show(used))!.lastUsedAt, clock());
    });

    it('shows each client’s origin and last use on the admin clients page, self-registered ones marked', async () => {
      await t.services.oidcClients.create({ name: 'Admin app', redirectUris: ['https://admin-app.example/cb'] }, SYSTEM_SOURCE);
      const browser = new Browser(t.url);
      await browser.signIn('admin@example.com', 'correct horse battery staple');
      const page = await browser.fetch('/admin/clients');
      assert.equal(page.status, 200);
      const html = await page.text();
      const row = (name: string) => html.split('<tr role="row">').find((part) => part.includes(`>${name}</a>`)) ?? '';
      assert.match(row('Agent'), /data-origin="self-registered">Self-registered \(open\)</);
      assert.match(row('Agent'), new RegExp(`<time datetime="${new Date(clock()).toISOString()}"`));
      assert.match(row('Admin app'), />Admin</);
      assert.doesNotMatch(row('Admin app'), /self-registered/);
      assert.match(row('Admin app'), />Never</);
    });

    it('refuses client_credentials and the device flow to a self-registered client (invalid_client_metadata)', async () => {
      for (const grantTypes of [['client_credentials'], ['authorization_code', 'client_credentials'], ['urn:ietf:params:oauth:grant-type:device_code']]) {
        const refused = await register(t, { client_name: 'Machine', redirect_uris: [REDIRECT], grant_types: grantTypes, response_types: grantTypes.includes('authorization_code') ? ['code'] : [] });
        assert.equal(refused.status, 400, JSON.stringify(refused.json));
        assert.equal(refused.json.error, 'invalid_client_metadata');
        assert.match(String(refused.json.error_description), /self-registered/);
      }
      assert.equal((await t.services.oidcClients.list()).filter((listed) => listed.origin === 'open_registration').length, 1, 'nothing stored');
    });

    it('holds the cap on live self-registered clients: past it, 403 access_denied, and the rest answers', async () => {
      for (let index = 1; index < MAX_CLIENTS; index += 1) {
        const created = await register(t, { client_name: `Unused ${index}`, redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' });
        assert.equal(created.status, 201, JSON.stringify(created.json));
        unused.push(String(created.json.client_id));
      }
      const over = await register(t, { client_name: 'One too many', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' });
      assert.equal(over.status, 403);
      assert.equal(over.json.error, 'access_denied');
      assert.equal(typeof over.json.error_description, 'string');
      assert.equal((await t.services.oidcClients.list()).filter((listed) => listed.origin === 'open_registration').length, MAX_CLIENTS);
      // Discovery, and an administrator's registration, are not held by it.
      assert.equal((await fetch(`${t.url}/.well-known/openid-configuration`)).status, 200);
      assert.ok((await t.services.oidcClients.create({ name: 'Another admin app', redirectUris: ['https://admin-app.example/cb'] }, SYSTEM_SOURCE)).ok);
    });

    it('deletes self-registered clients never used within OIDC_PROVIDER_REGISTRATION_UNUSED_TTL, by the job, audited; a used one stays, and room is made', async () => {
      clock.advance(23 * HOUR_MS);
      assert.equal(await t.services.oidcProvider.registrationExpiry.runOnce(), 0, 'not yet: registered less than 24 hours ago');
      clock.advance(2 * HOUR_MS);
      assert.equal(await t.services.oidcProvider.registrationExpiry.runOnce(), unused.length);
      for (const id of unused) assert.equal(await t.services.oidcClients.show(id), null, id);
      assert.notEqual(await t.services.oidcClients.show(used), null, 'the used client stays');
      assert.ok((await t.services.oidcClients.list()).some((listed) => listed.name === 'Admin app'), 'clients registered otherwise are never expired');
      const events = (await t.services.audit.listEvents({ type: 'oidc_client.expired', limit: 10 })).events;
      assert.deepEqual(events.map((event) => event.details?.clientId).sort(), [...unused].sort());
      assert.ok(events.every((event) => event.reason === 'NEVER_USED'));
      assert.equal((await register(t, { client_name: 'Room again', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' })).status, 201);
    });
  });
}

for (const backend of await backends()) {
  describe(`open registration's rate limits on ${backend.name}`, { skip: backend.skip }, () => {
    const PER_IP = 3;
    const GLOBAL = 6;
    let database: TestDatabase;
    let t: ListeningApp;
    before(async () => {
      database = await backend.create();
      // Addresses come from X-Forwarded-For (a proxy on loopback), so a flood can come from many.
      t = await listeningAppOn(database, {
        OIDC_PROVIDER_REGISTRATION: 'open',
        RATE_LIMIT_OIDC_REGISTRATION: `${PER_IP}/1h`,
        RATE_LIMIT_OIDC_REGISTRATION_GLOBAL: `${GLOBAL}/1h`,
        TRUST_PROXY: 'loopback',
      });
    });
    after(async () => {
      await t?.close();
      await database?.drop();
    });

    const from = (ip: string) => ({ 'x-forwarded-for': ip });
    const body = { client_name: 'Flood', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' };

    function assertLimited(answer: { status: number; headers: Headers; json: Record<string, unknown> }): void {
      assert.equal(answer.status, 429);
      assert.equal(answer.json.error, 'RATE_LIMITED');
      assert.equal(typeof answer.json.error_description, 'string', 'the OAuth error shape (RFC 6749 §5.2, RFC 7591 §3.2.2)');
      assert.match(answer.headers.get('retry-after') ?? '', /^\d+$/);
    }

    it('limits registrations per IP (RATE_LIMIT_OIDC_REGISTRATION)', async () => {
      for (let attempt = 0; attempt < PER_IP; attempt += 1) assert.equal((await register(t, body, from('198.51.100.1'))).status, 201);
      assertLimited(await register(t, body, from('198.51.100.1')));
      assert.equal((await t.services.oidcClients.list()).length, PER_IP);
    });

    it('holds the global limit against a flood from many addresses, while discovery and the token endpoint answer', async () => {
      const machine = await t.services.oidcClients.create({ name: 'Machine', grantTypes: ['client_credentials'] }, SYSTEM_SOURCE);
      assert.ok(machine.ok);
      const flood = Array.from({ length: 30 }, (_, index) => register(t, body, from(`203.0.113.${index + 1}`)));
      const discovery = fetch(`${t.url}/.well-known/openid-configuration`);
      const token = fetch(`${t.url}/oidc/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${machine.client.id}:${machine.clientSecret}`).toString('base64')}` },
        body: 'grant_type=client_credentials',
      });
      const answers = await Promise.all(flood);
      assert.equal((await discovery).status, 200);
      assert.equal((await token).status, 200, 'a client of the token endpoint is not held by registrations');
      // The per-IP test used 3 of the global 6 (its refused 4th was counted only per IP).
      assert.equal(answers.filter((answer) => answer.status === 201).length, GLOBAL - PER_IP);
      const refused = answers.filter((answer) => answer.status !== 201);
      assert.equal(refused.length, 30 - (GLOBAL - PER_IP));
      for (const answer of refused) assertLimited(answer);
      assert.equal((await t.services.oidcClients.list()).filter((listed) => listed.origin === 'open_registration').length, GLOBAL);
      // A new address is held too: the limit is of all addresses together.
      assertLimited(await register(t, body, from('192.0.2.77')));
    });
  });
}
