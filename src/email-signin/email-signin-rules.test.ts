/**
 * What an e-mail sign-in start tells, and the same-browser rule, on SQLite and PostgreSQL, with
 * ALLOW_SIGNUP off and EMAIL_SIGNIN_SAME_BROWSER on.
 *
 * Enumeration: an address with an account, one with none and a disabled account get the same
 * answer (status, body but the request id, the cookie), and the same work, counted rather than
 * timed: the same lookups, one request row and one audit event each, the same limiter counts; only
 * the account's start queues a mail, and every answer is held at the response floor for the floor's
 * whole length (its timer is the test's, as in verification/resend-timing.test.ts). Nothing is sent
 * to the unknown or disabled address, over a real SMTP server on loopback.
 *
 * Same browser: a link opened in another browser is refused (and its page says so, spending
 * nothing); a code sent with another browser's cookie for its request is refused; in the browser
 * that asked, both work. With EMAIL_SIGNIN off, the routes answer EMAIL_SIGNIN_DISABLED and the pages 404.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createUser, testEnv, useTestApp } from '../../test/helpers/app.ts';
import { startSmtpServer, smtpEnv, type TestSmtpServer } from '../../test/helpers/smtp.ts';
import { mailTo } from '../../test/helpers/mail-links.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { openStorage, type Storage } from '../storage/database.ts';
import { migrateToLatest, loadConfig } from '../modules.ts';
import { createServices, type Services } from '../services.ts';
import { buildApp } from '../app.ts';
import { ACCOUNT_NEUTRAL_MIN_RESPONSE_MS, createResponseFloor } from '../lib/response-floor.ts';
import { buildEmailSignInService } from './email-signin.module.ts';
import { START_ACCEPTED_MESSAGE } from './email-signin.routes.ts';
import { browserBindingCookieName } from './browser-binding.ts';
import { linkAndCode } from './email-signin.test-helpers.ts';

const AUTH_URL = 'http://auth.example.test';
const PASSWORD = 'correct horse battery staple';

/** A floor timer whose time stands still and whose waits end only when the test says. */
function heldTimer() {
  const waits: Array<{ ms: number; release: () => void }> = [];
  return { waits, timer: { now: () => 0, sleep: (ms: number) => new Promise<void>((resolve) => waits.push({ ms, release: resolve })) } };
}

/** `target` with every method call counted by name into `calls`. */
function counted<T extends object>(target: T, prefix: string, calls: Map<string, number>): T {
  return new Proxy(target, {
    get(object, name, receiver) {
      const value = Reflect.get(object, name, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const key = `${prefix}.${String(name)}`;
        calls.set(key, (calls.get(key) ?? 0) + 1);
        return (value as (...a: unknown[]) => unknown).apply(object, args);
      };
    },
  });
}

const [sqlite] = await backends();

