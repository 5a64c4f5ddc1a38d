import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, TEST_SECRET, type TestApp } from '../../test/helpers/app.ts';
import type { Logger } from '../lib/logger.ts';
import { createMailService } from './mail.service.ts';
import { openStorage } from '../storage/database.ts';
import { migrateToLatest, loadConfig } from '../modules.ts';
import { createMailRenderer } from './templates.ts';
import { mailModule } from './mail.module.ts';
import { mailTemplates, SECURITY_CHANGES, translations } from '../../test/helpers/mail-templates.ts';
import { LOCALES } from '../i18n/locales.ts';


const TOKEN = 'dev-outbox-token-0123456789';

for (const backend of await backends()) {
  describe(`dev outbox on ${backend.name}`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    before(async () => {
      database = await backend.create();
    });
    after(async () => {
      await database?.drop();
    });

    async function withApp(env: Record<string, string>, fn: (test: TestApp) => Promise<void>) {
      const test = await createTestApp(database, { env: { LOG_LEVEL: 'silent', ...env } });
      try {
        await fn(test);
      } finally {
        await test.close();
      }
    }

    it('keeps mail in the outbox in development and lists it at /dev/outbox', async () => {
      await withApp({ NODE_ENV: 'development', DEV_OUTBOX_PAGE: 'true' }, async ({ app, services }) => {
        assert.equal(services.config.mail.kind, 'dev-outbox');
        const { mail } = services;
        const { id } = await mail.enqueue(services.storage.db, {
          to: 'grace@example.test',
          template: 'password-reset',
          locale: 'en',
          data: { name: 'Grace <b>Hopper</b>', resetUrl: mail.link('/auth/reset-password', { token: TOKEN }), expiresInMinutes: 30 },
        });
        await mail.runOnce();
        const row = await services.storage.db.selectFrom('mail_outbox').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
        assert.equal(row.status, 'sent');
        assert.equal(row.delivered_via, 'dev-outbox');
        assert.notEqual(row.payload, null, 'kept, to be shown');

        const response = await app.inject({ method: 'GET', url: '/dev/outbox' });
        assert.equal(response.statusCode, 200);
        assert.match(String(response.headers['content-type']), /^text\/html/);
        assert.match(String(response.headers['content-security-policy']), /script-src 'none'/);
        assert.equal(response.headers['cache-control'], 'no-store');
        const link = `${services.config.authUrl}/auth/reset-password?token=${TOKEN}`;
        assert.ok(response.body.includes(`<a href="${link}">${link}</a>`), response.body);
        assert.ok(response.body.includes('Reset your Gatehouse password'));
        assert.ok(response.body.includes('grace@example.test'));
        assert.ok(response.body.includes('Grace &lt;b&gt;Hopper&lt;/b&gt;'), 'the text body is escaped on the page');
        assert.ok(!response.body.includes('<b>Hopper'));

        // Regression (review): the page shows live links; only the developer's own machine may see it.
        const remote = await app.inject({ method: 'GET', url: '/dev/outbox', remoteAddress: '10.1.2.3' });
        assert.equal(remote.statusCode, 404);
        assert.ok(!remote.body.includes(TOKEN));
      });
    });

    it('shows /dev/outbox in the language asked for: headings, labels, status and times', async () => {
      await withApp({ NODE_ENV: 'development', DEV_OUTBOX_PAGE: 'true' }, async ({ app, services }) => {
        const { mail } = services;
        await mail.enqueue(services.storage.db, {
          to: 'grace@example.test',
          template: 'password-reset',
          locale: 'en',
          data: { name: 'Grace', resetUrl: mail.link('/auth/reset-password', { token: TOKEN }), expiresInMinutes: 30 },
        });
        await mail.runOnce();
        const japanese = await app.inject({ method: 'GET', url: '/dev/outbox', headers: { 'accept-language': 'ja' } });
        assert.equal(japanese.statusCode, 200);
        assert.equal(japanese.headers['content-language'], 'ja');
        assert.match(japanese.body, /<html lang="ja"/);
        assert.match(japanese.body, /<h1>開発用送信箱<\/h1>/);
        assert.match(japanese.body, /<dt>宛先<\/dt><dd>grace@example\.test<\/dd>/);
        assert.ok(japanese.body.includes('<code>EMAIL_SERVER_HOST</code>'), 'the variable keeps its name');

        const german = await app.inject({ method: 'GET', url: '/dev/outbox?lang=de&error=%3Cb%3EBOGUS' });
        assert.equal(german.statusCode, 200);
        assert.equal(german.headers['content-language'], 'de');
        assert.match(german.body, /<html lang="de"/);
        assert.match(german.body, /<title>Entwicklungs-Postausgang · Gatehouse<\/title>/);
        assert.match(german.body, /<dt>An<\/dt><dd>grace@example\.test<\/dd>/);
        assert.match(german.body, /<dt>Status<\/dt><dd>Gesendet<\/dd>/);
        assert.match(german.body, /<summary>Textfassung<\/summary>/);
        // A German date and time, in UTC: "21.11.2026, 14:05:09 UTC".
        assert.match(german.body, /<time datetime="[^"]+Z">\d{2}\.\d{2}\.\d{4}, \d{2}:\d{2}:\d{2} UTC<\/time>/);
        assert.ok(!german.body.includes('BOGUS'), 'the page reads no ?error=');

        const english = await app.inject({ method: 'GET', url: '/dev/outbox' });
        assert.match(english.body, /<h1>Dev outbox<\/h1>/);
        assert.match(english.body, /<dt>Status<\/dt><dd>Sent<\/dd>/);
      });
    });

    async function withOneMessage(env: Record<string, string>, fn: (test: TestApp) => Promise<void>) {
      await withApp({ NODE_ENV: 'development', ...env }, async (test) => {
        const { mail } = test.services;
        await mail.enqueue(test.services.storage.db, {
          to: 'grace@example.test',
          template: 'password-reset',
          locale: 'en',
          data: { name: 'Grace', resetUrl: mail.link('/auth/reset-password', { token: TOKEN }), expiresInMinutes: 30 },
        });
        await mail.runOnce();
        await fn(test);
      });
    }

    it('/dev/outbox is off unless DEV_OUTBOX_PAGE is on: a local proxy or tunnel makes every request look local', async () => {
      await withOneMessage({}, async ({ app }) => {
        const response = await app.inject({ method: 'GET', url: '/dev/outbox' });
        assert.equal(response.statusCode, 404);
        assert.ok(!response.body.includes(TOKEN));
        assert.ok(!app.printRoutes().includes('outbox'));
      });
    });

    it('/dev/outbox honours TRUST_PROXY and forwarding headers: a request a local proxy forwards from a remote client is refused', async () => {
      const get = (app: TestApp['app'], headers: Record<string, string>, remoteAddress = '127.0.0.1') =>
        app.inject({ method: 'GET', url: '/dev/outbox', headers, remoteAddress });
      const assertRefused = (response: Awaited<ReturnType<typeof get>>, label: string) => {
        assert.equal(response.statusCode, 404, label);
        assert.ok(!response.body.includes(TOKEN), label);
      };
      // A trusted local proxy: the client is the forwarded address.
      await withOneMessage({ DEV_OUTBOX_PAGE: 'true', TRUST_PROXY: 'loopback' }, async ({ app }) => {
        assertRefused(await get(app, { 'x-forwarded-for': '203.0.113.7' }), 'forwarded from a remote client');
        assertRefused(await get(app, { 'x-forwarded-for': '203.0.113.7, 127.0.0.1' }), 'through two local proxies');
        const local = await get(app, { 'x-forwarded-for': '127.0.0.1' });
        assert.equal(local.statusCode, 200, 'a local proxy in front of a local browser still works');
        assert.ok(local.body.includes(TOKEN));
        // A remote peer is no trusted proxy: its claim to forward for loopback changes nothing.
        assertRefused(await get(app, { 'x-forwarded-for': '127.0.0.1' }, '10.1.2.3'), 'a remote peer claiming loopback');
      });
      // A local proxy the operator did not declare: the socket is loopback, the headers say otherwise.
      await withOneMessage({ DEV_OUTBOX_PAGE: 'true' }, async ({ app }) => {
        assertRefused(await get(app, { 'x-forwarded-for': '203.0.113.7' }), 'X-Forwarded-For without TRUST_PROXY');
        assertRefused(await get(app, { 'x-real-ip': '203.0.113.7' }), 'X-Real-IP');
        assertRefused(await get(app, { forwarded: 'for="[2001:db8::1]:4711";proto=https' }), 'Forwarded');
        assertRefused(await get(app, { forwarded: 'for=unknown' }), 'an obfuscated Forwarded client');
        assert.equal((await get(app, { forwarded: 'for=127.0.0.1:5000' })).statusCode, 200, 'Forwarded for this machine');
        assert.equal((await get(app, {})).statusCode, 200, 'straight from this machine');
      });
    });

    it('logs the links of a dev-outbox message in development only: the one exception to "no token in logs"', async () => {
      const storage = openStorage(database.config);
      try {
        await migrateToLatest(storage.db);
        for (const env of ['development', 'test'] as const) {
          const lines: unknown[] = [];
          const logger: Logger = { error: (d, m) => lines.push([d, m]), warn: (d, m) => lines.push([d, m]), info: (d, m) => lines.push([d, m]) };
          const config = loadConfig({ NODE_ENV: env, AUTH_SECRET: TEST_SECRET, AUTH_URL: 'http://localhost:3000', DATA_DIR: tmpdir(), DATABASE_URL: database.url });
          const mail = createMailService({ db: storage.db, isPostgres: backend.name === 'postgres', config, clock: () => Date.now(), logger, translations, templates: mailTemplates });
          const { id } = await mail.enqueue(storage.db, {
            to: 'ada@example.test',
            template: 'verify-email',
            locale: 'en',
            data: { name: null, verifyUrl: mail.link('/auth/verify-email', { token: TOKEN }), expiresInMinutes: 60 },
          });
          assert.equal((await mail.runOnce()).sent, 1);
          const logged = JSON.stringify(lines);
          assert.ok(logged.includes(id), logged);
          assert.equal(logged.includes(TOKEN), env === 'development', `${env}: ${logged}`);
          await mail.stop();
        }
      } finally {
        await storage.close();
      }
    });

    it('has no /dev/outbox route in production', async () => {
      await withApp(
        {
          NODE_ENV: 'production',
          AUTH_URL: 'https://auth.example.test',
          EMAIL_SERVER_HOST: '127.0.0.1',
          EMAIL_SERVER_PORT: '2525',
          EMAIL_FROM: 'no-reply@example.test',
        },
        async ({ app, services }) => {
          assert.equal(services.mail.kind, 'smtp');
          const response = await app.inject({ method: 'GET', url: '/dev/outbox' });
          assert.equal(response.statusCode, 404);
          assert.ok(!app.printRoutes().includes('outbox'));
        },
      );
    });

    it('has no /dev/outbox route in development when mail goes to an SMTP server', async () => {
      await withApp({ NODE_ENV: 'development', EMAIL_SERVER_HOST: '127.0.0.1', EMAIL_SERVER_PORT: '2525', EMAIL_FROM: 'no-reply@example.test' }, async ({ app }) => {
        assert.equal((await app.inject({ method: 'GET', url: '/dev/outbox' })).statusCode, 404);
      });
    });
  });
}

