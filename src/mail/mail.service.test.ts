import { describe, it, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import nodemailer from 'nodemailer';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { startSmtpServer, type TestSmtpServer } from '../../test/helpers/smtp.ts';
import { TEST_SECRET } from '../../test/helpers/app.ts';
import { type Env } from '../config.ts';
import { openStorage, type Storage } from '../storage/database.ts';
import { migrateToLatest, loadConfig } from '../modules.ts';
import type { Logger } from '../lib/logger.ts';
import { createMailService, type MailService } from './mail.service.ts';
import { retryDelayMs } from './outbox-worker.ts';
import { MAIL_QUEUE } from './outbox.store.ts';
import { claimNext } from '../storage/outbox/outbox.store.ts';
import { createSmtpTransport, MailSendError, smtpTransportOptions } from './transports.ts';
import { mailModule } from './mail.module.ts';
import { mailTemplates, translations } from '../../test/helpers/mail-templates.ts';
import { collectAccountRecoveryPage } from '../module.ts';
import { MODULES } from '../modules.ts';

const AUTH_URL = 'https://auth.example.test';
const START = 1_700_000_000_000;
const DAY_MS = 86_400_000;

/** A clock tests move by hand. */
function fakeClock(start = START) {
  let now = start;
  return Object.assign(() => now, {
    advance(ms: number) {
      now += ms;
    },
  });
}

/** A logger that keeps what it is told. */
function recordingLogger() {
  const lines: Array<{ level: string; details: object; message: string }> = [];
  const logger: Logger = {
    error: (details, message) => lines.push({ level: 'error', details, message }),
    warn: (details, message) => lines.push({ level: 'warn', details, message }),
    info: (details, message) => lines.push({ level: 'info', details, message }),
  };
  return Object.assign(logger, {
    lines,
    /** Everything logged, as one string, for "never appears" checks. */
    text: () => JSON.stringify(lines, (_key, value: unknown) => (value instanceof Error ? { message: value.message, stack: value.stack } : value)),
  });
}

/** A reset link with a token that must never show up anywhere but the mail itself. */
function resetMessage(to = 'ada@example.test', token = `tok_${Math.random().toString(36).slice(2)}secret`) {
  return {
    token,
    message: {
      to,
      template: 'password-reset' as const,
      locale: 'en' as const,
      data: { name: 'Ada <Lovelace>', resetUrl: `${AUTH_URL}/auth/reset-password?token=${token}`, expiresInMinutes: 60 },
    },
  };
}

for (const backend of await backends()) {
  describe(`mail outbox over SMTP on ${backend.name}`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let storage: Storage;
    let smtp: TestSmtpServer;
    const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-mail-'));
    const started: MailService[] = [];

    before(async () => {
      database = await backend.create();
      storage = openStorage(database.config);
      await migrateToLatest(storage.db);
      smtp = await startSmtpServer();
    });
    after(async () => {
      for (const mail of started) await mail.stop();
      await smtp?.stop();
      await storage?.close();
      await database?.drop();
    });
    beforeEach(async () => {
      await storage.db.deleteFrom('mail_outbox').execute();
      smtp.reset();
      if (smtp.port === 0) await smtp.start();
    });

    function configFor(env: Env = {}) {
      return loadConfig({
        NODE_ENV: 'test',
        AUTH_SECRET: TEST_SECRET,
        AUTH_URL,
        DATA_DIR: dataDir,
        DATABASE_URL: database.url,
        EMAIL_SERVER_HOST: '127.0.0.1',
        EMAIL_SERVER_PORT: String(smtp.port),
        EMAIL_FROM: 'Gatehouse <no-reply@example.test>',
        ...env,
      });
    }

    /** A mail service on its own clock and logger; its worker runs only when the test says. */
    function mailService(options: { env?: Env; storage?: Storage; accountRecoveryPage?: null } = {}) {
      const clock = fakeClock();
      const logger = recordingLogger();
      const mail = createMailService({
        db: (options.storage ?? storage).db,
        isPostgres: backend.name === 'postgres',
        config: configFor(options.env),
        clock,
        logger,
        translations,
        templates: mailTemplates,
        // The page the module list declares for taking an account back (password-reset's).
        accountRecoveryPage: options.accountRecoveryPage === null ? null : collectAccountRecoveryPage(MODULES),
        random: () => 0,
      });
      started.push(mail);
      return { mail, clock, logger };
    }

    const rowOf = (id: string) => storage.db.selectFrom('mail_outbox').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

    it('delivers an enqueued message with the right from, to, subject, text and HTML, then drops its payload', async () => {
      const { mail, logger } = mailService();
      const { message, token } = resetMessage();
      const { id } = await mail.enqueue(storage.db, message);
      assert.deepEqual(await mail.runOnce(), { sent: 1, retried: 0, failed: 0 });

      assert.equal(smtp.messages.length, 1);
      const received = smtp.messages[0]!;
      assert.equal(received.mailFrom, 'no-reply@example.test');
      assert.deepEqual(received.rcptTo, ['ada@example.test']);
      assert.equal(received.from, '"Gatehouse" <no-reply@example.test>');
      assert.equal(received.to, 'ada@example.test');
      assert.equal(received.subject, 'Reset your Gatehouse password');
      assert.equal(received.messageId, `<${id}@example.test>`);
      assert.equal(received.headers.get('auto-submitted'), 'auto-generated');
      // The link in both parts; the name raw in text, escaped in HTML.
      assert.ok(received.text.includes(`${AUTH_URL}/auth/reset-password?token=${token}`), received.text);
      assert.ok(received.text.startsWith('Hello Ada <Lovelace>,'), received.text);
      assert.ok(received.text.includes('within 1 hour'));
      assert.ok(received.html.includes(`href="${AUTH_URL}/auth/reset-password?token=${token}"`), received.html);
      assert.ok(received.html.includes('Hello Ada &lt;Lovelace&gt;,'));
      assert.ok(!received.html.includes('<Lovelace>'));

      const row = await rowOf(id);
      assert.equal(row.status, 'sent');
      assert.equal(row.delivered_via, 'smtp');
      assert.equal(row.attempts, 1);
      assert.equal(row.sent_at, START);
      assert.equal(row.payload, null, 'a sent message keeps no link');
      assert.equal(row.locked_by, null);
      assert.deepEqual(smtp.authAttempts, [], 'no AUTH without EMAIL_SERVER_USER');
      assert.ok(!logger.text().includes(token));
    });

    it('writes a mail in the language it is given: German and Japanese subjects and bodies, links intact', async () => {
      const { mail } = mailService();
      const token = 'tok_language_secret';
      const resetUrl = `${AUTH_URL}/auth/reset-password?token=${token}`;
      await mail.enqueue(storage.db, { to: 'de@example.test', template: 'password-reset', locale: 'de', data: { name: 'Ada', resetUrl, expiresInMinutes: 30 } });
      await mail.enqueue(storage.db, { to: 'ja@example.test', template: 'password-reset', locale: 'ja', data: { name: 'Ada', resetUrl, expiresInMinutes: 30 } });
      await mail.enqueue(storage.db, {
        to: 'notice@example.test',
        template: 'security-notice',
        locale: 'de',
        data: { name: null, change: 'totpAdded', changedAt: Date.UTC(2026, 10, 24, 9, 30), forgotPasswordUrl: `${AUTH_URL}/auth/forgot-password` },
      });
      assert.deepEqual(await mail.runOnce(), { sent: 3, retried: 0, failed: 0 });
      const to = (address: string) => smtp.messages.find((m) => m.to === address)!;

      const german = to('de@example.test');
      assert.equal(german.subject, 'Passwort für Gatehouse zurücksetzen');
      assert.ok(german.text.startsWith('Hallo Ada,\n'), german.text);
      assert.ok(german.text.includes('er ist 30 Minuten lang gültig'), german.text);
      assert.ok(german.text.includes(`\n${resetUrl}\n`), 'the link on a line of its own');
      assert.ok(german.text.includes('Gesendet von Gatehouse'), german.text);
      assert.ok(german.html.includes('<html lang="de" dir="ltr">'));
      assert.ok(german.html.includes(`href="${resetUrl}"`), german.html);
      assert.ok(german.html.includes('>Neues Passwort wählen</a>'), german.html);
      assert.ok(!/Reset|Hello|within/.test(german.text), 'no English left');

      const japanese = to('ja@example.test');
      assert.equal(japanese.subject, 'Gatehouse のパスワードの再設定');
      assert.ok(japanese.text.startsWith('Ada 様\n'), japanese.text);
      assert.ok(japanese.text.includes('30 分以内にこのリンクを使ってください'), japanese.text);
      assert.ok(japanese.text.includes(`\n${resetUrl}\n`));
      assert.ok(japanese.html.includes('<html lang="ja" dir="ltr">'));
      assert.ok(japanese.html.includes(`href="${resetUrl}"`));
      assert.ok(japanese.html.includes('>新しいパスワードを設定</a>'), japanese.html);

      const notice = to('notice@example.test');
      assert.equal(notice.subject, 'Ihrem Konto bei Gatehouse wurde eine Authenticator-App hinzugefügt');
      assert.ok(notice.text.includes('Am 24. November 2026 um 09:30 UTC wurde'), 'the time as German writes it, in UTC');
    });

    it('queues a security notice of a change: the owner\'s language (their request\'s only for a change of their own), its button to the recovery page a module declares', async () => {
      const { mail, clock } = mailService();
      const owner = { id: 'owner-1', email: 'owner@example.test', name: 'Ada', nameConfirmedAt: START, locale: null };
      const request = { ip: null, userAgent: null, locale: 'fr' as const };
      await mail.securityNotice(storage.db, { user: owner, change: 'passkeyAdded', source: { ...request, actorUserId: owner.id } });
      await mail.securityNotice(storage.db, { user: { ...owner, email: 'linked@example.test' }, change: 'providerLinked', provider: 'GitHub', source: { ...request, actorUserId: 'an-admin' } });
      // What the same notice, asked for by template and data, is: the method adds nothing else.
      const forgotPasswordUrl = `${AUTH_URL}/auth/forgot-password`;
      await mail.enqueue(storage.db, { to: 'by-hand@example.test', template: 'security-notice', locale: 'fr', data: { name: 'Ada', change: 'passkeyAdded', changedAt: clock(), forgotPasswordUrl } });
      assert.deepEqual(await mail.runOnce(), { sent: 3, retried: 0, failed: 0 });
      const to = (address: string) => smtp.messages.find((m) => m.to === address)!;

      const own = to('owner@example.test');
      const byHand = to('by-hand@example.test');
      assert.deepEqual([own.subject, own.text, own.html], [byHand.subject, byHand.text, byHand.html], 'in French, the language of the owner\'s own request');
      assert.ok(own.text.includes(`\n${forgotPasswordUrl}\n`), own.text);
      assert.ok(own.html.includes(`href="${forgotPasswordUrl}"`));

      const linked = to('linked@example.test');
      assert.ok(linked.html.includes('<html lang="en" dir="ltr">'), 'an administrator\'s request says nothing of the owner\'s language');
      assert.ok(linked.subject.includes('GitHub'), linked.subject);
      assert.ok(linked.text.includes(`\n${forgotPasswordUrl}\n`));

      const unlinked = mailService({ accountRecoveryPage: null }).mail;
      await assert.rejects(unlinked.securityNotice(storage.db, { user: owner, change: 'passkeyAdded', source: { ...request, actorUserId: owner.id } }), /no module declares an account recovery page/);
    });

    it('hands MAIL_CONCURRENCY messages to a slow relay at once, never more, each exactly once', async (t) => {
      const { mail } = mailService({ env: { MAIL_CONCURRENCY: '3' } });
      // A failure while messages are held must not leave them to land in the next test.
      t.after(async () => {
        smtp.release();
        await mail.stop();
      });
      const tokens: string[] = [];
      for (let i = 0; i < 7; i += 1) {
        const { message, token } = resetMessage(`person-${i}@example.test`);
        tokens.push(token);
        await mail.enqueue(storage.db, message);
      }
      smtp.hold();
      const run = mail.runOnce();
      await smtp.waitForHeld(3);
      // Each held message keeps its connection waiting: a worker past its three would have sent the others by now.
      await new Promise((resolve) => setTimeout(resolve, 150));
      assert.equal(smtp.held, 3, 'three messages in flight');
      smtp.release();
      assert.deepEqual(await run, { sent: 7, retried: 0, failed: 0 });
      assert.equal(smtp.mostHeld, 3, 'never more than three at once');
      assert.deepEqual(smtp.messages.map((received) => received.to).sort(), tokens.map((_, i) => `person-${i}@example.test`).sort(), 'each once');
      assert.ok(tokens.every((token) => smtp.messages.filter((received) => received.text.includes(token)).length === 1));
    });

    it('stores the payload sealed: the link is not in the table in clear', async () => {
      const { mail } = mailService();
      const { message, token } = resetMessage();
      const { id } = await mail.enqueue(storage.db, message);
      const row = await rowOf(id);
      assert.equal(row.status, 'pending');
      assert.ok(row.payload !== null && row.payload.startsWith('v1.'));
      assert.ok(!JSON.stringify(row).includes(token));
      assert.ok(!JSON.stringify(row).includes('reset-password'));
    });

    it('sends right after an enqueue once started, without waiting for the poll interval', async () => {
      const { mail } = mailService({ env: { MAIL_POLL_INTERVAL_MS: '600000' } });
      mail.start();
      await mail.runOnce(); // the start-up run, so the enqueue below is what wakes the worker
      const before = Date.now();
      await mail.enqueue(storage.db, resetMessage().message);
      await smtp.waitForMessages(1, 5_000);
      assert.ok(Date.now() - before < 5_000);
      await mail.stop();
    });

    it('sends nothing for a message enqueued in a transaction that rolls back, and sends one that commits', async () => {
      const { mail } = mailService();
      await assert.rejects(
        storage.db.transaction().execute(async (trx) => {
          await mail.enqueue(trx, resetMessage('rolled-back@example.test').message);
          throw new Error('the token write failed');
        }),
        /the token write failed/,
      );
      const committed = await storage.db.transaction().execute((trx) => mail.enqueue(trx, resetMessage('committed@example.test').message));
      assert.deepEqual(await mail.runOnce(), { sent: 1, retried: 0, failed: 0 });
      assert.deepEqual(smtp.messages.map((m) => m.to), ['committed@example.test']);
      const rows = await storage.db.selectFrom('mail_outbox').select('id').execute();
      assert.deepEqual(rows.map((r) => r.id), [committed.id]);
    });

    it('backs off while SMTP is down, loses nothing, and delivers exactly once when it is back', async () => {
      const { mail, clock, logger } = mailService();
      const { message, token } = resetMessage();
      await smtp.stop();
      const { id } = await mail.enqueue(storage.db, message);

      const delays: number[] = [];
      for (let attempt = 1; attempt <= 4; attempt++) {
        assert.deepEqual(await mail.runOnce(), { sent: 0, retried: 1, failed: 0 });
        const row = await rowOf(id);
        assert.equal(row.status, 'pending');
        assert.equal(row.attempts, attempt);
        assert.match(row.last_error ?? '', /^(ESOCKET|ECONNECTION|ETIMEDOUT)/);
        assert.equal(row.locked_by, null);
        delays.push(row.next_attempt_at - clock());
        // Not due yet: nothing is tried before its time.
        clock.advance(row.next_attempt_at - clock() - 1);
        assert.deepEqual(await mail.runOnce(), { sent: 0, retried: 0, failed: 0 });
        clock.advance(1);
      }
      assert.deepEqual(delays, [5_000, 10_000, 20_000, 40_000]);
      assert.ok(logger.lines.some((l) => l.level === 'warn' && (l.details as { mailId?: string }).mailId === id));

      await smtp.start();
      assert.deepEqual(await mail.runOnce(), { sent: 1, retried: 0, failed: 0 });
      clock.advance(DAY_MS);
      assert.deepEqual(await mail.runOnce(), { sent: 0, retried: 0, failed: 0 });
      assert.equal(smtp.messages.length, 1);
      assert.ok(smtp.messages[0]!.text.includes(token));
      assert.equal((await rowOf(id)).status, 'sent');
      assert.ok(!logger.text().includes(token));
    });

    it('retries across restarts: a message that failed before a restart is delivered exactly once after it', async () => {
      const first = mailService();
      await smtp.stop();
      const { message, token } = resetMessage();
      first.mail.start();
      const { id } = await first.mail.enqueue(storage.db, message);
      // The running worker, woken by the enqueue, fails once; nothing is due again on its clock.
      const deadline = Date.now() + 10_000;
      while ((await rowOf(id)).last_error === null) {
        assert.ok(Date.now() < deadline, 'the first worker never recorded its failure');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await first.mail.stop();
      const failed = await rowOf(id);
      assert.equal(failed.status, 'pending');
      assert.equal(failed.attempts, 1);
      assert.equal(failed.locked_by, null);

      await smtp.start();
      // The next instance: its own connection to the same database, its own worker and owner id.
      const restarted = openStorage(database.config);
      try {
        const second = mailService({ storage: restarted });
        second.clock.advance(failed.next_attempt_at - second.clock());
        second.mail.start();
        await smtp.waitForMessages(1, 10_000);
        await second.mail.stop();
        second.clock.advance(DAY_MS);
        assert.deepEqual(await second.mail.runOnce(), { sent: 0, retried: 0, failed: 0 });
        assert.deepEqual(await first.mail.runOnce(), { sent: 0, retried: 0, failed: 0 }, 'the old instance has nothing left either');

        assert.equal(smtp.messages.length, 1);
        assert.equal(smtp.messages[0]!.messageId, `<${id}@example.test>`);
        assert.ok(smtp.messages[0]!.text.includes(token));
        const sent = await rowOf(id);
        assert.equal(sent.status, 'sent');
        assert.equal(sent.attempts, 2);
      } finally {
        await restarted.close();
      }
    });

    it('retries a 4xx refusal and delivers when the server accepts again', async () => {
      const { mail, clock } = mailService();
      smtp.refuse({ code: 451, stage: 'data', message: 'try again later' });
      const { id } = await mail.enqueue(storage.db, resetMessage().message);
      assert.deepEqual(await mail.runOnce(), { sent: 0, retried: 1, failed: 0 });
      assert.match((await rowOf(id)).last_error ?? '', /^EMESSAGE 451/);
      smtp.refuse(null);
      clock.advance(5_000);
      assert.deepEqual(await mail.runOnce(), { sent: 1, retried: 0, failed: 0 });
      assert.equal(smtp.messages.length, 1);
    });

    it('marks a message failed after MAIL_MAX_ATTEMPTS and logs an error without the payload', async () => {
      const { mail, clock, logger } = mailService({ env: { MAIL_MAX_ATTEMPTS: '3' } });
      smtp.refuse({ code: 452, stage: 'rcpt', message: 'mailbox full, try later' });
      const { message, token } = resetMessage();
      const { id } = await mail.enqueue(storage.db, message);
      assert.deepEqual(await mail.runOnce(), { sent: 0, retried: 1, failed: 0 });
      clock.advance(5_000);
      assert.deepEqual(await mail.runOnce(), { sent: 0, retried: 1, failed: 0 });
      clock.advance(10_000);
      assert.deepEqual(await mail.runOnce(), { sent: 0, retried: 0, failed: 1 });
      clock.advance(DAY_MS);
      assert.deepEqual(await mail.runOnce(), { sent: 0, retried: 0, failed: 0 }, 'a failed message is not tried again');

      const row = await rowOf(id);
      assert.equal(row.status, 'failed');
      assert.equal(row.attempts, 3);
      assert.match(row.last_error ?? '', /^EENVELOPE 452/);
      const errors = logger.lines.filter((l) => l.level === 'error');
      assert.equal(errors.length, 1);
      assert.deepEqual(errors[0]!.details, { mailId: id, template: 'password-reset', attempts: 3, error: 'EENVELOPE', responseCode: 452 });
      const logged = logger.text();
      for (const secret of [token, 'reset-password', 'Reset your Gatehouse password', 'Lovelace']) assert.ok(!logged.includes(secret), secret);
      assert.equal(smtp.messages.length, 0);
    });

    it('marks a message failed at once when the server refuses it for good (5xx)', async () => {
      const { mail, logger } = mailService();
      smtp.refuse({ code: 550, stage: 'rcpt', message: 'no such user' });
      const { id } = await mail.enqueue(storage.db, resetMessage('nobody@example.test').message);
      assert.deepEqual(await mail.runOnce(), { sent: 0, retried: 0, failed: 1 });
      const row = await rowOf(id);
      assert.equal(row.status, 'failed');
      assert.equal(row.attempts, 1);
      assert.match(row.last_error ?? '', /^EENVELOPE 550/);
      assert.ok(logger.lines.some((l) => l.level === 'error' && (l.details as { mailId?: string }).mailId === id));
    });

    it('authenticates only when EMAIL_SERVER_USER is set, with the configured credentials', async () => {
      const password = ' pass word with spaces ';
      const { mail, logger } = mailService({ env: { EMAIL_SERVER_USER: 'relay-user', EMAIL_SERVER_PASSWORD: password } });
      await mail.enqueue(storage.db, resetMessage().message);
      assert.deepEqual(await mail.runOnce(), { sent: 1, retried: 0, failed: 0 });
      assert.equal(smtp.authAttempts.length, 1);
      assert.equal(smtp.authAttempts[0]!.username, 'relay-user');
      assert.equal(smtp.authAttempts[0]!.password, password);
      assert.ok(!logger.text().includes(password));

      smtp.reset();
      const anonymous = mailService().mail;
      await anonymous.enqueue(storage.db, resetMessage().message);
      assert.deepEqual(await anonymous.runOnce(), { sent: 1, retried: 0, failed: 0 });
      assert.deepEqual(smtp.authAttempts, []);
    });

    it('two workers on one database never send a message twice', async () => {
      const second = openStorage(database.config);
      try {
        const a = mailService();
        const b = mailService({ storage: second });
        const count = 30;
        const ids = new Set<string>();
        for (let i = 0; i < count; i++) ids.add((await a.mail.enqueue(storage.db, resetMessage(`user${i}@example.test`).message)).id);
        const sentBy = [0, 0];
        for (let round = 0; round < 5 && sentBy[0]! + sentBy[1]! < count; round++) {
          // runOnce() shares a run in progress, so each worker is asked once per round.
          const results = await Promise.all([a.mail.runOnce(), b.mail.runOnce()]);
          results.forEach((r, i) => (sentBy[i]! += r.sent));
        }
        assert.equal(sentBy[0]! + sentBy[1]!, count);
        assert.ok(sentBy[0]! > 0 && sentBy[1]! > 0, `both workers took part: ${sentBy.join(' + ')}`);
        const messageIds = smtp.messages.map((m) => m.messageId);
        assert.equal(messageIds.length, count);
        assert.equal(new Set(messageIds).size, count, 'no message arrived twice');
        for (const messageId of messageIds) assert.ok(ids.has(/^<([^@]+)@/.exec(messageId)![1]!));
        const rows = await storage.db.selectFrom('mail_outbox').select(['status', 'attempts']).execute();
        assert.ok(rows.every((r) => r.status === 'sent' && r.attempts === 1), JSON.stringify(rows));
      } finally {
        await second.close();
      }
    });

    it('gives a due message to exactly one of many concurrent claims', async () => {
      const second = openStorage(database.config);
      try {
        const { mail, clock } = mailService();
        const { id } = await mail.enqueue(storage.db, resetMessage().message);
        const isPostgres = backend.name === 'postgres';
        const claims = await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            claimNext(i % 2 === 0 ? storage.db : second.db, MAIL_QUEUE, { now: clock(), owner: `owner-${i}`, lockedUntil: clock() + 60_000, isPostgres }),
          ),
        );
        const winners = claims.filter((row) => row !== null);
        assert.equal(winners.length, 1);
        assert.equal(winners[0]!.id, id);
        assert.equal(winners[0]!.attempts, 1);
        assert.equal((await rowOf(id)).locked_by, winners[0]!.locked_by);
      } finally {
        await second.close();
      }
    });

    it('takes over a message whose worker died mid-send once its claim runs out', async () => {
      const { mail, clock } = mailService();
      const { id } = await mail.enqueue(storage.db, resetMessage().message);
      const claimed = await claimNext(storage.db, MAIL_QUEUE, { now: clock(), owner: 'dead-instance', lockedUntil: clock() + 60_000, isPostgres: backend.name === 'postgres' });
      assert.equal(claimed?.id, id);
      assert.deepEqual(await mail.runOnce(), { sent: 0, retried: 0, failed: 0 }, 'held by the other instance');
      clock.advance(60_001);
      assert.deepEqual(await mail.runOnce(), { sent: 1, retried: 0, failed: 0 });
      assert.equal((await rowOf(id)).attempts, 2);
      assert.equal(smtp.messages.length, 1);
    });

    it('marks a message failed when its payload cannot be opened (AUTH_SECRET changed)', async () => {
      const { mail: before } = mailService();
      const { id } = await before.enqueue(storage.db, resetMessage().message);
      const { mail: after, logger } = mailService({ env: { AUTH_SECRET: 'another-secret-that-is-long-enough-0123456789' } });
      assert.deepEqual(await after.runOnce(), { sent: 0, retried: 0, failed: 1 });
      assert.match((await rowOf(id)).last_error ?? '', /^UNREADABLE/);
      assert.equal(logger.lines.filter((l) => l.level === 'error').length, 1);
      assert.equal(smtp.messages.length, 0);
    });

    it('deletes sent and failed messages older than MAIL_RETENTION, never pending ones', async () => {
      const { mail: writer, clock: writerClock } = mailService();
      const old = await writer.enqueue(storage.db, resetMessage('old@example.test').message);
      await writer.runOnce();
      const pending = await writer.enqueue(storage.db, resetMessage('pending@example.test').message);
      await storage.db.updateTable('mail_outbox').set({ next_attempt_at: writerClock() + 30 * DAY_MS }).where('id', '=', pending.id).execute();

      const { mail: later, clock } = mailService({ env: { MAIL_RETENTION: '7d' } });
      clock.advance(7 * DAY_MS + 1);
      await later.runOnce();
      const left = await storage.db.selectFrom('mail_outbox').select('id').execute();
      assert.deepEqual(left.map((r) => r.id), [pending.id]);
      assert.notEqual(old.id, pending.id);
    });

    it('refuses links outside AUTH_URL, bad addresses, unknown templates and a missing or unknown language, writing nothing', async () => {
      const { mail } = mailService();
      const cases: unknown[] = [
        { to: 'ada@example.test', template: 'password-reset', locale: 'en', data: { name: null, resetUrl: 'https://evil.example/auth/reset-password?token=x', expiresInMinutes: 60 } },
        { to: 'ada@example.test', template: 'password-reset', locale: 'en', data: { name: null, resetUrl: `${AUTH_URL}.evil.example/x`, expiresInMinutes: 60 } },
        { to: 'ada@example.test', template: 'verify-email', locale: 'en', data: { name: null, verifyUrl: 'javascript:alert(1)', expiresInMinutes: 60 } },
        { to: 'Ada <ada@example.test>', template: 'password-reset', locale: 'en', data: { name: null, resetUrl: `${AUTH_URL}/x`, expiresInMinutes: 60 } },
        { to: 'ada@example.test\r\nBcc: eve@example.test', template: 'password-reset', locale: 'en', data: { name: null, resetUrl: `${AUTH_URL}/x`, expiresInMinutes: 60 } },
        { to: 'ada@example.test, eve@example.test', template: 'password-reset', locale: 'en', data: { name: null, resetUrl: `${AUTH_URL}/x`, expiresInMinutes: 60 } },
        { to: 'ada@example.test', template: 'welcome', locale: 'en', data: {} },
        { to: 'ada@example.test', template: 'password-reset', locale: 'xx', data: { name: null, resetUrl: `${AUTH_URL}/x`, expiresInMinutes: 60 } },
        { to: 'ada@example.test', template: 'password-reset', data: { name: null, resetUrl: `${AUTH_URL}/x`, expiresInMinutes: 60 } },
      ];
      for (const message of cases) {
        await assert.rejects(mail.enqueue(storage.db, message as never), TypeError, JSON.stringify(message));
      }
      assert.equal((await storage.db.selectFrom('mail_outbox').select('id').execute()).length, 0);
    });
  });
}

