/**
 * Branding: the WCAG contrast arithmetic, the configuration's refusals (low contrast, another
 * origin's logo, bad files and contacts), and a branded instance: its name, logo, colours and
 * stylesheet on the pages (all from our own origin, the files served with a sandboxing CSP and
 * immutable caching), the support contact on the error page, and its name in the mails.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { contrastRatio, parseHexColor } from './contrast.ts';
import { loadConfig } from '../modules.ts';
import { createMailRenderer } from '../mail/templates.ts';
import { mailTemplates } from '../../test/helpers/mail-templates.ts';
import { createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, type TestApp } from '../../test/helpers/app.ts';
import { assertHtmlPage } from '../../test/helpers/pages.ts';

const BASE_ENV = { NODE_ENV: 'test', AUTH_SECRET: 'x'.repeat(43), AUTH_URL: 'https://auth.example.test', DATABASE_URL: 'sqlite::memory:' };

function problemsOf(env: Record<string, string>): string {
  try {
    loadConfig({ ...BASE_ENV, ...env });
    return '';
  } catch (error) {
    return (error as Error).message;
  }
}

describe('contrast', () => {
  it('computes WCAG ratios', () => {
    assert.equal(contrastRatio([0, 0, 0], [255, 255, 255]), 21);
    assert.equal(contrastRatio(parseHexColor('#fff')!, parseHexColor('#FFFFFF')!), 1);
    // The classic AA boundary: #767676 on white passes (4.54), #777777 does not (4.48).
    assert.ok(contrastRatio(parseHexColor('#767676')!, [255, 255, 255]) >= 4.5);
    assert.ok(contrastRatio(parseHexColor('#777777')!, [255, 255, 255]) < 4.5);
    for (const bad of ['red', '#12', '#1234567', 'rgb(0,0,0)', '#ggg']) assert.equal(parseHexColor(bad), null, bad);
  });
});

describe('branding configuration', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-brand-'));
    writeFileSync(join(dir, 'logo.svg'), '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>');
    writeFileSync(join(dir, 'logo.gif'), 'GIF89a');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('accepts a complete brand', () => {
    assert.equal(problemsOf({ BRAND_NAME: 'Acme', BRAND_PRIMARY_COLOR: '#0b5394', BRAND_PRIMARY_COLOR_DARK: '#8ab4f8', BRAND_LOGO_FILE: join(dir, 'logo.svg'), SUPPORT_EMAIL: 'help@acme.example', SUPPORT_URL: 'https://help.acme.example/auth' }), '');
    assert.equal(problemsOf({ BRAND_LOGO_URL: '/brand/logo.svg' }), '');
    assert.equal(problemsOf({ BRAND_LOGO_URL: 'https://auth.example.test/brand/logo.svg' }), '');
  });

  it('refuses what would fail WCAG AA, load from another origin, or is no file, address or link', () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [{ BRAND_PRIMARY_COLOR: '#7fb3ff' }, /BRAND_PRIMARY_COLOR #7fb3ff gives the white button text .* contrast of \d\.\d\d:1; WCAG AA needs 4\.5:1 \(choose a darker colour\)/],
      [{ BRAND_PRIMARY_COLOR: 'blue' }, /BRAND_PRIMARY_COLOR must be a colour as #rrggbb/],
      [{ BRAND_PRIMARY_COLOR_DARK: '#0b5394' }, /BRAND_PRIMARY_COLOR_DARK #0b5394 gives .* \(choose a lighter colour\)/],
      [{ BRAND_LOGO_URL: 'https://cdn.example.com/logo.png' }, /BRAND_LOGO_URL must be on Gatehouse's own origin/],
      [{ BRAND_LOGO_URL: '//cdn.example.com/logo.png' }, /BRAND_LOGO_URL must be on Gatehouse's own origin/],
      [{ BRAND_LOGO_FILE: join(dir, 'missing.svg') }, /BRAND_LOGO_FILE: no such file/],
      [{ BRAND_LOGO_FILE: join(dir, 'logo.gif') }, /BRAND_LOGO_FILE must be a \.svg, \.png, \.webp file/],
      [{ BRAND_STYLESHEET: join(dir, 'logo.svg') }, /BRAND_STYLESHEET must be a \.css file/],
      [{ SUPPORT_EMAIL: 'not an address' }, /SUPPORT_EMAIL must be an e-mail address/],
      [{ SUPPORT_URL: 'javascript:alert(1)' }, /SUPPORT_URL must be an https URL or a path/],
      [{ BRAND_NAME: 'Acme\u202Eevil' }, /BRAND_NAME must not contain control/],
      [{ BRAND_NAME: 'A'.repeat(61) }, /BRAND_NAME is longer than 60 characters/],
    ];
    for (const [env, expected] of cases) assert.match(problemsOf(env), expected, JSON.stringify(env));
  });
});

describe('a branded instance', () => {
  let database: TestDatabase;
  let test: TestApp;
  let dir: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-brand-'));
    writeFileSync(join(dir, 'logo.svg'), '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>alert(1)</script></svg>');
    writeFileSync(join(dir, 'brand.css'), '.brand { letter-spacing: 0.1em; }\n');
    database = await createSqliteDatabase();
    test = await createTestApp(database, {
      env: { BRAND_NAME: 'Acme & Co', BRAND_PRIMARY_COLOR: '#0B5394', BRAND_LOGO_FILE: join(dir, 'logo.svg'), BRAND_STYLESHEET: join(dir, 'brand.css'), SUPPORT_EMAIL: 'help@acme.example' },
    });
  });
  after(async () => {
    await test?.close();
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  const urlsIn = (html: string) => [...html.matchAll(/(?:href|src)="([^"]*)"/g)].map((match) => match[1]!.replace(/&amp;/g, '&'));

  it('shows its name, logo, colours and stylesheet, every one from our own origin', async () => {
    const page = await test.app.inject({ method: 'GET', url: '/auth/signin' });
    assertHtmlPage(page, 'branded sign-in page');
    assert.match(page.body, /<title>Log in · Acme &amp; Co<\/title>/);
    assert.match(page.body, /<img class="brand-logo" src="\/assets\/brand\/logo\?v=[\w-]+" alt="Acme &amp; Co">/);
    assert.match(page.body, /<footer class="site-footer">\s*<p>Acme &amp; Co<\/p>/);
    const stylesheets = [...page.body.matchAll(/<link rel="stylesheet" href="([^"]+)">/g)].map((match) => match[1]!);
    assert.equal(stylesheets[0], '/assets/gatehouse.css');
    assert.match(stylesheets[1]!, /^\/assets\/brand\/theme\.css\?v=/);
    assert.match(stylesheets[2]!, /^\/assets\/brand\/custom\.css\?v=/);
    for (const url of urlsIn(page.body)) assert.ok(url.startsWith('/') && !url.startsWith('//'), `${url} is on our own origin`);

    const theme = await test.app.inject({ method: 'GET', url: stylesheets[1]! });
    assert.equal(theme.statusCode, 200);
    assert.match(String(theme.headers['content-type']), /^text\/css/);
    assert.match(theme.body, /--accent: #0b5394;/);
    assert.equal(theme.headers['cache-control'], 'public, max-age=31536000, immutable');
    // Without its version (or with an old one) the file is not kept for good.
    const unversioned = await test.app.inject({ method: 'GET', url: stylesheets[1]!.replace(/\?v=.*$/, '') });
    assert.equal(unversioned.statusCode, 200);
    assert.equal(unversioned.headers['cache-control'], 'no-cache');
    const stale = await test.app.inject({ method: 'GET', url: stylesheets[1]!.replace(/\?v=.*$/, '?v=old') });
    assert.equal(stale.headers['cache-control'], 'no-cache');
    const custom = await test.app.inject({ method: 'GET', url: stylesheets[2]! });
    assert.match(custom.body, /letter-spacing/);

    const logoUrl = /<img class="brand-logo" src="([^"]+)"/.exec(page.body)![1]!;
    const logo = await test.app.inject({ method: 'GET', url: logoUrl });
    assert.equal(logo.statusCode, 200);
    assert.equal(logo.headers['content-type'], 'image/svg+xml');
    assert.match(String(logo.headers['content-security-policy']), /sandbox/, 'an SVG opened on its own runs no script');
    const again = await test.app.inject({ method: 'GET', url: logoUrl, headers: { 'if-none-match': String(logo.headers.etag) } });
    assert.equal(again.statusCode, 304);
  });

  it('puts its name into translated sentences, not only the title', async () => {
    const page = await test.app.inject({ method: 'GET', url: '/auth/account-deleted?lang=de' });
    assertHtmlPage(page, 'account-deleted page');
    assert.match(page.body, /<html lang="de"/);
    assert.match(page.body, /· Acme &amp; Co<\/title>/);
    assert.match(page.body, /was Acme &amp; Co über Sie gespeichert hatte/, 'the brand inside a German sentence, escaped');
    assert.doesNotMatch(page.body, /Gatehouse/, 'the default name appears nowhere');
    const home = await test.app.inject({ method: 'GET', url: '/?lang=fr' });
    assert.match(home.body, /<h1>Acme &amp; Co<\/h1>\s*<p class="lead">Acme &amp; Co connecte les personnes/);
    assert.doesNotMatch(home.body, /Gatehouse/);
  });

  it('sends people to support from the error page', async () => {
    const page = await test.app.inject({ method: 'GET', url: '/auth/error?error=Configuration&lang=fr' });
    assert.match(page.body, /Si le problème persiste, écrivez à <a href="mailto:help%40acme\.example">help@acme\.example<\/a>\./);
  });

  it('names itself in the mails', () => {
    const renderer = createMailRenderer({ authUrl: 'https://auth.example.test', brandName: 'Acme & Co', translations: test.services.translations, templates: mailTemplates });
    const mail = renderer.render('password-reset', { name: 'Ada', resetUrl: 'https://auth.example.test/auth/reset-password?token=t', expiresInMinutes: 30 }, 'en');
    assert.equal(mail.subject, 'Reset your Acme & Co password');
    assert.match(mail.html, /Acme &amp; Co/);
    assert.match(mail.text, /Sent by Acme & Co/);
    assert.doesNotMatch(mail.text, /Gatehouse/);
  });
});
