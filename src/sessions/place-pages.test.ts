/**
 * The dashboard's sessions with their approximate places: shown in the page's language when
 * GEOIP_DATABASE_FILE names a database (sessions started behind a trusted proxy, so
 * X-Forwarded-For gives each its address), and not at all without one.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { assertHtmlPage } from '../../test/helpers/pages.ts';
import { writeMmdb } from '../../test/helpers/mmdb-writer.ts';

const PASSWORD = 'correct horse battery staple';
const CHROME_ON_LINUX = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';

const DATABASE = writeMmdb([
  {
    cidr: '203.0.113.0/24',
    record: {
      city: { geoname_id: 2_950_159, names: { en: 'Berlin', de: 'Berlin', ja: 'ベルリン' } },
      country: { geoname_id: 2_921_044, iso_code: 'DE', names: { en: 'Germany', de: 'Deutschland', ja: 'ドイツ' } },
      location: { accuracy_radius: 20, latitude: '52.5244', longitude: '13.4105' },
      postal: { code: '10178' },
    },
  },
  { cidr: '198.51.100.0/24', record: { country: { geoname_id: 3_017_382, iso_code: 'FR', names: { en: 'France' } } } },
  // A database is the operator's file, but what it says is still escaped on the page.
  { cidr: '192.0.2.0/24', record: { city: { names: { en: '<img src=x onerror=alert(1)>' } }, country: { iso_code: 'NL', names: { en: 'Netherlands' } } } },
]);

/** A database, and sessions from Berlin, France, a crafted place and this machine's network. */
async function appWithSessions(env: Record<string, string>) {
  const database = await createSqliteDatabase();
  // The sessions' addresses come from X-Forwarded-For: inject()'s peer, 127.0.0.1, is the trusted proxy.
  const t = await createTestApp(database, { env: { TRUST_PROXY: 'loopback', ...env } });
  await createUser(t.services, { email: 'alice@example.com', password: PASSWORD, name: 'Alice' });
  const signIn = async (ip: string) => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/auth',
      headers: { 'content-type': 'application/json', 'user-agent': CHROME_ON_LINUX, 'x-forwarded-for': ip },
      payload: JSON.stringify({ email: 'alice@example.com', password: PASSWORD }),
    });
    assert.equal(response.statusCode, 200, response.body);
    return (response.json() as { token: string }).token;
  };
  await signIn('198.51.100.9');
  await signIn('192.0.2.66');
  await signIn('10.0.0.5');
  const token = await signIn('203.0.113.7');
  const dashboard = async (url: string, headers: Record<string, string> = {}) => {
    const page = await t.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}`, ...headers } });
    assertHtmlPage(page, url);
    return page.body;
  };
  return { t, database, dashboard };
}

/** The dashboard's session rows, each as its text without tags. */
function sessionRows(html: string): string[] {
  return [...html.matchAll(/<li class="session">([\s\S]*?)<\/li>/g)].map(([, row]) => row!.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim());
}

describe('the dashboard’s sessions with GEOIP_DATABASE_FILE', () => {
  let dir: string;
  let database: TestDatabase;
  let t: TestApp;
  let dashboard: (url: string, headers?: Record<string, string>) => Promise<string>;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-geoip-pages-'));
    writeFileSync(join(dir, 'GeoLite2-City.mmdb'), DATABASE);
    ({ t, database, dashboard } = await appWithSessions({ GEOIP_DATABASE_FILE: join(dir, 'GeoLite2-City.mmdb') }));
  });
  after(async () => {
    await t?.close();
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('shows each session’s approximate place in English by default', async () => {
    const html = await dashboard('/dashboard');
    const rows = sessionRows(html);
    assert.equal(rows.length, 4);
    assert.match(rows[0]!, /^Chrome on Linux This device .* IP address 203\.0\.113\.7 Approximate location Berlin, Germany$/);
    assert.ok(html.includes('<dt>Approximate location</dt><dd>Berlin, Germany</dd>'));
    assert.ok(rows.some((row) => row.includes('IP address 198.51.100.9 Approximate location France')));
    // Private addresses are never looked up.
    assert.ok(rows.some((row) => /IP address 10\.0\.0\.5 End$/.test(row)), rows.join('\n'));
    assert.equal(html.match(/Approximate location/g)?.length, 3);
    // Coordinates, postal codes and anything finer than a city stay in the file.
    assert.doesNotMatch(html, /52\.5244|13\.4105|10178/);
  });

  it('names places in the page’s language: German and Japanese', async () => {
    const german = await dashboard('/dashboard?lang=de');
    assert.match(german, /<html lang="de"/);
    assert.ok(german.includes('<dt>Ungefährer Standort</dt><dd>Berlin, Deutschland</dd>'));
    // The database has France's name in English only: Intl names it in German.
    assert.ok(german.includes('<dt>Ungefährer Standort</dt><dd>Frankreich</dd>'));
    assert.doesNotMatch(german, /Germany|Approximate/);

    const japanese = await dashboard('/dashboard', { 'accept-language': 'ja' });
    assert.ok(japanese.includes('<dt>おおよその場所</dt><dd>ベルリン、ドイツ</dd>'));
  });

  it('shows the places on the administrators’ page of the user too, in its language', async () => {
    await createUser(t.services, { email: 'root@example.com', password: PASSWORD, name: 'Root', roles: ['ADMIN'] });
    const signedIn = await t.app.inject({ method: 'POST', url: '/api/auth', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ email: 'root@example.com', password: PASSWORD }) });
    const adminToken = (signedIn.json() as { token: string }).token;
    const alice = await t.services.users.findUserByEmail('alice@example.com');
    assert.ok(alice);
    const page = await t.app.inject({ method: 'GET', url: `/admin/users/${alice.id}?lang=de`, headers: { authorization: `Bearer ${adminToken}` } });
    assertHtmlPage(page, 'admin user page');
    assert.ok(page.body.includes('<dd>Berlin, Deutschland</dd>'), 'Berlin on the admin page, in German');
    assert.equal(page.body.match(/Ungefährer Standort/g)?.length, 3, 'no place for the private address');
  });

  it('escapes what the database says', async () => {
    const html = await dashboard('/dashboard');
    assert.ok(html.includes('<dd>&lt;img src=x onerror=alert(1)&gt;, Netherlands</dd>'));
    assert.doesNotMatch(html, /<img src=x/);
  });
});

describe('the dashboard’s sessions without GEOIP_DATABASE_FILE', () => {
  let database: TestDatabase;
  let t: TestApp;
  let dashboard: (url: string, headers?: Record<string, string>) => Promise<string>;
  before(async () => {
    ({ t, database, dashboard } = await appWithSessions({}));
  });
  after(async () => {
    await t?.close();
    await database?.drop();
  });

  it('shows no place at all', async () => {
    assert.equal(t.services.places.isConfigured, false);
    const html = await dashboard('/dashboard');
    assert.equal(sessionRows(html).length, 4);
    assert.ok(html.includes('<dt>IP address</dt><dd>203.0.113.7</dd>'), 'the sessions are there, with their addresses');
    assert.doesNotMatch(html, /Approximate location|Berlin|Germany|France/);
    assert.doesNotMatch(await dashboard('/dashboard?lang=de'), /Ungefährer Standort|Deutschland/);
  });
});