describe('mail templates', () => {
  const renderer = createMailRenderer({ authUrl: 'https://auth.example.test', translations, templates: mailTemplates });
  /** The templates `renderAll` renders, in its order: every one the modules declare. */
  const TEMPLATE_NAMES = ['password-reset', 'password-changed', 'verify-email', 'signup-existing-account', 'security-notice', 'organization-invitation', 'webhook-endpoint-disabled', 'impersonation-ended', 'email-signin', 'password-invitation'];
  const url = (path: string) => `https://auth.example.test${path}?token=a&b=<c>`;
  const renderAll = (locale: (typeof LOCALES)[number]) => [
    renderer.render('password-reset', { name: 'Ada', resetUrl: url('/auth/reset-password'), expiresInMinutes: 60 }, locale),
    renderer.render('password-changed', { name: null, changedAt: Date.UTC(2026, 10, 21, 14, 5), forgotPasswordUrl: url('/auth/forgot-password') }, locale),
    renderer.render('verify-email', { name: 'Ada', verifyUrl: url('/auth/verify-email'), expiresInMinutes: 1440 }, locale),
    renderer.render('signup-existing-account', { name: 'Ada', signInUrl: url('/auth/signin'), forgotPasswordUrl: url('/auth/forgot-password') }, locale),
    renderer.render('security-notice', { name: 'Ada', change: 'totpAdded', changedAt: Date.UTC(2026, 10, 24, 9, 30), forgotPasswordUrl: url('/auth/forgot-password') }, locale),
    renderer.render(
      'organization-invitation',
      { name: null, organizationName: 'Acme <Labs>', role: 'ADMIN', acceptUrl: url('/organizations/invitations/accept'), expiresInMinutes: 7 * 1440 },
      locale,
    ),
    renderer.render(
      'webhook-endpoint-disabled',
      { name: 'Ada', endpointId: 'ep1', host: 'hooks.example.com', failingSinceAt: Date.UTC(2026, 10, 20, 8, 0), adminUrl: url('/admin/webhooks/ep1') },
      locale,
    ),
    // The administrator's reason is typed text: escaped in the HTML.
    renderer.render('impersonation-ended', { name: 'Ada', reason: 'Ticket <7> & more', startedAt: Date.UTC(2026, 10, 28, 10, 0), endedAt: Date.UTC(2026, 10, 28, 10, 15), dashboardUrl: url('/dashboard') }, locale),
    renderer.render('email-signin', { name: 'Ada', purpose: 'signin', linkUrl: url('/auth/email-signin/link'), code: '042817', expiresInMinutes: 10 }, locale),
    renderer.render('password-invitation', { name: 'Ada', resetUrl: url('/auth/reset-password'), expiresInMinutes: 7 * 1440 }, locale),
  ];

  it('renders every template as text and HTML with its links, escaping only the HTML', () => {
    const rendered = renderAll('en');
    assert.equal(rendered.length, TEMPLATE_NAMES.length);
    assert.deepEqual([...TEMPLATE_NAMES].sort(), [...mailTemplates.keys()].sort());
    for (const mail of rendered) {
      assert.ok(mail.subject.length > 0 && !/[\r\n]/.test(mail.subject));
      assert.ok(mail.text.includes('?token=a&b=<c>'), mail.text);
      assert.ok(!mail.text.includes('&amp;'), 'plain text is not HTML-escaped');
      assert.ok(mail.html.includes('?token=a&amp;b=&lt;c&gt;'), mail.html);
      assert.ok(!mail.html.includes('<c>'));
      assert.ok(mail.html.startsWith('<!doctype html>\n<html lang="en" dir="ltr">'));
    }
    assert.ok(rendered[0]!.text.startsWith('Hello Ada,'));
    assert.ok(rendered[1]!.text.startsWith('Hello,'));
    assert.ok(rendered[1]!.text.includes('changed on November 21, 2026 at 2:05 PM UTC,'), rendered[1]!.text);
    assert.ok(rendered[2]!.text.includes('within 24 hours'));
    assert.ok(rendered[3]!.text.includes('/auth/signin') && rendered[3]!.text.includes('/auth/forgot-password'));
    assert.equal(rendered[4]!.subject, 'An authenticator app was added to your Gatehouse account', 'a notice’s subject is its change’s');
    assert.ok(rendered[4]!.text.includes('as a second factor on November 24, 2026 at 9:30 AM UTC.'), rendered[4]!.text);
    assert.ok(rendered[5]!.text.startsWith('Hello,') && rendered[5]!.text.includes('join Acme <Labs> on Gatehouse as an admin.') && rendered[5]!.text.includes('within 7 days'), rendered[5]!.text);
    assert.ok(rendered[5]!.html.includes('Acme &lt;Labs&gt;'), 'the organization’s name is escaped in HTML');
    assert.ok(rendered[6]!.text.includes('(hooks.example.com) has failed every delivery since November 20, 2026 at 8:00 AM UTC'), rendered[6]!.text);
    assert.ok(rendered[6]!.text.endsWith('Sent by Gatehouse (https://auth.example.test). This is an automated message; replies are not read.\n'), rendered[6]!.text);
    assert.ok(rendered[7]!.text.includes('Ticket <7> & more') && rendered[7]!.html.includes('Ticket &lt;7&gt; &amp; more'), 'the reason, escaped in HTML only');
    assert.ok(rendered[7]!.text.includes('from November 28, 2026 at 10:00 AM UTC to November 28, 2026 at 10:15 AM UTC'), rendered[7]!.text);
    assert.ok(rendered[9]!.text.includes('invited') && rendered[9]!.text.includes('within 7 days'), rendered[9]!.text);
    assert.ok(rendered[8]!.text.includes('within 10 minutes') && rendered[8]!.text.includes('where you asked: 042817') && rendered[8]!.html.includes('>042817</strong>'), rendered[8]!.text);
  });

  it('renders every template in every language: no key left untranslated, links intact, the page’s language in the HTML', () => {
    for (const locale of LOCALES) {
      const rendered = renderAll(locale);
      for (const [index, mail] of rendered.entries()) {
        const label = `${locale} ${TEMPLATE_NAMES[index]}`;
        for (const part of [mail.subject, mail.text, mail.html]) assert.doesNotMatch(part, /\bmail\.[a-z-]+\.[\w.-]+/, `${label}: a catalog key shows`);
        assert.ok(mail.text.includes('?token=a&b=<c>'), label);
        assert.ok(mail.html.includes('href="https://auth.example.test'), label);
        assert.ok(mail.html.includes(`<html lang="${locale}" dir="ltr">`), label);
        if (locale !== 'en') assert.notEqual(mail.subject, renderAll('en')[index]!.subject, `${label}: the subject is translated`);
      }
    }
    // Each change a security notice can tell of has its own subject and sentence.
    const subjects = SECURITY_CHANGES.map((change) => renderer.render('security-notice', { name: null, change, changedAt: 0, forgotPasswordUrl: url('/x') }, 'de').subject);
    assert.equal(new Set(subjects).size, SECURITY_CHANGES.length);
  });

  it('falls back to a neutral greeting and "an organization" for names the name rule refuses, in the language', () => {
    const mail = renderer.render('organization-invitation', { name: null, organizationName: 'Evil\u202Eorg', role: 'MEMBER', acceptUrl: url('/organizations/invitations/accept'), expiresInMinutes: 60 }, 'de');
    assert.ok(mail.text.startsWith('Hallo,\n'), mail.text);
    assert.ok(mail.text.includes('einer Organisation bei Gatehouse als Mitglied beizutreten'), mail.text);
    assert.ok(!mail.text.includes('Evil'));
  });
});
