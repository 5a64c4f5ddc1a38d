/**
 * gatehouse-client in token mode against a live Gatehouse on loopback (real HTTP, AUTH_URL its own
 * address), imported from the package source: sign-in and its failures as values, the second
 * factor with a TOTP code and a recovery code, the session, sign-out, and `fetch` with the token
 * (a 401 refreshes once and retries once; a streamed body is not sent twice; refresh ahead of expiry).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends, createSqliteDatabase } from '../../../test/helpers/databases.ts';
import { totpCode } from '../../../test/helpers/totp.ts';
import { createGatehouseClient, memoryStorage, type GatehouseClient, type SessionState, type StoredTokens, type TokenStorage } from '../src/index.ts';
import { PASSWORD, recordingFetch, startService, type LiveService } from './live.ts';

const json = (body: unknown): RequestInit => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

async function stored(storage: TokenStorage): Promise<StoredTokens> {
  const tokens = await storage.get();
  assert.ok(tokens !== null, 'tokens are stored');
  return tokens;
}

for (const backend of await backends()) {
  describe(`gatehouse-client (tokens) against a live service on ${backend.name}`, { skip: backend.skip }, () => {
    let live: LiveService;
    before(async () => {
      live = await startService(await backend.create());
    });
    after(() => live?.close());

    /** A client with its own memory storage and a recording fetch, signed in as a new user. */
    async function signedIn(options: { refreshAheadSeconds?: number } = {}) {
      const user = await live.user();
      const recorder = recordingFetch();
      const storage = memoryStorage();
      const client = createGatehouseClient({ baseUrl: live.url, fetch: recorder.fetch, storage, ...options });
      const result = await client.signIn({ email: user.email, password: PASSWORD });
      assert.equal(result.status, 'signed-in', JSON.stringify(result));
      recorder.calls.length = 0;
      return { user, recorder, storage, client };
    }

    it('signs in: a session from the service, the tokens stored, subscribers told', async () => {
      const user = await live.user();
      const storage = memoryStorage();
      const changes: SessionState[] = [];
      const client = createGatehouseClient({ baseUrl: `${live.url}/`, storage, onSessionChange: (state) => changes.push(state) });
      const seen: SessionState[] = [];
      client.subscribe((state) => seen.push(state));
      assert.equal(client.getState().status, 'loading');

      const result = await client.signIn({ email: user.email, password: PASSWORD });
      assert.equal(result.status, 'signed-in');
      assert.deepEqual(result.session.user, { id: user.id, email: user.email, name: 'Test User', roles: [] });
      assert.deepEqual(result.session.session.amr, ['pwd']);
      assert.ok(Date.parse(result.session.session.expiresAt) > Date.now());
      const tokens = await stored(storage);
      assert.match(tokens.accessToken, /^[\w-]+\.[\w-]+\.[\w-]+$/);
      assert.ok(Date.parse(tokens.expiresAt) > Date.now());
      assert.deepEqual(client.getState(), { status: 'signed-in', session: result.session });
      assert.deepEqual(seen, [client.getState()]);
      assert.deepEqual(changes, seen);
    });

    it('answers a wrong password with the INVALID_CREDENTIALS value, an unknown address the same, and stores nothing', async () => {
      const user = await live.user();
      const storage = memoryStorage();
      const client = createGatehouseClient({ baseUrl: live.url, storage });
      const wrong = await client.signIn({ email: user.email, password: 'not the password at all' });
      assert.equal(wrong.status, 'error');
      assert.equal(wrong.error.code, 'INVALID_CREDENTIALS');
      assert.equal(wrong.error.status, 401);
      assert.equal(typeof wrong.error.message, 'string');
      const unknown = await client.signIn({ email: 'nobody@example.com', password: PASSWORD });
      assert.equal(unknown.status === 'error' && unknown.error.code, 'INVALID_CREDENTIALS');
      const invalid = await client.signIn({ email: 'not an address', password: '' });
      assert.equal(invalid.status, 'error');
      assert.equal(invalid.error.code, 'VALIDATION_ERROR');
      assert.deepEqual(invalid.error.errors?.map((error) => error.field).sort(), ['email', 'password']);
      assert.equal(await storage.get(), null);
      assert.equal(client.getState().status, 'loading', 'a failed sign-in says nothing about a session');
    });

    it('answers an unreachable service with the NETWORK_ERROR value', async () => {
      const client = createGatehouseClient({ baseUrl: 'http://127.0.0.1:1' });
      const result = await client.signIn({ email: 'a@example.com', password: PASSWORD });
      assert.equal(result.status, 'error');
      assert.equal(result.error.code, 'NETWORK_ERROR');
      assert.equal(result.error.status, undefined);
    });

    it('answers a passkey step where there is no WebAuthn (Node) with PASSKEY_UNAVAILABLE, asking the service nothing', async () => {
      const recorder = recordingFetch();
      const client = createGatehouseClient({ baseUrl: live.url, fetch: recorder.fetch });
      const alone = await client.signInWithPasskey();
      assert.equal(alone.status === 'error' && alone.error.code, 'PASSKEY_UNAVAILABLE');
      const second = await client.verifySecondFactor({ mfaToken: 'kept-from-before', passkey: true });
      assert.equal(second.status === 'error' && second.error.code, 'PASSKEY_UNAVAILABLE');
      assert.deepEqual(recorder.calls, [], 'no challenge is made that nobody can answer');
    });

    it('finishes a sign-in with a second factor: a TOTP code (a wrong one is a value to retry), or a recovery code', async () => {
      const user = await live.user('mfa');
      const enroller = createGatehouseClient({ baseUrl: live.url });
      assert.equal((await enroller.signIn({ email: user.email, password: PASSWORD })).status, 'signed-in');
      const setup = await enroller.fetch('/api/auth/mfa/totp/setup', json({}));
      assert.equal(setup.status, 200);
      const { secret } = (await setup.json()) as { secret: string };
      const enabled = await enroller.fetch('/api/auth/mfa/totp/enable', json({ code: totpCode(secret, Date.now()) }));
      assert.equal(enabled.status, 200);
      const { recoveryCodes } = (await enabled.json()) as { recoveryCodes: string[] };

      const storage = memoryStorage();
      const client = createGatehouseClient({ baseUrl: live.url, storage });
      const challenge = await client.signIn({ email: user.email, password: PASSWORD });
      assert.equal(challenge.status, 'second-factor');
      assert.deepEqual(challenge.methods, ['totp', 'recovery_code']);
      assert.equal(typeof challenge.mfaToken, 'string');
      assert.equal(await storage.get(), null, 'no session before the second factor');

      const wrong = await challenge.verifySecondFactor({ code: totpCode(secret, Date.now(), 5) });
      assert.equal(wrong.status, 'error');
      assert.equal(wrong.error.code, 'INVALID_CODE');
      // The enabling code's step is spent: the next step's code (within the service's window).
      const done = await challenge.verifySecondFactor({ code: totpCode(secret, Date.now(), 1) });
      assert.equal(done.status, 'signed-in', JSON.stringify(done));
      assert.deepEqual(done.session.session.amr, ['pwd', 'otp', 'mfa']);
      assert.equal(client.getState().status, 'signed-in');
      await stored(storage);
      const spent = await challenge.verifySecondFactor({ code: totpCode(secret, Date.now(), 1) });
      assert.equal(spent.status === 'error' && spent.error.code, 'INVALID_TOKEN', 'the mfaToken is spent');

      // After a reload: the kept mfaToken and a recovery code, through the client itself.
      const other = createGatehouseClient({ baseUrl: live.url });
      const again = await other.signIn({ email: user.email, password: PASSWORD });
      assert.equal(again.status, 'second-factor');
      const recovered = await other.verifySecondFactor({ mfaToken: again.mfaToken, recoveryCode: recoveryCodes[0]! });
      assert.equal(recovered.status, 'signed-in', JSON.stringify(recovered));
    });

    it('getSession: the service\'s view when signed in, signed-out without tokens (no request made)', async () => {
      const { user, recorder, client, storage } = await signedIn();
      const result = await client.getSession();
      assert.equal(result.status, 'signed-in');
      assert.equal(result.session.user.email, user.email);
      assert.equal(recorder.count('GET', '/api/auth/session'), 1);

      await storage.set(null);
      recorder.calls.length = 0;
      assert.deepEqual(await client.getSession(), { status: 'signed-out' });
      assert.equal(recorder.calls.length, 0);
      assert.equal(client.getState().status, 'signed-out');
    });

    it('fetch sends the access token; a 401 makes exactly one refresh, then one retry with the new token', async () => {
      const { recorder, client, storage } = await signedIn();
      const tokens = await stored(storage);
      const first = await client.fetch('/api/auth/sessions');
      assert.equal(first.status, 200);
      assert.equal(recorder.calls[0]!.authorization, `Bearer ${tokens.accessToken}`);
      assert.equal(recorder.calls[0]!.url.href, `${live.url}/api/auth/sessions`, 'a relative path, in Node, is under baseUrl');

      // An access token the service will refuse: as good as expired, without waiting.
      await storage.set({ ...tokens, accessToken: `${tokens.accessToken}x` });
      recorder.calls.length = 0;
      const response = await client.fetch(new URL('/api/auth/sessions', live.url));
      assert.equal(response.status, 200);
      assert.equal(recorder.refreshes(), 1);
      assert.equal(recorder.count('GET', '/api/auth/sessions'), 2);
      const renewed = await stored(storage);
      assert.notEqual(renewed.refreshToken, tokens.refreshToken, 'rotated');
      assert.equal(recorder.calls.at(-1)!.authorization, `Bearer ${renewed.accessToken}`);

      // A caller's own Authorization header is left alone, and no refresh is attempted for it.
      recorder.calls.length = 0;
      const own = await client.fetch('/api/auth/session', { headers: { authorization: 'Bearer someone-else' } });
      assert.equal(own.status, 401);
      assert.equal(recorder.refreshes(), 0);
    });

    it('fetch does not send a streamed body twice: the 401 comes back, the session is refreshed for the next call', async () => {
      const { recorder, client, storage } = await signedIn();
      const tokens = await stored(storage);
      await storage.set({ ...tokens, accessToken: 'refused' });
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('{}'));
          controller.close();
        },
      });
      const streamed = await client.fetch('/api/auth/mfa/totp/setup', { method: 'POST', headers: { 'content-type': 'application/json' }, body, duplex: 'half' } as RequestInit);
      assert.equal(streamed.status, 401);
      assert.equal(recorder.count('POST', '/api/auth/mfa/totp/setup'), 1);
      assert.equal(recorder.refreshes(), 1);
      const next = await client.fetch('/api/auth/mfa/totp/setup', json({}));
      assert.equal(next.status, 200);
      assert.equal(recorder.refreshes(), 1);
    });

    it('a refused refresh token signs the client out: tokens forgotten, the 401 returned, state signed-out', async () => {
      const { recorder, client, storage } = await signedIn();
      await storage.set({ accessToken: 'refused', refreshToken: 'not-one-of-ours', expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
      const response = await client.fetch('/api/auth/sessions');
      assert.equal(response.status, 401);
      assert.equal(recorder.refreshes(), 1);
      assert.equal(recorder.count('GET', '/api/auth/sessions'), 1);
      assert.equal(await storage.get(), null);
      assert.equal(client.getState().status, 'signed-out');
      const refreshed = await client.refresh();
      assert.equal(refreshed.status, 'signed-out');
    });

    it('refreshes ahead of expiry (expiresAt within refreshAheadSeconds) instead of waiting for a 401', async () => {
      const { recorder, client, storage } = await signedIn({ refreshAheadSeconds: 60 });
      const tokens = await stored(storage);
      await storage.set({ ...tokens, expiresAt: new Date(Date.now() + 10 * 60_000).toISOString() });
      assert.equal((await client.fetch('/api/auth/session')).status, 200);
      assert.equal(recorder.refreshes(), 0, 'far from expiry: no refresh');

      await storage.set({ ...tokens, expiresAt: new Date(Date.now() + 30_000).toISOString() });
      recorder.calls.length = 0;
      assert.equal((await client.fetch('/api/auth/session')).status, 200);
      assert.equal(recorder.refreshes(), 1);
      assert.equal(recorder.calls[0]!.url.pathname, '/api/auth/refresh', 'the refresh came first');
      assert.equal(recorder.count('GET', '/api/auth/session'), 1, 'no 401 round trip');
    });

    it('signOut ends the session at the service: the old tokens are refused afterwards', async () => {
      const { client, storage } = await signedIn();
      const tokens = await stored(storage);
      assert.deepEqual(await client.signOut(), { status: 'signed-out' });
      assert.equal(await storage.get(), null);
      assert.equal(client.getState().status, 'signed-out');
      const session = await fetch(`${live.url}/api/auth/session`, { headers: { authorization: `Bearer ${tokens.accessToken}` } });
      assert.equal(session.status, 401);
      const refresh = await fetch(`${live.url}/api/auth/refresh`, json({ refreshToken: tokens.refreshToken }));
      assert.equal(refresh.status, 401);
      assert.deepEqual(await client.getSession(), { status: 'signed-out' });
    });

    it('signing in again ends the session the storage held before', async () => {
      const { user, client, storage } = await signedIn();
      const before = await stored(storage);
      assert.equal((await client.signIn({ email: user.email, password: PASSWORD })).status, 'signed-in');
      const old = await fetch(`${live.url}/api/auth/session`, { headers: { authorization: `Bearer ${before.accessToken}` } });
      assert.equal(old.status, 401);
      assert.equal((await client.getSession()).status, 'signed-in');
    });
  });
}

describe('gatehouse-client: RATE_LIMITED carries Retry-After', () => {
  let live: LiveService;
  before(async () => {
    live = await startService(await createSqliteDatabase(), { RATE_LIMIT_SIGNIN_PER_IP: '2/1m' });
  });
  after(() => live?.close());

  it('answers the third attempt in a minute with RATE_LIMITED and retryAfterSeconds', async () => {
    const user = await live.user();
    const client: GatehouseClient = createGatehouseClient({ baseUrl: live.url });
    let last;
    for (let attempt = 0; attempt < 3; attempt++) last = await client.signIn({ email: user.email, password: 'wrong password here' });
    assert.equal(last?.status, 'error');
    assert.equal(last.error.code, 'RATE_LIMITED');
    assert.equal(last.error.status, 429);
    assert.ok(last.error.retryAfterSeconds !== undefined && last.error.retryAfterSeconds > 0 && last.error.retryAfterSeconds <= 60, String(last.error.retryAfterSeconds));
  });
});
