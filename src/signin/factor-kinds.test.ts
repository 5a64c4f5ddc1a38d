/**
 * Open sign-in vocabularies: a kind of first factor and a kind of second factor, each brought by a
 * module added to the list and by nothing else (no file of signin/, mfa/ or metrics/ names them),
 * go through the pipeline, the second-factor challenge and its resume, the status, the admin page
 * and a reset; a challenge whose kind no module registers fails closed; the start refuses a kind
 * claimed twice or badly named.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { backends, type Backend } from '../../test/helpers/databases.ts';
import { createUser, testEnv } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { totpCode, TOTP_STEP_MS } from '../../test/helpers/totp.ts';
import { openStorage } from '../storage/database.ts';
import { loadConfig, migrateToLatest, MODULES } from '../modules.ts';
import { createServices } from '../services.ts';
import { buildApp } from '../app.ts';
import { defineModule, type GatehouseModule } from '../module.ts';
import { LOCALES } from '../i18n/locales.ts';
import type { User } from '../users/user.service.ts';
import type { FirstFactor } from './first-factor.ts';

const PASSWORD = 'correct horse battery staple';
const SOURCE = { actorUserId: null, ip: '203.0.113.9', userAgent: 'factor-kinds-test/1' };

/**
 * A first factor of a module's own: a linked device proves the account (`kba`, say), bound to the
 * device's current key, which the module can rotate; the sign-in it began must not finish after that.
 */
function deviceLinkModule(currentKeys: Map<string, string>) {
  const factor = (key: string): FirstFactor => ({ kind: 'device-link', amr: ['kba'], audit: { details: { device: 'test-device' } }, provesEmail: false, binding: key });
  const module = defineModule({
    name: 'device-link',
    firstFactors: () => [{ kind: 'device-link', resume: async ({ user, binding }) => (binding !== null && currentKeys.get(user.id) === binding ? factor(binding) : null) }],
  });
  return { module, factor };
}

/** A second factor of a module's own: hardware tokens, listed by serial number. */
function testTokenModule(tokens: Map<string, string[]>) {
  const messages = Object.fromEntries(LOCALES.map((locale) => [locale, { 'test-token.admin.count': 'Test tokens' }]));
  return defineModule({
    name: 'test-token',
    messages,
    secondFactors: () => [
      {
        method: 'test-token',
        statusKey: 'hardwareKeys',
        status: { item: z.object({ serial: z.string() }) },
        adminLabel: 'test-token.admin.count',
        list: async (userId) => (tokens.get(userId) ?? []).map((serial) => ({ serial })),
        removeAll: async (_trx, userId) => {
          const count = tokens.get(userId)?.length ?? 0;
          tokens.delete(userId);
          return count;
        },
      },
    ],
  });
}

