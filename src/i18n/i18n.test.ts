/**
 * Languages: every catalog complete and well-formed (a language is a file per module; this is the
 * check that a new one lacks nothing), negotiation (`?lang=`, the cookie, Accept-Language), ICU
 * plurals, the escaping of `html`, and the pages answering in the language asked for.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { MODULES } from '../modules.ts';
import { WEB_MESSAGES } from '../web/render.ts';
import { checkCatalogs, mergeCatalogs, readMessages } from './catalog.ts';
import { LOCALES } from './locales.ts';
import { isOwnNavigation, langParameter, LOCALE_COOKIE, negotiateLocale } from './negotiate.ts';
import { withLanguage } from './i18n.module.ts';
import { createTranslations } from './translator.ts';
import { AUTH_ERROR_CODES, SIGN_IN_CODES } from '../pages/pages.messages.ts';
import { FORGOT_PASSWORD_CODES, RESET_PASSWORD_CODES } from '../password-reset/password-pages.messages.ts';
import { SIGNUP_CODES, VERIFY_EMAIL_CODES } from '../verification/signup-pages.messages.ts';
import { createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, type TestApp } from '../../test/helpers/app.ts';
import { assertHtmlPage } from '../../test/helpers/pages.ts';

const SRC = join(import.meta.dirname, '..');
const allCatalogs = () => [{ name: 'web', messages: WEB_MESSAGES }, ...MODULES.flatMap((module) => (module.messages === undefined ? [] : [{ name: module.name, messages: module.messages }]))];

function filesUnder(dir: string, suffixes: string[]): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && suffixes.some((suffix) => entry.name.endsWith(suffix)) && !entry.name.endsWith('.test.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
}

describe('catalogs', () => {
  it('every language has every key of English, each message parses and uses only English arguments and tags', () => {
    // The start no longer parses them (catalog.ts): this is where a broken message is caught.
    checkCatalogs(allCatalogs());
    const merged = mergeCatalogs(allCatalogs());
    const english = Object.keys(merged.en);
    assert.ok(english.length > 50, 'the catalogs are loaded');
    for (const locale of LOCALES) assert.deepEqual(Object.keys(merged[locale]).sort(), [...english].sort(), locale);
  });

  it('every key a template or page uses exists (literal keys of t() and html())', () => {
    const english = mergeCatalogs(allCatalogs()).en;
    const used = new Map<string, string>();
    for (const file of filesUnder(SRC, ['.eta', '.ts'])) {
      for (const match of readFileSync(file, 'utf8').matchAll(/\.(?:t|html)\('([a-z][\w.-]+)'/g)) used.set(match[1]!, relative(SRC, file));
    }
    assert.ok(used.size > 20, 'keys are found');
    for (const [key, file] of used) assert.ok(Object.hasOwn(english, key), `${file} uses "${key}", which no catalog has`);
  });

  it('every code the sign-in and error pages know has its texts (their keys are built from the code)', () => {
    const english = mergeCatalogs(allCatalogs()).en;
    const keys = [
      ...[...SIGN_IN_CODES, 'default'].map((code) => `pages.signin.error.${code}`),
      ...[...AUTH_ERROR_CODES, 'default'].flatMap((code) => [`pages.error.${code}.heading`, `pages.error.${code}.message`]),
      ...[...FORGOT_PASSWORD_CODES, 'default'].map((code) => `password-reset.forgot.error.${code}`),
      ...[...RESET_PASSWORD_CODES, 'default'].map((code) => `password-reset.reset.error.${code}`),
      ...['TOO_SHORT', 'TOO_LONG', 'TOO_COMMON', 'CONTAINS_IDENTITY', 'TOO_GUESSABLE'].map((reason) => `credentials.passwordRejected.${reason}`),
      ...[...SIGNUP_CODES, 'default'].map((code) => `verification.signup.error.${code}`),
      ...[...VERIFY_EMAIL_CODES, 'default'].map((code) => `verification.verify.error.${code}`),
    ];
    for (const key of keys) assert.ok(Object.hasOwn(english, key), key);
  });

  it('refuses a missing key, an extra key, a stray argument, a broken message and a key outside the module', () => {
    const good = { en: { 'm.a': 'Hello {name}', 'm.b': 'Bye' } };
    const withOthers = (de: Record<string, string>) => ({ ...good, de, fr: good.en, es: good.en, 'pt-BR': good.en, ja: good.en });
    assert.doesNotThrow(() => checkCatalogs([{ name: 'm', messages: withOthers({ 'm.a': 'Hallo {name}', 'm.b': 'Tschüss' }) }]));
    const problems: Array<[Record<string, string>, RegExp]> = [
      [{ 'm.a': 'Hallo {name}' }, /de lacks "m.b"/],
      [{ 'm.a': 'Hallo {name}', 'm.b': 'x', 'm.c': 'y' }, /de has "m.c", which English does not/],
      [{ 'm.a': 'Hallo {nom}', 'm.b': 'x' }, /de "m.a" uses \{nom\}/],
      [{ 'm.a': 'Hallo {name', 'm.b': 'x' }, /de "m.a" does not parse/],
      [{ 'm.a': 'Hallo <b>{name}</b>', 'm.b': 'x' }, /uses \{b\}/],
    ];
    for (const [de, expected] of problems) assert.throws(() => checkCatalogs([{ name: 'm', messages: withOthers(de) }]), expected);
    assert.throws(() => checkCatalogs([{ name: 'other', messages: withOthers({ 'm.a': 'x {name}', 'm.b': 'y' }) }]), /must begin with "other\."/);
    assert.throws(() => checkCatalogs([{ name: 'm', messages: { en: good.en } }]), /no de catalog/);
    assert.throws(() => checkCatalogs([{ name: 'm', messages: good }, { name: 'm', messages: good }]), /"m.a" is declared twice/);
  });

  it('reads a language when it is first used, and refuses a file not named after a language at once', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-messages-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, 'en.json'), JSON.stringify({ 'm.a': 'Hello {name}' }));
    writeFileSync(join(dir, 'de.json'), '{ not JSON');
    const messages = readMessages(dir);
    assert.deepEqual(Object.keys(messages).sort(), ['de', 'en']);
    const merged = mergeCatalogs([{ name: 'm', messages }]);
    assert.equal(typeof Object.getOwnPropertyDescriptor(messages, 'en')?.get, 'function', 'not read before it is used');
    assert.equal(merged.en['m.a'], 'Hello {name}');
    assert.deepEqual(Object.getOwnPropertyDescriptor(messages, 'en')?.value, { 'm.a': 'Hello {name}' }, 'kept once read');
    assert.throws(() => merged.de, SyntaxError);
    writeFileSync(join(dir, 'de.json'), JSON.stringify({ 'm.a': 7 }));
    assert.throws(() => readMessages(dir).de, /must be one JSON object of strings/);
    writeFileSync(join(dir, 'deutsch.json'), '{}');
    assert.throws(() => readMessages(dir), /deutsch\.json is not named after a language/);
  });
});

describe('translator', () => {
  const translations = createTranslations(
    mergeCatalogs([
      {
        name: 'x',
        messages: Object.fromEntries(
          LOCALES.map((locale) => [
            locale,
            {
              'x.sessions': locale === 'ja' ? '{count} 件のセッション' : locale === 'de' ? '{count, plural, one {# Sitzung} other {# Sitzungen}}' : '{count, plural, one {# session} other {# sessions}}',
              'x.greet': 'Hi <b>{name}</b>',
            },
          ]),
        ),
      },
    ]),
  );

  it('formats plurals by the language’s rules', () => {
    assert.equal(translations.translator('en').t('x.sessions', { count: 1 }), '1 session');
    assert.equal(translations.translator('en').t('x.sessions', { count: 3 }), '3 sessions');
    assert.equal(translations.translator('de').t('x.sessions', { count: 1 }), '1 Sitzung');
    assert.equal(translations.translator('ja').t('x.sessions', { count: 2 }), '2 件のセッション');
  });

  it('html escapes the values and builds tags from escaped content', () => {
    const html = translations.translator('en').html('x.greet', { name: '<script>"&' }, { b: (text) => `<strong>${text}</strong>` });
    assert.equal(html, 'Hi <strong>&lt;script&gt;&quot;&amp;</strong>');
  });

  it('shows an unknown key rather than failing the page', () => {
    assert.equal(translations.translator('fr').t('x.nothing'), 'x.nothing');
  });
});

describe('the language switcher’s links', () => {
  it('keep the page’s parameters but not its one-time ones or a token, and never leave our origin', () => {
    assert.equal(withLanguage('/auth/signin?callbackUrl=%2Fdashboard&error=X&lang=fr', 'de'), '/auth/signin?callbackUrl=%2Fdashboard&lang=de');
    assert.equal(withLanguage('/auth/reset-password?token=secret&reason=TOO_SHORT', 'ja'), '/auth/reset-password?lang=ja');
    for (const url of ['//evil.example/auth/signin', '/\\evil.example/x', 'https://evil.example/']) assert.equal(withLanguage(url, 'es'), '/?lang=es', url);
  });
});

describe('negotiation', () => {
  it('takes ?lang= first, then the cookie, then Accept-Language by weight, else English', () => {
    assert.deepEqual(negotiateLocale({ query: 'ja', cookie: 'de', acceptLanguage: 'fr' }), { locale: 'ja', isChosen: true, source: 'query' });
    assert.deepEqual(negotiateLocale({ query: 'pt-br', acceptLanguage: 'fr' }), { locale: 'pt-BR', isChosen: true, source: 'query' });
    assert.deepEqual(negotiateLocale({ query: 'klingon', cookie: 'de', acceptLanguage: 'fr' }), { locale: 'de', isChosen: false, source: 'cookie' });
    assert.equal(negotiateLocale({ acceptLanguage: 'fr' }).source, 'header');
    // Node's fetch sends `*`; a header of languages we lack states nothing either.
    for (const header of ['*', 'zh-CN', 'zh-CN, *;q=0.5', undefined]) assert.deepEqual(negotiateLocale({ acceptLanguage: header }), { locale: 'en', isChosen: false, source: 'default' }, String(header));
    assert.equal(negotiateLocale({ cookie: '../../etc', acceptLanguage: 'fr-CA,fr;q=0.9' }).locale, 'fr');
    assert.equal(negotiateLocale({ acceptLanguage: 'fr;q=0.5, de;q=0.9' }).locale, 'de');
    assert.equal(negotiateLocale({ acceptLanguage: 'de-CH' }).locale, 'de');
    assert.equal(negotiateLocale({ acceptLanguage: 'pt-PT, en;q=0.1' }).locale, 'pt-BR');
    assert.equal(negotiateLocale({ acceptLanguage: 'zh-CN, es;q=0.8' }).locale, 'es');
    assert.equal(negotiateLocale({ acceptLanguage: 'zh-CN, *;q=0.5' }).locale, 'en');
    for (const header of [undefined, '', ';;;', 'x'.repeat(5000), 'de;q=0']) assert.equal(negotiateLocale({ acceptLanguage: header }).locale, 'en', String(header).slice(0, 20));
  });

  it('reads one lang from a URL (a repeated one is none) and tells the person\'s own navigation from another site\'s', () => {
    assert.equal(langParameter('/auth/signin?lang=de'), 'de');
    assert.equal(langParameter('/auth/signin?lang=de&lang=ja'), undefined);
    assert.equal(langParameter('/auth/signin'), undefined);
    assert.equal(isOwnNavigation({ 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'navigate' }), true);
    assert.equal(isOwnNavigation({ 'sec-fetch-site': 'none', 'sec-fetch-mode': 'navigate' }), true);
    assert.equal(isOwnNavigation({}), true, 'a client without Fetch Metadata is taken at its word');
    assert.equal(isOwnNavigation({ 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate' }), false);
    assert.equal(isOwnNavigation({ 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'navigate' }), false, 'a sibling subdomain is not us');
    assert.equal(isOwnNavigation({ 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'no-cors' }), false, 'an image is no choice');
  });
});

describe('pages in the language asked for', () => {
  let database: TestDatabase;
  let test: TestApp;
  before(async () => {
    database = await createSqliteDatabase();
    test = await createTestApp(database);
  });
  after(async () => {
    await test?.close();
    await database?.drop();
  });

  it('answers in the browser’s language, with lang, Content-Language and the switcher', async () => {
    const response = await test.app.inject({ method: 'GET', url: '/auth/signin', headers: { 'accept-language': 'de-DE,de;q=0.9,en;q=0.5' } });
    assertHtmlPage(response, 'German sign-in page');
    assert.equal(response.headers['content-language'], 'de');
    assert.match(response.body, /<html lang="de" dir="ltr">/);
    assert.match(response.body, /<h1>Anmelden<\/h1>/);
    assert.match(response.body, /<label for="password">Passwort<\/label>/);
    assert.match(response.body, /<a href="\/auth\/signin\?lang=ja" hreflang="ja" lang="ja">日本語<\/a>/);
    assert.match(response.body, /<span aria-current="true" lang="de">Deutsch<\/span>/);
    assert.equal(response.cookies.find((cookie) => cookie.name === LOCALE_COOKIE), undefined, 'a browser’s own language is not remembered');
  });

  it('remembers a language chosen with ?lang= in a cookie, and keeps the page’s other parameters in the links', async () => {
    const chosen = await test.app.inject({ method: 'GET', url: '/auth/signin?callbackUrl=%2Fdashboard&error=RATE_LIMITED&lang=ja', headers: { 'accept-language': 'de' } });
    assertHtmlPage(chosen, 'Japanese sign-in page');
    assert.match(chosen.body, /<html lang="ja"/);
    assert.match(chosen.body, /サインインの試行回数が多すぎます/);
    const cookie = chosen.cookies.find((item) => item.name === LOCALE_COOKIE);
    assert.equal(cookie?.value, 'ja');
    assert.equal(cookie?.sameSite, 'Lax');
    assert.equal(cookie?.httpOnly, true);
    assert.match(chosen.body, /href="\/auth\/signin\?callbackUrl=%2Fdashboard&amp;lang=fr"/, 'callbackUrl kept, error dropped');

    const later = await test.app.inject({ method: 'GET', url: '/auth/signout', headers: { cookie: `${LOCALE_COOKIE}=ja`, 'accept-language': 'fr' } });
    assert.match(later.body, /<h1>サインアウト<\/h1>/);
  });

  it('explains an error-page code in the language, and only known codes', async () => {
    const known = await test.app.inject({ method: 'GET', url: '/auth/error?error=AccessDenied&lang=es' });
    assert.match(known.body, /<h1>Acceso denegado<\/h1>/);
    assert.match(known.body, /Código de error: <code>AccessDenied<\/code>/);
    const unknown = await test.app.inject({ method: 'GET', url: '/auth/error?error=Whatever&lang=fr' });
    assert.match(unknown.body, /<h1>Connexion impossible<\/h1>/);
    assert.doesNotMatch(unknown.body, /Whatever/);
  });

  it('the password reset pages, with the link’s lifetime and a refused password in the language', async () => {
    const forgot = await test.app.inject({ method: 'GET', url: '/auth/forgot-password?error=RATE_LIMITED', headers: { 'accept-language': 'pt-BR' } });
    assertHtmlPage(forgot, 'forgot-password in Portuguese');
    assert.match(forgot.body, /<h1>Esqueceu a senha\?<\/h1>/);
    assert.match(forgot.body, /Muitas solicitações/);
    const sent = await test.app.inject({ method: 'GET', url: '/auth/forgot-password/sent?lang=ja' });
    assert.equal(test.config.accounts.resetTokenTtlSeconds, 1800, 'the default lifetime, as the texts below say it');
    assert.match(sent.body, /リンクは 30 分 以内に 1 回だけ使えます/, 'the lifetime in Japanese words');
    const sentFr = await test.app.inject({ method: 'GET', url: '/auth/forgot-password/sent?lang=fr' });
    assert.match(sentFr.body, /dans un délai de 30 minutes/);
    const refused = await test.app.inject({ method: 'GET', url: '/auth/reset-password?error=VALIDATION_ERROR&reason=TOO_SHORT&lang=de' });
    assert.match(refused.body, /Dieses Passwort ist zu kurz: Verwenden Sie mindestens \d+ Zeichen/);
  });

  it('the sign-up and verification pages', async () => {
    const signup = await test.app.inject({ method: 'GET', url: '/auth/signup?error=VALIDATION_ERROR&reason=TOO_COMMON', headers: { 'accept-language': 'es-MX,es;q=0.9' } });
    assertHtmlPage(signup, 'sign-up in Spanish');
    assert.match(signup.body, /<h1>Crear una cuenta<\/h1>/);
    assert.match(signup.body, /Esa contraseña está en las listas que los atacantes prueban primero/);
    const check = await test.app.inject({ method: 'GET', url: '/auth/check-email?lang=de' });
    assert.match(check.body, /innerhalb von \d+ (Stunden|Stunde|Tagen|Minuten)/, 'the link’s lifetime in German words');
    const verify = await test.app.inject({ method: 'GET', url: '/auth/verify-email?error=TOKEN_EXPIRED&lang=pt-BR' });
    assert.match(verify.body, /Este link de confirmação expirou/);
  });

  it('English without any language asked for', async () => {
    const response = await test.app.inject({ method: 'GET', url: '/' });
    assert.match(response.body, /<html lang="en" dir="ltr">/);
    assert.equal(response.headers['content-language'], 'en');
  });
});
