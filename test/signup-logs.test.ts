/**
 * The server process at LOG_LEVEL=info during sign-up and verification: what it logs (the
 * in-process sign-up tests are in src/credentials/).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteDatabase, type TestDatabase } from './helpers/databases.ts';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';
import { randomSecret, startGatehouse } from './helpers/process.ts';
import { MAIL_WAIT_MS, verificationLink } from './helpers/mail-links.ts';

const PASSWORD = 'correct horse battery staple';

describe('the server process at LOG_LEVEL=info during sign-up and verification', { timeout: 120_000 }, () => {
  let database: TestDatabase;
  let smtp: TestSmtpServer;
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-signup-logs-'));

  before(async () => {
    database = await createSqliteDatabase();
    smtp = await startSmtpServer();
  });
  after(async () => {
    await smtp?.stop();
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('logs requests but never a verification token, a link or a password', async (t) => {
    const server = await startGatehouse({
      env: {
        NODE_ENV: 'test',
        LOG_LEVEL: 'info',
        AUTH_SECRET: randomSecret(),
        DATA_DIR: dataDir,
        DATABASE_URL: database.url,
        EMAIL_SERVER_HOST: smtp.host,
        EMAIL_SERVER_PORT: String(smtp.port),
        EMAIL_FROM: 'no-reply@example.test',
        MAIL_POLL_INTERVAL_MS: '200',
      },
      cleanup: (fn) => t.after(fn),
    });
    const post = async (path: string, body: unknown) => {
      const response = await fetch(`${server.base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(10_000),
      });
      await response.arrayBuffer();
      return response.status;
    };
    const email = 'logged@example.com';
    assert.equal(await post('/api/auth/signup', { email, password: PASSWORD, name: 'Logan' }), 202);
    assert.equal(await post('/api/auth/signup', { email, password: 'another long passphrase here', name: 'Logan' }), 202);
    assert.equal(await post('/api/auth/verify-email/resend', { email }), 202);
    const messages = await smtp.waitForMessages(3, MAIL_WAIT_MS);
    const links = messages.filter((m) => m.subject.startsWith('Confirm')).map(verificationLink);
    assert.equal(links.length, 2);
    const [first, second] = links.map((link) => link.searchParams.get('token')!) as [string, string];

    // Open the link (its token is in the URL), use it, and try the dead one.
    const opened = await fetch(`${server.base}/auth/verify-email?token=${second}`, { signal: AbortSignal.timeout(10_000) });
    assert.equal(opened.status, 200);
    await opened.arrayBuffer();
    assert.equal(await post('/api/auth/verify-email', { token: second }), 200);
    assert.equal(await post('/api/auth/verify-email', { token: first }), 400);

    await server.child.stop(10_000);
    const output = server.child.output();
    assert.ok(server.child.logs().some((line) => line.msg === 'request completed'), 'request lines were written at info');
    assert.ok(output.includes('/auth/verify-email?token=[REDACTED]'), 'the URL was logged with its token masked');
    for (const [what, secret] of [['first token', first], ['second token', second], ['password', PASSWORD], ['other password', 'another long passphrase here']] as const) {
      assert.ok(!output.includes(secret), `the ${what} appears in the process output`);
    }
    assert.ok(!output.includes('token='.concat(first.slice(0, 10))) && !output.includes('token='.concat(second.slice(0, 10))));
  });
});
