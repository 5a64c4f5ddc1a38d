/**
 * A browser asking for an address no route serves gets a branded page in its language (404), with
 * the code for support; the JSON API, a caller asking for JSON and a caller that states no
 * preference keep the JSON error.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, type TestApp } from '../../test/helpers/app.ts';
import { wantsPage } from './forbidden-page.ts';

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

describe('status pages for browsers', () => {
  let database: TestDatabase;
  let t: TestApp;
  before(async () => {
    database = await createSqliteDatabase();
    t = await createTestApp(database);
  });
  after(async () => {
    await t?.close();
    await database?.drop();
  });

  it('answers a browser with a branded 404 page in its language, with the code', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/no/such/page', headers: { accept: BROWSER_ACCEPT } });
    assert.equal(page.statusCode, 404);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    assert.match(page.body, /<h1>Page not found<\/h1>/);
    assert.match(page.body, /<code>NOT_FOUND<\/code>/);
    assert.match(page.body, /href="\/"/, 'a way back');
    assert.match(String(page.headers['content-security-policy']), /default-src/);
    const german = await t.app.inject({ method: 'GET', url: '/nirgends', headers: { accept: BROWSER_ACCEPT, 'accept-language': 'de' } });
    assert.match(german.body, /<h1>Seite nicht gefunden<\/h1>/);
    assert.match(german.body, /<html lang="de"/);
    const japanese = await t.app.inject({ method: 'GET', url: '/nowhere?lang=ja', headers: { accept: BROWSER_ACCEPT } });
    assert.match(japanese.body, /ページが見つかりません/);
    // The footer's language switcher, as on every page; the choice is remembered, unless another site linked here.
    assert.match(japanese.body, /<a href="\/nowhere\?lang=de" hreflang="de" lang="de">Deutsch<\/a>/);
    assert.equal(japanese.cookies.find((cookie) => cookie.name === 'gatehouse.lang')?.value, 'ja');
    const linked = await t.app.inject({ method: 'GET', url: '/nowhere?lang=ja', headers: { accept: BROWSER_ACCEPT, 'sec-fetch-site': 'cross-site' } });
    assert.match(linked.body, /ページが見つかりません/, 'a link from another site still answers in its language');
    assert.equal(linked.cookies.find((cookie) => cookie.name === 'gatehouse.lang'), undefined, 'but sets no cookie');
  });

  it('links the switcher of a 404 page only to a path of this origin, whatever address was asked for', async () => {
    for (const url of ['//evil.example/x', '/\\evil.example/x', '//evil.example/x?lang=de&next=1']) {
      const page = await t.app.inject({ method: 'GET', url, headers: { accept: BROWSER_ACCEPT } });
      assert.equal(page.statusCode, 404, url);
      const links = [...page.body.matchAll(/<a href="([^"]*)" hreflang=/g)].map((match) => match[1]!);
      assert.equal(links.length, 5, `${url}: the other five languages`);
      for (const link of links) assert.match(link, /^\/(?![/\\])/, `${url}: ${link} is a path of this origin`);
    }
  });

  it('keeps the JSON error for the API, for JSON callers, for other methods and without an Accept header', async () => {
    for (const [method, url, accept] of [
      ['GET', '/api/auth/no-such-endpoint', BROWSER_ACCEPT],
      ['GET', '/no/such/page', 'application/json'],
      ['GET', '/no/such/page', 'application/json, text/html'],
      ['GET', '/no/such/page', undefined],
      ['POST', '/no/such/page', BROWSER_ACCEPT],
    ] as const) {
      const answer = await t.app.inject({ method, url, headers: accept === undefined ? {} : { accept } });
      assert.equal(answer.statusCode, 404, `${method} ${url} ${accept}`);
      assert.deepEqual(answer.json().error, 'NOT_FOUND', `${method} ${url} ${accept}`);
    }
  });

  it('reads what a browser asks for (wantsPage)', () => {
    const request = (method: string, url: string, accept?: string) => ({ method, url, headers: accept === undefined ? {} : { accept } }) as never;
    assert.equal(wantsPage(request('GET', '/x', BROWSER_ACCEPT)), true);
    assert.equal(wantsPage(request('HEAD', '/x', 'text/html')), true);
    assert.equal(wantsPage(request('GET', '/API/x', BROWSER_ACCEPT)), false);
    assert.equal(wantsPage(request('GET', '/x', '*/*')), false);
    assert.equal(wantsPage(request('DELETE', '/x', BROWSER_ACCEPT)), false);
  });
});
