/**
 * Passkeys through the API, on SQLite and PostgreSQL, with both session strategies. A software
 * authenticator (test/helpers/webauthn.ts) answers the ceremonies, so registration, sign-in, the
 * second factor and the step-up are checked end to end, and so are the hostile cases: an unknown
 * credential, another origin or RP ID, no user verification, a broken signature, a replayed or
 * expired challenge, a counter that went backwards, the mfaToken of another user, enrolment
 * without a recent sign-in, CSRF. The real browser's ceremony is test/flows/passkeys-browser.test.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJwt } from 'jose';
import type { LightMyRequestResponse } from 'fastify';
import { backends } from '../../test/helpers/databases.ts';
import { createSignedInUser, useTestApp } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { SoftAuthenticator } from '../../test/helpers/webauthn.ts';
import { MAX_PASSKEYS_PER_USER } from './passkeys.service.ts';

const PASSWORD = 'correct horse battery staple';
const AUTH_URL = 'http://localhost:3000';
const ORIGIN = AUTH_URL;
/** Well-formed, and meaningless: for the checks that come before any verification. */
const SOME_RESPONSE = {
  id: 'AAAA',
  rawId: 'AAAA',
  type: 'public-key',
  response: { clientDataJSON: 'e30', attestationObject: 'AAAA', authenticatorData: 'AAAA', signature: 'AAAA' },
  clientExtensionResults: {},
};

