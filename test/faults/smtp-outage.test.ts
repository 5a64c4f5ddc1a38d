/**
 * SMTP down for a while (issue 9, fault 3), at the level of a real server process and its flows:
 * sign-up, a sign-up with a taken address, and forgot-password are answered as usual (202) while
 * the SMTP server is away; the process is even restarted during the outage; when SMTP comes back
 * every mail is delivered exactly once, and the reset link in it works. The outbox's own retry
 * rules (backoff, MAIL_MAX_ATTEMPTS, 4xx/5xx) are tested in src/mail/mail.service.test.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DatabaseSync } from 'node:sqlite';
import { GENEROUS_LIMITS } from '../helpers/app.ts';
import { serverScratch, startGatehouse, type ChildEnv } from '../helpers/process.ts';
import { startSmtpServer } from '../helpers/smtp.ts';
import { call, countOutcomes, describeOutcome, sleep, type Outcome } from '../helpers/traffic.ts';

const PASSWORD = 'saffron-ridge-ferry-31';
const NEW_PASSWORD = 'tundra-beacon-orchid-64';
/** Long enough for every message to fail at least twice (first retry after 4–5 s). */
const OUTAGE_MS = 7_000;

describe('SMTP down for a while (real process)', { timeout: 120_000 }, () => {
  it('answers as usual, loses no mail across a restart, and delivers each exactly once after recovery', { timeout: 110_000 }, async (t) => {
    const { cleanup, dataDir, env: serverEnv } = serverScratch(t, 'fault-smtp');
    const smtp = await startSmtpServer();
    cleanup(() => smtp.stop());
    const dbPath = join(dataDir, 'gatehouse.db');
    const env: ChildEnv = {
      ...serverEnv,
      DATABASE_URL: `sqlite:${dbPath}`,
      EMAIL_SERVER_HOST: '127.0.0.1',
      EMAIL_SERVER_PORT: String(smtp.port),
      EMAIL_FROM: 'Gatehouse <no-reply@example.test>',
      MAIL_POLL_INTERVAL_MS: '200',
      ...GENEROUS_LIMITS,
    };
    const start = () => startGatehouse({ env, cleanup, deadlineMs: 100_000 });

    let server = await start();
    // An account that exists before the outage, for the reset and the "taken address" mails.
    const existing = 'smtp-existing@example.test';
    assert.equal((await call(server.base, '/api/auth/signup', 'signup', { body: { email: existing, password: PASSWORD, name: 'Existing' } })).status, 202);
    await smtp.waitForMessages(1, 10_000);
    smtp.reset();

    const outageAt = performance.now();
    await smtp.stop();
    const answers: Outcome[] = [];
    const newAddresses = Array.from({ length: 4 }, (_, i) => `smtp-new-${i}@example.test`);
    for (const email of newAddresses) answers.push(await call(server.base, '/api/auth/signup', 'signup', { body: { email, password: PASSWORD, name: 'New' } }));
    answers.push(await call(server.base, '/api/auth/signup', 'signup-taken', { body: { email: existing, password: PASSWORD, name: 'Someone' } }));
    answers.push(await call(server.base, '/api/auth/forgot-password', 'forgot', { body: { email: existing } }));
    for (const answer of answers) assert.equal(answer.status, 202, `while SMTP is down: ${describeOutcome(answer)}`);
    const expected = newAddresses.length + 2;

    // A restart in the middle of the outage: the queue is in storage, not in the process.
    await sleep(OUTAGE_MS / 2);
    assert.deepEqual(await server.child.stop(10_000), { code: 0, signal: null });
    server = await start();
    await sleep(OUTAGE_MS / 2);

    const attemptsDuringOutage = readOutbox(dbPath);
    const backAt = performance.now();
    await smtp.start();
    const delivered = await smtp.waitForMessages(expected, 25_000);
    const deliveredMs = performance.now() - backAt;
    await sleep(1_000); // anything sent twice would arrive by now

    const rcpt = delivered.map((mail) => `${mail.rcptTo.join(',')} ${mail.subject}`);
    assert.equal(delivered.length, expected, `each exactly once: ${rcpt.join(' | ')}`);
    assert.equal(new Set(delivered.map((mail) => mail.messageId)).size, expected, 'no Message-ID twice');
    for (const email of newAddresses) assert.equal(delivered.filter((mail) => mail.rcptTo.includes(email)).length, 1, `${email}: its verification mail`);
    assert.equal(delivered.filter((mail) => mail.rcptTo.includes(existing)).length, 2, `${existing}: the "taken" notice and the reset link`);

    const outbox = readOutbox(dbPath);
    assert.deepEqual(Object.keys(outbox.byStatus), ['sent'], 'nothing pending or failed');
    assert.ok(attemptsDuringOutage.minAttemptsPending >= 2, `every message was tried at least twice while SMTP was down (${attemptsDuringOutage.minAttemptsPending})`);

    // The mailed reset link works after the outage.
    const resetMail = delivered.find((mail) => mail.rcptTo.includes(existing) && /token=/.test(mail.text))!;
    const token = new URL(/https?:\/\/\S+token=[\w-]+/.exec(resetMail.text)![0]).searchParams.get('token')!;
    const reset = await call(server.base, '/api/auth/reset-password', 'reset', { body: { token, password: NEW_PASSWORD } });
    assert.equal(reset.status, 200, describeOutcome(reset));
    const signin = await call(server.base, '/api/auth', 'signin', { body: { email: existing, password: NEW_PASSWORD } });
    assert.equal(signin.status, 200, describeOutcome(signin));

    t.diagnostic(
      JSON.stringify({
        answersWhileDown: countOutcomes(answers),
        outageMs: Math.round(backAt - outageAt),
        restartedDuringOutage: true,
        attemptsPerMessageWhileDown: attemptsDuringOutage.attempts,
        deliveredAfterRecoveryMs: Math.round(deliveredMs),
        delivered: delivered.length,
        outboxAfter: outbox.byStatus,
      }),
    );
  });
});

function readOutbox(dbPath: string): { byStatus: Record<string, number>; attempts: number[]; minAttemptsPending: number } {
  const db = new DatabaseSync(dbPath, { readOnly: true });
  try {
    const rows = (db.prepare('SELECT status, attempts FROM mail_outbox').all() as Array<{ status: string; attempts: number }>).map((row) => ({ ...row }));
    const byStatus: Record<string, number> = {};
    for (const row of rows) byStatus[row.status] = (byStatus[row.status] ?? 0) + 1;
    const pending = rows.filter((row) => row.status === 'pending').map((row) => row.attempts);
    return { byStatus, attempts: pending.sort(), minAttemptsPending: pending.length === 0 ? 0 : Math.min(...pending) };
  } finally {
    db.close();
  }
}
