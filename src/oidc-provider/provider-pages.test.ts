/**
 * The pages the OpenID Provider renders inside its Koa context, without the provider: their
 * language comes from the Node request alone (the `gatehouse.lang` cookie, else Accept-Language,
 * else English), they carry the deployment's brand, `<html lang>` and Content-Language, and no
 * language switcher (the provider's URLs take no `?lang=`).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { IncomingMessage } from 'node:http';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { mergeCatalogs, readMessages } from '../i18n/catalog.ts';
import { createTranslations } from '../i18n/translator.ts';
import { DEFAULT_BRAND, type Brand } from '../web/brand.ts';
import { WEB_MESSAGES } from '../web/render.ts';
import { createOidcPageRenderer, createProviderPages, providerPageLanguage } from './provider-pages.ts';

const translations = createTranslations(mergeCatalogs([{ name: 'web', messages: WEB_MESSAGES }, { name: 'oidc-provider', messages: readMessages(join(import.meta.dirname, 'messages')) }]));
const ACME: Brand = { ...DEFAULT_BRAND, name: 'Acme & Co', isCustom: true };

const request = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;

/** Just enough of a Koa context for the pages: what they set is kept. */
function fakeContext(headers: Record<string, string>, clientName?: string) {
  const sent: Record<string, string> = {};
  const ctx = {
    req: request(headers),
    status: 400,
    type: '',
    body: undefined as unknown,
    oidc: { client: clientName === undefined ? undefined : { clientName } },
    set(name: string | Record<string, string>, value?: string) {
      if (typeof name === 'string') sent[name.toLowerCase()] = value!;
      else for (const [key, each] of Object.entries(name)) sent[key.toLowerCase()] = each;
    },
  };
  return { ctx: ctx as unknown as KoaContextWithOIDC, sent, html: () => String(ctx.body) };
}

describe('OpenID Provider pages rendered in its Koa context', () => {
  const languageOf = providerPageLanguage(translations, ACME);

  it('take the language from the remembered choice, else Accept-Language, else English; never offer a switcher', () => {
    assert.equal(languageOf(request({ cookie: 'other=1; gatehouse.lang=fr', 'accept-language': 'de' })).locale, 'fr');
    assert.equal(languageOf(request({ cookie: 'gatehouse.lang=xx', 'accept-language': 'pt;q=0.9, ja;q=0.5' })).locale, 'pt-BR');
    assert.equal(languageOf(request({})).locale, 'en');
    assert.equal(languageOf(request({ 'accept-language': '*' })).locale, 'en');
    const page = languageOf(request({ 'accept-language': 'ja' }));
    assert.deepEqual(page.links, []);
    assert.equal(page.brand, ACME);
  });

  it('render the logout question in that language, in the brand, with <html lang> and Content-Language', () => {
    const pages = createProviderPages(createOidcPageRenderer(), languageOf);
    const { ctx, sent, html } = fakeContext({ 'accept-language': 'fr-CA' }, 'Logbook');
    pages.logout(ctx, '<form method="post" action="/oidc/session/end/confirm"><input type="hidden" name="xsrf" value="x1"/></form>', undefined);
    assert.equal(sent['content-language'], 'fr');
    assert.match(sent['content-security-policy']!, /script-src 'none'/);
    assert.match(html(), /<html lang="fr" dir="ltr">/);
    assert.match(html(), /<title>Déconnexion · Acme &amp; Co<\/title>/);
    assert.ok(html().includes('Voulez-vous vous déconnecter de Acme &amp; Co et de Logbook ?'), html());
    assert.doesNotMatch(html(), /class="languages"/);
  });

  it('explain a known provider error in words with its code, and any other with the general message', () => {
    const pages = createProviderPages(createOidcPageRenderer(), languageOf);
    const known = fakeContext({ 'accept-language': 'de' });
    pages.error(known.ctx, { error: 'invalid_client' });
    assert.match(known.html(), /<h1>Problem bei der Anmeldung<\/h1>/);
    assert.ok(known.html().includes('Die App ist bei Acme &amp; Co nicht registriert.'), known.html());
    assert.match(known.html(), /<code>INVALID_CLIENT<\/code>/);

    const other = fakeContext({ 'accept-language': 'es' });
    pages.error(other.ctx, { error: 'something_new' });
    assert.ok(other.html().includes('Algo salió mal al iniciar sesión en una aplicación.'), other.html());
    const odd = fakeContext({});
    pages.error(odd.ctx, { error: '<script>' });
    assert.match(odd.html(), /<code>SERVER_ERROR<\/code>/, 'what is no code is not shown back');
    assert.ok(!odd.html().includes('<script>'));
  });
});
