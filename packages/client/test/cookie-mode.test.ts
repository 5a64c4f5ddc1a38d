/**
 * Cookie mode against a live Gatehouse: the service's HttpOnly cookies carry the session, the
 * client keeps no token and sends none; unsafe requests to the service carry the CSRF token from
 * GET /api/auth/csrf (fetched again once when a sign-in elsewhere replaced the secret); a second
 * factor finishes into the cookies. The browser is stood in for by a fetch with a cookie jar that
 * says where requests come from; test/browser.test.ts does the same in Chromium.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createSqliteDatabase } from '../../../test/helpers/databases.ts';
import { totpCode } from '../../../test/helpers/totp.ts';
import { cookieNames } from '../../../src/sessions/session-cookie.ts';
import { createGatehouseClient } from '../src/index.ts';
import { PASSWORD, browserFetch, recordingFetch, startService, type LiveService } from './live.ts';

describe('gatehouse-client (cookies) against a live service', () => {
  let live: LiveService;
  before(async () => {
    live = await startService(await createSqliteDatabase());
  });
  after(() => live?.close());

  function browserClient(browser = browserFetch(live.url)) {
    const recorder = recordingFetch(browser.fetch);
    const client = createGatehouseClient({ baseUrl: live.url, mode: 'cookies', fetch: recorder.fetch });
    return { client, recorder, browser };
  }

  it('signs in with the cookies, keeps no token, sends the CSRF token with unsafe requests, and signs out', async (t) => {
    const user = await live.user();
    const { client, recorder, browser } = browserClient();
    t.after(() => client.close());
    const result = await client.signIn({ email: user.email, password: PASSWORD });
    assert.equal(result.status, 'signed-in', JSON.stringify(result));
    assert.equal(result.session.user.id, user.id);
    const names = cookieNames(live.app.config);
    assert.ok(browser.cookies.has(names.access) && browser.cookies.has(names.refresh), [...browser.cookies.keys()].join());
    assert.equal(recorder.count('POST', '/api/auth/signin'), 1, 'the cookie-setting endpoint');
    assert.equal((await client.getSession()).status, 'signed-in');

    // Without the CSRF token the service refuses a cookie-carrying unsafe request…
    const bare = await browser.fetch(`${live.url}/api/auth/sessions?keepCurrent=true`, { method: 'DELETE', credentials: 'include' });
    assert.equal(bare.status, 403);
    assert.equal(((await bare.json()) as { error: string }).error, 'CSRF_FAILED');
    // …and the client's goes through.
    const ended = await client.fetch('/api/auth/sessions?keepCurrent=true', { method: 'DELETE' });
    assert.equal(ended.status, 200);
    assert.ok(recorder.calls.at(-1)!.csrf !== null);

    assert.ok(recorder.calls.every((call) => call.authorization === null), 'no Authorization header, ever');
    assert.deepEqual(await client.signOut(), { status: 'signed-out' });
    assert.equal(client.getState().status, 'signed-out');
    assert.ok(!browser.cookies.has(names.access) && !browser.cookies.has(names.refresh), 'the service cleared its cookies');
    assert.deepEqual(await client.getSession(), { status: 'signed-out' });
    assert.equal((await client.refresh()).status, 'signed-out');
  });

  it('fetches a new CSRF token once when another tab signed in meanwhile (the secret was replaced)', async (t) => {
    const user = await live.user();
    const browser = browserFetch(live.url);
    const a = browserClient(browser);
    const b = browserClient(browser);
    t.after(() => [a, b].forEach(({ client }) => client.close()));
    assert.equal((await a.client.signIn({ email: user.email, password: PASSWORD })).status, 'signed-in');
    assert.equal((await a.client.fetch('/api/auth/sessions?keepCurrent=true', { method: 'DELETE' })).status, 200);
    assert.equal((await b.client.signIn({ email: user.email, password: PASSWORD })).status, 'signed-in');

    a.recorder.calls.length = 0;
    const response = await a.client.fetch('/api/auth/sessions?keepCurrent=true', { method: 'DELETE' });
    assert.equal(response.status, 200);
    assert.equal(a.recorder.count('GET', '/api/auth/csrf'), 1);
    assert.equal(a.recorder.count('DELETE', '/api/auth/sessions'), 2, 'refused once, then sent again with the new token');
  });

  it('finishes a second factor into the cookies: the challenge came from the cookie-setting sign-in', async (t) => {
    const user = await live.user('mfa');
    const enroller = createGatehouseClient({ baseUrl: live.url });
    assert.equal((await enroller.signIn({ email: user.email, password: PASSWORD })).status, 'signed-in');
    const post = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const { secret } = (await (await enroller.fetch('/api/auth/mfa/totp/setup', post({}))).json()) as { secret: string };
    assert.equal((await enroller.fetch('/api/auth/mfa/totp/enable', post({ code: totpCode(secret, Date.now()) }))).status, 200);

    const { client, recorder, browser } = browserClient();
    t.after(() => client.close());
    const challenge = await client.signIn({ email: user.email, password: PASSWORD });
    assert.equal(challenge.status, 'second-factor');
    const names = cookieNames(live.app.config);
    assert.ok(!browser.cookies.has(names.access) && !browser.cookies.has(names.refresh), 'no session before the second factor');
    const wrong = await challenge.verifySecondFactor({ code: totpCode(secret, Date.now(), 3) });
    assert.equal(wrong.status === 'error' && wrong.error.code, 'INVALID_CODE');
    const answer = await challenge.verifySecondFactor({ code: totpCode(secret, Date.now(), 1) });
    assert.equal(answer.status, 'signed-in', JSON.stringify(answer));
    assert.deepEqual(answer.session.session.amr, ['pwd', 'otp', 'mfa']);
    assert.ok(browser.cookies.has(names.access) && browser.cookies.has(names.refresh), [...browser.cookies.keys()].join());
    assert.ok(recorder.calls.every((call) => call.authorization === null), 'no Authorization header, ever');
    const ended = await client.fetch('/api/auth/sessions?keepCurrent=true', { method: 'DELETE' });
    assert.equal(ended.status, 200, 'the cookies and the CSRF token of the new session work');
  });
});
