/**
 * The sign-in pipeline on real storage: account checks, registered steps, the session, and one
 * audit event per outcome, whatever the first factor.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, useTestApp } from '../../test/helpers/app.ts';
import { createSignInPipeline, type SignInAttempt, type SignInStep, type StepDecision } from './signin-pipeline.ts';
import { passwordFactor, passwordFactorKind } from '../credentials/password-factor.ts';
import { providerFactor, providerFactorKind } from '../oauth/provider-factor.ts';

const PASSWORD = 'correct horse battery staple';
const SOURCE = { actorUserId: null, ip: '203.0.113.9', userAgent: 'pipeline-test/1' };

for (const backend of await backends()) {
  describe(`sign-in pipeline (${backend.name})`, { skip: backend.skip }, () => {
    const t = useTestApp(backend);
    let count = 0;

    function pipelineWith(steps: SignInStep[], options: { requireEmailVerification?: boolean } = {}) {
      const { users, sessions, audit, clock } = t.services;
      const kinds = [passwordFactorKind(users), providerFactorKind];
      return createSignInPipeline({ users, sessions, audit, clock, requireEmailVerification: options.requireEmailVerification ?? false, steps: () => steps, firstFactorKinds: () => kinds });
    }

    /** A step that records who reached it and answers `decision`. */
    function recordingStep(decision: StepDecision) {
      const seen: SignInAttempt[] = [];
      const step: SignInStep = {
        name: 'test-step',
        async decide(attempt) {
          seen.push(attempt);
          return decision;
        },
      };
      return { step, seen };
    }

    async function newUser(options: { emailVerified?: boolean } = {}) {
      const email = `pipeline${++count}@example.com`;
      const result = await t.services.credentials.createPasswordUser({ email, name: 'Pipe Line', password: PASSWORD, emailVerified: options.emailVerified ?? true });
      assert.ok(result.ok);
      const credentials = (await t.services.users.findCredentialsById(result.user.id))!;
      return { user: result.user, passwordHash: credentials.passwordHash! };
    }

    async function eventsOf(userId: string) {
      const page = await t.services.audit.listEvents({ userId, limit: 50 });
      return page.events.map((event) => ({ type: event.type, reason: event.reason }));
    }

    it('with no step, a password sign-in gets a session and one signin.success', async () => {
      const { user, passwordHash } = await newUser();
      const outcome = await pipelineWith([]).complete({ user, factor: passwordFactor(user.email, passwordHash), source: SOURCE });
      assert.ok(outcome.ok);
      assert.notEqual(await t.services.sessions.authenticate(outcome.session.accessToken), null);
      assert.deepEqual(await eventsOf(user.id), [{ type: 'signin.success', reason: null }]);
    });

    it('a step that challenges stops the sign-in: no session written, nothing audited as a success', async () => {
      const { user, passwordHash } = await newUser();
      const challenge = { step: 'test-step', code: 'FORBIDDEN' as const, fields: { ticket: 'abc' } };
      const { step, seen } = recordingStep({ action: 'challenge', challenge });
      const outcome = await pipelineWith([step]).complete({ user, factor: passwordFactor(user.email, passwordHash), source: SOURCE });
      assert.deepEqual(outcome, { ok: false, challenge });
      assert.equal(seen.length, 1);
      assert.deepEqual(await t.services.sessions.listSessions(user.id), []);
      assert.deepEqual(await eventsOf(user.id), []);
    });

    it('resumes after a challenge is met: account checks again, the steps after it only, and the methods of both factors', async () => {
      const { user, passwordHash } = await newUser();
      const challenge = { step: 'test-step', code: 'FORBIDDEN' as const, fields: {} };
      const asking = recordingStep({ action: 'challenge', challenge });
      const after = recordingStep({ action: 'continue' });
      const afterStep: SignInStep = { ...after.step, name: 'after-step' };
      const pipeline = pipelineWith([asking.step, afterStep]);
      const attempt = { user, factor: passwordFactor(user.email, passwordHash), source: SOURCE };
      assert.deepEqual(await pipeline.complete(attempt), { ok: false, challenge });
      assert.equal(after.seen.length, 0, 'a challenge stops the steps after it');

      const resumed = await pipeline.complete(attempt, { step: 'test-step', method: 'totp', amr: ['otp', 'mfa'] });
      assert.ok(resumed.ok);
      assert.equal(asking.seen.length, 1, 'the step whose challenge was met is not asked again');
      assert.equal(after.seen.length, 1, 'the steps after it run');
      const auth = await t.services.sessions.authenticate(resumed.session.accessToken);
      assert.deepEqual(auth?.amr, ['pwd', 'otp', 'mfa']);
      assert.deepEqual(await eventsOf(user.id), [{ type: 'signin.success', reason: null }], 'one event, for the sign-in that ended');

      // Disabled while the second factor was being typed: the account checks run again.
      await t.services.admin.updateUser(user.id, { disabled: true }, SOURCE);
      const late = await pipeline.complete({ ...attempt, user: (await t.services.users.findUserById(user.id))! }, { step: 'test-step', method: 'totp', amr: ['otp'] });
      assert.deepEqual(late, { ok: false, refusal: 'ACCOUNT_DISABLED' });
      await assert.rejects(pipeline.complete(attempt, { step: 'no-such-step', method: 'totp', amr: [] }), /no sign-in step is named "no-such-step"/);
    });

    it('a step that refuses is audited once, with its reason, for a provider sign-in too', async () => {
      const { user } = await newUser();
      const { step } = recordingStep({ action: 'refuse', reason: 'TEST_REFUSAL' });
      const outcome = await pipelineWith([step]).complete({ user, factor: providerFactor('github', false), source: SOURCE });
      assert.deepEqual(outcome, { ok: false, refusal: 'TEST_REFUSAL' });
      assert.deepEqual(await eventsOf(user.id), [{ type: 'signin.failure', reason: 'TEST_REFUSAL' }]);
      assert.deepEqual(await t.services.sessions.listSessions(user.id), []);
    });

    it('runs the account checks before any step: a disabled or (by policy) unverified account never reaches one', async () => {
      const disabled = await newUser();
      await t.services.users.updateUser(disabled.user.id, { disabled: true });
      const { step, seen } = recordingStep({ action: 'continue' });
      const refusedDisabled = await pipelineWith([step]).complete({
        user: (await t.services.users.findUserById(disabled.user.id))!,
        factor: passwordFactor(disabled.user.email, disabled.passwordHash),
        source: SOURCE,
      });
      assert.deepEqual(refusedDisabled, { ok: false, refusal: 'ACCOUNT_DISABLED' });

      const unverified = await newUser({ emailVerified: false });
      const strict = pipelineWith([step], { requireEmailVerification: true });
      const factor = passwordFactor(unverified.user.email, unverified.passwordHash);
      assert.deepEqual(await strict.complete({ user: unverified.user, factor, source: SOURCE }), { ok: false, refusal: 'EMAIL_NOT_VERIFIED' });
      assert.equal(seen.length, 0);

      // A provider that vouches for the account's own address verifies it, and the sign-in goes on.
      const proved = await strict.complete({ user: unverified.user, factor: providerFactor('google', true), source: SOURCE });
      assert.ok(proved.ok);
      assert.notEqual((await t.services.users.findUserById(unverified.user.id))!.emailVerifiedAt, null);
      assert.equal(seen.length, 1);
    });

    it('refuses CREDENTIALS_CHANGED when the verified hash is no longer the account\'s', async () => {
      const { user, passwordHash } = await newUser();
      await t.services.users.setPasswordHash(user.id, await t.services.credentials.hashPassword('another long passphrase'));
      const outcome = await pipelineWith([]).complete({ user, factor: passwordFactor(user.email, passwordHash), source: SOURCE });
      assert.deepEqual(outcome, { ok: false, refusal: 'CREDENTIALS_CHANGED' });
      assert.deepEqual(await t.services.sessions.listSessions(user.id), []);
    });
  });
}

