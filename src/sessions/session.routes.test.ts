import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJwt } from 'jose';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { TEST_SECRET, createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { addSigningKey, KEY_ACTIVATION_DELAY_MS, loadSigningKeys } from './signing-keys.ts';
import { signAccessToken } from './access-token.ts';
import { PROFILE_TTL_MS } from './session.service.ts';

const PASSWORD = 'correct horse battery staple';
const MINUTE = 60_000;

interface Tokens {
  token: string;
  refreshToken: string;
  sessionId: string;
}

/** A clock tests move by hand; starts at the real time so tokens look normal. */
function fakeClock() {
  let now = Date.now();
  const clock = () => now;
  return Object.assign(clock, {
    advance(ms: number) {
      now += ms;
    },
  });
}

for (const backend of await backends()) {
  for (const strategy of ['database', 'jwt'] as const) {
    describe(`sessions, ${strategy} strategy, on ${backend.name}`, { skip: backend.skip }, () => {
      let database: TestDatabase;
      let t: TestApp;
      const clock = fakeClock();
      let userCount = 0;

      const suiteEnv = { SESSION_STRATEGY: strategy, SESSION_IDLE_TIMEOUT: '2h', SESSION_MAX_AGE: '1d', REFRESH_REUSE_GRACE: '10s', SESSION_TOUCH_INTERVAL: '5m' };

      before(async () => {
        database = await backend.create();
        t = await createTestApp(database, { clock, env: suiteEnv });
      });
      after(async () => {
        await t?.close();
        await database?.drop();
      });

      async function newUser(roles: string[] = []) {
        const email = `user${++userCount}@example.com`;
        const user = await createUser(t.services, { email, password: PASSWORD, roles });
        return { ...user, email };
      }

      async function signIn(email: string): Promise<Tokens> {
        const response = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email, password: PASSWORD } });
        assert.equal(response.statusCode, 200, response.body);
        const body = response.json();
        return { token: body.token, refreshToken: body.refreshToken, sessionId: decodeJwt(body.token).sid as string };
      }

      function getSession(token: string) {
        return t.app.inject({ method: 'GET', url: '/api/auth/session', headers: { authorization: `Bearer ${token}` } });
      }

      function refresh(refreshToken: unknown) {
        return t.app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken } });
      }

      it('GET /api/auth/session describes the user and session for a Bearer token', async () => {
        const user = await newUser(['EDITOR']);
        const tokens = await signIn(user.email);
        const response = await getSession(tokens.token);
        assert.equal(response.statusCode, 200);
        assert.equal(response.headers['cache-control'], 'no-store');
        const body = response.json();
        assert.deepEqual(body.user, { id: user.id, email: user.email, name: 'Test User', roles: ['EDITOR'] });
        assert.equal(body.session.id, tokens.sessionId);
        assert.equal(new Date(body.session.expiresAt).getTime(), clock() + 86_400_000);
        assert.deepEqual(body.session.amr, ['pwd'], 'how the user proved who they are (RFC 8176)');
        assert.equal(new Date(body.session.authTime).getTime(), Math.floor(clock() / 1000) * 1000, 'and when, to the second (as in the token)');
      });

      it('keeps how and when the user signed in through refreshes: amr and auth_time in every token', async () => {
        const user = await newUser();
        const first = await signIn(user.email);
        const signedInAt = Math.floor(clock() / 1000);
        clock.advance(60_000);
        const refreshed = (await refresh(first.refreshToken)).json();
        const claims = decodeJwt(refreshed.token);
        assert.deepEqual(claims.amr, ['pwd']);
        assert.equal(claims.auth_time, signedInAt, 'a refresh is not a sign-in');
        assert.ok(claims.iat! > signedInAt);
        const view = (await getSession(refreshed.token)).json();
        assert.equal(new Date(view.session.authTime).getTime(), signedInAt * 1000);
      });

      it('answers 401 UNAUTHENTICATED without a token or with a malformed header', async () => {
        for (const headers of [{}, { authorization: 'Bearer' }, { authorization: 'Basic dXNlcjpwYXNz' }, { authorization: 'Bearer not.a.jwt' }]) {
          const response = await t.app.inject({ method: 'GET', url: '/api/auth/session', headers });
          assert.equal(response.statusCode, 401, JSON.stringify(headers));
          assert.deepEqual(Object.keys(response.json()).sort(), ['error', 'message']);
          assert.equal(response.json().error, 'UNAUTHENTICATED');
        }
      });

      it('signs out: the token stops working at once, and signing out again is harmless', async () => {
        const user = await newUser();
        const tokens = await signIn(user.email);
        assert.equal((await getSession(tokens.token)).statusCode, 200, 'verified once, so now in the verification cache');
        const signout = await t.app.inject({ method: 'POST', url: '/api/auth/signout', headers: { authorization: `Bearer ${tokens.token}` } });
        assert.equal(signout.statusCode, 200);
        assert.deepEqual(signout.json(), { ok: true });
        assert.equal((await getSession(tokens.token)).statusCode, 401);
        assert.equal((await refresh(tokens.refreshToken)).statusCode, 401, 'the refresh token died with the session');
        const again = await t.app.inject({ method: 'POST', url: '/api/auth/signout', headers: { authorization: `Bearer ${tokens.token}` } });
        assert.equal(again.statusCode, 200);
        const anonymous = await t.app.inject({ method: 'POST', url: '/api/auth/signout' });
        assert.equal(anonymous.statusCode, 200);
      });

      it('rotates refresh tokens: the new pair works, the old refresh token is spent', async () => {
        const user = await newUser();
        const first = await signIn(user.email);
        const response = await refresh(first.refreshToken);
        assert.equal(response.statusCode, 200);
        const second = response.json();
        assert.notEqual(second.refreshToken, first.refreshToken);
        assert.notEqual(second.token, first.token);
        assert.equal(decodeJwt(second.token).sid, first.sessionId, 'same session');
        assert.equal((await getSession(second.token)).statusCode, 200);
        assert.equal((await refresh(second.refreshToken)).statusCode, 200);
      });

      it('gives concurrent refreshes with one token the same successor within the grace period', async () => {
        const user = await newUser();
        const tokens = await signIn(user.email);
        const [a, b] = await Promise.all([refresh(tokens.refreshToken), refresh(tokens.refreshToken)]);
        assert.equal(a.statusCode, 200);
        assert.equal(b.statusCode, 200);
        assert.equal(a.json().refreshToken, b.json().refreshToken);
        clock.advance(5_000);
        const late = await refresh(tokens.refreshToken);
        assert.equal(late.statusCode, 200, 'still within the 10 s grace');
        assert.equal(late.json().refreshToken, a.json().refreshToken);
        assert.equal((await refresh(a.json().refreshToken)).statusCode, 200, 'the successor works');
      });

      it('treats a rotated refresh token presented after the grace period as theft: the session ends', async () => {
        const user = await newUser();
        const stolen = await signIn(user.email);
        const legitimate = (await refresh(stolen.refreshToken)).json();
        clock.advance(11_000);
        const reuse = await refresh(stolen.refreshToken);
        assert.equal(reuse.statusCode, 401);
        assert.equal(reuse.json().error, 'TOKEN_REUSED');
        assert.equal((await refresh(legitimate.refreshToken)).statusCode, 401, 'the whole session is gone');
        assert.equal((await getSession(legitimate.token)).statusCode, 401, 'access tokens of the session are refused');
      });

      // Regression (review): a thief who rotated twice made the owner's spent token look unknown,
      // so presenting it ended nothing and the thief kept the session.
      it('treats any older generation as theft, however many rotations ago it was spent', async () => {
        const user = await newUser();
        const owner = await signIn(user.email);
        const thief1 = (await refresh(owner.refreshToken)).json();
        const thief2 = (await refresh(thief1.refreshToken)).json();
        clock.advance(1_000);
        const reuse = await refresh(owner.refreshToken);
        assert.equal(reuse.statusCode, 401);
        assert.equal(reuse.json().error, 'TOKEN_REUSED');
        assert.equal((await refresh(thief2.refreshToken)).statusCode, 401, 'the thief lost the session');
      });

      it('keeps a signed-out token refused through the verifier’s clock tolerance', { skip: strategy !== 'jwt' }, async () => {
        const user = await newUser();
        const tokens = await signIn(user.email);
        await t.app.inject({ method: 'POST', url: '/api/auth/signout', headers: { authorization: `Bearer ${tokens.token}` } });
        const { exp } = decodeJwt(tokens.token);
        clock.advance(exp! * 1000 - clock() + 1_000);
        await t.services.revocations.sync();
        for (let i = 0; i < 3; i++) assert.equal((await getSession(tokens.token)).statusCode, 401, `check ${i}`);
      });

      it('does not end a session for a guessed secret (a session id alone proves nothing)', async () => {
        const user = await newUser();
        const tokens = await signIn(user.email);
        const forged = `${tokens.sessionId}.0.${'A'.repeat(43)}`;
        const futureGeneration = `${tokens.sessionId}.7.${tokens.refreshToken.split('.')[2]}`;
        assert.equal((await refresh(futureGeneration)).statusCode, 401);
        const response = await refresh(forged);
        assert.equal(response.statusCode, 401);
        assert.equal(response.json().error, 'INVALID_TOKEN');
        assert.equal((await refresh(tokens.refreshToken)).statusCode, 200, 'the real token still works');
      });

      it('refuses malformed refresh tokens with 400, 401 or 422, never 500', async () => {
        for (const value of ['', 'x', 'a.b', '.'.repeat(50), `${'A'.repeat(22)}.${'B'.repeat(44)}`, '\u0000\u0000']) {
          const response = await refresh(value);
          assert.ok([400, 401, 422].includes(response.statusCode), `${JSON.stringify(value)} -> ${response.statusCode}`);
        }
        for (const value of [42, null, ['x'], { a: 1 }, 'x'.repeat(500)]) {
          const response = await refresh(value);
          assert.equal(response.statusCode, 422, JSON.stringify(value));
          assert.equal(response.json().errors[0].field, 'refreshToken');
        }
      });

      it('expires access tokens, idle sessions and sessions past their absolute lifetime', async () => {
        const user = await newUser();
        const tokens = await signIn(user.email);
        const { exp } = decodeJwt(tokens.token);
        assert.equal(exp! - decodeJwt(tokens.token).iat!, 15 * 60, 'ACCESS_TOKEN_TTL: 15 minutes by default, in both strategies');
        clock.advance(exp! * 1000 - clock() + 6_000);
        assert.equal((await getSession(tokens.token)).statusCode, 401, 'access token expired');
        const refreshed = await refresh(tokens.refreshToken);
        assert.equal(refreshed.statusCode, 200, 'a refresh within the idle timeout keeps the session going');
        clock.advance(2 * 60 * MINUTE + 1_000);
        assert.equal((await refresh(refreshed.json().refreshToken)).statusCode, 401, 'idle for longer than the idle timeout');
      });

      it('ends an idle session while its access token is still valid; one in use stays (database strategy)', { skip: strategy !== 'database' }, async (context) => {
        // Idle timeout 2h, touch interval 5m, session 1d; tokens too live a day here (ACCESS_TOKEN_TTL=1d).
        const longTokens = await createTestApp(database, { env: { ...suiteEnv, ACCESS_TOKEN_TTL: '1d' }, clock });
        const signIn = async (email: string) => (await longTokens.app.inject({ method: 'POST', url: '/api/auth', payload: { email, password: PASSWORD } })).json() as { token: string; refreshToken: string };
        const getSession = (token: string) => longTokens.app.inject({ method: 'GET', url: '/api/auth/session', headers: { authorization: `Bearer ${token}` } });
        const refresh = (refreshToken: string) => longTokens.app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken } });
        context.after(() => longTokens.close());
        const idle = await signIn((await newUser()).email);
        const busy = await signIn((await newUser()).email);
        for (let minutes = 0; minutes < 110; minutes += 10) {
          clock.advance(10 * MINUTE);
          assert.equal((await getSession(busy.token)).statusCode, 200, `busy session after ${minutes + 10} min`);
        }
        clock.advance(11 * MINUTE);
        assert.equal((await getSession(idle.token)).statusCode, 401, 'idle for 121 min: over');
        assert.equal((await refresh(idle.refreshToken)).statusCode, 401, 'and it cannot be refreshed back to life');
        assert.equal((await getSession(busy.token)).statusCode, 200, 'last used 11 min ago: still on');
        clock.advance(2 * 60 * MINUTE - 11 * MINUTE - 1_000);
        assert.equal((await getSession(busy.token)).statusCode, 200, 'each use extends the idle window');
      });

      it('ends a session at its absolute lifetime even when it is used all the time, and no token outlives it', async () => {
        const user = await newUser();
        const sessionEnd = clock() + 86_400_000;
        let { refreshToken } = await signIn(user.email);
        for (let elapsed = 0; elapsed < 86_400_000 - 3_600_000; elapsed += 3_600_000) {
          clock.advance(3_600_000);
          const response = await refresh(refreshToken);
          assert.equal(response.statusCode, 200, `after ${elapsed / 3_600_000 + 1} h`);
          assert.ok(decodeJwt(response.json().token).exp! * 1000 <= sessionEnd, 'the access token ends with the session');
          refreshToken = response.json().refreshToken;
        }
        clock.advance(3_600_000 - 5 * MINUTE);
        const last = await refresh(refreshToken);
        assert.equal(last.statusCode, 200, 'five minutes left');
        assert.ok(decodeJwt(last.json().token).exp! * 1000 <= sessionEnd, 'capped at the session end, not the usual lifetime');
        clock.advance(5 * MINUTE);
        assert.equal((await refresh(last.json().refreshToken)).statusCode, 401);
      });

      it('writes last_seen_at at most once per touch interval (database strategy)', { skip: strategy !== 'database' }, async () => {
        const user = await newUser();
        const tokens = await signIn(user.email);
        const lastSeen = async () =>
          (await t.services.storage.db.selectFrom('sessions').select('last_seen_at').where('id', '=', tokens.sessionId).executeTakeFirstOrThrow()).last_seen_at;
        const start = await lastSeen();
        clock.advance(MINUTE);
        await getSession(tokens.token);
        assert.equal(await lastSeen(), start, 'no write within the interval');
        clock.advance(5 * MINUTE);
        await getSession(tokens.token);
        assert.equal(await lastSeen(), clock(), 'written once the interval has passed');
      });

      it('refuses a disabled user (database: at once; jwt: at the next refresh)', async () => {
        const user = await newUser();
        const tokens = await signIn(user.email);
        await t.services.storage.db.updateTable('users').set({ disabled_at: clock() }).where('id', '=', user.id).execute();
        assert.equal((await getSession(tokens.token)).statusCode, strategy === 'database' ? 401 : 200);
        assert.equal((await refresh(tokens.refreshToken)).statusCode, 401);
        assert.equal((await getSession(tokens.token)).statusCode, 401, 'the refusal ended the session');
      });

      it('applies role changes (database: next request; jwt: next refresh)', async () => {
        const user = await newUser();
        const tokens = await signIn(user.email);
        await t.services.storage.db.insertInto('user_roles').values({ user_id: user.id, role: 'ADMIN', created_at: clock() }).execute();
        const now = (await getSession(tokens.token)).json();
        assert.deepEqual(now.user.roles, strategy === 'database' ? ['ADMIN'] : []);
        const refreshed = (await refresh(tokens.refreshToken)).json();
        assert.deepEqual(decodeJwt(refreshed.token).roles, ['ADMIN']);
      });

      it('shows a changed name (database: next request; jwt: within PROFILE_TTL_MS)', async () => {
        const user = await newUser();
        const tokens = await signIn(user.email);
        assert.equal((await getSession(tokens.token)).json().user.name, user.name);
        await t.services.storage.db.updateTable('users').set({ name: 'Renamed' }).where('id', '=', user.id).execute();
        assert.equal((await getSession(tokens.token)).json().user.name, strategy === 'database' ? 'Renamed' : user.name);
        clock.advance(PROFILE_TTL_MS);
        assert.equal((await getSession(tokens.token)).json().user.name, 'Renamed');
      });

      it('refreshes a browser transparently when its access cookie has expired', async () => {
        const user = await newUser();
        const signIn = await t.app.inject({ method: 'POST', url: '/api/auth/signin', payload: { email: user.email, password: PASSWORD } });
        const jar = new CookieJar().store(signIn);
        const { exp } = decodeJwt(jar.get('gatehouse.session')!);
        clock.advance(exp! * 1000 - clock() + 6_000);
        const response = await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: { cookie: jar.header() } });
        assert.equal(response.statusCode, 200, response.body);
        const renewed = response.cookies.find((c) => c.name === 'gatehouse.session');
        assert.ok(renewed, 'a new access cookie is set');
        assert.notEqual(renewed.value, jar.get('gatehouse.session'));
        assert.ok(response.cookies.some((c) => c.name === 'gatehouse.refresh' && c.value !== jar.get('gatehouse.refresh')), 'the refresh cookie rotated');
        jar.store(response);
        assert.equal((await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: { cookie: jar.header() } })).statusCode, 200);
      });

      it('lists your own active sessions and ends one or all of them', async () => {
        const user = await newUser();
        const other = await newUser();
        const a = await signIn(user.email);
        const b = await signIn(user.email);
        const c = await signIn(user.email);
        const foreign = await signIn(other.email);
        const auth = { authorization: `Bearer ${a.token}` };

        const list = await t.app.inject({ method: 'GET', url: '/api/auth/sessions', headers: auth });
        assert.equal(list.statusCode, 200);
        const sessions = list.json().sessions as Array<{ id: string; current: boolean; ip: string }>;
        assert.deepEqual(sessions.map((s) => s.id).sort(), [a.sessionId, b.sessionId, c.sessionId].sort());
        assert.deepEqual(sessions.filter((s) => s.current).map((s) => s.id), [a.sessionId]);

        const notMine = await t.app.inject({ method: 'DELETE', url: `/api/auth/sessions/${foreign.sessionId}`, headers: auth });
        assert.equal(notMine.statusCode, 404);
        assert.equal((await getSession(foreign.token)).statusCode, 200, 'another user’s session is untouched');

        const endB = await t.app.inject({ method: 'DELETE', url: `/api/auth/sessions/${b.sessionId}`, headers: auth });
        assert.equal(endB.statusCode, 200);
        assert.equal((await getSession(b.token)).statusCode, 401);
        assert.equal((await t.app.inject({ method: 'DELETE', url: `/api/auth/sessions/${b.sessionId}`, headers: auth })).statusCode, 404);

        const endOthers = await t.app.inject({ method: 'DELETE', url: '/api/auth/sessions?keepCurrent=true', headers: auth });
        assert.deepEqual(endOthers.json(), { ok: true, ended: 1 });
        assert.equal((await getSession(c.token)).statusCode, 401);
        assert.equal((await getSession(a.token)).statusCode, 200);

        const endAll = await t.app.inject({ method: 'DELETE', url: '/api/auth/sessions', headers: auth });
        assert.deepEqual(endAll.json(), { ok: true, ended: 1 });
        assert.equal((await getSession(a.token)).statusCode, 401);
      });
    });
  }
}

