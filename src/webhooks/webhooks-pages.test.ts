/**
 * `/admin/webhooks` through `app.inject()` on the real app: ADMIN only (sign-in for nobody, the
 * 403 page for a non-admin, a forged form refused), registering an endpoint through the form with
 * its CSRF token (the secret shown once on the answer to the post, never in a URL or on a later
 * page), a form the rules refuse sent back filled in with each problem, and the endpoint's page
 * with its deliveries and its disable, enable, rotate, redeliver and delete buttons.
 */
import { before, describe, it } from 'node:test';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { createSqliteDatabase } from '../../test/helpers/databases.ts';
import { createUser, useTestApp } from '../../test/helpers/app.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { assertHtmlPage, hiddenValue, unescapeHtml } from '../../test/helpers/pages.ts';
import { readMessages } from '../i18n/catalog.ts';
import { collectPublicEvents } from '../module.ts';
import { MODULES } from '../modules.ts';
import { sourcesFor } from './events.ts';
import { PROBLEM_KEYS, WEBHOOKS_ERROR_CODES, WEBHOOKS_NOTICE_CODES } from './webhooks-pages.messages.ts';

const PASSWORD = 'correct horse battery staple';
const FORM = 'application/x-www-form-urlencoded';

function fieldValue(html: string, id: string): string {
  const match = new RegExp(`<input id="${id}" type="text" value="([^"]*)"`).exec(html);
  assert.ok(match, `field ${id}`);
  return unescapeHtml(match[1]!);
}

it('has an English text for every code and every problem the pages name (the start checks the other languages against English)', () => {
  const english = readMessages(join(import.meta.dirname, 'messages')).en ?? {};
  const keys = [
    ...[...WEBHOOKS_NOTICE_CODES].map((code) => `webhooks.notice.${code}`),
    ...[...WEBHOOKS_ERROR_CODES, 'default'].map((code) => `webhooks.error.${code}`),
    ...Object.values(PROBLEM_KEYS).flatMap((byReason) => Object.values(byReason)),
  ];
  assert.deepEqual(keys.filter((key) => !Object.hasOwn(english, key)), []);
});

