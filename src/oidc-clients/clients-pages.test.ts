/**
 * `/admin/clients` through `app.inject()` on the real app: ADMIN only (sign-in for nobody, the 403
 * page for a non-admin), the admin frame and page checks, registering a client through the form
 * with its CSRF token (the secret shown once on the answer to the post, never in a URL), a form
 * the rules refuse sent back filled in, editing, rotating and deleting through the client's page.
 */
import { describe, it, before } from 'node:test';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { backends } from '../../test/helpers/databases.ts';
import { createUser, useTestApp } from '../../test/helpers/app.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { assertHtmlPage, hiddenValue, unescapeHtml } from '../../test/helpers/pages.ts';
import { readMessages } from '../i18n/catalog.ts';
import { clientSecretMatches } from './clients.service.ts';
import { CLIENTS_ERROR_CODES, CLIENTS_NOTICE_CODES, PROBLEM_REASONS } from './clients-pages.messages.ts';

const PASSWORD = 'correct horse battery staple';
const FORM = 'application/x-www-form-urlencoded';
const WEB = 'https://app.example.com/callback';

/** The value of the readonly text field `id` (the secret page's). */
function fieldValue(html: string, id: string): string {
  const match = new RegExp(`<input id="${id}" type="text" value="([^"]*)"`).exec(html);
  assert.ok(match, `field ${id}`);
  return unescapeHtml(match[1]!);
}

/** The codes of the error alerts a page shows; one shown without its code counts as ''. */
const alertCodes = (html: string) => [...html.matchAll(/role="alert"[^>]*>([\s\S]*?)<\/div>/g)].map((m) => /<code>([^<]*)<\/code>/.exec(m[1]!)?.[1] ?? '');

it('has an English text for every code and every reason of the rules (the start checks the other languages against English)', () => {
  const english = readMessages(join(import.meta.dirname, 'messages')).en ?? {};
  const keys = [
    ...[...CLIENTS_NOTICE_CODES].map((code) => `oidc-clients.notice.${code}`),
    ...[...CLIENTS_ERROR_CODES, 'default'].map((code) => `oidc-clients.error.${code}`),
    ...Object.keys(PROBLEM_REASONS).map((reason) => `oidc-clients.problem.${reason}`),
  ];
  assert.deepEqual(keys.filter((key) => !Object.hasOwn(english, key)), []);
});