describe('SMTP transport security', () => {
  let smtp: TestSmtpServer;
  before(async () => {
    smtp = await startSmtpServer();
  });
  after(async () => {
    await smtp?.stop();
  });

  it('sends neither mail nor credentials in clear when TLS is required and the server offers no STARTTLS', async () => {
    const transport = createSmtpTransport(
      { host: smtp.host, port: smtp.port, isImplicitTls: false, requireTls: true, auth: { user: 'relay', password: 'never-in-clear' } },
      { name: null, address: 'no-reply@example.test' },
    );
    const sending = transport.send(
      { id: 'm1', to: 'ada@example.test', template: 'password-reset', subject: 's', text: 't', html: '<p>t</p>' },
      AbortSignal.timeout(10_000),
    );
    await assert.rejects(sending, (error: unknown) => {
      assert.ok(error instanceof MailSendError);
      assert.equal(error.failure.code, 'ETLS');
      assert.equal(error.failure.isPermanent, false);
      return true;
    });
    transport.close();
    assert.equal(smtp.messages.length, 0);
    assert.deepEqual(smtp.authAttempts, []);
  });
});

// Regression (review): a loopback relay offering STARTTLS with a self-signed certificate (a stock
// Debian Postfix, "snakeoil") never got mail: the upgrade failed certificate verification.
describe('SMTP to a loopback relay offering STARTTLS with a self-signed certificate', () => {
  let smtp: TestSmtpServer;
  before(async () => {
    smtp = await startSmtpServer({ startTls: true });
  });
  after(async () => {
    await smtp?.stop();
  });

  const mail = { id: 'm1', to: 'ada@example.test', template: 'password-reset', subject: 's', text: 't', html: '<p>t</p>' };
  const smtpConfigFor = (host: string) => {
    const config = loadConfig({
      NODE_ENV: 'test',
      AUTH_SECRET: TEST_SECRET,
      AUTH_URL,
      DATA_DIR: tmpdir(),
      EMAIL_SERVER_HOST: host,
      EMAIL_SERVER_PORT: String(smtp.port),
      EMAIL_FROM: 'no-reply@example.test',
    });
    assert.equal(config.mail.kind, 'smtp');
    return config.mail.smtp!;
  };

  it('delivers over STARTTLS, credentials included, without verifying the certificate', async () => {
    smtp.reset();
    const transport = createSmtpTransport({ ...smtpConfigFor('127.0.0.1'), auth: { user: 'relay', password: 'relay-password' } }, { name: null, address: 'no-reply@example.test' });
    try {
      await transport.send(mail, AbortSignal.timeout(10_000));
    } finally {
      transport.close();
    }
    assert.equal(smtp.messages.length, 1);
    assert.equal(smtp.messages[0]!.isSecure, true, 'STARTTLS is still used when offered');
    assert.deepEqual(smtp.authAttempts.map((a) => a.username), ['relay']);
  });

  it('still refuses that certificate for a host not written as loopback, even one that reaches this machine', async () => {
    smtp.reset();
    // An IPv4-mapped IPv6 address reaches 127.0.0.1 but is not one of the loopback spellings.
    const transporter = nodemailer.createTransport(smtpTransportOptions(smtpConfigFor('::ffff:127.0.0.1')));
    try {
      await assert.rejects(transporter.sendMail({ from: 'no-reply@example.test', to: mail.to, subject: mail.subject, text: mail.text }), {
        code: 'ESOCKET',
        originalCode: 'DEPTH_ZERO_SELF_SIGNED_CERT',
      });
    } finally {
      transporter.close();
    }
    assert.equal(smtp.messages.length, 0);
  });
});

