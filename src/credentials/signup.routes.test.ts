/**
 * `POST /api/auth/signup` on every backend: the same 202 for a new and a taken address, with the
 * same work behind it; what is created (user, token, mail, audit event, all in one transaction)
 * and what is not; the password policy for both kinds of address; validation; ALLOW_SIGNUP=false.
 * Mail goes to the dev outbox here; test/flows/signup.test.ts delivers it over real SMTP.
 */
import { describe, it, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { SIGNUP_ACCEPTED_MESSAGE } from './signup.routes.ts';

const PASSWORD = 'correct horse battery staple';
const OTHER_PASSWORD = 'violet harbour lantern forty-two';
const ACCEPTED = { ok: true, message: SIGNUP_ACCEPTED_MESSAGE };

function postJson(t: TestApp, url: string, body: unknown, headers: Record<string, string> = {}) {
  return t.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', ...headers }, payload: typeof body === 'string' ? body : JSON.stringify(body) });
}


for (const backend of await backends()) {
  describe(`sign-up on ${backend.name}`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let t: TestApp;
    let count = 0;
    const freshEmail = () => `newcomer${++count}@example.com`;

    before(async () => {
      database = await backend.create();
      t = await createTestApp(database);
    });
    after(async () => {
      await t?.close();
      await database?.drop();
    });
    beforeEach(async () => {
      await t.services.storage.db.deleteFrom('mail_outbox').execute();
    });

    const db = () => t.services.storage.db;
    const outbox = async () => (await db().selectFrom('mail_outbox').select(['to_address', 'template']).orderBy('created_at').execute()).map((row) => ({ ...row }));
    const usersWith = (email: string) => db().selectFrom('users').selectAll().where('email', '=', email).execute();

    it('creates an unverified user with no roles, a verification token and its mail, and a user.created event', async () => {
      const email = freshEmail();
      const response = await postJson(t, '/api/auth/signup', { email: `  ${email.toUpperCase()} `, password: PASSWORD, name: '  Nora Newcomer  ' }, { 'user-agent': 'signup-test/1.0' });
      assert.equal(response.statusCode, 202);
      assert.deepEqual(response.json(), ACCEPTED);
      assert.equal(response.headers['cache-control'], 'no-store');

      const user = await t.services.users.findUserByEmail(email);
      assert.ok(user);
      assert.equal(user.email, email, 'stored in its normal form');
      assert.equal(user.name, 'Nora Newcomer', 'trimmed');
      assert.deepEqual(user.roles, []);
      assert.equal(user.emailVerifiedAt, null);

      const tokens = await db().selectFrom('action_tokens').selectAll().where('user_id', '=', user.id).execute();
      assert.equal(tokens.length, 1);
      assert.equal(tokens[0]!.purpose, 'email_verification');
      assert.equal(tokens[0]!.expires_at - tokens[0]!.created_at, t.config.accounts.verificationTokenTtlSeconds * 1000);
      assert.deepEqual(await outbox(), [{ to_address: email, template: 'verify-email' }]);

      const { events } = await t.services.audit.listEvents({ userId: user.id, limit: 10 });
      assert.equal(events.length, 1);
      assert.equal(events[0]!.type, 'user.created');
      assert.equal(events[0]!.actorUserId, null);
      assert.deepEqual(events[0]!.details, { via: 'signup' });
      assert.equal(events[0]!.userAgent, 'signup-test/1.0');
    });

    it('answers a taken address exactly as a new one, mails its owner, and changes nothing about the account', async () => {
      const email = freshEmail();
      const owner = await createUser(t.services, { email, password: PASSWORD, name: 'Olive Owner' });
      const before = (await usersWith(email))[0]!;

      const response = await postJson(t, '/api/auth/signup', { email, password: OTHER_PASSWORD, name: 'Mallory <b>Intruder</b>' });
      const fresh = await postJson(t, '/api/auth/signup', { email: freshEmail(), password: OTHER_PASSWORD, name: 'Mallory <b>Intruder</b>' });
      assert.equal(response.statusCode, fresh.statusCode);
      assert.equal(response.body, fresh.body);
      assert.deepEqual(Object.keys(response.headers).sort(), Object.keys(fresh.headers).sort());
      assert.deepEqual(response.cookies, fresh.cookies);

      assert.deepEqual(await usersWith(email), [before], 'no second account, the first one untouched');
      assert.equal((await db().selectFrom('action_tokens').select('id').where('user_id', '=', owner.id).execute()).length, 0, 'no token for the owner');
      const mails = (await outbox()).filter((m) => m.to_address === email);
      assert.deepEqual(mails, [{ to_address: email, template: 'signup-existing-account' }]);

      const sent = (await t.services.mail.listRecent()).find((m) => m.template === 'signup-existing-account')!;
      assert.ok(sent.text?.startsWith('Hello Olive Owner,'), 'greets the owner by their own name');
      assert.ok(!sent.text?.includes('Mallory'), 'nothing from the request in the mail');
      assert.deepEqual(sent.links.slice(0, 2), [`${t.config.authUrl}/auth/signin`, `${t.config.authUrl}/auth/forgot-password`]);

      const signIn = (password: string) => postJson(t, '/api/auth', { email, password });
      assert.equal((await signIn(PASSWORD)).statusCode, 200, 'the old password still works');
      assert.equal((await signIn(OTHER_PASSWORD)).statusCode, 401, 'the sign-up password does not');

      const { events } = await t.services.audit.listEvents({ userId: owner.id, type: 'signup.existing_account', limit: 10 });
      assert.equal(events.length, 1);
      assert.equal(events[0]!.actorUserId, null);
    });

    it('spends one password-policy check and one argon2id hash on a new and on a taken address alike', async () => {
      const taken = freshEmail();
      await createUser(t.services, { email: taken, password: PASSWORD });
      const hasher = t.services.hasher;
      const realHash = hasher.hash;
      let hashes = 0;
      hasher.hash = (password) => {
        hashes++;
        return realHash(password);
      };
      try {
        // The work is counted, not timed: argon2id is what a response's time is made of, and a
        // timed comparison on a shared machine failed on noise (taken/new 2.38 in one CI run).
        for (let round = 0; round < 5; round++) {
          for (const kind of ['fresh', 'taken'] as const) {
            const before = hashes;
            const response = await postJson(t, '/api/auth/signup', { email: kind === 'taken' ? taken : freshEmail(), password: OTHER_PASSWORD, name: 'Timing' });
            assert.equal(response.statusCode, 202);
            assert.equal(hashes - before, 1, `${kind}: one hash`);
          }
        }
      } finally {
        hasher.hash = realHash;
      }
    });

    it('refuses a weak password with the reason, for a new and a taken address alike, creating nothing', async () => {
      const taken = freshEmail();
      await createUser(t.services, { email: taken, password: PASSWORD });
      const usersBefore = await t.services.users.countUsers();
      const cases: Array<[string, string, string]> = [
        ['short1', 'must be at least 8 characters', 'TOO_SHORT'],
        ['password123', 'is too common', 'TOO_COMMON'],
      ];
      for (const [password, message, reason] of cases) {
        const answers = [];
        for (const email of [freshEmail(), taken]) {
          const response = await postJson(t, '/api/auth/signup', { email, password, name: 'Weak Walter' });
          assert.equal(response.statusCode, 422, password);
          const body = response.json();
          assert.equal(body.error, 'VALIDATION_ERROR');
          assert.equal(body.errors.length, 1);
          assert.equal(body.errors[0].field, 'password');
          assert.ok(body.errors[0].message.includes(message), body.errors[0].message);
          assert.equal(body.errors[0].reason, reason);
          answers.push(response.body);
        }
        assert.equal(answers[0], answers[1], 'same answer for a new and a taken address');
      }
      const identity = await postJson(t, '/api/auth/signup', { email: 'walter.whitaker@example.com', password: 'walter.whitaker', name: 'Walter Whitaker' });
      assert.equal(identity.statusCode, 422);
      assert.match(identity.json().errors[0].message, /e-mail address, your name/);
      assert.equal(await t.services.users.countUsers(), usersBefore);
      assert.deepEqual(await outbox(), []);
    });

    it('validates every field and names each bad one', async () => {
      const cases: Array<[Record<string, unknown>, string[]]> = [
        [{}, ['email', 'name', 'password']],
        [{ email: 'not-an-address', password: PASSWORD, name: 'N' }, ['email']],
        [{ email: freshEmail(), password: PASSWORD, name: '   ' }, ['name']],
        [{ email: freshEmail(), password: PASSWORD, name: 'x'.repeat(201) }, ['name']],
        [{ email: freshEmail(), password: PASSWORD, name: 'Line\nbreak' }, ['name']],
        [{ email: freshEmail(), password: '', name: 'N' }, ['password']],
        [{ email: freshEmail(), password: 42, name: ['N'] }, ['name', 'password']],
      ];
      for (const [body, fields] of cases) {
        const response = await postJson(t, '/api/auth/signup', body);
        assert.equal(response.statusCode, 422, JSON.stringify(body));
        assert.deepEqual(response.json().errors.map((e: { field: string }) => e.field).sort(), fields, JSON.stringify(body));
      }
      const long = await postJson(t, '/api/auth/signup', { email: freshEmail(), password: PASSWORD, name: 'y'.repeat(200) });
      assert.equal(long.statusCode, 202, '200 characters are fine');
      const malformed = await postJson(t, '/api/auth/signup', '{"email":');
      assert.deepEqual([malformed.statusCode, malformed.json().error], [400, 'MALFORMED_JSON']);
    });

    it('writes the user, the token, the mail and the event together or not at all', async () => {
      const email = freshEmail();
      const mail = t.services.mail;
      const realEnqueue = mail.enqueue;
      mail.enqueue = async () => {
        throw new Error('outbox write failed');
      };
      try {
        const response = await postJson(t, '/api/auth/signup', { email, password: PASSWORD, name: 'Rolled Back' });
        assert.equal(response.statusCode, 500);
        assert.deepEqual(response.json(), { error: 'INTERNAL_ERROR', message: 'Something went wrong on our side.' });
      } finally {
        mail.enqueue = realEnqueue;
      }
      assert.deepEqual(await usersWith(email), []);
      const orphans = await db().selectFrom('action_tokens').leftJoin('users', 'users.id', 'action_tokens.user_id').select('action_tokens.id').where('users.id', 'is', null).execute();
      assert.deepEqual(orphans, []);
      // And the address is still free.
      assert.equal((await postJson(t, '/api/auth/signup', { email, password: PASSWORD, name: 'Second Try' })).statusCode, 202);
      assert.equal((await usersWith(email)).length, 1);
    });

    it('makes one account when the same address signs up many times at once', async () => {
      const email = freshEmail();
      const responses = await Promise.all(Array.from({ length: 4 }, () => postJson(t, '/api/auth/signup', { email, password: PASSWORD, name: 'Racer' })));
      for (const response of responses) assert.deepEqual([response.statusCode, response.json()], [202, ACCEPTED]);
      assert.equal((await usersWith(email)).length, 1);
      const templates = (await outbox()).map((m) => m.template).sort();
      assert.equal(templates.filter((name) => name === 'verify-email').length, 1);
      assert.equal(templates.length, 4, 'the others told the owner');
    });
  });
}