for (const backend of await backends()) {
  for (const strategy of ['database', 'jwt'] as const) {
    describe(`passkeys API, ${strategy} strategy, on ${backend.name}`, { skip: backend.skip }, () => {
      const clock = fakeClock();
      const t = useTestApp(backend, { clock, env: { AUTH_URL, SESSION_STRATEGY: strategy } });
      let count = 0;

      const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
      const post = (url: string, payload?: object, token?: string) =>
        t.app.inject({ method: 'POST', url, ...(payload !== undefined && { payload }), headers: token === undefined ? {} : bearer(token) });
      const errorOf = (response: LightMyRequestResponse) => (response.json() as { error: string }).error;

      async function newUser() {
        return createSignedInUser(t, { email: `passkey${++count}@example.com`, password: PASSWORD });
      }

      /** Registers a passkey of `authenticator` for the holder of `token`; the verify response. */
      async function register(token: string, authenticator: SoftAuthenticator, name?: string) {
        const options = await post('/api/auth/passkeys/register/options', {}, token);
        assert.equal(options.statusCode, 200, options.body);
        const verified = await post('/api/auth/passkeys/register/verify', { response: authenticator.register(options.json()), ...(name !== undefined && { name }) }, token);
        assert.equal(verified.statusCode, 200, verified.body);
        return verified;
      }

      async function userWithPasskey(options: { synced?: boolean; counts?: boolean } = {}) {
        const user = await newUser();
        const authenticator = new SoftAuthenticator({ origin: ORIGIN, ...options });
        const passkey = (await register(user.token, authenticator)).json().passkey as { id: string; name: string };
        return { ...user, authenticator, passkey };
      }

      async function signInOptions(payload?: object) {
        const response = await post('/api/auth/passkeys/authenticate/options', payload);
        assert.equal(response.statusCode, 200, response.body);
        return response.json();
      }

      it('registers a discoverable, user-verified passkey for the RP of AUTH_URL; the first one brings recovery codes', async () => {
        const user = await newUser();
        const response = await post('/api/auth/passkeys/register/options', {}, user.token);
        assert.equal(response.statusCode, 200, response.body);
        assert.equal(response.headers['cache-control'], 'no-store');
        const options = response.json();
        assert.deepEqual(options.rp, { name: 'Gatehouse', id: 'localhost' });
        assert.equal(options.user.name, user.email);
        assert.equal(Buffer.from(options.user.id, 'base64url').toString(), user.id, 'the user handle is the user id, not the address');
        assert.deepEqual(options.authenticatorSelection, { requireResidentKey: true, residentKey: 'required', userVerification: 'required' });
        assert.equal(options.attestation, 'none');
        assert.deepEqual(options.excludeCredentials, []);
        assert.ok(options.pubKeyCredParams.some((param: { alg: number }) => param.alg === -7), 'ES256');
        assert.match(options.challenge, /^[A-Za-z0-9_-]{43}$/);
        const stored = await t.services.storage.db.selectFrom('passkey_challenges').select(['id', 'purpose', 'user_id']).where('user_id', '=', user.id).execute();
        assert.equal(stored.length, 1);
        assert.notEqual(stored[0]!.id, options.challenge, 'only a hash of the challenge is kept');

        const authenticator = new SoftAuthenticator({ origin: ORIGIN });
        const first = await post('/api/auth/passkeys/register/verify', { response: authenticator.register(options), name: '  Work laptop ' }, user.token);
        assert.equal(first.statusCode, 200, first.body);
        const body = first.json();
        assert.deepEqual(Object.keys(body).sort(), ['passkey', 'recoveryCodes']);
        assert.equal(body.passkey.name, 'Work laptop');
        assert.equal(body.passkey.lastUsedAt, null);
        assert.equal(body.recoveryCodes.length, 10);

        clock.advance(1_000);
        const again = await post('/api/auth/passkeys/register/options', {}, user.token);
        assert.deepEqual(
          again.json().excludeCredentials.map((credential: { id: string }) => credential.id),
          [authenticator.credentials[0]!.id],
          'the passkeys it has are excluded',
        );
        const second = await post('/api/auth/passkeys/register/verify', { response: new SoftAuthenticator({ origin: ORIGIN }).register(again.json()) }, user.token);
        assert.equal(second.statusCode, 200, second.body);
        assert.deepEqual(Object.keys(second.json()), ['passkey'], 'recovery codes only for the first factor');
        assert.equal(second.json().passkey.name, 'Passkey 2');

        const status = await t.app.inject({ method: 'GET', url: '/api/auth/mfa', headers: bearer(user.token) });
        assert.deepEqual(
          status.json().passkeys.map((passkey: { name: string }) => passkey.name),
          ['Work laptop', 'Passkey 2'],
        );
        assert.equal(status.json().recoveryCodesLeft, 10);
        const mails = await t.services.storage.db.selectFrom('mail_outbox').select('to_address').where('template', '=', 'security-notice').where('to_address', '=', user.email).execute();
        assert.equal(mails.length, 2, 'the owner is told of each');
        const events = await t.services.audit.listEvents({ type: 'passkey.added', limit: 50 });
        assert.equal(events.events.filter((event) => event.userId === user.id).length, 2);
      });

      it('refuses a registration for another origin or RP ID, without user verification, with a spent challenge, or twice', async () => {
        const user = await newUser();
        const authenticator = new SoftAuthenticator({ origin: ORIGIN });
        for (const overrides of [{ origin: 'https://evil.example' }, { rpId: 'evil.example' }, { userVerified: false }]) {
          const options = (await post('/api/auth/passkeys/register/options', {}, user.token)).json();
          const refused = await post('/api/auth/passkeys/register/verify', { response: authenticator.register(options, overrides) }, user.token);
          assert.equal(refused.statusCode, 400, JSON.stringify(overrides));
          assert.equal(errorOf(refused), 'PASSKEY_REGISTRATION_FAILED');
        }
        const options = (await post('/api/auth/passkeys/register/options', {}, user.token)).json();
        const response = authenticator.register(options);
        assert.equal((await post('/api/auth/passkeys/register/verify', { response }, user.token)).statusCode, 200);
        const replayed = await post('/api/auth/passkeys/register/verify', { response }, user.token);
        assert.equal(errorOf(replayed), 'PASSKEY_REGISTRATION_FAILED', 'the challenge was spent');

        const other = await newUser();
        const othersOptions = (await post('/api/auth/passkeys/register/options', {}, other.token)).json();
        const stolen = await post('/api/auth/passkeys/register/verify', { response: authenticator.register(othersOptions) }, user.token);
        assert.equal(errorOf(stolen), 'PASSKEY_REGISTRATION_FAILED', "another user's challenge");
        assert.equal((await t.services.passkeys.listPasskeys(user.id)).length, 1);
      });

      it('holds the cap of passkeys per user when two registrations finish at once', async () => {
        for (let round = 0; round < 3; round++) {
          // A user with a passkey, stepped up with it (adding another needs a recent second factor).
          const user = await userWithPasskey();
          const stepUp = await post('/api/auth/passkeys/step-up/options', {}, user.token);
          const stepped = await post('/api/auth/passkeys/step-up/verify', { response: user.authenticator.assert(stepUp.json()) }, user.token);
          assert.equal(stepped.statusCode, 200, stepped.body);
          const token = stepped.json().token as string;
          const now = clock();
          const filler = Array.from({ length: MAX_PASSKEYS_PER_USER - 2 }, (_, i) => ({
            id: `filler-${user.id}-${i}`,
            user_id: user.id,
            credential_id: `filler-${user.id}-${i}`,
            public_key: 'AAAA',
            counter: 0,
            transports: null,
            device_type: 'singleDevice' as const,
            backed_up: 0,
            aaguid: null,
            name: `Filler ${i}`,
            created_at: now,
            last_used_at: null,
          }));
          await t.services.storage.db.insertInto('passkeys').values(filler).execute();
          // Both asked while there is room for one more. A user has one registration challenge at a
          // time, so this is the race as it happens: A's challenge spent (its verify under way) when
          // B asks; here A's is put back after B's options replaced it, and both verify at once.
          const [a, b] = [new SoftAuthenticator({ origin: ORIGIN }), new SoftAuthenticator({ origin: ORIGIN })];
          const optionsA = await post('/api/auth/passkeys/register/options', {}, token);
          const challenges = t.services.storage.db.selectFrom('passkey_challenges').selectAll().where('user_id', '=', user.id).where('purpose', '=', 'register');
          const challengeA = await challenges.executeTakeFirstOrThrow();
          const optionsB = await post('/api/auth/passkeys/register/options', {}, token);
          assert.equal(optionsB.statusCode, 200, optionsB.body);
          await t.services.storage.db.insertInto('passkey_challenges').values(challengeA).execute();
          assert.equal((await challenges.execute()).length, 2);
          const answers = await Promise.all([
            post('/api/auth/passkeys/register/verify', { response: a.register(optionsA.json()) }, token),
            post('/api/auth/passkeys/register/verify', { response: b.register(optionsB.json()) }, token),
          ]);
          assert.deepEqual(answers.map((answer) => answer.statusCode).sort(), [200, 409], answers.map((answer) => answer.body).join('\n'));
          assert.equal(errorOf(answers.find((answer) => answer.statusCode !== 200)!), 'PASSKEY_LIMIT_REACHED');
          const stored = await t.services.storage.db.selectFrom('passkeys').select('id').where('user_id', '=', user.id).execute();
          assert.equal(stored.length, MAX_PASSKEYS_PER_USER, `round ${round}`);
        }
      });

      it('signs in with a passkey alone: the body of POST /api/auth, the session cookies, amr hwk+user+mfa', async () => {
        const { id, email, authenticator } = await userWithPasskey();
        const options = await signInOptions();
        assert.deepEqual(options.allowCredentials, [], 'discoverable: the authenticator picks');
        assert.equal(options.userVerification, 'required');
        assert.equal(options.rpId, 'localhost');

        const signedIn = await post('/api/auth/passkeys/authenticate/verify', { response: authenticator.assert(options) });
        assert.equal(signedIn.statusCode, 200, signedIn.body);
        assert.deepEqual(Object.keys(signedIn.json()).sort(), ['expiresAt', 'refreshToken', 'token', 'user']);
        assert.deepEqual(signedIn.json().user, { id, email, name: 'Test User' });
        const cookies = signedIn.cookies.map((cookie) => cookie.name);
        assert.ok(cookies.includes('gatehouse.session-token') || cookies.some((name) => name.includes('session')), `session cookies: ${cookies.join(', ')}`);
        assert.ok(cookies.some((name) => name.includes('refresh')), `refresh cookie: ${cookies.join(', ')}`);
        const claims = decodeJwt(signedIn.json().token);
        assert.deepEqual(claims.amr, ['hwk', 'user', 'mfa']);
        const session = await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: bearer(signedIn.json().token) });
        assert.deepEqual(session.json().session.amr, ['hwk', 'user', 'mfa']);
        const jar = new CookieJar().store(signedIn);
        const byCookie = await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: { cookie: jar.header() } });
        assert.equal(byCookie.statusCode, 200, 'the cookies are a browser session');

        const status = await t.app.inject({ method: 'GET', url: '/api/auth/mfa', headers: bearer(signedIn.json().token) });
        assert.notEqual(status.json().passkeys[0].lastUsedAt, null, 'the use is recorded');
        const events = await t.services.audit.listEvents({ userId: id, type: 'signin.success', limit: 20 });
        assert.ok(
          events.events.some((event) => JSON.stringify((event.details as { amr?: string[] } | null)?.amr) === '["hwk","user","mfa"]'),
          JSON.stringify(events.events.map((event) => event.details)),
        );

        const synced = await userWithPasskey({ synced: true, counts: false });
        const syncedIn = await post('/api/auth/passkeys/authenticate/verify', { response: synced.authenticator.assert(await signInOptions()) });
        assert.equal(syncedIn.statusCode, 200, syncedIn.body);
        assert.deepEqual(decodeJwt(syncedIn.json().token).amr, ['swk', 'user', 'mfa'], 'a synced passkey is a software key');
        const syncedOptions = await signInOptions();
        const syncedAnswer = synced.authenticator.assert(syncedOptions);
        const twice = await post('/api/auth/passkeys/authenticate/verify', { response: syncedAnswer });
        assert.equal(twice.statusCode, 200, 'an authenticator without a counter (0 each time) still works');
        const replayed = await post('/api/auth/passkeys/authenticate/verify', { response: syncedAnswer });
        assert.equal(replayed.statusCode, 401, 'without a counter, the spent challenge alone stops a replay');
        assert.equal(errorOf(replayed), 'INVALID_PASSKEY');
      });

      it('refuses every bad assertion with 401 INVALID_PASSKEY, never a 5xx', async () => {
        const { authenticator } = await userWithPasskey();
        const stranger = new SoftAuthenticator({ origin: ORIGIN });
        stranger.register({ ...(await post('/api/auth/passkeys/register/options', {}, (await newUser()).token)).json() });
        const cases: Array<[string, (options: Awaited<ReturnType<typeof signInOptions>>) => object]> = [
          ['an unknown credential', (options) => stranger.assert(options)],
          ['another origin', (options) => authenticator.assert(options, { origin: 'https://evil.example' })],
          ['another origin on the same RP ID', (options) => authenticator.assert(options, { origin: 'http://localhost:4000' })],
          ['another RP ID', (options) => authenticator.assert(options, { rpId: 'evil.example' })],
          ['no user verification', (options) => authenticator.assert(options, { userVerified: false })],
          ['a broken signature', (options) => authenticator.assert(options, { badSignature: true })],
          ['a challenge never issued', (options) => authenticator.assert(options, { challenge: Buffer.alloc(32, 7).toString('base64url') })],
          ['a user handle of someone else', (options) => ({ ...authenticator.assert(options), response: { ...authenticator.assert(options).response, userHandle: Buffer.from('someone-else').toString('base64url') } })],
        ];
        for (const [name, answer] of cases) {
          const refused = await post('/api/auth/passkeys/authenticate/verify', { response: answer(await signInOptions()) });
          assert.equal(refused.statusCode, 401, `${name}: ${refused.body}`);
          assert.equal(errorOf(refused), 'INVALID_PASSKEY', name);
          assert.equal(refused.cookies.length, 0, `${name}: no cookie`);
        }

        // A challenge works once, whatever the outcome.
        const options = await signInOptions();
        const good = authenticator.assert(options);
        assert.equal((await post('/api/auth/passkeys/authenticate/verify', { response: good })).statusCode, 200);
        assert.equal(errorOf(await post('/api/auth/passkeys/authenticate/verify', { response: good })), 'INVALID_PASSKEY', 'replayed');

        // A counter that does not move forwards is a cloned key.
        const current = authenticator.credentials[0]!.counter;
        const backwards = await post('/api/auth/passkeys/authenticate/verify', { response: authenticator.assert(await signInOptions(), { counter: current - 1 }) });
        assert.equal(errorOf(backwards), 'INVALID_PASSKEY', 'counter went backwards');
        const same = await post('/api/auth/passkeys/authenticate/verify', { response: authenticator.assert(await signInOptions(), { counter: current }) });
        assert.equal(errorOf(same), 'INVALID_PASSKEY', 'counter stood still');
        assert.equal((await post('/api/auth/passkeys/authenticate/verify', { response: authenticator.assert(await signInOptions(), { counter: current + 5 }) })).statusCode, 200);

        // Five minutes.
        const late = await signInOptions();
        clock.advance(5 * 60_000 + 1);
        assert.equal(errorOf(await post('/api/auth/passkeys/authenticate/verify', { response: authenticator.assert(late) })), 'INVALID_PASSKEY', 'expired');

        const failures = await t.services.audit.listEvents({ type: 'signin.failure', limit: 100 });
        assert.ok(failures.events.some((event) => event.reason === 'INVALID_PASSKEY'), 'refusals are audited');
      });

      it('answers a disabled account as the other sign-ins do, after a right passkey only', async () => {
        const { id, authenticator } = await userWithPasskey();
        await t.services.users.updateUser(id, { disabled: true });
        const refused = await post('/api/auth/passkeys/authenticate/verify', { response: authenticator.assert(await signInOptions()) });
        assert.equal(refused.statusCode, 403, refused.body);
        assert.equal(errorOf(refused), 'ACCOUNT_DISABLED');
        assert.equal(refused.cookies.length, 0);
      });

      it('is the second factor after a password, for that user only', async () => {
        const { id, email, authenticator } = await userWithPasskey();
        const challenged = await post('/api/auth', { email, password: PASSWORD });
        assert.equal(challenged.statusCode, 403, challenged.body);
        assert.equal(errorOf(challenged), 'MFA_REQUIRED');
        assert.ok(challenged.json().methods.includes('passkey'));
        const mfaToken = challenged.json().mfaToken as string;

        const options = await signInOptions({ mfaToken });
        assert.deepEqual(
          options.allowCredentials.map((credential: { id: string }) => credential.id),
          [authenticator.credentials[0]!.id],
          "the user's passkeys only",
        );

        // Someone else's passkey, with their own options, cannot finish this user's sign-in.
        const other = await userWithPasskey();
        const otherToken = (await post('/api/auth', { email: other.email, password: PASSWORD })).json().mfaToken as string;
        const crossed = await post('/api/auth/passkeys/authenticate/verify', { mfaToken, response: other.authenticator.assert(await signInOptions({ mfaToken: otherToken })) });
        assert.equal(crossed.statusCode, 401, crossed.body);
        assert.equal(errorOf(crossed), 'INVALID_PASSKEY');
        const foreignKey = await post('/api/auth/passkeys/authenticate/verify', {
          mfaToken,
          response: other.authenticator.assert(await signInOptions({ mfaToken }), { credential: other.authenticator.credentials[0]! }),
        });
        assert.equal(foreignKey.statusCode, 401, "another user's passkey answering this user's challenge");
        assert.equal(errorOf(foreignKey), 'INVALID_PASSKEY');
        const swapped = await post('/api/auth/passkeys/authenticate/verify', { mfaToken: otherToken, response: authenticator.assert(options) });
        assert.equal(swapped.statusCode, 401, "this user's passkey with another user's mfaToken");
        const unknown = await post('/api/auth/passkeys/authenticate/options', { mfaToken: 'not-a-token' });
        assert.equal(unknown.statusCode, 401);
        assert.equal(errorOf(unknown), 'INVALID_TOKEN');

        const answered = await post('/api/auth/passkeys/authenticate/verify', { mfaToken, response: authenticator.assert(await signInOptions({ mfaToken })) });
        assert.equal(answered.statusCode, 200, answered.body);
        assert.deepEqual(Object.keys(answered.json()).sort(), ['expiresAt', 'refreshToken', 'token', 'user']);
        assert.equal(answered.json().user.id, id);
        assert.deepEqual(decodeJwt(answered.json().token).amr, ['pwd', 'hwk', 'mfa']);
        const spent = await post('/api/auth/passkeys/authenticate/verify', { mfaToken, response: authenticator.assert(await signInOptions()) });
        assert.equal(spent.statusCode, 401, 'the mfaToken was spent');
        assert.equal(errorOf(spent), 'INVALID_TOKEN');
      });

      it('steps up with a passkey: a recent sign-in again, in the same session', async () => {
        const { token, authenticator, passkey } = await userWithPasskey();
        clock.advance(11 * 60_000);
        const tooOld = await t.app.inject({ method: 'DELETE', url: `/api/auth/passkeys/${passkey.id}`, headers: bearer(token) });
        assert.equal(tooOld.statusCode, 403);
        assert.equal(errorOf(tooOld), 'REAUTH_REQUIRED');

        const options = await post('/api/auth/passkeys/step-up/options', {}, token);
        assert.equal(options.statusCode, 200, options.body);
        assert.equal(options.json().allowCredentials.length, 1);
        const wrongSession = await newUser();
        const stolen = await post('/api/auth/passkeys/step-up/verify', { response: authenticator.assert(options.json()) }, wrongSession.token);
        assert.equal(errorOf(stolen), 'INVALID_PASSKEY', "another user's session");
        const options2 = await post('/api/auth/passkeys/step-up/options', {}, token);
        const stepped = await post('/api/auth/passkeys/step-up/verify', { response: authenticator.assert(options2.json()) }, token);
        assert.equal(stepped.statusCode, 200, stepped.body);
        const claims = decodeJwt(stepped.json().token);
        assert.deepEqual(claims.amr, ['pwd', 'hwk', 'user', 'mfa']);
        assert.equal(claims.auth_time, Math.floor(clock() / 1000));
        const removed = await t.app.inject({ method: 'DELETE', url: `/api/auth/passkeys/${passkey.id}`, headers: bearer(stepped.json().token) });
        assert.equal(removed.statusCode, 200, removed.body);
        const none = await post('/api/auth/passkeys/step-up/options', {}, token);
        assert.equal(errorOf(none), 'PASSKEY_NOT_FOUND');
      });

      it('renames and removes; only your own; removal and enrolment need a recent sign-in', async () => {
        const { id, email, token, passkey } = await userWithPasskey();
        const other = await newUser();
        const renamed = await t.app.inject({ method: 'PATCH', url: `/api/auth/passkeys/${passkey.id}`, payload: { name: 'Phone' }, headers: bearer(token) });
        assert.equal(renamed.statusCode, 200, renamed.body);
        assert.equal(renamed.json().passkey.name, 'Phone');
        for (const [method, payload] of [['PATCH', { name: 'Mine now' }], ['DELETE', undefined]] as const) {
          const foreign = await t.app.inject({ method, url: `/api/auth/passkeys/${passkey.id}`, ...(payload && { payload }), headers: bearer(other.token) });
          assert.equal(foreign.statusCode, 404, `${method} another user's`);
          assert.equal(errorOf(foreign), 'PASSKEY_NOT_FOUND');
        }

        clock.advance(11 * 60_000);
        assert.equal((await t.app.inject({ method: 'PATCH', url: `/api/auth/passkeys/${passkey.id}`, payload: { name: 'Old phone' }, headers: bearer(token) })).statusCode, 200, 'renaming needs no recent sign-in');
        for (const [method, url] of [
          ['POST', '/api/auth/passkeys/register/options'],
          ['POST', '/api/auth/passkeys/register/verify'],
          ['DELETE', `/api/auth/passkeys/${passkey.id}`],
        ] as const) {
          const payload = url.endsWith('verify') ? { response: SOME_RESPONSE } : method === 'POST' ? {} : undefined;
          const response = await t.app.inject({ method, url, ...(payload && { payload }), headers: bearer(token) });
          assert.equal(response.statusCode, 403, url);
          assert.equal(errorOf(response), 'REAUTH_REQUIRED', url);
        }
        assert.equal((await t.services.passkeys.listPasskeys(id)).length, 1, 'nothing was removed');
        assert.ok(email);
        const events = await t.services.audit.listEvents({ type: 'passkey.renamed', limit: 20 });
        assert.ok(events.events.some((event) => event.userId === id));
      });

      it('refuses cookie-authenticated changes without the CSRF token, and takes them with it', async () => {
        const { email, passkey } = await userWithPasskey();
        const other = await userWithPasskey();
        // A browser signs in with the other user's passkey: its cookies (no CSRF token yet).
        const browser = await post('/api/auth/passkeys/authenticate/verify', { response: other.authenticator.assert(await signInOptions()) });
        const jar = new CookieJar().store(browser);
        const headers = { cookie: jar.header(), origin: ORIGIN };
        for (const [method, url, payload] of [
          ['POST', '/api/auth/passkeys/register/options', {}],
          ['POST', '/api/auth/passkeys/register/verify', { response: {} }],
          ['PATCH', `/api/auth/passkeys/${other.passkey.id}`, { name: 'x' }],
          ['DELETE', `/api/auth/passkeys/${other.passkey.id}`, undefined],
          ['POST', '/api/auth/passkeys/step-up/options', {}],
          ['POST', '/api/auth/passkeys/authenticate/options', {}],
          ['POST', '/api/auth/passkeys/authenticate/verify', { response: {} }],
        ] as const) {
          const response = await t.app.inject({ method, url, ...(payload && { payload }), headers });
          assert.equal(response.statusCode, 403, `${method} ${url}: ${response.body}`);
          assert.equal(errorOf(response), 'CSRF_FAILED', `${method} ${url}`);
        }
        const csrf = await t.app.inject({ method: 'GET', url: '/api/auth/csrf', headers: { cookie: jar.header() } });
        jar.store(csrf);
        const withToken = await t.app.inject({ method: 'PATCH', url: `/api/auth/passkeys/${other.passkey.id}`, payload: { name: 'Renamed by its owner' }, headers: { cookie: jar.header(), origin: ORIGIN, 'x-csrf-token': csrf.json().csrfToken } });
        assert.equal(withToken.statusCode, 200, withToken.body);
        assert.ok(email && passkey);
      });

      it('needs a session for everything but signing in', async () => {
        for (const [method, url] of [
          ['POST', '/api/auth/passkeys/register/options'],
          ['POST', '/api/auth/passkeys/register/verify'],
          ['PATCH', '/api/auth/passkeys/abc'],
          ['DELETE', '/api/auth/passkeys/abc'],
          ['POST', '/api/auth/passkeys/step-up/options'],
          ['POST', '/api/auth/passkeys/step-up/verify'],
        ] as const) {
          const payload = url.endsWith('verify') ? { response: SOME_RESPONSE } : method === 'PATCH' ? { name: 'x' } : method === 'POST' ? {} : undefined;
          const response = await t.app.inject({ method, url, ...(payload && { payload }) });
          assert.equal(response.statusCode, 401, `${method} ${url}: ${response.body}`);
          assert.equal(errorOf(response), 'UNAUTHENTICATED');
        }
        const anonymous = await post('/api/auth/passkeys/authenticate/options');
        assert.equal(anonymous.statusCode, 200, 'signing in needs no session, nor a body');
      });

      it('answers malformed bodies with 4xx', async () => {
        const { token } = await userWithPasskey();
        const bodies: unknown[] = [
          {},
          { response: null },
          { response: 'x' },
          { response: { id: 'a', rawId: 'a', type: 'public-key', response: {} } },
          { response: { id: 'a'.repeat(5000), rawId: 'a', type: 'public-key', response: { clientDataJSON: 'a', authenticatorData: 'a', signature: 'a' } } },
          { response: { id: 'a+/', rawId: 'a', type: 'public-key', response: { clientDataJSON: 'a', authenticatorData: 'a', signature: 'a' } } },
          { response: { id: 'aa', rawId: 'aa', type: 'other', response: { clientDataJSON: 'a', authenticatorData: 'a', signature: 'a' } } },
          { response: { id: 'aa', rawId: 'aa', type: 'public-key', response: { clientDataJSON: 'bm90IGpzb24', authenticatorData: 'a', signature: 'a' } } },
          { response: { id: 'aa', rawId: 'aa', type: 'public-key', response: { clientDataJSON: Buffer.from('{"challenge":5}').toString('base64url'), authenticatorData: 'a', signature: 'a' } } },
          { response: { id: 'aa', rawId: 'bb', type: 'public-key', response: { clientDataJSON: 'e30', authenticatorData: 'a', signature: 'a', userHandle: 7 } } },
          { mfaToken: 5, response: {} },
          { mfaToken: 'x'.repeat(500) },
        ];
        for (const url of ['/api/auth/passkeys/authenticate/verify', '/api/auth/passkeys/register/verify', '/api/auth/passkeys/step-up/verify']) {
          for (const payload of bodies) {
            const response = await t.app.inject({ method: 'POST', url, payload: payload as object, headers: bearer(token) });
            assert.ok(response.statusCode >= 400 && response.statusCode < 500, `${url} ${JSON.stringify(payload).slice(0, 80)}: ${response.statusCode} ${response.body}`);
          }
          const notJson = await t.app.inject({ method: 'POST', url, payload: '{"response":', headers: { ...bearer(token), 'content-type': 'application/json' } });
          assert.equal(notJson.statusCode, 400, url);
        }
        for (const payload of [{ mfaToken: 5 }, { mfaToken: '' }, { mfaToken: 'x'.repeat(500) }, [], 'x']) {
          const response = await t.app.inject({ method: 'POST', url: '/api/auth/passkeys/authenticate/options', payload: payload as object });
          assert.ok(response.statusCode >= 400 && response.statusCode < 500, `options ${JSON.stringify(payload)}: ${response.statusCode}`);
        }
        const badName = await t.app.inject({ method: 'PATCH', url: '/api/auth/passkeys/abc', payload: { name: 'a\u202Eb' }, headers: bearer(token) });
        assert.equal(badName.statusCode, 422);
        const longName = await t.app.inject({ method: 'PATCH', url: '/api/auth/passkeys/abc', payload: { name: 'a'.repeat(65) }, headers: bearer(token) });
        assert.equal(longName.statusCode, 422);
      });

      it('shows the passkeys on the dashboard and the button on the sign-in page, with their script under a nonce', async () => {
        const { email, authenticator, passkey } = await userWithPasskey();
        const signedIn = await post('/api/auth/passkeys/authenticate/verify', { response: authenticator.assert(await signInOptions()) });
        const jar = new CookieJar().store(signedIn);
        const dashboard = await t.app.inject({ method: 'GET', url: '/dashboard', headers: { cookie: jar.header() } });
        assert.equal(dashboard.statusCode, 200);
        assert.match(dashboard.body, /<h2 id="passkeys-heading">Passkeys<\/h2>/);
        assert.ok(dashboard.body.includes(passkey.name));
        assert.match(dashboard.body, /Add a passkey/);
        const nonce = /script-src 'nonce-([^']+)'/.exec(String(dashboard.headers['content-security-policy']))?.[1];
        assert.ok(nonce, String(dashboard.headers['content-security-policy']));
        assert.ok(dashboard.body.includes(`<script src="/assets/passkeys.js" nonce="${nonce}" defer></script>`));

        const signin = await t.app.inject({ method: 'GET', url: '/auth/signin?callbackUrl=/dashboard' });
        assert.match(signin.body, /Log in with a passkey/);
        assert.match(signin.body, /data-callback-url="\/dashboard"/);
        assert.match(String(signin.headers['content-security-policy']), /script-src 'nonce-/);

        const script = await t.app.inject({ method: 'GET', url: '/assets/passkeys.js' });
        assert.equal(script.statusCode, 200);
        assert.match(String(script.headers['content-type']), /^text\/javascript/);
        assert.ok(script.body.includes('SimpleWebAuthnBrowser') && script.body.includes('/api/auth/passkeys/authenticate/verify'));
        assert.ok(!/\beval\(|new Function\(/.test(script.body), 'no eval: the CSP allows none');
        const cached = await t.app.inject({ method: 'GET', url: '/assets/passkeys.js', headers: { 'if-none-match': String(script.headers.etag) } });
        assert.equal(cached.statusCode, 304);

        // Without JavaScript the forms post here.
        const form = await t.app.inject({ method: 'GET', url: '/api/auth/csrf', headers: { cookie: jar.header() } });
        jar.store(form);
        const formHeaders = { cookie: jar.header(), origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' };
        const csrfToken = form.json().csrfToken as string;
        const rename = await t.app.inject({ method: 'POST', url: '/dashboard/passkeys/rename', payload: new URLSearchParams({ id: passkey.id, name: 'Desk key', csrfToken }).toString(), headers: formHeaders });
        assert.equal(rename.statusCode, 303, rename.body);
        assert.equal((await t.services.passkeys.listPasskeys(signedIn.json().user.id))[0]!.name, 'Desk key');
        const remove = await t.app.inject({ method: 'POST', url: '/dashboard/passkeys/remove', payload: new URLSearchParams({ id: passkey.id, csrfToken }).toString(), headers: formHeaders });
        assert.equal(remove.statusCode, 303, remove.body);
        assert.equal(remove.headers.location, '/dashboard#passkeys-heading');
        assert.deepEqual(await t.services.passkeys.listPasskeys(signedIn.json().user.id), []);
        const missing = await t.app.inject({ method: 'POST', url: '/dashboard/passkeys/remove', payload: new URLSearchParams({ id: passkey.id, csrfToken }).toString(), headers: formHeaders });
        assert.equal(missing.headers.location, '/dashboard?error=PASSKEY_NOT_FOUND');
        assert.ok(email);
      });
    });
  }
}
