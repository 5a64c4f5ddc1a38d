/**
 * The request-level page context (web/page-context.ts) with the renderer (web/render.ts): a page
 * sends with its name and model only; its CSRF token is issued once, and only when a template
 * prints it (also through partials and the layout, which Eta hands a copy of the data); its
 * scripts run under the nonce its CSP names; a request no language hook saw negotiates one.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { createPageRenderer, ENGLISH_PAGE, type PageLanguage } from './render.ts';
import { fixedPageContext, registerPageContext } from './page-context.ts';

interface TestPages {
  'plain-page': { note: string };
  'form-page': Record<never, never>;
  'script-page': Record<never, never>;
}

describe('the page context', () => {
  let dir: string;
  let app: FastifyInstance;
  let issued = 0;
  const negotiated: PageLanguage = { ...ENGLISH_PAGE, locale: 'de' };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-page-context-'));
    writeFileSync(join(dir, 'plain-page.eta'), "<% layout('layout') %>\n<p><%= it.note %></p>\n<%~ include('plain-part', { extra: 1 }) %>");
    writeFileSync(join(dir, 'plain-part.eta'), '<span><%= it.note %> <%= it.extra %></span>');
    writeFileSync(join(dir, 'form-page.eta'), "<% layout('layout') %>\n<%~ include('form-part', it) %><input name=\"again\" value=\"<%= it.csrfToken %>\">");
    writeFileSync(join(dir, 'form-part.eta'), '<input type="hidden" name="csrfToken" value="<%= it.csrfToken %>">');
    writeFileSync(join(dir, 'script-page.eta'), "<% layout('layout') %>\n<p>script</p>");
    const pages = createPageRenderer<TestPages>([join(dir, 'plain-page.eta'), join(dir, 'plain-part.eta'), join(dir, 'form-page.eta'), join(dir, 'form-part.eta'), join(dir, 'script-page.eta')]);
    app = Fastify();
    registerPageContext(app, {
      issueCsrfToken: () => `token-${++issued}`,
      languageOf: () => negotiated,
    });
    app.get('/plain', async (_request, reply) => pages.send(reply, 'plain-page', { title: 'Plain', note: 'hello' }));
    app.get('/form', async (_request, reply) => pages.send(reply, 'form-page', { title: 'Form' }, { status: 422 }));
    app.get('/script', async (_request, reply) => pages.send(reply, 'script-page', { title: 'Script', scripts: ['/assets/x.js'] }));
    app.get('/link', async (_request, reply) => pages.send(reply, 'plain-page', { title: 'Link', note: 'token in URL' }, { urlHoldsToken: true }));
    await app.ready();
  });
  after(async () => {
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('issues no CSRF token for a page that prints none, through partials and the layout', async () => {
    const before = issued;
    const response = await app.inject('/plain');
    assert.equal(response.statusCode, 200);
    assert.match(response.body, /<span>hello 1<\/span>/, 'a partial reads the model and its own data');
    assert.equal(issued, before, 'no token was made');
  });

  it('issues one token per request, the same wherever the page prints it', async () => {
    const before = issued;
    const response = await app.inject('/form');
    assert.equal(response.statusCode, 422, 'the status given');
    assert.equal(issued, before + 1);
    const values = [...response.body.matchAll(/value="(token-\d+)"/g)].map((match) => match[1]);
    assert.deepEqual(values, [`token-${before + 1}`, `token-${before + 1}`]);
  });

  it('runs a page’s scripts under the nonce its CSP names, and only such a page gets one', async () => {
    const response = await app.inject('/script');
    const nonce = /'nonce-([^']+)'/.exec(String(response.headers['content-security-policy']))?.[1];
    assert.ok(nonce !== undefined, 'the CSP names a nonce');
    assert.ok(response.body.includes(`<script src="/assets/x.js" nonce="${nonce}" defer></script>`), response.body);
    assert.doesNotMatch(String((await app.inject('/plain')).headers['content-security-policy']), /nonce-/);
  });

  it('negotiates the language of a request no language hook saw, and says which', async () => {
    const response = await app.inject('/plain');
    assert.equal(response.headers['content-language'], 'de');
    assert.match(response.body, /<html lang="de"/);
  });

  it('keeps the Referer from a page whose URL holds a token', async () => {
    assert.equal((await app.inject('/link')).headers['referrer-policy'], 'no-referrer');
    assert.equal((await app.inject('/plain')).headers['referrer-policy'], 'same-origin');
  });

  it('renders outside a route with a fixed context that has no CSRF token to give', () => {
    const pages = createPageRenderer<TestPages>([join(dir, 'form-page.eta'), join(dir, 'form-part.eta')]);
    assert.throws(() => pages.html(fixedPageContext(), 'form-page', { title: 'Outside' }), /no CSRF token/);
  });
});
