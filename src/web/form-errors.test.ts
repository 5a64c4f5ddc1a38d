/**
 * A form shown again after an error (form-errors.ts and the partials error-summary.eta and
 * field-error.eta), and the password fields' inline script with the CSP that allows it (render.ts).
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { formView, type FormView } from './form-errors.ts';
import { createPageRenderer, createScriptNonce, ENGLISH_PAGE, PASSWORD_FIELD_SCRIPT, pageResponseHeaders, sendPage } from './render.ts';
import { fixedPageContext } from './page-context.ts';

describe('formView', () => {
  it('is a fresh form without problems: no summary, nothing marked, focus on the first empty field', () => {
    const form = formView({ fieldOrder: ['email', 'password'] });
    assert.deepEqual(form.summary, []);
    assert.equal(form.code, null);
    assert.equal(form.value('email'), '');
    assert.equal(form.fieldError('email'), null);
    assert.equal(form.attributes('email'), ' autofocus');
    assert.equal(form.attributes('password', 'password-hint'), ' aria-describedby="password-hint"');
  });

  it('puts a problem of two fields beside the first, links to it, marks both and focuses the one to type again', () => {
    const form = formView({ fieldOrder: ['email', 'password'], problems: [{ message: 'Wrong email or password.', fields: ['email', 'password'] }], code: 'INVALID_CREDENTIALS', values: { email: 'ann@example.com' } });
    assert.deepEqual(form.summary, [{ message: 'Wrong email or password.', href: '#email' }]);
    assert.equal(form.code, 'INVALID_CREDENTIALS');
    assert.deepEqual(form.fieldError('email'), { id: 'email-error', message: 'Wrong email or password.' });
    assert.equal(form.fieldError('password'), null, 'said once');
    assert.equal(form.attributes('email'), ' aria-invalid="true" aria-describedby="email-error"');
    assert.equal(form.attributes('password'), ' aria-invalid="true" aria-describedby="email-error" autofocus', 'the address was kept: the password is what to type');
    assert.equal(form.value('email'), 'ann@example.com');
    assert.equal(form.value('password'), '');
  });

  it('keeps a problem of no field in the summary only, and ignores fields the form does not have', () => {
    const form = formView({ fieldOrder: ['email'], problems: [{ message: 'Too many attempts.', fields: [] }, { message: 'Odd.', fields: ['nope'] }], code: 'RATE_LIMITED' });
    assert.deepEqual(form.summary, [
      { message: 'Too many attempts.', href: null },
      { message: 'Odd.', href: null },
    ]);
    assert.equal(form.attributes('email'), ' autofocus');
    assert.equal(form.fieldError('email'), null);
  });

  it('links a problem by its field\'s label when its message is beside the field; a second problem of that field keeps its message in the summary', () => {
    const form = formView({
      fieldOrder: ['name', 'uris'],
      problems: [{ message: 'Name: enter one.', fields: ['name'] }, { message: 'URI 1: use https.', fields: ['uris'] }, { message: 'URI 2: no custom scheme.', fields: ['uris'] }, { message: 'Too many.', fields: [] }],
      labels: { name: 'Name', uris: 'Redirect URIs' },
    });
    assert.deepEqual(form.summary, [
      { message: 'Name', href: '#name' },
      { message: 'Redirect URIs', href: '#uris' },
      { message: 'URI 2: no custom scheme.', href: '#uris' },
      { message: 'Too many.', href: null },
    ]);
    assert.deepEqual(form.fieldError('uris'), { id: 'uris-error', message: 'URI 1: use https.' });
  });

  it('describes a field by its error first, then its hints', () => {
    const form = formView({ fieldOrder: ['name', 'password'], problems: [{ message: 'Too short.', fields: ['password'] }], values: { name: 'Ann' } });
    assert.equal(form.attributes('password', 'password-hint'), ' aria-invalid="true" aria-describedby="password-error password-hint" autofocus');
    assert.equal(form.attributes('name'), '');
    assert.equal(form.value('constructor'), '', 'own values only');
  });
});

describe('the form partials', () => {
  let dir: string;
  let render: (form: FormView, locale?: string) => string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-form-partials-'));
    writeFileSync(
      join(dir, 'test-form.eta'),
      [
        "<% layout('layout') %>",
        "<%~ include('error-summary', it) %>",
        '<div class="field"><label for="email">Email</label>',
        "<%~ include('field-error', { ...it, field: 'email' }) %>",
        '<input id="email" name="email" type="email" value="<%= it.form.value(\'email\') %>"<%~ it.form.attributes(\'email\') %>></div>',
        '<div class="field" data-password-field><label for="password">Password</label>',
        "<%~ include('field-error', { ...it, field: 'password' }) %>",
        '<input id="password" name="password" type="password"<%~ it.form.attributes(\'password\') %>></div>',
        '',
      ].join('\n'),
    );
    const pages = createPageRenderer<{ 'test-form': { form: FormView } }>([join(dir, 'test-form.eta')]);
    render = (form) => pages.html(fixedPageContext(), 'test-form', { title: 'Test', form });
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('renders the summary as an alert with a heading and links, each message by its field, and escapes what it shows', () => {
    const html = render(
      formView({
        fieldOrder: ['email', 'password'],
        problems: [{ message: 'Enter a valid <email>.', fields: ['email'] }, { message: 'Too many attempts.', fields: [] }],
        code: 'VALIDATION_ERROR',
        values: { email: '"><script>alert(1)</script>' },
      }),
    );
    assert.match(html, /<div class="alert alert-error error-summary" role="alert" aria-labelledby="error-summary-title">\s*<h2 class="error-summary-title" id="error-summary-title">There is a problem<\/h2>/);
    assert.match(html, /<li><a href="#email">Enter a valid &lt;email&gt;\.<\/a><\/li>\s*<li>Too many attempts\.<\/li>/);
    assert.match(html, /<p class="code">Error code: <code>VALIDATION_ERROR<\/code><\/p>/);
    assert.match(html, /<p class="field-error" id="email-error"><span class="visually-hidden">Error:<\/span> Enter a valid &lt;email&gt;\.<\/p>\s*<input id="email"/);
    assert.match(html, /<input id="email" name="email" type="email" value="&quot;&gt;&lt;script&gt;alert\(1\)&lt;\/script&gt;" aria-invalid="true" aria-describedby="email-error" autofocus>/);
    assert.doesNotMatch(html, /<script>alert/);
    assert.doesNotMatch(html, /password-error/);
  });

  it('renders nothing of the kind for a fresh form', () => {
    const html = render(formView({ fieldOrder: ['email', 'password'] }));
    assert.doesNotMatch(html, /role="alert"|error-summary|field-error|aria-invalid/);
  });
});

describe('the password fields’ script', () => {
  it('is inlined, with its texts, only in a page that has a password field, and its hash is that of its bytes', () => {
    assert.equal(PASSWORD_FIELD_SCRIPT.hash, `'sha256-${createHash('sha256').update(PASSWORD_FIELD_SCRIPT.source).digest('base64')}'`);
    assert.ok(PASSWORD_FIELD_SCRIPT.source.length < 4000, 'kept small');
    assert.doesNotMatch(PASSWORD_FIELD_SCRIPT.source, /fetch|XMLHttpRequest|import|eval|innerHTML|sendBeacon|WebSocket/, 'no network, no HTML from strings');

    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-script-'));
    try {
      writeFileSync(join(dir, 'with-field.eta'), "<% layout('layout') %>\n<div class=\"field\" data-password-field><input id=\"p\" type=\"password\"></div>\n");
      writeFileSync(join(dir, 'without-field.eta'), "<% layout('layout') %>\n<p>Nothing</p>\n");
      const pages = createPageRenderer<{ 'with-field': Record<never, never>; 'without-field': Record<never, never> }>([join(dir, 'with-field.eta'), join(dir, 'without-field.eta')]);
      const withField = pages.html(fixedPageContext(), 'with-field', { title: 'With' });
      const inline = /<script data-show="Show password" data-hide="Hide password" data-caps-lock="Caps Lock is on">([\s\S]*?)<\/script>/.exec(withField);
      assert.ok(inline, withField);
      assert.equal(`'sha256-${createHash('sha256').update(inline[1]!).digest('base64')}'`, PASSWORD_FIELD_SCRIPT.hash, 'the page carries exactly the hashed bytes');
      assert.doesNotMatch(pages.html(fixedPageContext(), 'without-field', { title: 'Without' }), /<script/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is allowed by its hash on the page that carries it, with a nonce where the page has one too, and nowhere else', async () => {
    const withScript = `<p>x</p><script data-show="a">${PASSWORD_FIELD_SCRIPT.source}</script>`;
    const csp = (headers: Readonly<Record<string, string>>) => headers['content-security-policy']!;
    assert.match(csp(pageResponseHeaders({ html: '<p>no script</p>' })), /script-src 'none';/);
    assert.ok(csp(pageResponseHeaders({ html: withScript })).includes(`script-src ${PASSWORD_FIELD_SCRIPT.hash};`));
    assert.doesNotMatch(csp(pageResponseHeaders({ html: withScript })), /unsafe-inline|connect-src/);
    const nonce = createScriptNonce();
    const both = csp(pageResponseHeaders({ html: withScript, scriptNonce: nonce, formActionOrigins: ['https://github.com'] }));
    assert.ok(both.includes(`script-src 'nonce-${nonce}' ${PASSWORD_FIELD_SCRIPT.hash};`), both);
    assert.ok(both.includes("connect-src 'self'") && both.includes("form-action 'self' https://github.com"), both);

    const app: FastifyInstance = Fastify();
    app.get('/with', async (_request, reply) => sendPage(reply, withScript));
    app.get('/without', async (_request, reply) => sendPage(reply, '<p>none</p>'));
    try {
      assert.ok(String((await app.inject({ url: '/with' })).headers['content-security-policy']).includes(PASSWORD_FIELD_SCRIPT.hash));
      assert.match(String((await app.inject({ url: '/without' })).headers['content-security-policy']), /script-src 'none'/);
    } finally {
      await app.close();
    }
    // The English frame the renderer falls back to has the texts too.
    assert.equal(ENGLISH_PAGE.t('web.form.showPassword'), 'Show password');
  });
});
