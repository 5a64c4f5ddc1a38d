/**
 * The server process, at LOG_LEVEL=info in production, never logs a reset token or link (the
 * in-process password-reset tests are in src/password-reset/).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';
import { hiddenValue } from './helpers/pages.ts';
import { randomSecret, startGatehouse } from './helpers/process.ts';
import { resetLink, tokenOf, waitFor } from './helpers/mail-links.ts';

const AUTH_URL = 'https://auth.example.test';
const NEW_PASSWORD = 'violet harbour lantern mosaic';
const RESET_SUBJECT = 'Reset your Gatehouse password';
const NOTICE_SUBJECT = 'Your Gatehouse password was changed';

describe('the server process never logs a reset token or link', { timeout: 90_000 }, () => {
  let smtp: TestSmtpServer;
  let dataDir: string;

  before(async () => {
    smtp = await startSmtpServer();
    dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-reset-logs-'));
  });
  after(async () => {
    await smtp?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('at LOG_LEVEL=info in production, through the API, the pages and the forms', async (t) => {
    const email = 'operator@example.test';
    const adminPassword = 'violet-harbour-lantern-42';
    const server = await startGatehouse({
      env: {
        NODE_ENV: 'production',
        LOG_LEVEL: 'info',
        AUTH_URL,
        AUTH_SECRET: randomSecret(),
        DATA_DIR: dataDir,
        DATABASE_URL: `sqlite:${join(dataDir, 'gatehouse.db')}`,
        EMAIL_SERVER_HOST: smtp.host,
        EMAIL_SERVER_PORT: String(smtp.port),
        EMAIL_FROM: 'Gatehouse <no-reply@example.test>',
        ADMIN_EMAIL: email,
        ADMIN_PASSWORD: adminPassword,
      },
      cleanup: t.after.bind(t),
    });
    const post = (path: string, body: string, headers: Record<string, string>) =>
      fetch(`${server.base}${path}`, { method: 'POST', body, headers, redirect: 'manual', signal: AbortSignal.timeout(10_000) });
    const json = { 'content-type': 'application/json' };

    assert.equal((await post('/api/auth/forgot-password', JSON.stringify({ email }), json)).status, 202);
    assert.equal((await post('/api/auth/forgot-password', JSON.stringify({ email: 'nobody@example.test' }), json)).status, 202);
    const first = await waitFor(() => smtp.messages.find((m) => m.subject === RESET_SUBJECT), 'the first reset mail');
    const firstToken = tokenOf(first);
    assert.equal((await post('/api/auth/reset-password/validate', JSON.stringify({ token: firstToken }), json)).status, 200);
    assert.equal((await post('/api/auth/reset-password', JSON.stringify({ token: firstToken, password: 'short' }), json)).status, 422);
    assert.equal((await post('/api/auth/reset-password', JSON.stringify({ token: firstToken, password: NEW_PASSWORD }), json)).status, 200);
    assert.equal((await post('/api/auth/reset-password', JSON.stringify({ token: firstToken, password: NEW_PASSWORD }), json)).status, 400);

    // The page and the form, as a browser would use them (cookies by hand: they are Secure).
    assert.equal((await post('/api/auth/forgot-password', JSON.stringify({ email }), json)).status, 202);
    const second = await waitFor(() => smtp.messages.filter((m) => m.subject === RESET_SUBJECT)[1], 'the second reset mail');
    const secondLink = resetLink(second);
    const secondToken = tokenOf(second);
    const page = await fetch(`${server.base}${secondLink.pathname}${secondLink.search}`, { signal: AbortSignal.timeout(10_000) });
    assert.equal(page.status, 200);
    assert.equal(page.headers.get('referrer-policy'), 'no-referrer');
    const html = await page.text();
    const cookie = page.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const form = { 'content-type': 'application/x-www-form-urlencoded', cookie, origin: AUTH_URL };
    const fields = (password: string) => new URLSearchParams({ csrfToken: hiddenValue(html, 'csrfToken'), token: hiddenValue(html, 'token'), password }).toString();
    const weak = await post('/api/auth/reset-password', fields('short'), form);
    assert.equal(weak.status, 303);
    const done = await post('/api/auth/reset-password', fields('amber quartz meadow river'), form);
    assert.equal(done.status, 303);
    assert.equal(done.headers.get('location'), '/auth/reset-password/done');
    await waitFor(() => (smtp.messages.filter((m) => m.subject === NOTICE_SUBJECT).length === 2 ? true : undefined), 'both notices');

    await server.child.stop(10_000);
    const output = server.child.output();
    assert.ok(server.child.logs().some((entry) => String(entry.url ?? (entry.req as { url?: string } | undefined)?.url ?? '').includes('/auth/reset-password?token=[REDACTED]')), 'the page request was logged, masked');
    for (const [what, secret] of Object.entries({ firstToken, secondToken, firstLink: resetLink(first).href, secondLink: secondLink.href, password: NEW_PASSWORD })) {
      assert.ok(!output.includes(secret), `the process output contains the ${what}`);
    }
  });
});
