/**
 * Finding: "`POST /api/auth/verify-email/resend` answers measurably slower for an unverified
 * account" (a token and a mail are made only then). It now goes through forgot-password's floor
 * (`lib/response-floor.ts`): every answer is held until one fixed time after the request arrived,
 * after the work, whatever the address. Measuring that would be flaky, so the test watches the
 * mechanism instead: the real route and service, with the floor's timer replaced by one the test
 * holds. For an unknown address, an unverified, a verified and a disabled account alike, the
 * answer is still pending at the floor, its work (if any) already done, the floor asks to wait the
 * same whole duration, and only releasing the floor lets the same 202 out.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createUser, testEnv } from '../../test/helpers/app.ts';
import { openStorage, type Storage } from '../storage/database.ts';
import { migrateToLatest, loadConfig } from '../modules.ts';
import { createServices, type Services } from '../services.ts';
import { buildApp } from '../app.ts';
import { createResponseFloor } from '../lib/response-floor.ts';
import { createVerificationService, VERIFICATION_RESEND_MIN_RESPONSE_MS } from './verification.service.ts';
import { RESEND_ACCEPTED_MESSAGE } from './verification.routes.ts';

const PASSWORD = 'correct horse battery staple';

/** A floor timer whose time stands still and whose waits end only when the test says. */
function heldTimer() {
  const waits: Array<{ ms: number; release: () => void }> = [];
  return {
    waits,
    timer: {
      now: () => 0,
      sleep: (ms: number) => new Promise<void>((resolve) => waits.push({ ms, release: resolve })),
    },
  };
}

for (const backend of await backends()) {
  describe(`verify-email/resend answers no differently for an unverified account (${backend.name})`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let storage: Storage;
    let services: Services;
    let app: FastifyInstance;
    let dataDir: string;
    const held = heldTimer();

    before(async () => {
      database = await backend.create();
      dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-data-'));
      const config = loadConfig({ DATA_DIR: dataDir, ...testEnv(database) });
      storage = openStorage(config.database);
      await migrateToLatest(storage.db);
      services = await createServices({ config, storage });
      // The service the app would build, with only the floor's timer in the test's hands.
      services.verification = createVerificationService({
        db: storage.db,
        users: services.users,
        tokens: services.actionTokens,
        mail: services.mail,
        audit: services.audit,
        ttlSeconds: config.accounts.verificationTokenTtlSeconds,
        resendFloor: createResponseFloor(VERIFICATION_RESEND_MIN_RESPONSE_MS, held.timer),
      });
      app = await buildApp(services);
    });
    after(async () => {
      await app?.close();
      await storage?.close();
      await database?.drop();
      if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
    });

    const verifyMails = async (email: string) => (await services.mail.listRecent(500)).filter((m) => m.to === email && m.template === 'verify-email').length;

    /** Posts a resend; resolves once the answer is held at the floor (or fails if it came without). */
    async function resendHeldAtFloor(email: string) {
      const before = held.waits.length;
      let answered = false;
      const response = app.inject({ method: 'POST', url: '/api/auth/verify-email/resend', payload: { email } }).then((r) => {
        answered = true;
        return r;
      });
      for (let i = 0; i < 1_000 && held.waits.length === before && !answered; i++) await delay(5);
      assert.equal(answered, false, `${email}: answered without waiting at the floor`);
      assert.equal(held.waits.length, before + 1, `${email}: the answer reached the floor`);
      // Given a chance to leave, it stays: only the floor's timer lets it out.
      await delay(20);
      assert.equal(answered, false, `${email}: still held at the floor`);
      return { wait: held.waits.at(-1)!, response };
    }

    it('holds the answer for an unknown address, an unverified, a verified and a disabled account alike, after the work, for the whole floor', async () => {
      const unverified = 'unverified@example.com';
      const signup = await app.inject({ method: 'POST', url: '/api/auth/signup', payload: { email: unverified, password: PASSWORD, name: 'Una Verified' } });
      assert.equal(signup.statusCode, 202, signup.body);
      await createUser(services, { email: 'verified@example.com', password: PASSWORD });
      const disabled = await createUser(services, { email: 'disabled@example.com', password: PASSWORD });
      await services.users.updateUser(disabled.id, { disabled: true });
      const mailsBefore = await verifyMails(unverified);

      const bodies = new Set<string>();
      for (const email of ['nobody@example.com', unverified, 'verified@example.com', 'disabled@example.com']) {
        const { wait, response } = await resendHeldAtFloor(email);
        // Time stands still in the test's timer: the floor asks for all of it, on every path.
        assert.equal(wait.ms, VERIFICATION_RESEND_MIN_RESPONSE_MS, email);
        if (email === unverified) assert.equal(await verifyMails(unverified), mailsBefore + 1, 'the work was done before the floor');
        wait.release();
        const answer = await response;
        assert.equal(answer.statusCode, 202, answer.body);
        assert.deepEqual(answer.json(), { ok: true, message: RESEND_ACCEPTED_MESSAGE });
        bodies.add(answer.body);
      }
      assert.equal(bodies.size, 1, 'the same body for every address');
    });

    it('holds a failure as long: an unverified account whose mail cannot be queued is answered (500) only when the floor is released', async () => {
      const email = 'failing@example.com';
      const signup = await app.inject({ method: 'POST', url: '/api/auth/signup', payload: { email, password: PASSWORD, name: 'Fay Failing' } });
      assert.equal(signup.statusCode, 202, signup.body);
      const enqueue = services.mail.enqueue;
      services.mail.enqueue = async () => {
        throw new Error('outbox unavailable');
      };
      try {
        const { wait, response } = await resendHeldAtFloor(email);
        assert.equal(wait.ms, VERIFICATION_RESEND_MIN_RESPONSE_MS);
        wait.release();
        assert.equal((await response).statusCode, 500);
      } finally {
        services.mail.enqueue = enqueue;
      }
    });
  });
}
