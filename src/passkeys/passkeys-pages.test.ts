/**
 * The passkeys' page sections in the page's language, on SQLite and PostgreSQL: the dashboard's
 * list (its dates too), the sign-in page's and the second-factor page's button, and the texts the
 * browser script shows (`data-texts`, which the script reads: it holds no text of its own). The
 * ceremonies themselves are passkeys.api.test.ts; the script in Chromium is
 * test/flows/passkeys-browser.test.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../../test/helpers/databases.ts';
import { createSignedInUser, useTestApp } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { CookieJar, formBrowser, postForm } from '../../test/helpers/cookie-jar.ts';
import { SoftAuthenticator } from '../../test/helpers/webauthn.ts';
import { LOCALES } from '../i18n/locales.ts';
import { scriptTexts } from './passkeys-pages.ts';

const PASSWORD = 'correct horse battery staple';
const AUTH_URL = 'http://localhost:3000';

/** An attribute's value as the browser reads it (the templates escape & < > " '). */
function attribute(html: string, selector: RegExp, name: string): string {
  const element = selector.exec(html)?.[0];
  assert.ok(element, `no element ${selector}`);
  const value = new RegExp(`\\s${name}="([^"]*)"`).exec(element)?.[1];
  assert.ok(value !== undefined, `no ${name} on ${element}`);
  return value.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

interface ScriptTexts {
  using: string;
  added: string;
  errorWithCode: string;
  errors: Record<string, string>;
}

for (const backend of await backends()) {
  describe(`passkeys page sections in other languages, on ${backend.name}`, { skip: backend.skip }, () => {
    const clock = fakeClock(Date.UTC(2026, 10, 27, 6, 48));
    const t = useTestApp(backend, { clock, env: { AUTH_URL } });
    let count = 0;

    /** A user with a passkey named `Laptop`, and a browser signed in with it. */
    async function signedInWithPasskey() {
      const user = await createSignedInUser(t, { email: `pages${++count}@example.com`, password: PASSWORD });
      const authenticator = new SoftAuthenticator({ origin: AUTH_URL });
      const bearer = { authorization: `Bearer ${user.token}` };
      const options = await t.app.inject({ method: 'POST', url: '/api/auth/passkeys/register/options', payload: {}, headers: bearer });
      const added = await t.app.inject({ method: 'POST', url: '/api/auth/passkeys/register/verify', payload: { response: authenticator.register(options.json()), name: 'Laptop' }, headers: bearer });
      assert.equal(added.statusCode, 200, added.body);
      const signInOptions = await t.app.inject({ method: 'POST', url: '/api/auth/passkeys/authenticate/options', payload: {} });
      const signedIn = await t.app.inject({ method: 'POST', url: '/api/auth/passkeys/authenticate/verify', payload: { response: authenticator.assert(signInOptions.json()) } });
      assert.equal(signedIn.statusCode, 200, signedIn.body);
      return { ...user, jar: new CookieJar().store(signedIn) };
    }

    it('lists the passkeys on the dashboard in the page\'s language, dates too, and gives the script its texts in it', async () => {
      const { jar } = await signedInWithPasskey();
      const english = await t.app.inject({ method: 'GET', url: '/dashboard', headers: { cookie: jar.header() } });
      assert.match(english.body, /<h2 id="passkeys-heading">Passkeys<\/h2>/);
      assert.match(english.body, /<time datetime="2026-11-27T06:48:00.000Z">Nov 27, 2026, 6:48 AM UTC<\/time>/);

      const page = await t.app.inject({ method: 'GET', url: '/dashboard?lang=fr', headers: { cookie: jar.header() } });
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /<h2 id="passkeys-heading">Clés d’accès<\/h2>/);
      assert.match(page.body, /<dt>Date d’ajout<\/dt><dd><time datetime="2026-11-27T06:48:00.000Z">27 nov\. 2026, 06:48 UTC<\/time><\/dd>/);
      assert.match(page.body, /<dt>Dernière utilisation<\/dt><dd><time datetime="2026-11-27T06:48:00.000Z">/);
      assert.match(page.body, /<button class="button" type="submit">Ajouter une clé d’accès<\/button>/);
      assert.match(page.body, /<label for="passkey-new-name">Nom de la nouvelle clé d’accès \(facultatif\)<\/label>/);
      assert.match(page.body, /<h3 id="passkey-codes-heading" tabindex="-1">Vos codes de récupération<\/h3>/);
      const section = page.body.slice(page.body.indexOf('<section id="passkeys"'), page.body.indexOf('</section>', page.body.indexOf('<section id="passkeys"')));
      assert.doesNotMatch(section, /Add a passkey|Rename<|Remove<|Last used/, 'no English left in the section');

      const texts = JSON.parse(attribute(page.body, /<section id="passkeys"[^>]*>/, 'data-texts')) as ScriptTexts;
      assert.equal(texts.added, 'Clé d’accès « {name} » ajoutée.', 'the name is left for the script to fill in');
      assert.equal(texts.errors.REAUTH_REQUIRED, 'Pour cela, il faut une connexion récente : déconnectez-vous, puis reconnectez-vous d’abord.');
      assert.equal(texts.errors.VALIDATION_ERROR, 'Saisissez un nom de 64 caractères au plus, sans caractères invisibles ni caractères de contrôle.');
      assert.equal(texts.errorWithCode, 'Cela n’a pas fonctionné (code d’erreur {code}). Veuillez réessayer.');
    });

    it('offers the passkey on the sign-in and second-factor pages in their language, and shows back no unknown ?error=', async () => {
      const signin = await t.app.inject({ method: 'GET', url: '/auth/signin?lang=de' });
      assert.match(signin.body, /<html lang="de"/);
      assert.match(signin.body, /<button class="button button-secondary button-provider" type="button" data-passkey-signin>Mit Passkey anmelden<\/button>/);
      const texts = JSON.parse(attribute(signin.body, /<div data-passkeys="signin"[^>]*>/, 'data-texts')) as ScriptTexts;
      assert.equal(texts.using, 'Folgen Sie der Aufforderung Ihres Browsers, um Ihren Passkey zu verwenden …');
      assert.equal(texts.errors.INVALID_PASSKEY?.startsWith('Der Passkey wurde nicht akzeptiert'), true);

      // With the password, the passkey is the second factor: the code page offers it.
      const { email } = await signedInWithPasskey();
      const b = await formBrowser(t.app);
      const password = await postForm(t.app, b, '/api/auth/signin', { email, password: PASSWORD }, new URL(AUTH_URL).origin);
      assert.match(String(password.headers.location), /^\/auth\/mfa/);
      const hostile = '"><script>alert(1)</script>';
      const prompt = await t.app.inject({ method: 'GET', url: `/auth/mfa?error=${encodeURIComponent(hostile)}`, headers: { cookie: b.jar.header(), 'accept-language': 'ja' } });
      assert.equal(prompt.statusCode, 200);
      assert.match(prompt.body, /<html lang="ja"/);
      assert.match(prompt.body, /data-from-challenge="true"/);
      assert.match(prompt.body, /data-passkey-signin>パスキーを使う<\/button>/);
      assert.match(prompt.body, /<p class="divider">または<\/p>/);
      assert.match(String(prompt.headers['content-security-policy']), /script-src 'nonce-/, 'the script still loads under a nonce');
      assert.doesNotMatch(prompt.body, /<script>alert|alert\(1\)|<code>/, 'the general message, and no code');
      const promptTexts = JSON.parse(attribute(prompt.body, /<div data-passkeys="signin"[^>]*>/, 'data-texts')) as ScriptTexts;
      assert.equal(promptTexts.errors.cancelled, 'パスキーの確認が閉じられたか、時間切れになりました。何も変更されていません。');
    });

    it('has every text of the script in every language (their keys are built from the code)', () => {
      for (const locale of LOCALES) {
        const texts = scriptTexts(t.services.translations.translator(locale));
        const all = Object.values(texts).flatMap((value) => (typeof value === 'string' ? [value] : Object.values(value)));
        assert.ok(all.length > 20);
        for (const text of all) assert.doesNotMatch(text, /^passkeys\./, locale);
      }
    });

    it('serves a script that holds no text of its own', async () => {
      const script = await t.app.inject({ method: 'GET', url: '/assets/passkeys.js' });
      assert.equal(script.statusCode, 200);
      const ours = script.body.slice(script.body.lastIndexOf('Gatehouse passkeys, in the browser'));
      assert.match(ours, /dataset\.texts/);
      assert.doesNotMatch(ours, /Follow your browser|Passkey “|Signed in\.|did not work/);
    });
  });
}
