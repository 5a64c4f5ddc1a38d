import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJwt } from 'jose';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { OPENAPI_PATH } from '../app.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';

const PASSWORD = 'correct horse battery staple';

/** A clock tests move by hand; starts at the real time so tokens look normal. */
function fakeClock() {
  let now = Date.now();
  return Object.assign(() => now, {
    advance(ms: number) {
      now += ms;
    },
  });
}

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

interface Signed {
  id: string;
  email: string;
  token: string;
  refreshToken: string;
  sessionId: string;
}

for (const backend of await backends()) {
  for (const strategy of ['database', 'jwt'] as const) {
    describe(`admin API, ${strategy} strategy, on ${backend.name}`, { skip: backend.skip }, () => {
      let database: TestDatabase;
      let t: TestApp;
      const clock = fakeClock();
      let count = 0;
      let admin: Signed;
      let plain: Signed;

      before(async () => {
        database = await backend.create();
        t = await createTestApp(database, { clock, env: { SESSION_STRATEGY: strategy } });
        admin = await newSignedInUser(['ADMIN'], 'Ada Admin');
        plain = await newSignedInUser([], 'Paul Plain');
      });
      after(async () => {
        await t?.close();
        await database?.drop();
      });

      async function signIn(email: string, password = PASSWORD) {
        return t.app.inject({ method: 'POST', url: '/api/auth', payload: { email, password }, headers: { 'user-agent': 'admin-test/1' } });
      }

      async function signInOk(id: string, email: string): Promise<Signed> {
        const response = await signIn(email);
        assert.equal(response.statusCode, 200, response.body);
        const body = response.json();
        return { id, email, token: body.token, refreshToken: body.refreshToken, sessionId: decodeJwt(body.token).sid as string };
      }

      async function newSignedInUser(roles: string[] = [], name = 'Test User'): Promise<Signed> {
        const email = `user${++count}@example.com`;
        const user = await createUser(t.services, { email, password: PASSWORD, roles, name });
        return signInOk(user.id, email);
      }

      function call(method: Method, url: string, as?: { token: string } | null, payload?: unknown) {
        return t.app.inject({
          method,
          url,
          headers: { ...(as && { authorization: `Bearer ${as.token}` }) },
          ...(payload !== undefined && { payload: payload as object }),
        });
      }

      const session = (token: string) => call('GET', '/api/auth/session', { token });
      const refresh = (refreshToken: string) => t.app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken } });

      async function eventsOf(userId: string) {
        const response = await call('GET', `/api/admin/events?userId=${userId}&limit=200`, admin);
        assert.equal(response.statusCode, 200, response.body);
        return response.json().events as Array<{ type: string; actorUserId: string | null; reason: string | null; details: Record<string, unknown> | null }>;
      }

      describe('who may call it', () => {
        /** Every admin route; the test below checks that the OpenAPI document has no others. */
        const routes: Array<{ method: Method; path: string; ok: number; request: () => Promise<{ url: string; payload?: unknown }> }> = [
          { method: 'GET', path: '/api/admin/users', ok: 200, request: async () => ({ url: '/api/admin/users' }) },
          { method: 'POST', path: '/api/admin/users', ok: 201, request: async () => ({ url: '/api/admin/users', payload: { email: `created${++count}@example.com`, name: 'Created' } }) },
          { method: 'GET', path: '/api/admin/users/{id}', ok: 200, request: async () => ({ url: `/api/admin/users/${plain.id}` }) },
          { method: 'PATCH', path: '/api/admin/users/{id}', ok: 200, request: async () => ({ url: `/api/admin/users/${plain.id}`, payload: { name: 'Paul Plain' } }) },
          // The mfa module's: a user's second factors, removed.
          { method: 'POST', path: '/api/admin/users/{id}/mfa/reset', ok: 200, request: async () => ({ url: `/api/admin/users/${plain.id}/mfa/reset` }) },
          // The oidc-provider module's: a user's connected app, revoked (nothing to revoke here: still 200).
          { method: 'POST', path: '/api/admin/users/{id}/connected-apps/{clientId}/revoke', ok: 200, request: async () => ({ url: `/api/admin/users/${plain.id}/connected-apps/some-app/revoke` }) },
          {
            method: 'DELETE',
            path: '/api/admin/users/{id}/sessions',
            ok: 200,
            request: async () => ({ url: `/api/admin/users/${(await newSignedInUser()).id}/sessions` }),
          },
          {
            method: 'DELETE',
            path: '/api/admin/users/{id}/sessions/{sessionId}',
            ok: 200,
            request: async () => {
              const victim = await newSignedInUser();
              return { url: `/api/admin/users/${victim.id}/sessions/${victim.sessionId}` };
            },
          },
          { method: 'GET', path: '/api/admin/events', ok: 200, request: async () => ({ url: '/api/admin/events' }) },
          // The OpenID Provider's client registry (module oidc-clients) lives in the admin API too.
          ...clientRoutes(),
          // So do account deletion, the organizations and the webhooks (their modules).
          { method: 'DELETE', path: '/api/admin/users/{id}', ok: 200, request: async () => ({ url: `/api/admin/users/${(await newSignedInUser()).id}` }) },
          ...organizationRoutes(),
          ...scimTokenRoutes(),
          ...webhookRoutes(),
        ];

        /** An organization for a route that shows or deletes one. */
        async function newOrganization(): Promise<string> {
          const owner = await newSignedInUser();
          const result = await t.services.organizations.create({ name: 'Table Org' }, owner.id, SYSTEM_SOURCE);
          assert.ok(result.ok);
          return result.organization.id;
        }
        function organizationRoutes(): typeof routes {
          return [
            { method: 'GET', path: '/api/admin/organizations', ok: 200, request: async () => ({ url: '/api/admin/organizations' }) },
            { method: 'GET', path: '/api/admin/organizations/{id}', ok: 200, request: async () => ({ url: `/api/admin/organizations/${await newOrganization()}` }) },
            { method: 'DELETE', path: '/api/admin/organizations/{id}', ok: 200, request: async () => ({ url: `/api/admin/organizations/${await newOrganization()}` }) },
          ];
        }

        /** An organization's SCIM tokens (module scim), with one active token to rotate or revoke. */
        async function newScimToken(): Promise<{ organizationId: string; tokenId: string }> {
          const organizationId = await newOrganization();
          const result = await t.services.scimTokens.create(organizationId, null, SYSTEM_SOURCE);
          assert.ok(result.ok);
          return { organizationId, tokenId: result.record.id };
        }
        function scimTokenRoutes(): typeof routes {
          const base = '/api/admin/organizations';
          return [
            { method: 'GET', path: `${base}/{id}/scim-tokens`, ok: 200, request: async () => ({ url: `${base}/${await newOrganization()}/scim-tokens` }) },
            { method: 'POST', path: `${base}/{id}/scim-tokens`, ok: 201, request: async () => ({ url: `${base}/${await newOrganization()}/scim-tokens`, payload: {} }) },
            { method: 'POST', path: `${base}/{id}/scim-tokens/{tokenId}/rotate`, ok: 200, request: async () => newScimToken().then(({ organizationId, tokenId }) => ({ url: `${base}/${organizationId}/scim-tokens/${tokenId}/rotate` })) },
            { method: 'DELETE', path: `${base}/{id}/scim-tokens/{tokenId}`, ok: 200, request: async () => newScimToken().then(({ organizationId, tokenId }) => ({ url: `${base}/${organizationId}/scim-tokens/${tokenId}` })) },
          ];
        }

        /** A webhook endpoint (no delivery is attempted: no worker runs here). */
        async function newEndpoint(): Promise<string> {
          const result = await t.services.webhooks.create({ url: 'https://hooks.example.com/in', eventTypes: ['user.created'] }, SYSTEM_SOURCE);
          assert.ok(result.ok);
          return result.endpoint.id;
        }
        /** A failed delivery of an enabled endpoint: one that may be redelivered. */
        async function newFailedDelivery(): Promise<string> {
          const endpointId = await newEndpoint();
          await t.services.audit.record({ type: 'user.created', userId: (await newSignedInUser()).id });
          await t.services.webhooks.disable(endpointId, SYSTEM_SOURCE);
          await t.services.webhooks.enable(endpointId, SYSTEM_SOURCE);
          const deliveries = await t.services.webhooks.listDeliveries(endpointId);
          assert.ok(deliveries !== null && deliveries.length > 0);
          return deliveries[0]!.id;
        }
        function webhookRoutes(): typeof routes {
          const endpoint = async (suffix = '') => ({ url: `/api/admin/webhooks/${await newEndpoint()}${suffix}` });
          return [
            { method: 'GET', path: '/api/admin/webhooks', ok: 200, request: async () => ({ url: '/api/admin/webhooks' }) },
            { method: 'GET', path: '/api/admin/webhooks/event-types', ok: 200, request: async () => ({ url: '/api/admin/webhooks/event-types' }) },
            { method: 'POST', path: '/api/admin/webhooks', ok: 201, request: async () => ({ url: '/api/admin/webhooks', payload: { url: 'https://hooks.example.com/new', eventTypes: ['user.created'] } }) },
            { method: 'GET', path: '/api/admin/webhooks/{id}', ok: 200, request: () => endpoint() },
            { method: 'PATCH', path: '/api/admin/webhooks/{id}', ok: 200, request: async () => ({ ...(await endpoint()), payload: { description: 'Renamed' } }) },
            { method: 'POST', path: '/api/admin/webhooks/{id}/disable', ok: 200, request: () => endpoint('/disable') },
            { method: 'POST', path: '/api/admin/webhooks/{id}/enable', ok: 200, request: () => endpoint('/enable') },
            { method: 'POST', path: '/api/admin/webhooks/{id}/rotate-secret', ok: 200, request: () => endpoint('/rotate-secret') },
            { method: 'DELETE', path: '/api/admin/webhooks/{id}', ok: 200, request: () => endpoint() },
            { method: 'GET', path: '/api/admin/webhooks/{id}/deliveries', ok: 200, request: () => endpoint('/deliveries') },
            { method: 'POST', path: '/api/admin/webhooks/deliveries/{deliveryId}/redeliver', ok: 201, request: async () => ({ url: `/api/admin/webhooks/deliveries/${await newFailedDelivery()}/redeliver` }) },
          ];
        }

        /** A client registered for a route that changes or removes one. */
        async function newClient(): Promise<string> {
          const result = await t.services.oidcClients.create({ name: 'Table app', redirectUris: ['https://app.example/cb'] }, SYSTEM_SOURCE);
          assert.ok(result.ok);
          return result.client.id;
        }
        function clientRoutes(): typeof routes {
          return [
            { method: 'GET', path: '/api/admin/clients', ok: 200, request: async () => ({ url: '/api/admin/clients' }) },
            { method: 'POST', path: '/api/admin/clients', ok: 201, request: async () => ({ url: '/api/admin/clients', payload: { name: 'New app', redirectUris: ['https://app.example/cb'] } }) },
            { method: 'GET', path: '/api/admin/clients/{id}', ok: 200, request: async () => ({ url: `/api/admin/clients/${await newClient()}` }) },
            { method: 'PATCH', path: '/api/admin/clients/{id}', ok: 200, request: async () => ({ url: `/api/admin/clients/${await newClient()}`, payload: { name: 'Renamed' } }) },
            { method: 'POST', path: '/api/admin/clients/{id}/rotate-secret', ok: 200, request: async () => ({ url: `/api/admin/clients/${await newClient()}/rotate-secret` }) },
            { method: 'DELETE', path: '/api/admin/clients/{id}', ok: 200, request: async () => ({ url: `/api/admin/clients/${await newClient()}` }) },
          ];
        }

        for (const route of routes) {
          it(`${route.method} ${route.path}: 401 without a session, 403 for a plain user, ${route.ok} for an ADMIN`, async () => {
            for (const [who, as, status, code] of [
              ['nobody', null, 401, 'UNAUTHENTICATED'],
              ['a bad token', { token: 'not.a.token' }, 401, 'UNAUTHENTICATED'],
              ['a plain user', plain, 403, 'FORBIDDEN'],
            ] as const) {
              const { url, payload } = await route.request();
              const response = await call(route.method, url, as, payload);
              assert.equal(response.statusCode, status, `${who}: ${response.body}`);
              assert.deepEqual(Object.keys(response.json()).sort(), ['error', 'message'], who);
              assert.equal(response.json().error, code, who);
            }
            const { url, payload } = await route.request();
            const response = await call(route.method, url, admin, payload);
            assert.equal(response.statusCode, route.ok, response.body);
            assert.equal(response.headers['cache-control'], 'no-store');
          });
        }

        it('the table above covers every admin route in the OpenAPI document, each marked bearer-secured', async () => {
          const document = (await t.app.inject({ method: 'GET', url: OPENAPI_PATH })).json();
          const documented: string[] = [];
          for (const [path, operations] of Object.entries(document.paths as Record<string, Record<string, { security?: unknown; tags?: string[] }>>)) {
            if (!path.startsWith('/api/admin')) continue;
            for (const [method, operation] of Object.entries(operations)) {
              documented.push(`${method.toUpperCase()} ${path}`);
              assert.deepEqual(operation.security, [{ bearer: [] }], `${method} ${path}`);
              // Under the admin tag first; a module's own tag may follow (its routes for everyone have it).
              assert.equal(operation.tags?.[0], 'admin', `${method} ${path}: ${operation.tags}`);
            }
          }
          // Every route of the table is documented; a documented admin route another module brings
          // (its own suite calls it) must at least be declared for ADMIN, as every /api/admin route is.
          const tabled = routes.map((r) => `${r.method} ${r.path}`);
          for (const route of tabled) assert.ok(documented.includes(route), `${route} is in the table but not documented`);
          const declared = new Map(t.app.routeAccess.map((route) => [`${route.method} ${route.url.replace(/:(\w+)/g, '{$1}')}`, route.access]));
          for (const route of documented.filter((entry) => !tabled.includes(entry))) {
            const access = declared.get(route);
            assert.equal(access?.who, 'role', route);
            assert.equal(access?.role, 'ADMIN', route);
          }
          const schemas = JSON.stringify(document.components.schemas.AdminUser);
          for (const secret of ['password', 'hash', 'seed', 'token']) assert.ok(!schemas.toLowerCase().includes(secret), secret);
        });

        it('refuses a plain user before reading the body: 403, not 422', async () => {
          const response = await call('PATCH', `/api/admin/users/${plain.id}`, plain, { roles: 'ADMIN', disabled: 'yes' });
          assert.equal(response.statusCode, 403);
          assert.equal(response.json().error, 'FORBIDDEN');
          const unauthenticated = await call('GET', '/api/admin/users?limit=9999', null);
          assert.equal(unauthenticated.statusCode, 401);
        });

        it('needs the CSRF token when an ADMIN uses the session cookie', async () => {
          const jar = new CookieJar();
          const signInResponse = await t.app.inject({ method: 'POST', url: '/api/auth/signin', payload: { email: admin.email, password: PASSWORD } });
          jar.store(signInResponse);
          const csrf = await t.app.inject({ method: 'GET', url: '/api/auth/csrf', headers: { cookie: jar.header() } });
          jar.store(csrf);
          const target = await newSignedInUser();
          const url = `/api/admin/users/${target.id}`;
          const withoutToken = await t.app.inject({ method: 'PATCH', url, headers: { cookie: jar.header() }, payload: { name: 'Forged' } });
          assert.equal(withoutToken.statusCode, 403);
          assert.equal(withoutToken.json().error, 'CSRF_FAILED');
          const withToken = await t.app.inject({ method: 'PATCH', url, headers: { cookie: jar.header(), 'x-csrf-token': csrf.json().csrfToken }, payload: { name: 'Renamed' } });
          assert.equal(withToken.statusCode, 200, withToken.body);
          assert.equal(withToken.json().name, 'Renamed');
          const reading = await t.app.inject({ method: 'GET', url, headers: { cookie: jar.header() } });
          assert.equal(reading.statusCode, 200, 'reads need no token');
        });
      });

      describe('users', () => {
        it('finds users by the start of the address or of a word of the name, *anywhere, or "exactly", in any case', async () => {
          for (const [name, email] of [
            ['Zoë Quinn', 'zq@example.org'],
            ['Émile Zola', 'ez@example.org'],
            ['zoe adams', 'za@example.org'],
            ['Someone', 'ZOE.mail@Example.org'],
            ['100% Sure', 'sure@example.org'],
            ['Under_Score', 'underscore@example.org'],
            ['Star*Name', 'star@example.org'],
            ['Mail@Home', 'home@example.org'],
          ] as const) {
            const response = await call('POST', '/api/admin/users', admin, { name, email });
            assert.equal(response.statusCode, 201, response.body);
          }
          const search = async (query: string) => {
            const response = await call('GET', `/api/admin/users?query=${encodeURIComponent(query)}`, admin);
            assert.equal(response.statusCode, 200, response.body);
            return (response.json().users as Array<{ name: string }>).map((u) => u.name).sort();
          };
          // The default: a start.
          assert.deepEqual(await search('ZOË'), ['Zoë Quinn']);
          assert.deepEqual(await search('émile'), ['Émile Zola'], 'case folding beyond ASCII');
          assert.deepEqual(await search('zoe'), ['Someone', 'zoe adams'], 'the start of the address, or of the name');
          assert.deepEqual(await search('zola'), ['Émile Zola'], 'the start of a later word of the name');
          assert.deepEqual(await search('quin*'), ['Zoë Quinn'], 'a trailing star changes nothing');
          assert.deepEqual(await search('ZOE.MAIL@'), ['Someone'], 'the e-mail, in any case');
          assert.deepEqual(await search('mail@home'), [], 'text with an @ is an address: the name is not asked');
          assert.deepEqual(await search('"mail@home"'), []);
          assert.deepEqual(await search('*mail@home'), ['Mail@Home'], 'anywhere asks the name too');
          assert.deepEqual(await search('home'), ['Mail@Home'], 'by the start of the address');
          assert.deepEqual(await search('ola'), [], 'not the middle of a word');
          assert.deepEqual(await search('example.org'), [], 'not the domain: a start');
          assert.deepEqual(await search('%'), [], 'LIKE wildcards are literal');
          assert.deepEqual(await search('100%'), ['100% Sure']);
          assert.deepEqual(await search('under_'), ['Under_Score']);
          assert.deepEqual(await search('under_s'), ['Under_Score']);
          assert.deepEqual(await search('unde_'), [], 'the underscore is a character');
          // A leading star: anywhere.
          assert.deepEqual(await search('*ola'), ['Émile Zola']);
          assert.deepEqual(await search('*example.org').then((names) => names.length), 8);
          assert.deepEqual(await search('*EXAMPLE.ORG*').then((names) => names.length), 8);
          assert.deepEqual(await search('*%'), ['100% Sure'], 'LIKE wildcards are literal');
          assert.deepEqual(await search('*_'), ['Under_Score']);
          assert.deepEqual(await search('*r*n'), ['Star*Name'], 'a star inside the text is a character');
          // Quotes: the whole address or name.
          assert.deepEqual(await search('"zoe.mail@example.org"'), ['Someone']);
          assert.deepEqual(await search('"zoe.mail@example"'), [], 'not a start');
          assert.deepEqual(await search('"ZOË QUINN"'), ['Zoë Quinn']);
          assert.deepEqual(await search('"zoë"'), [], 'not a word of it');
          // Asking for nothing lists everyone.
          const everyone = (await search('')).length;
          assert.ok(everyone >= 8);
          for (const nothing of ['*', '**', '""', '" "', '   ']) assert.equal((await search(nothing)).length, everyone, JSON.stringify(nothing));
          assert.deepEqual(await search('nobody-has-this'), []);
        });

        it('pages newest first with an opaque cursor, every user exactly once, even at the same millisecond', async () => {
          for (let i = 0; i < 4; i++) assert.equal((await call('POST', '/api/admin/users', admin, { name: `Pager ${i}`, email: `pager${i}@example.net` })).statusCode, 201);
          clock.advance(1);
          for (let i = 4; i < 7; i++) assert.equal((await call('POST', '/api/admin/users', admin, { name: `Pager ${i}`, email: `pager${i}@example.net` })).statusCode, 201);
          const seen: string[] = [];
          let cursor: string | null = null;
          let pages = 0;
          do {
            const response = await call('GET', `/api/admin/users?query=pager&limit=3${cursor === null ? '' : `&cursor=${cursor}`}`, admin);
            assert.equal(response.statusCode, 200, response.body);
            const body = response.json();
            assert.ok(body.users.length <= 3);
            seen.push(...body.users.map((u: { name: string }) => u.name));
            cursor = body.nextCursor;
            pages++;
          } while (cursor !== null);
          assert.equal(pages, 3);
          assert.equal(new Set(seen).size, 7);
          assert.deepEqual(seen.slice(0, 3).sort(), ['Pager 4', 'Pager 5', 'Pager 6'], 'the newest first');
          const all = (await call('GET', '/api/admin/users?query=pager&limit=200', admin)).json();
          assert.equal(all.users.length, 7);
          assert.equal(all.nextCursor, null);
          const first = all.users[0];
          assert.deepEqual(Object.keys(first).sort(), ['createdAt', 'disabled', 'email', 'emailVerified', 'id', 'locale', 'name', 'roles', 'updatedAt']);
        });

        it('refuses bad paging values with 422 naming the field', async () => {
          for (const [query, field] of [
            ['limit=0', 'limit'],
            ['limit=201', 'limit'],
            ['limit=ten', 'limit'],
            ['limit=1.5', 'limit'],
            ['cursor=not-a-cursor', 'cursor'],
            [`cursor=${Buffer.from('12.a b').toString('base64url')}`, 'cursor'],
          ]) {
            const response = await call('GET', `/api/admin/users?${query}`, admin);
            assert.equal(response.statusCode, 422, query);
            assert.equal(response.json().errors[0].field, field, query);
          }
          const events = await call('GET', '/api/admin/events?type=no.such.type', admin);
          assert.equal(events.statusCode, 422);
          assert.equal(events.json().errors[0].field, 'type');
        });

        it('shows a user with their active sessions, 404 for an unknown id', async () => {
          const user = await newSignedInUser();
          const second = await signInOk(user.id, user.email);
          const response = await call('GET', `/api/admin/users/${user.id}`, admin);
          assert.equal(response.statusCode, 200);
          const body = response.json();
          assert.equal(body.user.id, user.id);
          assert.equal(body.user.email, user.email);
          assert.deepEqual(body.sessions.map((s: { id: string }) => s.id).sort(), [user.sessionId, second.sessionId].sort());
          assert.equal(body.sessions[0].userAgent, 'admin-test/1');
          assert.deepEqual(Object.keys(body.sessions[0]).sort(), ['createdAt', 'expiresAt', 'id', 'ip', 'lastSeenAt', 'userAgent']);
          const missing = await call('GET', '/api/admin/users/no-such-user', admin);
          assert.equal(missing.statusCode, 404);
          assert.equal(missing.json().error, 'NOT_FOUND');
        });

        it('never sends password hashes, seeds or tokens, even when the service hands them over', async () => {
          const user = await newSignedInUser();
          const row = await t.services.storage.db.selectFrom('users').selectAll().where('id', '=', user.id).executeTakeFirstOrThrow();
          const sessionRow = await t.services.storage.db.selectFrom('sessions').selectAll().where('id', '=', user.sessionId).executeTakeFirstOrThrow();
          const secrets = [row.password_hash!, sessionRow.refresh_seed, user.token, user.refreshToken, PASSWORD];
          for (const url of [`/api/admin/users/${user.id}`, `/api/admin/users?query=${encodeURIComponent(user.email)}`, `/api/admin/events?userId=${user.id}`]) {
            const response = await call('GET', url, admin);
            assert.equal(response.statusCode, 200);
            for (const secret of secrets) assert.ok(!response.body.includes(secret), `${url} leaks a secret`);
          }

          // Regression guard: a service that returns too much is cut down by the response schema.
          const original = t.services.admin.getUser;
          t.services.admin.getUser = async (id) => {
            const found = (await original(id))!;
            return {
              user: { ...found.user, passwordHash: row.password_hash, password_hash: row.password_hash } as typeof found.user,
              sessions: found.sessions.map((s) => ({ ...s, refresh_seed: sessionRow.refresh_seed, refreshToken: user.refreshToken })),
            };
          };
          try {
            const response = await call('GET', `/api/admin/users/${user.id}`, admin);
            assert.equal(response.statusCode, 200);
            for (const secret of secrets) assert.ok(!response.body.includes(secret), 'stripped by the response schema');
            assert.ok(!('passwordHash' in response.json().user));
          } finally {
            t.services.admin.getUser = original;
          }
        });

        it('creates users: verified, with roles, with or without a password; 409 EMAIL_TAKEN; 422 for a weak password or a bad role', async () => {
          const created = await call('POST', '/api/admin/users', admin, { email: ' New.Person@Example.COM ', name: ' New Person ', password: 'a-long-enough-passphrase', roles: ['EDITOR'] });
          assert.equal(created.statusCode, 201, created.body);
          const body = created.json();
          assert.deepEqual({ ...body, id: 'x', createdAt: 'x', updatedAt: 'x' }, {
            id: 'x', email: 'new.person@example.com', name: 'New Person', roles: ['EDITOR'], emailVerified: true, disabled: false, locale: null, createdAt: 'x', updatedAt: 'x',
          });
          assert.equal((await signIn('new.person@example.com', 'a-long-enough-passphrase')).statusCode, 200);

          const duplicate = await call('POST', '/api/admin/users', admin, { email: 'NEW.PERSON@example.com', name: 'Again' });
          assert.equal(duplicate.statusCode, 409);
          assert.equal(duplicate.json().error, 'EMAIL_TAKEN');

          const weak = await call('POST', '/api/admin/users', admin, { email: 'weak@example.com', name: 'Weak', password: 'password1234' });
          assert.equal(weak.statusCode, 422);
          assert.equal(weak.json().error, 'VALIDATION_ERROR');
          assert.equal(weak.json().errors[0].field, 'password');
          assert.ok(!weak.body.includes('password1234'));
          assert.equal(await t.services.users.findUserByEmail('weak@example.com'), null);

          const badRole = await call('POST', '/api/admin/users', admin, { email: 'role@example.com', name: 'Role', roles: ['admin'] });
          assert.equal(badRole.statusCode, 422);
          assert.match(badRole.json().errors[0].field, /^roles/);

          const noPassword = await call('POST', '/api/admin/users', admin, { email: 'later@example.com', name: 'Later' });
          assert.equal(noPassword.statusCode, 201);
          const attempt = await signIn('later@example.com', 'anything-at-all-here');
          assert.equal(attempt.statusCode, 401, 'no password to sign in with yet');
          assert.equal(attempt.json().error, 'INVALID_CREDENTIALS');

          const events = await eventsOf(body.id);
          const createdEvent = events.find((e) => e.type === 'user.created')!;
          assert.equal(createdEvent.actorUserId, admin.id);
          assert.deepEqual(createdEvent.details, { roles: ['EDITOR'], signIn: 'password' });
        });

        it('ignores unknown fields, validates the rest, and answers 404 for an unknown user', async () => {
          const user = await newSignedInUser();
          const ignored = await call('PATCH', `/api/admin/users/${user.id}`, admin, { email: 'hijack@example.com', passwordHash: 'x', name: 'Kept Name' });
          assert.equal(ignored.statusCode, 200, ignored.body);
          assert.equal(ignored.json().email, user.email);
          assert.equal(ignored.json().name, 'Kept Name');
          for (const [payload, field] of [
            [{ roles: ['lower'] }, 'roles.0'],
            [{ roles: 'ADMIN' }, 'roles'],
            [{ disabled: 'yes' }, 'disabled'],
            [{ name: '   ' }, 'name'],
          ] as const) {
            const response = await call('PATCH', `/api/admin/users/${user.id}`, admin, payload);
            assert.equal(response.statusCode, 422, JSON.stringify(payload));
            assert.equal(response.json().errors[0].field, field);
          }
          const missing = await call('PATCH', '/api/admin/users/no-such-user', admin, { name: 'X' });
          assert.equal(missing.statusCode, 404);
          assert.equal(missing.json().error, 'NOT_FOUND');
        });

        it('disabling ends every session at once, refuses sign-in with 403 ACCOUNT_DISABLED; enabling lets them back', async () => {
          const user = await newSignedInUser();
          const other = await signInOk(user.id, user.email);
          assert.equal((await session(user.token)).statusCode, 200, 'verified once (cached in the jwt strategy)');

          const disabled = await call('PATCH', `/api/admin/users/${user.id}`, admin, { disabled: true });
          assert.equal(disabled.statusCode, 200, disabled.body);
          assert.equal(disabled.json().disabled, true);
          for (const s of [user, other]) {
            assert.equal((await session(s.token)).statusCode, 401, 'the access token is refused at once');
            assert.equal((await refresh(s.refreshToken)).statusCode, 401, 'and cannot be refreshed');
          }
          const detail = (await call('GET', `/api/admin/users/${user.id}`, admin)).json();
          assert.deepEqual(detail.sessions, []);

          const correct = await signIn(user.email);
          assert.equal(correct.statusCode, 403);
          assert.equal(correct.json().error, 'ACCOUNT_DISABLED');
          const wrong = await signIn(user.email, 'not the password at all');
          assert.equal(wrong.statusCode, 401, 'only the right password learns the account is disabled');
          assert.equal(wrong.json().error, 'INVALID_CREDENTIALS');

          const enabled = await call('PATCH', `/api/admin/users/${user.id}`, admin, { disabled: false });
          assert.equal(enabled.statusCode, 200);
          assert.equal(enabled.json().disabled, false);
          assert.equal((await t.services.users.findUserById(user.id))!.disabledAt, null);
          assert.equal((await signIn(user.email)).statusCode, 200);

          const events = await eventsOf(user.id);
          const types = events.map((e) => e.type);
          for (const type of ['user.disabled', 'user.sessions_ended', 'user.enabled']) assert.ok(types.includes(type), type);
          const ended = events.find((e) => e.type === 'user.sessions_ended')!;
          assert.equal(ended.reason, 'ACCOUNT_DISABLED');
          assert.equal(ended.details?.count, 2);
          assert.ok(events.filter((e) => e.type.startsWith('user.')).every((e) => e.actorUserId === admin.id));
          const failures = events.filter((e) => e.type === 'signin.failure').map((e) => e.reason).sort();
          assert.deepEqual(failures, ['ACCOUNT_DISABLED', 'INVALID_CREDENTIALS']);
        });

        it(`applies role changes to admin access at once; the ${strategy === 'database' ? 'session shows them on the next request' : 'token carries them from the next refresh'}`, async () => {
          const user = await newSignedInUser(['VIEWER']);
          const changed = await call('PATCH', `/api/admin/users/${user.id}`, admin, { roles: ['EDITOR', 'ADMIN'] });
          assert.equal(changed.statusCode, 200);
          assert.deepEqual(changed.json().roles, ['ADMIN', 'EDITOR']);

          const now = (await session(user.token)).json();
          assert.deepEqual(now.user.roles, strategy === 'database' ? ['ADMIN', 'EDITOR'] : ['VIEWER']);
          assert.equal((await call('GET', '/api/admin/users', user)).statusCode, 200, 'admin access follows at once (roles read from storage)');

          const renewed = (await refresh(user.refreshToken)).json();
          assert.deepEqual(decodeJwt(renewed.token).roles, ['ADMIN', 'EDITOR']);
          assert.equal((await call('GET', '/api/admin/users', { token: renewed.token })).statusCode, 200);

          const demoted = await call('PATCH', `/api/admin/users/${user.id}`, admin, { roles: [] });
          assert.deepEqual(demoted.json().roles, []);
          assert.equal((await call('GET', '/api/admin/users', { token: renewed.token })).statusCode, 403, 'and is taken away at once');

          const changes = (await eventsOf(user.id)).filter((e) => e.type === 'user.roles_changed');
          assert.deepEqual(
            changes.map((e) => e.details).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
            [{ before: ['ADMIN', 'EDITOR'], after: [] }, { before: ['VIEWER'], after: ['ADMIN', 'EDITOR'] }],
          );
          assert.ok(changes.every((e) => e.actorUserId === admin.id));
        });

        it('refuses to let an admin lock themself out (409 SELF_LOCKOUT), allows other changes to themself', async () => {
          const me = await newSignedInUser(['ADMIN'], 'Self Admin');
          for (const payload of [{ disabled: true }, { roles: ['EDITOR'] }, { roles: [] }, { name: 'X', disabled: true }]) {
            const response = await call('PATCH', `/api/admin/users/${me.id}`, me, payload);
            assert.equal(response.statusCode, 409, JSON.stringify(payload));
            assert.deepEqual(Object.keys(response.json()).sort(), ['error', 'message']);
            assert.equal(response.json().error, 'SELF_LOCKOUT');
          }
          const unchanged = (await t.services.users.findUserById(me.id))!;
          assert.deepEqual(unchanged.roles, ['ADMIN']);
          assert.equal(unchanged.disabledAt, null);
          assert.equal(unchanged.name, 'Self Admin');
          const fine = await call('PATCH', `/api/admin/users/${me.id}`, me, { roles: ['ADMIN', 'EDITOR'], disabled: false, name: 'Still Me' });
          assert.equal(fine.statusCode, 200, fine.body);
          assert.deepEqual(fine.json().roles, ['ADMIN', 'EDITOR']);
          // Another admin may do it.
          assert.equal((await call('PATCH', `/api/admin/users/${me.id}`, admin, { disabled: true })).statusCode, 200);
        });
      });

      describe('sessions and events', () => {
        it('ends one session or all of them, 404 for a session that is not that user’s', async () => {
          const user = await newSignedInUser();
          const second = await signInOk(user.id, user.email);
          const third = await signInOk(user.id, user.email);
          const stranger = await newSignedInUser();

          const notTheirs = await call('DELETE', `/api/admin/users/${user.id}/sessions/${stranger.sessionId}`, admin);
          assert.equal(notTheirs.statusCode, 404);
          assert.equal((await session(stranger.token)).statusCode, 200, 'the stranger’s session is untouched');

          const one = await call('DELETE', `/api/admin/users/${user.id}/sessions/${user.sessionId}`, admin);
          assert.deepEqual(one.json(), { ok: true });
          assert.equal((await session(user.token)).statusCode, 401);
          assert.equal((await call('DELETE', `/api/admin/users/${user.id}/sessions/${user.sessionId}`, admin)).statusCode, 404, 'already ended');

          const all = await call('DELETE', `/api/admin/users/${user.id}/sessions`, admin);
          assert.deepEqual(all.json(), { ok: true, ended: 2 });
          for (const s of [second, third]) assert.equal((await session(s.token)).statusCode, 401);
          const missing = await call('DELETE', '/api/admin/users/no-such-user/sessions', admin);
          assert.equal(missing.statusCode, 404);

          const events = await eventsOf(user.id);
          const ended = events.find((e) => e.type === 'session.ended')!;
          assert.equal(ended.actorUserId, admin.id);
          assert.deepEqual(ended.details, { sessionId: user.sessionId });
          const endedAll = events.find((e) => e.type === 'user.sessions_ended')!;
          assert.equal(endedAll.actorUserId, admin.id);
          assert.equal(endedAll.details?.count, 2);
        });

        it('lists events newest first, filtered by user and type, with a cursor', async () => {
          const user = await newSignedInUser();
          for (let i = 0; i < 4; i++) {
            clock.advance(1);
            await signIn(user.email, `wrong password number ${i}`);
          }
          const first = await call('GET', `/api/admin/events?userId=${user.id}&type=signin.failure&limit=3`, admin);
          assert.equal(first.statusCode, 200);
          const page1 = first.json();
          assert.equal(page1.events.length, 3);
          assert.ok(page1.events.every((e: { type: string; userId: string }) => e.type === 'signin.failure' && e.userId === user.id));
          const times = page1.events.map((e: { createdAt: string }) => Date.parse(e.createdAt));
          assert.deepEqual(times, [...times].sort((a, b) => b - a), 'newest first');
          assert.equal(typeof page1.nextCursor, 'string');
          const page2 = (await call('GET', `/api/admin/events?userId=${user.id}&type=signin.failure&limit=3&cursor=${page1.nextCursor}`, admin)).json();
          assert.equal(page2.events.length, 1);
          assert.equal(page2.nextCursor, null);
          assert.deepEqual(Object.keys(page2.events[0]).sort(), ['actorUserId', 'createdAt', 'details', 'email', 'id', 'ip', 'reason', 'type', 'userAgent', 'userId']);
          assert.equal(page2.events[0].email, user.email);
          assert.equal(page2.events[0].userAgent, 'admin-test/1');
        });
      });
    });
  }
}