describe('smtpTransportOptions', () => {
  const smtpConfig = (env: Env) => {
    const config = loadConfig({ NODE_ENV: 'test', AUTH_SECRET: TEST_SECRET, AUTH_URL, DATA_DIR: tmpdir(), EMAIL_FROM: 'no-reply@example.test', ...env });
    assert.equal(config.mail.kind, 'smtp');
    return config.mail.smtp!;
  };

  it('requires STARTTLS with a verified certificate and TLS 1.2 for a remote host on 587', () => {
    const options = smtpTransportOptions(smtpConfig({ EMAIL_SERVER_HOST: 'smtp.example.com' }));
    assert.equal(options.host, 'smtp.example.com');
    assert.equal(options.port, 587);
    assert.equal(options.secure, false);
    assert.equal(options.requireTLS, true);
    assert.equal(options.ignoreTLS, undefined);
    assert.deepEqual(options.tls, { minVersion: 'TLSv1.2', rejectUnauthorized: true });
  });

  it('uses TLS from the first byte, certificate verified, on 465', () => {
    const options = smtpTransportOptions(smtpConfig({ EMAIL_SERVER_HOST: 'smtp.example.com', EMAIL_SERVER_PORT: '465' }));
    assert.equal(options.port, 465);
    assert.equal(options.secure, true);
    assert.deepEqual(options.tls, { minVersion: 'TLSv1.2', rejectUnauthorized: true });
  });

  it('takes STARTTLS when offered but neither requires it nor verifies the certificate for a loopback relay', () => {
    for (const host of ['localhost', 'LocalHost', '127.0.0.1', '127.0.0.53', '::1', '[::1]']) {
      const options = smtpTransportOptions(smtpConfig({ EMAIL_SERVER_HOST: host }));
      assert.equal(options.secure, false, host);
      assert.equal(options.requireTLS, false, host);
      assert.equal(options.ignoreTLS, undefined, host);
      assert.deepEqual(options.tls, { minVersion: 'TLSv1.2', rejectUnauthorized: false }, host);
    }
  });

  it('verifies the certificate for any host not written as loopback, whatever requireTls says', () => {
    for (const host of ['localhost.example.com', '127.0.0.1.nip.io', '10.0.0.1', '::ffff:127.0.0.1']) {
      const options = smtpTransportOptions(smtpConfig({ EMAIL_SERVER_HOST: host }));
      assert.equal(options.requireTLS, true, host);
      assert.deepEqual(options.tls, { minVersion: 'TLSv1.2', rejectUnauthorized: true }, host);
    }
    const options = smtpTransportOptions({ host: 'smtp.example.com', port: 587, isImplicitTls: false, requireTls: false, auth: null });
    assert.deepEqual(options.tls, { minVersion: 'TLSv1.2', rejectUnauthorized: true });
  });
});

describe('retryDelayMs', () => {
  it('doubles from 5 s, caps at 15 min, and takes off at most 20 % at random', () => {
    assert.deepEqual([1, 2, 3, 4, 8, 9, 20].map((n) => retryDelayMs(n, () => 0)), [5_000, 10_000, 20_000, 40_000, 640_000, 900_000, 900_000]);
    assert.equal(retryDelayMs(1, () => 0.999_999), 4_000);
    assert.equal(retryDelayMs(30, () => 0.5), 810_000);
  });
});

describe('mail links', () => {
  it('builds links from AUTH_URL only, with the query encoded', () => {
    const config = loadConfig({ NODE_ENV: 'test', AUTH_SECRET: TEST_SECRET, AUTH_URL: 'https://auth.example.test/base/', DATA_DIR: tmpdir() });
    const mail = createMailService({ db: {} as never, isPostgres: false, config, clock: () => START, logger: recordingLogger(), translations, templates: mailTemplates });
    assert.equal(mail.link('/auth/reset-password', { token: 'a b&c' }), 'https://auth.example.test/base/auth/reset-password?token=a+b%26c');
    assert.equal(mail.link('/auth/signin'), 'https://auth.example.test/base/auth/signin');
  });
});
