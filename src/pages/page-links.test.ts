/**
 * The page-links slot (module-pages.ts): a module puts a link to a page of its own at a named place
 * of the sign-in page or the dashboard, and the page shows it there only when its condition holds,
 * in a stable order among the links the other modules put there (the sign-in page's "Forgot
 * password?", sign-up and new verification link, the dashboard's way to the admin area). A place no
 * page has, a text outside the module's catalogs and a link declared twice stop the start.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { hiddenValue } from '../../test/helpers/pages.ts';
import { MODULES } from '../modules.ts';
import { collectPageLinks, defineModule, type BuiltServices, type GatehouseModule, type PageLink, type PageLinkPlace } from '../module.ts';
import { LOCALES } from '../i18n/locales.ts';
import { escapeHtml } from '../i18n/translator.ts';

const PASSWORD = 'correct horse battery staple';
const FORM = 'application/x-www-form-urlencoded';

const TEXTS = {
  'extras.links.help': 'Stuck? <link>Ask for help</link>.',
  'extras.links.more': 'More ways in',
  'extras.links.tools': 'Tools',
  'extras.links.mail': 'E-mail me a link',
};

/** A module with its own texts in every language and the links given. */
function linking(name: string, links: readonly PageLink[]): GatehouseModule {
  const texts = Object.fromEntries(Object.entries(TEXTS).map(([key, text]) => [key.replace(/^extras\./, `${name}.`), text]));
  return defineModule({ name, messages: Object.fromEntries(LOCALES.map((locale) => [locale, texts])), pageLinks: () => links });
}

const extras = linking('extras', [
  // Between the verification module's two (10 and 20), except while the page says RATE_LIMITED.
  { place: 'signin.below-form', order: 15, href: '/extras/help', message: 'extras.links.help', shownWhen: ({ code }) => code !== 'RATE_LIMITED' },
  // The same order as the sign-up link: after it, the verification module coming first in the list.
  { place: 'signin.below-form', order: 20, href: '/extras/more', message: 'extras.links.more' },
  // A small part of its own HTML (a form button) after "Forgot password?".
  { place: 'signin.below-password', order: 20, render: ({ page }) => `<button class="link" type="submit" form="extras-mail">${escapeHtml(page.i18n.t('extras.links.mail'))}</button>` },
  // Before the admin area's button, for holders of TOOLS only.
  { place: 'dashboard.header', order: 5, href: '/extras/tools', message: 'extras.links.tools', shownWhen: ({ roles }) => roles.includes('TOOLS') },
]);

/** The hrefs of the anchors (and the extras' button) in `html`, in page order. */
const linksIn = (html: string) => [...html.matchAll(/href="(\/(?:auth\/(?:forgot-password|signup|verify-email|signout)|admin|extras\/[a-z]+))"|form="(extras-mail)"/g)].map((match) => match[1] ?? match[2]);