async function buildWith(backend: Backend, extra: readonly GatehouseModule[], clock = fakeClock()) {
  const database = await backend.create();
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-factors-'));
  const modules = [...MODULES, ...extra];
  const config = loadConfig({ DATA_DIR: dataDir, ...testEnv(database) }, {}, modules);
  const storage = openStorage(config.database);
  const dispose = async () => {
    await storage.close();
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  let services, app;
  try {
    await migrateToLatest(storage.db, modules);
    services = await createServices({ config, storage, clock, modules });
    app = await buildApp(services);
  } catch (error) {
    await dispose();
    throw error;
  }
  return {
    app,
    services,
    clock,
    async close() {
      await app.close();
      await dispose();
    },
  };
}

type Built = Awaited<ReturnType<typeof buildWith>>;

/** A user with an authenticator app; the enabling code's step is spent, so the clock moves on. */
async function withTotp(t: Built, email: string): Promise<{ user: User; secret: string }> {
  const created = await createUser(t.services, { email, password: PASSWORD });
  const user = (await t.services.users.findUserById(created.id))!;
  const setup = await t.services.mfa.beginTotpSetup(user);
  assert.ok(setup.ok);
  assert.ok((await t.services.mfa.enableTotp(user, totpCode(setup.secret, t.clock()), SOURCE)).ok);
  t.clock.advance(TOTP_STEP_MS);
  return { user, secret: setup.secret };
}

const verify = (t: Built, mfaToken: string, code: string) => t.app.inject({ method: 'POST', url: '/api/auth/mfa/verify', payload: { mfaToken, code } });

for (const backend of await backends()) {
  describe(`factor kinds brought by a module (${backend.name})`, { skip: backend.skip }, () => {
    it('a first factor of a new kind is challenged for the second factor and resumes with its own binding', async () => {
      const keys = new Map<string, string>();
      const { module, factor } = deviceLinkModule(keys);
      const t = await buildWith(backend, [module]);
      try {
        const { user, secret } = await withTotp(t, 'device@example.com');
        keys.set(user.id, 'key-1');
        const challenged = await t.services.signInPipeline.complete({ user, factor: factor('key-1'), source: SOURCE });
        assert.ok(!challenged.ok && 'challenge' in challenged, 'the account has a second factor');
        assert.equal(challenged.challenge.code, 'MFA_REQUIRED');
        assert.deepEqual(challenged.challenge.fields.methods, ['totp', 'recovery_code']);
        const stored = await t.services.storage.db.selectFrom('mfa_challenges').select(['factor', 'binding']).where('user_id', '=', user.id).execute();
        assert.deepEqual(stored, [{ factor: 'device-link', binding: 'key-1' }]);

        const done = await verify(t, challenged.challenge.fields.mfaToken as string, totpCode(secret, t.clock()));
        assert.equal(done.statusCode, 200, done.body);
        const auth = await t.services.sessions.authenticate(done.json().token);
        assert.deepEqual(auth?.amr, ['kba', 'otp', 'mfa']);
        const [success] = (await t.services.audit.listEvents({ userId: user.id, type: 'signin.success', limit: 5 })).events;
        assert.deepEqual({ ...success?.details, sessionId: undefined }, { device: 'test-device', sessionId: undefined, amr: ['kba', 'otp', 'mfa'], method: 'device-link', step: 'second-factor', stepMethod: 'totp' });

        // The device's key rotated while the code was being typed: the first factor no longer holds.
        t.clock.advance(TOTP_STEP_MS);
        const again = await t.services.signInPipeline.complete({ user, factor: factor('key-1'), source: SOURCE });
        assert.ok(!again.ok && 'challenge' in again);
        keys.set(user.id, 'key-2');
        const stale = await verify(t, again.challenge.fields.mfaToken as string, totpCode(secret, t.clock()));
        assert.equal(stale.statusCode, 401, stale.body);
        assert.equal(stale.json().error, 'INVALID_TOKEN');
        const [failure] = (await t.services.audit.listEvents({ userId: user.id, type: 'signin.failure', limit: 5 })).events;
        assert.equal(failure?.reason, 'CREDENTIALS_CHANGED');
        assert.equal((await t.services.sessions.listSessions(user.id)).length, 1, 'only the first sign-in made a session');
      } finally {
        await t.close();
      }
    });

    it('a challenge whose first-factor kind no module registers fails closed, never as a password', async () => {
      const t = await buildWith(backend, []);
      try {
        const { user, secret } = await withTotp(t, 'gone@example.com');
        const signIn = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: user.email, password: PASSWORD } });
        assert.equal(signIn.statusCode, 403, signIn.body);
        const { mfaToken } = signIn.json();
        // The module that made it is gone from the list; its binding is the password's, which must not count.
        await t.services.storage.db.updateTable('mfa_challenges').set({ factor: 'gone' }).where('user_id', '=', user.id).execute();
        const code = totpCode(secret, t.clock());
        const refused = await verify(t, mfaToken, code);
        assert.equal(refused.statusCode, 401, refused.body);
        assert.equal(refused.json().error, 'INVALID_TOKEN');
        assert.deepEqual(await t.services.sessions.listSessions(user.id), []);
        assert.equal(await t.services.secondFactor.userOf(mfaToken), null, 'the browser prompt treats it as expired');

        // Nothing was spent: the same code finishes a sign-in of a kind that is registered.
        const fresh = (await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: user.email, password: PASSWORD } })).json().mfaToken as string;
        assert.equal((await verify(t, fresh, code)).statusCode, 200);
      } finally {
        await t.close();
      }
    });

    it('a second factor of a new kind is offered, shown, counted and reset like the others', async () => {
      const tokens = new Map<string, string[]>();
      const t = await buildWith(backend, [testTokenModule(tokens)]);
      try {
        const created = await createUser(t.services, { email: 'tokens@example.com', password: PASSWORD });
        const user = (await t.services.users.findUserById(created.id))!;
        const signedIn = (await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: user.email, password: PASSWORD } })).json().token as string;
        tokens.set(user.id, ['T-1', 'T-2']);

        const status = await t.app.inject({ method: 'GET', url: '/api/auth/mfa', headers: { authorization: `Bearer ${signedIn}` } });
        assert.deepEqual(status.json(), { totp: false, passkeys: [], hardwareKeys: [{ serial: 'T-1' }, { serial: 'T-2' }], recoveryCodesLeft: 0 });
        const challenged = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: user.email, password: PASSWORD } });
        assert.equal(challenged.statusCode, 403, challenged.body);
        assert.deepEqual(challenged.json().methods, ['test-token']);
        // The module checks its token itself, then finishes the sign-in through the challenge.
        const finished = await t.services.secondFactor.finishWith(challenged.json().mfaToken, user.id, { method: 'test-token', amr: ['hwk'] }, SOURCE);
        assert.ok(finished.ok);

        const admin = await createUser(t.services, { email: 'tokens-admin@example.com', password: PASSWORD, roles: ['ADMIN'] });
        const adminToken = (await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: admin.email, password: PASSWORD } })).json().token as string;
        const page = await t.app.inject({ method: 'GET', url: `/admin/users/${user.id}`, headers: { authorization: `Bearer ${adminToken}` } });
        assert.match(page.body, /<dt>Authenticator app<\/dt><dd>None<\/dd>/);
        assert.match(page.body, /<dt>Test tokens<\/dt><dd>2<\/dd>/);
        assert.match(page.body, /action="\/admin\/users\/[^"]+\/mfa\/reset"/, 'a user with a factor of any kind can be reset');

        assert.deepEqual(await t.services.mfa.resetFactors(user, { ...SOURCE, actorUserId: admin.id }), { removed: { totp: false, passkeys: 0, hardwareKeys: 2 } });
        assert.equal(tokens.has(user.id), false);
        assert.deepEqual(await t.services.mfa.methodsOf(user.id), []);
        const [reset] = (await t.services.audit.listEvents({ userId: user.id, type: 'mfa.reset', limit: 5 })).events;
        // (The audit log drops any key that looks like it names a secret: `passkeys` among them.)
        assert.deepEqual(reset?.details, { totp: false, hardwareKeys: 2 });
      } finally {
        await t.close();
      }
    });
  });
}

const [sqlite] = await backends();
describe('factor kinds at start', () => {
  const refusal = async (module: GatehouseModule) => {
    try {
      const t = await buildWith(sqlite!, [module]);
      await t.close();
      return null;
    } catch (error) {
      return (error as Error).message;
    }
  };

  it('refuses a kind another module registers, or a name that is not a plain word', async () => {
    const resume = async () => null;
    assert.match((await refusal(defineModule({ name: 'copycat', firstFactors: () => [{ kind: 'password', resume }] })))!, /first-factor kind "password" is declared by both "credentials" and "copycat"/);
    assert.match((await refusal(defineModule({ name: 'shouty', firstFactors: () => [{ kind: 'Magic Link', resume }] })))!, /first-factor kind "Magic Link" of "shouty"/);
    const totpAgain = defineModule({ name: 'totp-again', secondFactors: () => [{ method: 'totp', statusKey: 'other', status: { single: 'x' }, adminLabel: 'x', list: async () => [], removeAll: async () => 0 }] });
    assert.match((await refusal(totpAgain))!, /second-factor method "totp" is declared by both "mfa" and "totp-again"/);
  });
});
