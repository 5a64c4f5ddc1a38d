import { describe, it, before, after, mock } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { backends, type TestDatabase } from '../../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../../test/helpers/app.ts';
import { freePort } from '../../../test/helpers/process.ts';
import { createProtector, SEED_RULES } from '../src/protect.ts';
import { totpCode } from '../../../test/helpers/totp.ts';

const PASSWORD = 'correct horse battery staple';

describe('createProtector against a live Gatehouse (Web Request/Response)', () => {
  let database: TestDatabase;
  let t: TestApp;
  let issuer: string;

  before(async () => {
    const [sqlite] = await backends();
    database = await sqlite!.create();
    const port = await freePort();
    issuer = `http://127.0.0.1:${port}`;
    t = await createTestApp(database, { env: { AUTH_URL: issuer } });
    await t.app.listen({ port, host: '127.0.0.1' });
    assert.equal((t.app.server.address() as AddressInfo).port, port);
    await createUser(t.services, { email: 'user@example.com', password: PASSWORD });
  });
  after(async () => {
    await t?.close();
    await database?.drop();
  });

  async function signIn(): Promise<string> {
    const response = await fetch(`${issuer}/api/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'user@example.com', password: PASSWORD }) });
    return ((await response.json()) as { token: string }).token;
  }

  const request = (path: string, token?: string) =>
    new Request(`https://app.example${path}`, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });

  it('returns null to allow and a Response to deny', async () => {
    const protector = createProtector({ issuer });
    const token = await signIn();
    assert.equal(await protector.check(request('/api/data', token)), null);
    const denied = await protector.check(request('/api/data'));
    assert.ok(denied instanceof Response);
    assert.equal(denied.status, 401);
    assert.equal(denied.headers.get('www-authenticate'), 'Bearer');
    assert.deepEqual(await denied.json(), { error: 'UNAUTHENTICATED', message: 'Sign in to continue.' });
    const forbidden = await protector.check(request('/admin', token));
    assert.equal(forbidden?.status, 403);
  });

  it('refuses, when made, a rule prefix that could never match (so a rule can never silently let everything through)', () => {
    for (const prefix of ['/Billing', '/billing/', 'billing', '']) {
      assert.throws(() => createProtector({ issuer, rules: { ...SEED_RULES, organizationRoles: [{ prefix, roles: ['OWNER'] }] } }), TypeError, prefix);
      assert.throws(() => createProtector({ issuer, rules: { ...SEED_RULES, protectedPrefixes: [prefix] } }), TypeError, prefix);
    }
    assert.throws(() => createProtector({ issuer, rules: { ...SEED_RULES, organizationRoles: [{ prefix: '/billing', roles: [] }] } }), TypeError);
    assert.doesNotThrow(() => createProtector({ issuer, rules: { ...SEED_RULES, organizationRoles: [{ prefix: '/billing', roles: ['OWNER'] }] } }));
    for (const scopes of [[], ['read items'], ['a"b'], ['']]) {
      assert.throws(() => createProtector({ issuer, rules: { ...SEED_RULES, scopeRequirements: [{ prefix: '/items', scopes }] } }), TypeError, JSON.stringify(scopes));
    }
    assert.throws(() => createProtector({ issuer, rules: { ...SEED_RULES, scopeRequirements: [{ prefix: '/Items', scopes: ['read:items'] }] } }), TypeError);
    assert.doesNotThrow(() => createProtector({ issuer, rules: { ...SEED_RULES, scopeRequirements: [{ prefix: '/items', scopes: ['read:items', 'https://api.example/x'] }] } }));
  });

  it('sends a page without a session to sign in with a callbackUrl back to the page: a path, or absolute on this app with appUrl', async () => {
    const onGatehouse = createProtector({ issuer });
    const here = await onGatehouse.check(new Request('http://app.example/dashboard/x?tab=1'));
    assert.equal(here?.status, 303);
    assert.equal(new URL(here!.headers.get('location')!).searchParams.get('callbackUrl'), '/dashboard/x?tab=1');
    const elsewhere = createProtector({ issuer, appUrl: 'https://app.example.com/ignored/path' });
    const away = await elsewhere.check(new Request('http://127.0.0.1:9/dashboard/x?tab=1'));
    const location = new URL(away!.headers.get('location')!);
    assert.equal(`${location.origin}${location.pathname}`, `${issuer}/auth/signin`);
    assert.equal(location.searchParams.get('callbackUrl'), 'https://app.example.com/dashboard/x?tab=1', 'the app origin, never the request Host');
  });

  it('requires a second factor under mfaPrefixes: STEP_UP_REQUIRED until the token says mfa', async () => {
    const protector = createProtector({ issuer, rules: { protectedPrefixes: ['/api', '/app'], publicPrefixes: [], roleRequirements: [], mfaPrefixes: ['/api/payments', '/app/payments'] } });
    const passwordOnly = await signIn();
    assert.equal(await protector.check(request('/api/data', passwordOnly)), null, 'elsewhere a password is enough');
    const denied = await protector.check(request('/api/payments/send', passwordOnly));
    assert.equal(denied?.status, 403);
    assert.deepEqual(await denied?.json(), { error: 'STEP_UP_REQUIRED', message: 'Confirm it is you with your second factor to continue.' });
    const page = await protector.check(request('/app/payments', passwordOnly));
    assert.equal(page?.status, 303, 'a page goes to sign in again, with the second factor');
    assert.match(page?.headers.get('location') ?? '', /\/auth\/signin\?callbackUrl=%2Fapp%2Fpayments/);
    assert.deepEqual((await protector.authenticate(request('/api/data', passwordOnly)))?.amr, ['pwd']);

    // The same user with an authenticator app, signed in with it.
    const user = (await t.services.users.findUserByEmail('user@example.com'))!;
    const setup = await t.services.mfa.beginTotpSetup(user);
    assert.ok(setup.ok);
    assert.ok((await t.services.mfa.enableTotp(user, totpCode(setup.secret, Date.now()), { actorUserId: user.id, ip: null, userAgent: null })).ok);
    try {
      const challenge = (await (await fetch(`${issuer}/api/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'user@example.com', password: PASSWORD }) })).json()) as { mfaToken: string };
      const verified = await fetch(`${issuer}/api/auth/mfa/verify`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ mfaToken: challenge.mfaToken, code: totpCode(setup.secret, Date.now() + 30_000) }),
      });
      const { token } = (await verified.json()) as { token: string };
      assert.equal(await protector.check(request('/api/payments/send', token)), null);
    } finally {
      await t.services.mfa.resetFactors(user, { actorUserId: null, ip: null, userAgent: null });
    }
  });

  it('is stateless by default; with checkSession a signed-out token is refused at once', async () => {
    const token = await signIn();
    const stateless = createProtector({ issuer });
    const live = createProtector({ issuer, checkSession: { cacheMs: 0 } });
    assert.equal(await live.check(request('/api/data', token)), null);
    await fetch(`${issuer}/api/auth/signout`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
    assert.equal(await stateless.check(request('/api/data', token)), null, 'documented: valid until it expires');
    assert.equal((await live.check(request('/api/data', token)))?.status, 401);
  });

  it('remembers a verified token only until it expires (with the 5 s clock tolerance)', async () => {
    const token = await signIn();
    const protector = createProtector({ issuer });
    assert.equal(await protector.check(request('/api/data', token)), null);
    const { exp } = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { exp: number };
    mock.timers.enable({ apis: ['Date'], now: exp * 1000 + 4_000 });
    try {
      assert.equal(await protector.check(request('/api/data', token)), null, 'inside the tolerance');
      mock.timers.setTime(exp * 1000 + 5_000);
      assert.equal((await protector.check(request('/api/data', token)))?.status, 401, 'expired, though remembered');
      assert.equal((await protector.check(request('/api/data', token)))?.status, 401, 'and forgotten');
    } finally {
      mock.timers.reset();
    }
  });

  it('fails closed when the issuer cannot be reached', async () => {
    const token = await signIn();
    const down: typeof fetch = async () => {
      throw new TypeError('fetch failed: connect ECONNREFUSED');
    };
    const unreachable = createProtector({ issuer, fetch: down });
    assert.equal((await unreachable.check(request('/api/data', token)))?.status, 401, 'no JWKS, no access');
    assert.equal(await createProtector({ issuer }).check(request('/api/data', token)), null, 'the same token with the JWKS reachable');
  });

  // Regression (review): with the JWKS unreachable, every request fetched it again.
  it('backs off after a failed JWKS fetch instead of fetching on every request', async () => {
    const token = await signIn();
    let attempts = 0;
    const down: typeof fetch = async () => {
      attempts++;
      throw new TypeError('fetch failed: connect ECONNREFUSED');
    };
    const protector = createProtector({ issuer, fetch: down, cooldownMs: 60_000 });
    for (let i = 0; i < 20; i++) assert.equal((await protector.check(request('/api/data', token)))?.status, 401);
    assert.equal(attempts, 1);
  });

  it('reads only the cookie Gatehouse sets for the issuer’s scheme', async () => {
    const token = await signIn();
    const withCookie = (name: string) => new Request('https://app.example/api/data', { headers: { cookie: `${name}=${token}` } });
    assert.equal(await createProtector({ issuer }).check(withCookie('gatehouse.session')), null, 'http issuer: the plain name');
    let fetches = 0;
    const https = createProtector({
      issuer: 'https://auth.example.com',
      fetch: async () => {
        fetches++;
        return new Response('{"keys":[]}', { headers: { 'content-type': 'application/json' } });
      },
    });
    assert.equal((await https.check(withCookie('gatehouse.session')))?.status, 401);
    assert.equal(fetches, 0, 'https issuer: an unprefixed cookie is not even looked at');
    await https.check(withCookie('__Host-gatehouse.session'));
    assert.equal(fetches, 1, 'the __Host- cookie is');
  });
  it('reads the org claim of the active organization and applies organizationRoles (ORGANIZATION_ROLE_REQUIRED)', async () => {
    const token = await signIn();
    const json = { 'content-type': 'application/json', authorization: `Bearer ${token}` };
    const created = await fetch(`${issuer}/api/organizations`, { method: 'POST', headers: json, body: JSON.stringify({ name: 'Protected Org' }) });
    assert.equal(created.status, 201);
    const organization = ((await created.json()) as { organization: { id: string; slug: string } }).organization;
    const rules = { ...SEED_RULES, organizationRoles: [{ prefix: '/billing', roles: ['OWNER', 'ADMIN'] }, { prefix: '/api/billing', roles: ['OWNER', 'ADMIN'] }] };
    const protector = createProtector({ issuer, rules });
    // No active organization: denied, JSON for the API, a 403 page for pages.
    const api = await protector.check(request('/api/billing/x', token));
    assert.equal(api?.status, 403);
    assert.deepEqual(await api!.json(), { error: 'ORGANIZATION_ROLE_REQUIRED', message: 'Your role in the active organization does not allow this.' });
    const page = await protector.check(request('/billing', token));
    assert.equal(page?.status, 403);
    assert.match(await page!.text(), /active organization/);
    assert.equal((await protector.authenticate(request('/billing', token)))?.org, null);
    // Active as OWNER: allowed, and the user carries org.
    const activated = await fetch(`${issuer}/api/organizations/${organization.id}/activate`, { method: 'POST', headers: json, body: '{}' });
    assert.equal(activated.status, 200);
    const orgToken = ((await activated.json()) as { token: string }).token;
    assert.equal(await protector.check(request('/billing/invoices', orgToken)), null);
    const evaluation = await protector.evaluate(request('/api/billing/x', orgToken));
    assert.equal(evaluation.denial, null);
    assert.deepEqual(evaluation.user?.org, { id: organization.id, slug: organization.slug, roles: ['OWNER'] });
    // A role that is not listed is denied.
    const strict = createProtector({ issuer, rules: { ...SEED_RULES, organizationRoles: [{ prefix: '/api/finance', roles: ['BILLING'] }] } });
    assert.equal((await strict.check(request('/api/finance', orgToken)))?.status, 403);
  });
});