describe('jwt strategy across instances', async () => {
  const [sqlite, postgres] = await backends();
  const backend = postgres!.skip ? sqlite! : postgres!;
  let database: TestDatabase;
  let first: TestApp;
  let second: TestApp;

  before(async () => {
    database = await backend.create();
    const env = { SESSION_STRATEGY: 'jwt', REVOCATION_SYNC_INTERVAL_MS: '100' };
    first = await createTestApp(database, { env });
    second = await createTestApp(database, { env });
    await createUser(first.services, { email: 'shared@example.com', password: PASSWORD });
  });
  after(async () => {
    await first?.close();
    await second?.close();
    await database?.drop();
  });

  it(`verifies tokens signed with a key another instance added after it started (${backend.name})`, async () => {
    const kid = await addSigningKey({ db: first.services.storage.db, authSecret: TEST_SECRET, clock: Date.now });
    // An instance whose clock says the new key is active by now signs with it (rotation is staged).
    const later = () => Date.now() + KEY_ACTIVATION_DELAY_MS + 1_000;
    const laterKeys = await loadSigningKeys({ db: first.services.storage.db, authSecret: TEST_SECRET, clock: later, retentionMs: 60_000, reloadIntervalMs: 0 });
    assert.equal(laterKeys.current().kid, kid);
    const signIn = await first.app.inject({ method: 'POST', url: '/api/auth', payload: { email: 'shared@example.com', password: PASSWORD } });
    const { sid, sub } = decodeJwt(signIn.json().token);
    const { token } = await signAccessToken(
      { userId: sub!, sessionId: sid as string, roles: [], amr: ['pwd'], authTime: Date.now() },
      { key: laterKeys.current(), issuer: second.config.tokens.issuer, audience: second.config.tokens.audience, issuedAtMs: Date.now(), ttlSeconds: 60 },
    );
    const check = await second.app.inject({ method: 'GET', url: '/api/auth/session', headers: { authorization: `Bearer ${token}` } });
    assert.equal(check.statusCode, 200, 'the other instance loaded the key it did not know');
  });

  it(`shares sign-out through the revocation list in storage (${backend.name})`, async () => {
    const signIn = await first.app.inject({ method: 'POST', url: '/api/auth', payload: { email: 'shared@example.com', password: PASSWORD } });
    const { token } = signIn.json();
    const check = (app: TestApp) => app.app.inject({ method: 'GET', url: '/api/auth/session', headers: { authorization: `Bearer ${token}` } });
    assert.equal((await check(second)).statusCode, 200, 'the other instance accepts the token');
    await first.app.inject({ method: 'POST', url: '/api/auth/signout', headers: { authorization: `Bearer ${token}` } });
    assert.equal((await check(first)).statusCode, 401, 'refused at once where it was revoked');
    await second.services.revocations.sync();
    assert.equal((await check(second)).statusCode, 401, 'refused by the other instance after its next pull');
  });
});