describe('webhook admin pages', () => {
  const t = useTestApp({ name: 'sqlite', skip: false, create: createSqliteDatabase }, { env: { WEBHOOK_POLL_INTERVAL_MS: '600000' } });
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
  async function submit(pageUrl: string, action: string, fields: Array<[string, string]>, jar = admin): Promise<LightMyRequestResponse> {
    const page = await get(pageUrl, jar);
    assert.equal(page.statusCode, 200, page.body);
    return post(action, jar, [['csrfToken', hiddenValue(page.body, 'csrfToken')], ...fields]);
  }

  it('is for admins only', async () => {
    const anonymous = await get('/admin/webhooks');
    assert.equal(anonymous.statusCode, 303);
    assert.match(String(anonymous.headers.location), /^\/auth\/signin\?callbackUrl=\/admin\/webhooks$/);
    assertHtmlPage(await get('/admin/webhooks', plain), 'non-admin', 403);
    const forged = await post('/admin/webhooks', plain, [['csrfToken', hiddenValue((await get('/auth/signout', plain)).body, 'csrfToken')], ['url', 'https://x.example.com/']]);
    assert.equal(forged.statusCode, 403);
    const noToken = await post('/admin/webhooks', admin, [['url', 'https://x.example.com/'], ['eventTypes', 'user.created']]);
    assert.equal(noToken.statusCode, 403, 'no CSRF token');
    assert.equal((await t.services.webhooks.list()).length, 0);
  });

  it('registers an endpoint through the form, shows its secret once, and sends a refused form back filled in', async () => {
    const list = await get('/admin/webhooks', admin);
    assertHtmlPage(list, 'list');
    assert.match(list.body, /<a href="\/admin\/webhooks" aria-current="page">Webhooks<\/a>/);
    assert.match(list.body, /<input id="event-0" name="eventTypes" type="checkbox" value="user.created">/);
    // Each box says what its event tells, in words its declaring module gives, with the name receivers see.
    assert.match(list.body, /<label for="event-0">An account was created \(sign-up, provider, administrator or command line\)\. <code>user\.created<\/code><\/label>/);
    assert.match(list.body, /<label for="event-\d+">Someone confirmed their e-mail address\. <code>email\.verified<\/code><\/label>/);
    const labels = [...list.body.matchAll(/<label for="event-\d+">([^<]*)<code>([^<]+)<\/code><\/label>/g)];
    assert.ok(labels.length >= 10);
    // Every type the modules declare has a box, and every box a description: a new public event
    // without one fails here (the list comes from the modules, not from this test).
    assert.deepEqual(labels.map((label) => label[2]), sourcesFor(collectPublicEvents(MODULES)).webhookTypes);
    assert.deepEqual(labels.filter((label) => label[1]!.trim() === '').map((label) => label[2]), [], 'every event type is described');

    const refused = await submit('/admin/webhooks', '/admin/webhooks', [['url', 'http://10.0.0.5/in'], ['description', 'Inner <app>'], ['eventTypes', 'user.created']]);
    assertHtmlPage(refused, 'refused');
    assert.match(refused.body, /<div class="alert alert-error error-summary" role="alert"[\s\S]*<code>WEBHOOK_URL_NOT_ALLOWED<\/code>/, 'the summary, with the code');
    assert.match(refused.body, /<li><a href="#url">URL<\/a><\/li>/, 'the summary links the field by its label');
    assert.equal(refused.body.split('Webhooks may not be sent there').length - 1, 1, 'the message once, beside the field');
    assert.match(refused.body, /<p class="field-error" id="url-error">(?:(?!<\/p>)[\s\S])*URL: Webhooks may not be sent there/);
    assert.match(refused.body, /<input id="url" name="url" type="url" value="http:\/\/10.0.0.5\/in"[^>]* aria-invalid="true" aria-describedby="url-error url-hint" autofocus>/);
    assert.match(refused.body, /<input id="description" [^>]*value="Inner &lt;app&gt;" maxlength="200" autocomplete="off">/, 'kept, not marked');
    assert.match(refused.body, /value="user.created" checked>/);

    const created = await submit('/admin/webhooks', '/admin/webhooks', [['url', 'https://hooks.example.com/in'], ['description', 'CRM'], ['eventTypes', 'user.created'], ['eventTypes', 'email.verified']]);
    assertHtmlPage(created, 'secret page');
    assert.equal(created.headers.location, undefined, 'not a redirect: the secret is never in a URL');
    const id = fieldValue(created.body, 'endpoint-id');
    const secret = fieldValue(created.body, 'signing-secret');
    assert.match(secret, /^whsec_/);
    const endpoint = await t.services.webhooks.show(id);
    assert.deepEqual(endpoint?.eventTypes, ['user.created', 'email.verified']);
    const page = await get(`/admin/webhooks/${id}`, admin);
    assertHtmlPage(page, 'endpoint page');
    assert.ok(!page.body.includes(secret.slice(6)) && !(await get('/admin/webhooks', admin)).body.includes(secret.slice(6)), 'shown once');
    assert.match(page.body, /Nothing has been sent to this endpoint yet/);
  });

  it('shows deliveries and disables, enables, redelivers, rotates and deletes through the endpoint page', async () => {
    const [endpoint] = await t.services.webhooks.list();
    const pageUrl = `/admin/webhooks/${endpoint!.id}`;
    await t.services.audit.record({ type: 'email.verified', userId: 'user-page' });
    let page = await get(pageUrl, admin);
    assert.match(page.body, /<tr class="delivery" role="row">\s*<td role="cell" data-label="Event"><code>email.verified<\/code><\/td>\s*<td role="cell" data-label="Status">pending<\/td>/);
    assert.ok(!page.body.includes('Redeliver</button>'), 'nothing to redeliver while pending');

    const disabled = await submit(pageUrl, `${pageUrl}/disable`, []);
    assert.equal(disabled.statusCode, 303);
    assert.equal(disabled.headers.location, `${pageUrl}?notice=WEBHOOK_DISABLED`);
    page = await get(pageUrl, admin);
    assert.match(page.body, /<dt>State<\/dt><dd>Disabled<\/dd>/);
    assert.match(page.body, /<td role="cell" data-label="Status">failed<\/td>[\s\S]*ENDPOINT_DISABLED/);
    assert.equal((await submit(pageUrl, `${pageUrl}/enable`, [])).headers.location, `${pageUrl}?notice=WEBHOOK_ENABLED`);
    page = await get(pageUrl, admin);
    const action = /<form method="post" action="([^"]+\/redeliver)">/.exec(page.body)?.[1];
    assert.ok(action, 'a failed delivery can be redelivered');
    assert.equal((await submit(pageUrl, unescapeHtml(action), [])).headers.location, `${pageUrl}?notice=WEBHOOK_REDELIVERED`);
    assert.equal((await t.services.webhooks.listDeliveries(endpoint!.id))!.length, 2);
    assert.match((await get(`${pageUrl}?notice=WEBHOOK_REDELIVERED`, admin)).body, /queued to be sent again/);

    const rotated = await submit(pageUrl, `${pageUrl}/rotate-secret`, []);
    assertHtmlPage(rotated, 'rotated');
    assert.match(rotated.body, /New signing secret/);
    assert.match(fieldValue(rotated.body, 'signing-secret'), /^whsec_/);
    assert.match((await get(pageUrl, admin)).body, /Previous secret signs until/);

    const deleted = await submit(pageUrl, `${pageUrl}/delete`, []);
    assert.equal(deleted.headers.location, '/admin/webhooks?notice=WEBHOOK_DELETED');
    assert.equal((await get(pageUrl, admin)).headers.location, '/admin/webhooks?error=WEBHOOK_NOT_FOUND');
  });
  it('renders the pages, a refused form and the secret page in another language, never echoing an unknown code', async () => {
    // The language comes from the URL or the header of each request; the admin's cookie jar is not given the choice.
    const inLanguage = (url: string, headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url, headers: { cookie: admin.header(), ...headers } });
    const list = await inLanguage('/admin/webhooks?lang=fr');
    assertHtmlPage(list, 'French list');
    assert.match(list.body, /<html lang="fr"/);
    assert.match(list.body, /<h2 id="register-heading">Enregistrer un point de terminaison<\/h2>/);
    assert.match(list.body, /retentées pendant 3\sjours au plus/, 'the retry window in words, in the language');
    assert.match(list.body, /<label for="event-0">Un compte a été créé [^<]*<code>user\.created<\/code><\/label>/, 'the events described in the language');
    assert.match(list.body, /<a href="\/admin\/webhooks" aria-current="page">Webhooks<\/a>/);

    const form = await inLanguage('/admin/webhooks?lang=de');
    const refused = await t.app.inject({
      method: 'POST',
      url: '/admin/webhooks?lang=de',
      headers: { 'content-type': FORM, origin, cookie: admin.header() },
      payload: new URLSearchParams([['csrfToken', hiddenValue(form.body, 'csrfToken')], ['url', 'https://hooks.example.com/de'], ['eventTypes', 'user.created'], ['eventTypes', 'no.such_event']]).toString(),
    });
    assertHtmlPage(refused, 'refused in German');
    assert.match(refused.body, /<html lang="de"/);
    assert.match(refused.body, /<li><a href="#event-0">Ereignisse<\/a><\/li>/);
    assert.match(refused.body, /<p class="field-error" id="event-0-error">(?:(?!<\/p>)[\s\S])*no\.such_event ist kein Ereignistyp, den Gatehouse sendet/);
    assert.match(refused.body, /<\/legend>\s*<p class="field-error" id="event-0-error">/, 'the message above the boxes');
    assert.match(refused.body, /<input id="event-0" name="eventTypes" type="checkbox" value="user.created" checked aria-invalid="true" aria-describedby="event-0-error" autofocus>/);
    assert.match(refused.body, /<input id="event-1" name="eventTypes" type="checkbox" value="[^"]+" aria-invalid="true" aria-describedby="event-0-error">/);
    assert.match(refused.body, /value="https:\/\/hooks.example.com\/de"/, 'the URL is kept');
    assert.match(refused.body, /<p class="code">Fehlercode: <code>WEBHOOK_EVENT_UNKNOWN<\/code><\/p>/);

    const created = await t.app.inject({
      method: 'POST',
      url: '/admin/webhooks',
      headers: { 'content-type': FORM, origin, cookie: admin.header(), 'accept-language': 'ja' },
      payload: new URLSearchParams([['csrfToken', hiddenValue(form.body, 'csrfToken')], ['url', 'https://hooks.example.com/ja'], ['eventTypes', 'user.created']]).toString(),
    });
    assertHtmlPage(created, 'Japanese secret page');
    assert.match(created.body, /<html lang="ja"/);
    assert.match(created.body, /<h1>Webhook エンドポイントを登録しました<\/h1>/);
    assert.match(created.body, /<label for="signing-secret">署名シークレット<\/label>/);
    const id = fieldValue(created.body, 'endpoint-id');

    const page = await inLanguage(`/admin/webhooks/${id}?lang=es`);
    assertHtmlPage(page, 'Spanish endpoint page');
    assert.match(page.body, /<h1>Endpoint de webhook<\/h1>/);
    assert.match(page.body, /<dt>Estado<\/dt><dd>Activado<\/dd>/);
    assert.match(page.body, /durante 24\shoras, cada webhook se firma con los dos/);

    for (const [url, lang, general] of [
      ['/admin/webhooks?error=NO_SUCH_CODE_42&notice=NO_SUCH_CODE_42', 'pt-BR', 'Não deu certo. Tente de novo.'],
      [`/admin/webhooks/${id}?error=NO_SUCH_CODE_42`, 'ja', 'うまくいきませんでした。もう一度お試しください。'],
    ] as const) {
      const response = await inLanguage(`${url}&lang=${lang}`);
      assertHtmlPage(response, url);
      assert.match(response.body, new RegExp(`<html lang="${lang}"`), url);
      assert.ok(!response.body.includes('NO_SUCH_CODE_42'), `${url}: not echoed`);
      assert.match(response.body, new RegExp(`role="alert">\\s*<p>${general}</p>\\s*</div>`), `${url}: the general message, without a code`);
      assert.doesNotMatch(response.body, /role="status"/, `${url}: an unknown notice shows nothing`);
    }
  });
});
