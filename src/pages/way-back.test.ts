/**
 * Issue 32.5: when the old way back cannot work, Gatehouse says so. A signed-in visitor whom an
 * app on another host (a trusted origin the session cookie never reaches) sends to the sign-in
 * page again is told, in the page's language, that the app must sign people in with OpenID
 * Connect, instead of being shown the form that would only bring them back. An app on Gatehouse's
 * own host (another port: cookies go by host) and a path of ours keep the usual page.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { assertHtmlPage } from '../../test/helpers/pages.ts';

const PASSWORD = 'correct horse battery staple';

describe('the sign-in page, when an app on another host sends a signed-in visitor back', () => {
  let database: TestDatabase;
  let t: TestApp;
  let sameHostApp: string;
  const otherHostApp = 'https://app.example.com';

  before(async () => {
    database = await createSqliteDatabase();
    const probe = new URL('http://localhost:3000');
    sameHostApp = `http://${probe.hostname}:5173`;
    t = await createTestApp(database, { env: { AUTH_URL: probe.origin, TRUSTED_ORIGINS: `${otherHostApp},${sameHostApp}` } });
    await createUser(t.services, { email: 'ada@example.com', password: PASSWORD });
  });
  after(async () => {
    await t?.close();
    await database?.drop();
  });

  async function signedInBrowser(): Promise<CookieJar> {
    const jar = new CookieJar();
    const signIn = await t.app.inject({ method: 'POST', url: '/api/auth/signin', headers: { origin: 'http://localhost:3000' }, payload: { email: 'ada@example.com', password: PASSWORD } });
    assert.equal(signIn.statusCode, 200, signIn.body);
    return jar.store(signIn);
  }
  const signInPage = (jar: CookieJar | null, callbackUrl: string, language?: string) =>
    t.app.inject({ method: 'GET', url: `/auth/signin?callbackUrl=${encodeURIComponent(callbackUrl)}`, headers: { ...(jar && { cookie: jar.header() }), ...(language && { 'accept-language': language }) } });

  it('tells a signed-in visitor that the app on another host must use OpenID Connect, and shows no form', async () => {
    const jar = await signedInBrowser();
    const page = await signInPage(jar, `${otherHostApp}/dashboard`);
    assertHtmlPage(page, 'the way back cannot work');
    assert.match(page.body, /id="return-cannot-work"/);
    assert.match(page.body, /logged in as <strong>ada@example\.com<\/strong>, and <strong>app\.example\.com<\/strong> sent you here/);
    assert.match(page.body, /OpenID Connect/);
    assert.doesNotMatch(page.body, /action="\/api\/auth\/signin"/, 'no sign-in form that would only loop');
    assert.match(page.body, /<a href="\/dashboard">Go to your dashboard<\/a>/);
  });

  it('says it in the page’s language', async () => {
    const jar = await signedInBrowser();
    const page = await signInPage(jar, `${otherHostApp}/dashboard`, 'de');
    assert.match(page.body, /<html lang="de"/);
    assert.match(page.body, /und <strong>app\.example\.com<\/strong> hat Sie zur erneuten Anmeldung hierher geschickt/);
  });

  it('keeps the usual page for an app on its own host, for a path of ours, and for a visitor not signed in', async () => {
    const jar = await signedInBrowser();
    for (const callbackUrl of [`${sameHostApp}/dashboard`, '/dashboard']) {
      const page = await signInPage(jar, callbackUrl);
      assert.doesNotMatch(page.body, /return-cannot-work/, callbackUrl);
      assert.match(page.body, /already logged in as <strong>ada@example\.com<\/strong>/, callbackUrl);
      assert.match(page.body, /action="\/api\/auth\/signin"/, callbackUrl);
    }
    const anonymous = await signInPage(null, `${otherHostApp}/dashboard`);
    assert.doesNotMatch(anonymous.body, /return-cannot-work/);
    assert.match(anonymous.body, /action="\/api\/auth\/signin"/, 'the first way there is a sign-in like any other');
  });
});