// The HTTP side of a challenge: every sign-in route answers it with the step's code and fields.
describe('a sign-in challenge over HTTP', () => {
  it('is answered with its code, the fields it names, and no session cookie', async () => {
    const [backend] = await backends();
    const database = await backend!.create();
    const t = await createTestApp(database);
    try {
      const user = await createUser(t.services, { email: 'challenged@example.com', password: PASSWORD });
      // The app's pipeline, made to challenge: the routes hold the same object.
      const challenging = createSignInPipeline({
        users: t.services.users,
        sessions: t.services.sessions,
        audit: t.services.audit,
        clock: t.services.clock,
        requireEmailVerification: false,
        steps: () => [{ name: 'test-step', decide: async () => ({ action: 'challenge', challenge: { step: 'test-step', code: 'FORBIDDEN', fields: { ticket: 't-1' } } }) }],
        firstFactorKinds: () => [passwordFactorKind(t.services.users)],
      });
      Object.assign(t.services.signInPipeline, challenging);
      const response = await t.app.inject({ method: 'POST', url: '/api/auth/signin', payload: { email: 'challenged@example.com', password: PASSWORD } });
      assert.equal(response.statusCode, 403, response.body);
      assert.deepEqual(response.json(), { error: 'FORBIDDEN', message: 'You do not have access to this resource.', ticket: 't-1' });
      assert.equal(response.cookies.length, 0, 'no cookie');
      assert.deepEqual(await t.services.sessions.listSessions(user.id), []);
    } finally {
      await t.close();
      await database.drop();
    }
  });
});