describe('sign-up turned off (ALLOW_SIGNUP=false)', () => {
  let database: TestDatabase;
  let t: TestApp;
  before(async () => {
    const sqlite = (await backends())[0]!;
    database = await sqlite.create();
    t = await createTestApp(database, { env: { ALLOW_SIGNUP: 'false' } });
  });
  after(async () => {
    await t?.close();
    await database?.drop();
  });

  it('answers 403 SIGNUP_DISABLED to any sign-up, valid or not, and creates nothing', async () => {
    for (const body of [{ email: 'someone@example.com', password: PASSWORD, name: 'Someone' }, {}]) {
      const response = await postJson(t, '/api/auth/signup', body);
      assert.equal(response.statusCode, 403);
      assert.deepEqual(response.json(), { error: 'SIGNUP_DISABLED', message: 'Sign-up is disabled on this service.' });
    }
    assert.equal(await t.services.users.countUsers(), 0);
    assert.equal((await t.services.storage.db.selectFrom('mail_outbox').select('id').execute()).length, 0);
  });
});

describe('sign-up and verification in the OpenAPI document', () => {
  let database: TestDatabase;
  let t: TestApp;
  before(async () => {
    database = await (await backends())[0]!.create();
    t = await createTestApp(database);
  });
  after(async () => {
    await t?.close();
    await database?.drop();
  });

  it('describes the three endpoints with their answers, and none of the pages', async () => {
    const document = (await t.app.inject({ method: 'GET', url: '/api/docs/openapi.json' })).json();
    const responses = (path: string) => Object.keys(document.paths[path].post.responses).sort();
    assert.deepEqual(responses('/api/auth/signup'), ['202', '303', '400', '403', '413', '415', '422', '429', '500', '503']);
    assert.deepEqual(responses('/api/auth/verify-email'), ['200', '303', '400', '403', '413', '415', '422', '429', '500', '503']);
    assert.deepEqual(responses('/api/auth/verify-email/resend'), ['202', '303', '400', '403', '413', '415', '422', '429', '500', '503']);
    for (const page of ['/auth/signup', '/auth/check-email', '/auth/verify-email', '/auth/email-verified']) {
      assert.ok(!(page in document.paths), `${page} is a page, not API`);
    }
  });
});