describe('page links a module puts on another module\'s page', () => {
  let database: TestDatabase;
  let t: TestApp;

  before(async () => {
    database = await createSqliteDatabase();
    t = await createTestApp(database, { modules: [...MODULES, extras], env: { ALLOW_SIGNUP: 'true' } });
    await createUser(t.services, { email: 'admin@example.com', password: PASSWORD, roles: ['ADMIN', 'TOOLS'] });
    await createUser(t.services, { email: 'plain@example.com', password: PASSWORD });
  });
  after(async () => {
    await t?.close();
    await database?.drop();
  });

  async function dashboardOf(email: string): Promise<string> {
    const page = await t.app.inject({ method: 'GET', url: '/auth/signin' });
    const csrf = page.cookies.map((cookie) => `${cookie.name}=${cookie.value}`).join('; ');
    const signIn = await t.app.inject({
      method: 'POST',
      url: '/api/auth/signin',
      headers: { 'content-type': FORM, origin: new URL(t.config.authUrl).origin, cookie: csrf },
      payload: new URLSearchParams({ email, password: PASSWORD, csrfToken: hiddenValue(page.body, 'csrfToken'), callbackUrl: '/dashboard' }).toString(),
    });
    assert.equal(signIn.statusCode, 303, signIn.body);
    const cookie = [csrf, ...signIn.cookies.map((c) => `${c.name}=${c.value}`)].join('; ');
    const dashboard = await t.app.inject({ method: 'GET', url: '/dashboard', headers: { cookie } });
    assert.equal(dashboard.statusCode, 200);
    return dashboard.body;
  }

  it('shows each link at its place, in order, only when its condition holds', async () => {
    const fresh = await t.app.inject({ method: 'GET', url: '/auth/signin' });
    assert.deepEqual(linksIn(fresh.body), ['/auth/forgot-password', 'extras-mail', '/extras/help', '/auth/signup', '/extras/more']);
    const unverified = await t.app.inject({ method: 'GET', url: '/auth/signin?error=EMAIL_NOT_VERIFIED' });
    assert.deepEqual(linksIn(unverified.body), ['/auth/forgot-password', 'extras-mail', '/auth/verify-email', '/extras/help', '/auth/signup', '/extras/more']);
    const limited = await t.app.inject({ method: 'GET', url: '/auth/signin?error=RATE_LIMITED' });
    assert.deepEqual(linksIn(limited.body), ['/auth/forgot-password', 'extras-mail', '/auth/signup', '/extras/more']);

    assert.deepEqual(linksIn(await dashboardOf('admin@example.com')), ['/extras/tools', '/admin', '/auth/signout', '/auth/forgot-password']);
    assert.deepEqual(linksIn(await dashboardOf('plain@example.com')), ['/auth/signout', '/auth/forgot-password']);
  });

  it('draws a link as its place draws its own, its text in the page\'s language from the module\'s catalogs', async () => {
    const signIn = (await t.app.inject({ method: 'GET', url: '/auth/signin' })).body;
    assert.match(signIn, /<p class="hint">Stuck\? <a href="\/extras\/help">Ask for help<\/a>\.<\/p>/, 'a sentence: the words in <link> link');
    assert.match(signIn, /<p class="hint"><a href="\/extras\/more">More ways in<\/a><\/p>/, 'a label: the whole text links');
    assert.match(signIn, /<p class="hint"><button class="link" type="submit" form="extras-mail">E-mail me a link<\/button><\/p>/);
    assert.match(await dashboardOf('admin@example.com'), /<a class="button button-secondary" href="\/extras\/tools">Tools<\/a>/, 'a button in the header');
  });
});

describe('collecting the page links', () => {
  const services = {} as BuiltServices;
  const link = (place: string, href: `/${string}`, message = 'extras.links.more'): PageLink => ({ place: place as PageLinkPlace, order: 10, href, message });

  it('orders each place\'s links by their order, list order among equals', () => {
    const first = linking('first', [{ ...link('signin.below-form', '/a', 'first.links.more'), order: 20 }, link('dashboard.header', '/b', 'first.links.tools')]);
    const second = linking('second', [{ ...link('signin.below-form', '/c', 'second.links.more'), order: 10 }, { ...link('signin.below-form', '/d', 'second.links.help'), order: 20 }]);
    const links = collectPageLinks([first, second], services);
    assert.deepEqual(links.get('signin.below-form')!.map((entry) => ('href' in entry ? entry.href : null)), ['/c', '/a', '/d']);
    assert.deepEqual(links.get('dashboard.header')!.map((entry) => ('href' in entry ? entry.href : null)), ['/b']);
    assert.deepEqual(links.get('signin.below-password'), []);
  });

  it('stops the start at a place no page has, a text outside the module\'s catalogs, or one link declared twice', () => {
    assert.throws(() => collectPageLinks([linking('extras', [link('signin.nowhere', '/x')])], services), /a page link of "extras" is for the place "signin.nowhere", which no page has \(signin.below-password, /);
    assert.throws(() => collectPageLinks([linking('extras', [link('signin.below-form', '/x', 'pages.signin.title')])], services), /the page link of "extras" to \/x says "pages.signin.title", which is not a message of its own catalogs/);
    assert.throws(() => collectPageLinks([linking('extras', [link('signin.below-form', '/x', 'extras.links.missing')])], services), /says "extras.links.missing"/);
    const twice = [linking('extras', [link('signin.below-form', '/x')]), linking('twin', [link('signin.below-form', '/x', 'twin.links.more')])];
    assert.throws(() => collectPageLinks(twice, services), /page link to "\/x at signin.below-form" is declared by both "extras" and "twin"/);
  });

  it('the modules\' own links are found in the list', () => {
    const links = collectPageLinks(MODULES, { config: { accounts: { allowSignup: true } } } as unknown as BuiltServices);
    const hrefs = (place: PageLinkPlace) => links.get(place)!.map((entry) => ('href' in entry ? entry.href : null));
    assert.deepEqual(hrefs('signin.below-password'), ['/auth/forgot-password']);
    assert.deepEqual(hrefs('signin.below-form'), ['/auth/verify-email', '/auth/signup']);
    assert.deepEqual(hrefs('dashboard.header'), ['/admin']);
    assert.deepEqual(hrefs('dashboard.below-password-form'), ['/auth/forgot-password']);
  });
});