for (const backend of await backends()) {
  describe(`client registry pages on ${backend.name}`, { skip: backend.skip }, () => {
    const t = useTestApp(backend);
    let origin: string;
    let admin: CookieJar;
    let plain: CookieJar;

    async function signIn(email: string, roles: string[]): Promise<CookieJar> {
      await createUser(t.services, { email, password: PASSWORD, roles });
      const response = await t.app.inject({ method: 'POST', url: '/api/auth/signin', payload: { email, password: PASSWORD } });
      assert.equal(response.statusCode, 200, response.body);
      return new CookieJar().store(response);
    }

    before(async () => {
      origin = new URL(t.config.authUrl).origin;
      admin = await signIn('ada@example.com', ['ADMIN']);
      plain = await signIn('paul@example.com', []);
    });

    async function get(url: string, jar?: CookieJar) {
      const response = await t.app.inject({ method: 'GET', url, headers: jar ? { cookie: jar.header() } : {} });
      jar?.store(response);
      return response;
    }

    async function post(url: string, jar: CookieJar, fields: Array<[string, string]>) {
      const response = await t.app.inject({ method: 'POST', url, headers: { 'content-type': FORM, origin, cookie: jar.header() }, payload: new URLSearchParams(fields).toString() });
      jar.store(response);
      return response;
    }

    /** Loads the page, then posts its form with the page's CSRF token. */
    async function submit(pageUrl: string, action: string, fields: Array<[string, string]>, jar = admin): Promise<LightMyRequestResponse> {
      const page = await get(pageUrl, jar);
      assert.equal(page.statusCode, 200, page.body);
      return post(action, jar, [['csrfToken', hiddenValue(page.body, 'csrfToken')], ...fields]);
    }

    const rowOf = (id: string) => t.services.storage.db.selectFrom('oidc_clients').selectAll().where('id', '=', id).executeTakeFirst();

    it('is for admins only', async () => {
      const anonymous = await get('/admin/clients');
      assert.equal(anonymous.statusCode, 303);
      assert.match(String(anonymous.headers.location), /^\/auth\/signin\?callbackUrl=\/admin\/clients$/);
      assertHtmlPage(await get('/admin/clients', plain), 'non-admin', 403);
      const forged = await post('/admin/clients', plain, [['csrfToken', hiddenValue((await get('/auth/signout', plain)).body, 'csrfToken')], ['name', 'X']]);
      assert.equal(forged.statusCode, 403);
      assert.equal((await t.services.oidcClients.list()).length, 0);
    });

    it('renders the list with the register form in the admin frame', async () => {
      const page = await get('/admin/clients', admin);
      assertHtmlPage(page, 'clients page');
      assert.match(page.body, /<a href="\/admin\/clients" aria-current="page">Clients<\/a>/);
      assert.match(page.body, /No clients are registered yet/);
      assert.match(page.body, /<input id="grant-0" name="grantTypes" type="checkbox" value="authorization_code" checked>/);
      assert.match(page.body, /<input id="grant-2" name="grantTypes" type="checkbox" value="client_credentials">/);
      // The admin pages link here.
      assert.match((await get('/admin', admin)).body, /<a href="\/admin\/clients">Clients<\/a>/);
    });

    it('registers a confidential client through the form and shows its secret once, on the answer to the post', async () => {
      const created = await submit('/admin/clients', '/admin/clients', [
        ['name', 'Billing <App>'],
        ['clientType', 'confidential'],
        ['redirectUris', `${WEB}\r\n\r\n  https://app.example.com/other  \r\n`],
        ['postLogoutRedirectUris', 'https://app.example.com/bye'],
        ['grantTypes', 'authorization_code'],
        ['grantTypes', 'refresh_token'],
        ['grantTypes', 'client_credentials'],
        ['firstParty', '1'],
        ['idTokenSignedResponseAlg', 'RS256'],
      ]);
      assertHtmlPage(created, 'secret page');
      assert.equal(created.headers.location, undefined, 'not a redirect: the secret is never in a URL');
      assert.match(created.body, /Billing &lt;App&gt;/, 'escaped');
      const clientId = fieldValue(created.body, 'client-id');
      const secret = fieldValue(created.body, 'client-secret');
      const row = await rowOf(clientId);
      assert.ok(row);
      assert.ok(clientSecretMatches(secret, row.secret_hash!));
      assert.deepEqual(JSON.parse(row.redirect_uris), [WEB, 'https://app.example.com/other']);
      assert.deepEqual(JSON.parse(row.grant_types), ['authorization_code', 'refresh_token', 'client_credentials']);
      assert.equal(Number(row.first_party), 1);
      assert.equal(row.id_token_signed_response_alg, 'RS256');

      const list = await get('/admin/clients', admin);
      assertHtmlPage(list, 'list');
      assert.ok(list.body.includes(clientId));
      assert.ok(!list.body.includes(secret), 'the list never shows a secret');
      const page = await get(`/admin/clients/${clientId}`, admin);
      assertHtmlPage(page, 'client page');
      assert.ok(!page.body.includes(secret) && !page.body.includes(row.secret_hash!), 'nor the client page');
      assert.match(page.body, /Rotate secret/);
    });

    it('sends a refused form back filled in, with each problem', async () => {
      const refused = await submit('/admin/clients', '/admin/clients', [
        ['name', 'Refused App'],
        ['clientType', 'confidential'],
        ['redirectUris', 'http://app.example.com/cb\ncom.example.app:/cb'],
        ['grantTypes', 'authorization_code'],
      ]);
      assertHtmlPage(refused, 'refused form');
      assert.deepEqual(alertCodes(refused.body), ['INVALID_REDIRECT_URI']);
      // The summary links each problem to its field: by the field's label when its message is beside the
      // field (the first), by the message itself when the field already shows another (said once either way).
      assert.match(refused.body, /<li><a href="#redirectUris">Redirect URIs<\/a><\/li>/);
      assert.match(refused.body, /<li><a href="#redirectUris">Redirect URI “com\.example\.app:\/cb”: A custom scheme is only for a public \(native app\) client; a confidential client must use https\.<\/a><\/li>/);
      assert.match(refused.body, /<p class="field-error" id="redirectUris-error">(?:(?!<\/p>)[\s\S])*Redirect URI “http:\/\/app\.example\.com\/cb”: Use https/);
      assert.match(refused.body, /value="Refused App"/, 'the name is kept');
      assert.match(refused.body, /<input id="name" [^>]*value="Refused App"[^>]* aria-describedby="name-hint">/, 'the name is not marked');
      assert.match(
        refused.body,
        /<textarea id="redirectUris"[^>]* aria-invalid="true" aria-describedby="redirectUris-error redirect-hint"[^>]*>http:\/\/app.example.com\/cb\ncom.example.app:\/cb<\/textarea>/,
      );
      assert.match(refused.body, /<input id="grant-1" name="grantTypes" type="checkbox" value="refresh_token">/, 'the boxes as they were');
      assert.equal((await t.services.oidcClients.list()).some((client) => client.name === 'Refused App'), false);

      const implicit = await submit('/admin/clients', '/admin/clients', [['name', 'Implicit'], ['redirectUris', WEB], ['grantTypes', 'implicit']]);
      assert.deepEqual(alertCodes(implicit.body), ['INVALID_CLIENT_METADATA']);
      // A group of boxes: the link and the message go to its first box; every box is marked.
      assert.match(implicit.body, /<li><a href="#grant-0">Grant types<\/a><\/li>/, 'linked by the group\'s legend');
      assert.match(implicit.body, /<p class="field-error" id="grant-0-error">(?:(?!<\/p>)[\s\S])*Grant types: The implicit and password grants are not supported: /);
      assert.match(implicit.body, /<\/legend>\s*<p class="field-error" id="grant-0-error">/, 'the message above the group');
      assert.match(implicit.body, /<input id="grant-0" name="grantTypes" type="checkbox" value="authorization_code" aria-invalid="true" aria-describedby="grant-0-error"( autofocus)?>/);
      assert.match(implicit.body, /<input id="grant-1" name="grantTypes" type="checkbox" value="refresh_token" aria-invalid="true" aria-describedby="grant-0-error">/);
      assert.match(implicit.body, /value="Implicit"/, 'the name is kept');
    });

    it('registers a public client without a secret and goes to its page', async () => {
      const created = await submit('/admin/clients', '/admin/clients', [
        ['name', 'Phone App'],
        ['clientType', 'public'],
        ['redirectUris', 'com.example.app:/callback'],
        ['grantTypes', 'authorization_code'],
      ]);
      assert.equal(created.statusCode, 303);
      const location = String(created.headers.location);
      assert.match(location, /^\/admin\/clients\/[A-Za-z0-9_-]{22}\?notice=CLIENT_REGISTERED$/);
      const page = await get(location, admin);
      assertHtmlPage(page, 'public client page');
      assert.match(page.body, /role="status">\s*<p>The client is registered/);
      assert.doesNotMatch(page.body, /Rotate secret/, 'nothing to rotate');
    });

    it('shows a client’s exchange policy on its page, or that it has none', async () => {
      const agent = await t.services.oidcClients.create({ name: 'Agent', grantTypes: ['client_credentials'], exchangeResources: ['https://b.example.com/api'] }, { actorUserId: null, ip: null, userAgent: null });
      assert.ok(agent.ok);
      const page = await get(`/admin/clients/${agent.client.id}`, admin);
      assertHtmlPage(page, 'agent page');
      assert.match(page.body, /<dt>Token exchange to<\/dt><dd><code>https:\/\/b\.example\.com\/api<\/code>/);
      const plain = await t.services.oidcClients.create({ name: 'Plain', redirectUris: [WEB] }, { actorUserId: null, ip: null, userAgent: null });
      assert.ok(plain.ok);
      assert.match((await get(`/admin/clients/${plain.client.id}`, admin)).body, /<dt>Token exchange to<\/dt><dd>None \(this client may not exchange tokens\)/);
    });

    it('edits a confidential client’s exchange policy on its page (refusing what the rules refuse); a public one has no such box', async () => {
      const agent = await t.services.oidcClients.create({ name: 'Policy agent', grantTypes: ['client_credentials'] }, { actorUserId: null, ip: null, userAgent: null });
      assert.ok(agent.ok);
      const pageUrl = `/admin/clients/${agent.client.id}`;
      const saved = await submit(pageUrl, pageUrl, [['name', 'Policy agent'], ['redirectUris', ''], ['postLogoutRedirectUris', ''], ['exchangeResources', 'https://b.example.com/api\nhttps://c.example.com/api']]);
      assert.equal(saved.statusCode, 303, saved.body);
      assert.deepEqual((await t.services.oidcClients.show(agent.client.id))?.exchangeResources, ['https://b.example.com/api', 'https://c.example.com/api']);
      const refused = await submit(pageUrl, pageUrl, [['name', 'Policy agent'], ['redirectUris', ''], ['postLogoutRedirectUris', ''], ['exchangeResources', 'https://b.example.com/api#fragment']]);
      assertHtmlPage(refused, 'refused policy');
      assert.deepEqual(alertCodes(refused.body), ['INVALID_CLIENT_METADATA']);
      assert.deepEqual((await t.services.oidcClients.show(agent.client.id))?.exchangeResources, ['https://b.example.com/api', 'https://c.example.com/api'], 'unchanged when refused');
      // Without the box (a form from before), the policy stays.
      const untouched = await submit(pageUrl, pageUrl, [['name', 'Policy agent 2'], ['redirectUris', ''], ['postLogoutRedirectUris', '']]);
      assert.equal(untouched.statusCode, 303);
      assert.equal((await t.services.oidcClients.show(agent.client.id))?.exchangeResources.length, 2);
      const spa = await t.services.oidcClients.create({ name: 'SPA', redirectUris: [WEB], isPublic: true }, { actorUserId: null, ip: null, userAgent: null });
      assert.ok(spa.ok);
      assert.doesNotMatch((await get(`/admin/clients/${spa.client.id}`, admin)).body, /name="exchangeResources"/);
    });

    it('shows the keys of a client that has them, and offers no secret to rotate', async () => {
      const keyed = await t.services.oidcClients.create({ name: 'Keyed', redirectUris: [WEB], jwksUri: 'https://keyed.example.com/jwks.json' }, { actorUserId: null, ip: null, userAgent: null });
      assert.ok(keyed.ok && keyed.clientSecret === undefined);
      const page = await get(`/admin/clients/${keyed.client.id}`, admin);
      assertHtmlPage(page, 'keyed client page');
      assert.match(page.body, /<dt>Public keys \(private_key_jwt\)<\/dt><dd><code>https:\/\/keyed\.example\.com\/jwks\.json<\/code>/);
      assert.doesNotMatch(page.body, /rotate-secret/);
      const rotate = await submit(`/admin/clients/${keyed.client.id}`, `/admin/clients/${keyed.client.id}/rotate-secret`, []);
      assert.equal(rotate.statusCode, 303);
      assert.match(rotate.headers.location as string, /error=KEY_CLIENT_HAS_NO_SECRET/);
    });

    it('renders the pages, a refused form and the secret page in another language, never echoing an unknown code', async () => {
      // The language comes from the URL or the header of each request; the admin's cookie jar is not given the choice.
      const inLanguage = (url: string, headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url, headers: { cookie: admin.header(), ...headers } });
      const list = await inLanguage('/admin/clients?lang=de');
      assertHtmlPage(list, 'German list');
      assert.match(list.body, /<html lang="de"/);
      assert.match(list.body, /<h1>Clients<\/h1>/);
      assert.match(list.body, /<h2 id="register-heading">Client registrieren<\/h2>/);
      assert.match(list.body, /<label for="grant-0">Authorization Code \(Anmeldung im Browser, mit PKCE\)<\/label>/);
      assert.match(list.body, /über Gatehouse als OpenID Provider/, 'the deployment’s name');

      const created = await t.services.oidcClients.create({ name: 'Sprach-App', redirectUris: [WEB] }, { actorUserId: null, ip: null, userAgent: null });
      assert.ok(created.ok);
      const page = await inLanguage(`/admin/clients/${created.client.id}?notice=CLIENT_SAVED`, { 'accept-language': 'ja' });
      assertHtmlPage(page, 'Japanese client page');
      assert.match(page.body, /<html lang="ja"/);
      assert.match(page.body, /<h2 id="client-heading">クライアント<\/h2>/);
      assert.match(page.body, /<dt>種類<\/dt><dd>コンフィデンシャル<\/dd>/);
      assert.match(page.body, /role="status">\s*<p>クライアントの変更を保存しました。<\/p>/);
      assert.match(page.body, /<time datetime="[^"]+">\d{4}年\d{1,2}月\d{1,2}日 \d{1,2}:\d\d UTC<\/time>/);

      for (const [url, lang, general] of [
        ['/admin/clients?error=NO_SUCH_CODE_42&notice=NO_SUCH_CODE_42', 'fr', 'Cela n’a pas fonctionné. Veuillez réessayer.'],
        [`/admin/clients/${created.client.id}?error=NO_SUCH_CODE_42`, 'es', 'No ha funcionado. Inténtalo de nuevo.'],
      ] as const) {
        const response = await inLanguage(`${url}&lang=${lang}`);
        assertHtmlPage(response, url);
        assert.match(response.body, new RegExp(`<html lang="${lang}"`), url);
        assert.ok(!response.body.includes('NO_SUCH_CODE_42'), `${url}: not echoed`);
        assert.deepEqual(alertCodes(response.body), [''], url);
        assert.ok(response.body.includes(`<p>${general}</p>`), `${url}: the general message`);
        assert.doesNotMatch(response.body, /role="status"/, `${url}: an unknown notice shows nothing`);
      }

      // A form sent back in the language of the post: each problem in it, the URI and the code as they were.
      const form = await inLanguage('/admin/clients?lang=pt-BR');
      const refused = await t.app.inject({
        method: 'POST',
        url: '/admin/clients?lang=pt-BR',
        headers: { 'content-type': FORM, origin, cookie: admin.header() },
        payload: new URLSearchParams([['csrfToken', hiddenValue(form.body, 'csrfToken')], ['name', ''], ['redirectUris', 'http://app.example.com/cb'], ['grantTypes', 'authorization_code']]).toString(),
      });
      assertHtmlPage(refused, 'refused in Portuguese');
      assert.match(refused.body, /<html lang="pt-BR"/);
      assert.deepEqual(alertCodes(refused.body), ['INVALID_REDIRECT_URI']);
      assert.match(refused.body, /<li><a href="#name">Nome<\/a><\/li>/);
      assert.match(refused.body, /<p class="field-error" id="name-error">(?:(?!<\/p>)[\s\S])*Nome: Informe um nome\./);
      assert.match(refused.body, /<p class="field-error" id="redirectUris-error">(?:(?!<\/p>)[\s\S])*URI de redirecionamento “http:\/\/app\.example\.com\/cb”: Use https: http simples só é permitido em 127\.0\.0\.1, \[::1\] ou localhost\./);
      assert.match(refused.body, /<input id="name" [^>]* aria-invalid="true" aria-describedby="name-error name-hint" autofocus>/, 'the empty name is the field to fix first');
      assert.match(refused.body, /<p class="code">Código do erro: <code>INVALID_REDIRECT_URI<\/code><\/p>/);

      const rotated = await t.app.inject({
        method: 'POST',
        url: `/admin/clients/${created.client.id}/rotate-secret`,
        headers: { 'content-type': FORM, origin, cookie: admin.header(), 'accept-language': 'de' },
        payload: new URLSearchParams([['csrfToken', hiddenValue(form.body, 'csrfToken')]]).toString(),
      });
      assertHtmlPage(rotated, 'German secret page');
      assert.match(rotated.body, /<h1>Neues Client-Secret<\/h1>/);
      assert.match(rotated.body, /„Sprach-App“ hat ein neues Secret: Das alte funktioniert nicht mehr\./);
      assert.match(rotated.body, /<strong>Es wird nur dieses eine Mal angezeigt\.<\/strong> Gatehouse speichert nur einen Hash davon\./);
      assert.match(fieldValue(rotated.body, 'client-secret'), /\S{20,}/);
    });

    it('refuses a form without the CSRF token', async () => {
      const response = await post('/admin/clients', admin, [['name', 'No Token'], ['redirectUris', WEB]]);
      assert.equal(response.statusCode, 403);
      assert.equal((await t.services.oidcClients.list()).some((client) => client.name === 'No Token'), false);
    });

    it('edits, rotates and deletes through the client’s page', async () => {
      const created = await t.services.oidcClients.create({ name: 'Lifecycle', redirectUris: [WEB] }, { actorUserId: null, ip: null, userAgent: null });
      assert.ok(created.ok);
      const id = created.client.id;
      const pageUrl = `/admin/clients/${id}`;

      const saved = await submit(pageUrl, pageUrl, [['name', 'Lifecycle 2'], ['redirectUris', 'https://new.example.com/cb'], ['postLogoutRedirectUris', '']]);
      assert.equal(saved.statusCode, 303);
      assert.equal(saved.headers.location, `${pageUrl}?notice=CLIENT_SAVED`);
      assert.equal((await t.services.oidcClients.show(id))?.name, 'Lifecycle 2');
      const badEdit = await submit(pageUrl, pageUrl, [['name', 'Lifecycle 3'], ['redirectUris', 'https://new.example.com/cb#frag']]);
      assertHtmlPage(badEdit, 'refused edit');
      assert.deepEqual(alertCodes(badEdit.body), ['INVALID_REDIRECT_URI']);
      assert.equal((await t.services.oidcClients.show(id))?.name, 'Lifecycle 2', 'nothing saved');

      const rotated = await submit(pageUrl, `${pageUrl}/rotate-secret`, []);
      assertHtmlPage(rotated, 'rotated');
      const secret = fieldValue(rotated.body, 'client-secret');
      const row = await rowOf(id);
      assert.ok(clientSecretMatches(secret, row!.secret_hash!));
      assert.ok(!clientSecretMatches(created.clientSecret!, row!.secret_hash!), 'the old secret no longer works');

      const deleted = await submit(pageUrl, `${pageUrl}/delete`, []);
      assert.equal(deleted.statusCode, 303);
      assert.equal(deleted.headers.location, '/admin/clients?notice=CLIENT_DELETED');
      assert.equal(await rowOf(id), undefined);
      const gone = await get(pageUrl, admin);
      assert.equal(gone.statusCode, 303);
      assert.equal(gone.headers.location, '/admin/clients?error=CLIENT_NOT_FOUND');
      const notice = await get('/admin/clients?error=CLIENT_NOT_FOUND', admin);
      assertHtmlPage(notice, 'not found notice');
      assert.deepEqual(alertCodes(notice.body), ['CLIENT_NOT_FOUND']);
    });
  });
}