for (const backend of await backends()) {
  describe(`email sign-in: enumeration and the same-browser rule (${backend.name})`, { skip: backend.skip, timeout: 180_000 }, () => {
    let database: TestDatabase;
    let storage: Storage;
    let services: Services;
    let app: FastifyInstance;
    let smtp: TestSmtpServer;
    let dataDir: string;
    const held = heldTimer();
    const calls = new Map<string, number>();

    before(async () => {
      database = await backend.create();
      smtp = await startSmtpServer();
      dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-data-'));
      const config = loadConfig({
        DATA_DIR: dataDir,
        ...testEnv(database, { AUTH_URL, ...smtpEnv(smtp), EMAIL_SIGNIN: 'true', EMAIL_SIGNIN_SAME_BROWSER: 'true', ALLOW_SIGNUP: 'false', RATE_LIMIT_EMAIL_SIGNIN_PER_ADDRESS: '2/1h' }),
      });
      storage = openStorage(config.database);
      await migrateToLatest(storage.db);
      services = await createServices({ config, storage });
      // The service the module builds, with the floor's timer in the test's hands and its work counted.
      const watched = { ...services, users: counted(services.users, 'users', calls), audit: counted(services.audit, 'audit', calls), mail: counted(services.mail, 'mail', calls) };
      services.emailSignIn = buildEmailSignInService({ db: storage.db, clock: services.clock, config, services: watched }, createResponseFloor(ACCOUNT_NEUTRAL_MIN_RESPONSE_MS, held.timer));
      app = await buildApp(services);
      await app.listen({ port: 0, host: '127.0.0.1' }); // the jobs run: the mail worker sends
    });
    after(async () => {
      await app?.close();
      await storage?.close();
      await smtp?.stop();
      await database?.drop();
      if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
    });

    const rows = async () => Number((await storage.db.selectFrom('email_signin_requests').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
    const requestedEvents = async () => (await services.audit.listEvents({ type: 'email_signin.requested', limit: 100 })).events.length;

    /** Posts a start; resolves once its answer is held at the floor, with the work done so far, then releases it. */
    async function startHeldAtFloor(email: string, ip: string) {
      calls.clear();
      const [rowsBefore, eventsBefore, waitsBefore] = [await rows(), await requestedEvents(), held.waits.length];
      let answered = false;
      const pending = app.inject({ method: 'POST', url: '/api/auth/email/start', payload: { email }, remoteAddress: ip }).then((response) => {
        answered = true;
        return response;
      });
      for (let i = 0; i < 1_000 && held.waits.length === waitsBefore && !answered; i++) await delay(5);
      assert.equal(answered, false, `${email}: answered without waiting at the floor`);
      await delay(20);
      assert.equal(answered, false, `${email}: still held at the floor`);
      const wait = held.waits.at(-1)!;
      const work = { rows: (await rows()) - rowsBefore, events: (await requestedEvents()) - eventsBefore, calls: new Map(calls) };
      wait.release();
      return { wait, work, response: await pending };
    }

    it('answers alike, after the same work and the whole floor, for an account, an unknown address and a disabled account', async () => {
      await createUser(services, { email: 'known@example.com', password: PASSWORD });
      const disabled = await createUser(services, { email: 'disabled@example.com', password: PASSWORD });
      await services.users.updateUser(disabled.id, { disabled: true });

      const seen: Array<{ email: string; response: LightMyRequestResponse; work: { rows: number; events: number; calls: Map<string, number> } }> = [];
      for (const [index, email] of ['known@example.com', 'nobody@example.com', 'disabled@example.com'].entries()) {
        const { wait, work, response } = await startHeldAtFloor(email, `10.8.0.${index + 1}`);
        assert.equal(wait.ms, ACCOUNT_NEUTRAL_MIN_RESPONSE_MS, `${email}: the whole floor`);
        seen.push({ email, response, work });
      }
      for (const { email, response, work } of seen) {
        assert.equal(response.statusCode, 202, response.body);
        const { requestId, ...rest } = response.json() as { requestId: string };
        assert.deepEqual(rest, { ok: true, message: START_ACCEPTED_MESSAGE, expiresIn: 600 }, email);
        assert.match(requestId, /^[\w-]{22}$/);
        const cookie = response.cookies.find((c) => c.name === browserBindingCookieName(services.config));
        assert.ok(cookie && cookie.httpOnly && cookie.sameSite === 'Lax' && cookie.maxAge === 600 && cookie.value.length === seen[0]!.response.cookies[0]!.value.length, email);
        assert.equal(work.rows, 1, `${email}: one request row`);
        assert.equal(work.events, 1, `${email}: one audit event`);
        assert.equal(work.calls.get('users.findUserByEmail'), 1, `${email}: one lookup`);
      }
      // The work outside the mail is the same call for call; only the account's start queues its mail.
      const withoutMail = (work: { calls: Map<string, number> }) => [...work.calls].filter(([name]) => !name.startsWith('mail.')).sort();
      assert.deepEqual(withoutMail(seen[1]!.work), withoutMail(seen[0]!.work));
      assert.deepEqual(withoutMail(seen[2]!.work), withoutMail(seen[0]!.work));
      assert.equal(seen[0]!.work.calls.get('mail.enqueue'), 1);
      assert.equal(seen[1]!.work.calls.get('mail.enqueue'), undefined);
      assert.equal(seen[2]!.work.calls.get('mail.enqueue'), undefined);

      await mailTo(smtp, 'known@example.com', 'Your sign-in link for Gatehouse');
      // Nothing was queued for the others, so nothing can ever be sent to them.
      assert.deepEqual((await services.mail.listRecent(50)).map((mail) => mail.to), ['known@example.com']);

      // The limit per address answers alike too.
      const limits: string[] = [];
      for (const email of ['known@example.com', 'nobody@example.com']) {
        const second = startHeldAtFloor(email, '10.8.1.1');
        assert.equal((await second).response.statusCode, 202);
        const third = await app.inject({ method: 'POST', url: '/api/auth/email/start', payload: { email }, remoteAddress: '10.8.1.2' });
        assert.equal(third.statusCode, 429);
        limits.push(third.body);
      }
      assert.equal(limits[0], limits[1]);
      // An unknown address's request never signs in, whatever code is tried.
      const unknownRequest = (seen[1]!.response.json() as { requestId: string }).requestId;
      const tried = await app.inject({ method: 'POST', url: '/api/auth/email/verify', payload: { email: 'nobody@example.com', code: '123456', requestId: unknownRequest }, remoteAddress: '10.8.2.1' });
      assert.equal(tried.json().error, 'INVALID_TOKEN', 'retired by its newer request');
    });

    it('under EMAIL_SIGNIN_SAME_BROWSER, a link or a code works only in the browser that asked', async () => {
      await createUser(services, { email: 'same@example.com', password: PASSWORD });
      const asked = new CookieJar();
      const { response: started } = await startHeldAtFloor('same@example.com', '10.8.3.1');
      asked.store(started);
      const { requestId } = started.json() as { requestId: string };
      const { token, code } = linkAndCode(await mailTo(smtp, 'same@example.com', 'Your sign-in link for Gatehouse'));
      const verify = (payload: object, jar: CookieJar | null) => app.inject({ method: 'POST', url: '/api/auth/email/verify', payload, remoteAddress: '10.8.3.2', headers: jar === null ? {} : { cookie: jar.header() } });

      // Another browser: the page says where to open it and shows no button; the post is refused; nothing is spent.
      const page = await app.inject({ method: 'GET', url: `/auth/email-signin/link?token=${token}` });
      assert.ok(page.body.includes('Open this link in the browser where you asked for it') && !page.body.includes(`value="${token}"`), page.body);
      const elsewhere = await verify({ token }, null);
      assert.equal(elsewhere.statusCode, 403);
      assert.equal(elsewhere.json().error, 'EMAIL_SIGNIN_OTHER_BROWSER');
      const forged = new CookieJar();
      forged.store({ cookies: [{ name: browserBindingCookieName(services.config), value: `${requestId}.not-the-secret` }] } as never);
      assert.equal((await verify({ email: 'same@example.com', code, requestId }, forged)).json().error, 'EMAIL_SIGNIN_OTHER_BROWSER', 'a code with another secret for its request');

      const here = await app.inject({ method: 'GET', url: `/auth/email-signin/link?token=${token}`, headers: { cookie: asked.header() } });
      assert.ok(here.body.includes(`value="${token}"`), 'the button, in the browser that asked');
      const signedIn = await verify({ token }, asked);
      assert.equal(signedIn.statusCode, 200, signedIn.body);
    });
  });
}

describe('email sign-in turned off (EMAIL_SIGNIN unset)', () => {
  const t = useTestApp(sqlite!);

  it('refuses its routes, hides its pages and the sign-in page\'s choice', async () => {
    for (const [url, payload] of [['/api/auth/email/start', { email: 'a@example.com' }], ['/api/auth/email/verify', { token: 'x' }]] as const) {
      const response = await t.app.inject({ method: 'POST', url, payload });
      assert.equal(response.statusCode, 403, url);
      assert.equal(response.json().error, 'EMAIL_SIGNIN_DISABLED');
    }
    for (const url of ['/auth/email-signin', '/auth/email-signin/code', '/auth/email-signin/link?token=x']) assert.equal((await t.app.inject({ method: 'GET', url })).statusCode, 404, url);
    assert.equal((await t.app.inject({ method: 'GET', url: '/auth/signin' })).body.includes('/auth/email-signin'), false);
  });
});
