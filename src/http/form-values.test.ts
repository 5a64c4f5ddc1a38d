/**
 * The form-values cookie on its own (a bare Fastify app with the cookie plugin and our error
 * mapper): what is kept and what never is, its attributes, one read, and every way a cookie that
 * is not ours (forged, altered, expired, oversized, another page's) is ignored without a word.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Fastify, { type FastifyInstance } from 'fastify';
import cookie from '@fastify/cookie';
import formbody from '@fastify/formbody';
import { AppError } from '../errors.ts';
import { registerErrorHandling } from './error-handler.ts';
import { FORM_VALUES_TTL_SECONDS, formValuesCookieName, isKeepableField, keepFormValues, MAX_KEPT_VALUE_LENGTH, takeFormValues } from './form-values.ts';

const FORM = 'application/x-www-form-urlencoded';
const SECRET = 'form-values-test-secret-0123456789abcdef';

async function buildApp(isSecureOrigin: boolean, secret = SECRET): Promise<FastifyInstance> {
  const app = Fastify();
  registerErrorHandling(app, { isSecureOrigin });
  await app.register(cookie, { secret });
  await app.register(formbody);
  const config = { isSecureOrigin };
  // A form route whose refusals go back to its page, keeping two fields, and listing a secret one too.
  app.post('/api/form', { config: { formErrorPage: '/auth/form', formKeptFields: ['email', 'name', 'password', 'code'] } }, async (request) => {
    const body = request.body as Record<string, string>;
    if (body.fail === 'field') throw new AppError('VALIDATION_ERROR', { errors: [{ field: 'email', message: 'must be an email' }] });
    if (body.fail === 'reason') throw new AppError('VALIDATION_ERROR', { errors: [{ field: 'password', message: 'too short', reason: 'TOO_SHORT' }] });
    if (body.fail === 'odd-reason') throw new AppError('VALIDATION_ERROR', { errors: [{ field: 'password', message: 'x', reason: 'a@b.example' }] });
    throw new AppError('RATE_LIMITED', { retryAfterSeconds: 30 });
  });
  app.get('/auth/form', async (request, reply) => takeFormValues(request, reply, { page: '/auth/form', config }));
  app.get('/auth/other', async (request, reply) => takeFormValues(request, reply, { page: '/auth/other', config }));
  // For the clock: a cookie made an hour ago, read now.
  app.post('/keep-old', async (request, reply) => {
    keepFormValues(request, reply, { page: '/auth/form', fields: ['email'], config, nowMs: Date.now() - 3_600_000 });
    return { ok: true };
  });
  await app.ready();
  return app;
}

const post = (app: FastifyInstance, fields: Record<string, string>) => app.inject({ method: 'POST', url: '/api/form', headers: { 'content-type': FORM }, payload: new URLSearchParams(fields).toString() });
const read = (app: FastifyInstance, value: string | undefined, url = '/auth/form', name = 'gatehouse.form') =>
  app.inject({ method: 'GET', url, headers: value === undefined ? {} : { cookie: `${name}=${value}` } });

function formCookie(response: { cookies: Array<{ name: string; value: string; maxAge?: number; path?: string; httpOnly?: boolean; sameSite?: string; secure?: boolean }> }, name = 'gatehouse.form') {
  return response.cookies.find((c) => c.name === name);
}

describe('form values kept across an error redirect', () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildApp(false);
  });
  after(() => app.close());

  it('keeps the named fields in a signed, short-lived, HttpOnly cookie for one page, never a password, and puts none in the URL', async () => {
    const response = await post(app, { email: 'ann@example.com', name: 'Ann', password: 'hunter2 secret words', code: '123456' });
    assert.equal(response.statusCode, 303);
    assert.equal(response.headers.location, '/auth/form?error=RATE_LIMITED');
    const kept = formCookie(response);
    assert.ok(kept, 'the cookie is set');
    assert.equal(kept.maxAge, FORM_VALUES_TTL_SECONDS);
    assert.equal(kept.path, '/');
    assert.equal(kept.httpOnly, true);
    assert.equal(kept.sameSite, 'Lax');
    assert.notEqual(kept.secure, true, 'http: not Secure');
    const setCookie = String(response.headers['set-cookie']);
    assert.doesNotMatch(setCookie, /hunter2|123456/);
    assert.doesNotMatch(Buffer.from(kept.value.split('.')[0]!, 'base64url').toString('utf8'), /hunter2|123456|password|code/, 'neither the password nor the code, not even their names');

    const page = await read(app, kept.value);
    assert.deepEqual(page.json(), { values: { email: 'ann@example.com', name: 'Ann' }, invalidFields: [] });
  });

  it('is read once: the page clears it', async () => {
    const kept = formCookie(await post(app, { email: 'once@example.com', password: 'x' }))!;
    const first = await read(app, kept.value);
    assert.equal(first.json().values.email, 'once@example.com');
    const cleared = formCookie(first);
    assert.ok(cleared, 'a Set-Cookie clears it');
    assert.equal(cleared.maxAge, 0);
    assert.equal(cleared.path, '/', 'on the path it was set for');
    // A browser would have dropped it; one that replays it still gets it only within its lifetime (next test).
    assert.deepEqual((await read(app, undefined)).json(), { values: {}, invalidFields: [] });
  });

  it('names the fields the server refused, and a refusal reason code rides along in the URL', async () => {
    const refused = await post(app, { email: 'not-an-address', fail: 'field' });
    assert.equal(refused.headers.location, '/auth/form?error=VALIDATION_ERROR');
    assert.deepEqual((await read(app, formCookie(refused)!.value)).json(), { values: { email: 'not-an-address' }, invalidFields: ['email'] });

    const weak = await post(app, { email: 'weak@example.com', password: 'short', fail: 'reason' });
    assert.equal(weak.headers.location, '/auth/form?error=VALIDATION_ERROR&reason=TOO_SHORT');
    assert.deepEqual((await read(app, formCookie(weak)!.value)).json(), { values: { email: 'weak@example.com' }, invalidFields: ['password'] });

    const odd = await post(app, { email: 'odd@example.com', fail: 'odd-reason' });
    assert.equal(odd.headers.location, '/auth/form?error=VALIDATION_ERROR', 'only a code-shaped reason goes in the URL');
  });

  it('cuts long values and sets nothing when there is nothing to keep', async () => {
    const long = await post(app, { email: 'a'.repeat(5000), name: 'é'.repeat(400) });
    const kept = formCookie(long);
    assert.ok(kept && kept.value.length < 2048, 'bounded');
    const { values } = (await read(app, kept.value)).json() as { values: Record<string, string> };
    assert.equal(values.email!.length, MAX_KEPT_VALUE_LENGTH);
    assert.equal(values.name, 'é'.repeat(MAX_KEPT_VALUE_LENGTH));

    const nothing = await post(app, { password: 'only a password' });
    assert.equal(nothing.statusCode, 303);
    assert.equal(formCookie(nothing), undefined, 'a password alone keeps nothing');
  });

  it('ignores, silently, a cookie it did not sign, an altered one, an expired one and one for another page', async () => {
    const kept = formCookie(await post(app, { email: 'real@example.com' }))!;
    const [payload, signature] = kept.value.split('.') as [string, string];
    const forgedPayload = Buffer.from(JSON.stringify({ p: '/auth/form', x: 9_999_999_999, v: { email: 'evil@example.com' }, i: [] })).toString('base64url');
    const cases: Record<string, string> = {
      unsigned: forgedPayload,
      'signature of another payload': `${forgedPayload}.${signature}`,
      'altered payload': `${payload.slice(0, -2)}AA.${signature}`,
      'truncated signature': `${payload}.${signature.slice(0, 10)}`,
      garbage: '%%%not-a-cookie',
      oversized: `${payload}${'A'.repeat(5000)}.${signature}`,
    };
    for (const [label, value] of Object.entries(cases)) {
      const response = await read(app, value);
      assert.equal(response.statusCode, 200, label);
      assert.deepEqual(response.json(), { values: {}, invalidFields: [] }, label);
      assert.equal(formCookie(response)?.maxAge, 0, `${label}: cleared all the same`);
    }

    const signedElsewhere = await buildApp(false, 'another-secret-entirely-0123456789abcdef');
    try {
      const theirs = formCookie(await post(signedElsewhere, { email: 'elsewhere@example.com' }))!;
      assert.deepEqual((await read(app, theirs.value)).json(), { values: {}, invalidFields: [] }, 'signed with another key');
    } finally {
      await signedElsewhere.close();
    }

    const old = formCookie(await app.inject({ method: 'POST', url: '/keep-old', headers: { 'content-type': FORM }, payload: 'email=old%40example.com' }))!;
    assert.deepEqual((await read(app, old.value)).json(), { values: {}, invalidFields: [] }, 'expired, whatever the browser kept');

    assert.deepEqual((await read(app, kept.value, '/auth/other')).json(), { values: {}, invalidFields: [] }, 'another page does not get them');
  });

  it('never accepts a secret field name, whatever a route lists', () => {
    for (const name of ['password', 'newPassword', 'currentPassword', 'token', 'csrfToken', 'code', 'recoveryCode', 'secret', 'otp', 'apiKey', '__proto__', 'a b', '']) {
      assert.equal(isKeepableField(name), false, name);
    }
    for (const name of ['email', 'name', 'displayName']) assert.equal(isKeepableField(name), true, name);
  });
});

describe('form values on https', () => {
  let app: FastifyInstance;
  before(async () => {
    app = await buildApp(true);
  });
  after(() => app.close());

  it('uses a __Host- cookie with Secure, for Path=/ and no Domain', async () => {
    const name = formValuesCookieName({ isSecureOrigin: true });
    assert.equal(name, '__Host-gatehouse.form');
    const response = await post(app, { email: 'tls@example.com' });
    const kept = formCookie(response, name);
    assert.ok(kept);
    assert.equal(kept.secure, true);
    assert.equal(kept.path, '/');
    assert.equal((await read(app, kept.value, '/auth/form', name)).json().values.email, 'tls@example.com');
    assert.deepEqual((await read(app, kept.value)).json(), { values: {}, invalidFields: [] }, 'the plain name is not read on https');
  });
});
