/**
 * The second-factor pages and the administrator's reset, in-process on SQLite and PostgreSQL: a
 * form sign-in is sent to `/auth/mfa` with the challenge in its own cookie (never the URL), the page
 * answers forms and JSON, a wrong code may be retried while anything else ends the sign-in, the
 * dashboard's forms need a recent sign-in, and only an ADMIN resets a user's factors (audited,
 * mailed). The whole journey in Chromium is test/flows/mfa-browser.test.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../../test/helpers/databases.ts';
import { createUser, useTestApp } from '../../test/helpers/app.ts';
import { fakeClock } from '../../test/helpers/clock.ts';
import { CookieJar, formBrowser, postForm } from '../../test/helpers/cookie-jar.ts';
import { enrolTotp, totpCode } from '../../test/helpers/totp.ts';
import { LOCALES } from '../i18n/locales.ts';
import { mfaPageError, mfaPromptError, PAGE_ERROR_CODES, PROMPT_CODES } from './mfa-pages.messages.ts';

const PASSWORD = 'correct horse battery staple';

for (const backend of await backends()) {
  describe(`second-factor pages on ${backend.name}`, { skip: backend.skip }, () => {
    const clock = fakeClock();
    const t = useTestApp(backend, { clock });
    let count = 0;
    const origin = () => new URL(t.config.authUrl).origin;

    /** A user with an authenticator app; their secret. */
    async function enrolled(roles: string[] = []) {
      const email = `pages${++count}@example.com`;
      const user = await createUser(t.services, { email, password: PASSWORD, roles });
      return { user, email, secret: await enrolTotp(t.services, user, clock) };
    }

    /** A browser with a CSRF token, as a page load gives it. */
    const browser = () => formBrowser(t.app);

    const formPost = (b: { jar: CookieJar; csrfToken: string }, url: string, fields: Record<string, string>) => postForm(t.app, b, url, fields, origin());

    it('sends a form sign-in to the code page, the challenge in an HttpOnly cookie, no session', async () => {
      const { email } = await enrolled();
      const b = await browser();
      const signIn = await formPost(b, '/api/auth/signin', { email, password: PASSWORD, callbackUrl: '/dashboard?x=1' });
      assert.equal(signIn.statusCode, 303);
      assert.equal(signIn.headers.location, `/auth/mfa?${new URLSearchParams({ callbackUrl: '/dashboard?x=1' })}`);
      const challenge = signIn.cookies.find((cookie) => cookie.name === 'gatehouse.challenge');
      assert.ok(challenge?.httpOnly && challenge.sameSite === 'Lax' && challenge.maxAge === 300);
      assert.ok(!String(signIn.headers.location).includes(challenge.value), 'never in the URL');
      assert.equal(b.jar.has('gatehouse.session'), false);

      const page = await t.app.inject({ method: 'GET', url: '/auth/mfa?callbackUrl=%2Fdashboard', headers: { cookie: b.jar.header() } });
      assert.equal(page.statusCode, 200);
      assert.match(page.body, /autocomplete="one-time-code"/);
      assert.match(page.body, /Use a recovery code/);
      assert.match(String(page.headers['content-security-policy']), /script-src 'none'/);
    });

    it('lets a wrong code be retried, then signs the browser in at the callbackUrl', async () => {
      const { email, secret } = await enrolled();
      const b = await browser();
      await formPost(b, '/api/auth/signin', { email, password: PASSWORD, callbackUrl: '/dashboard' });
      const wrong = await formPost(b, '/auth/mfa', { code: '000000', callbackUrl: '/dashboard' });
      assert.equal(wrong.headers.location, `/auth/mfa?${new URLSearchParams({ error: 'INVALID_CODE', callbackUrl: '/dashboard' })}`);
      assert.ok(b.jar.has('gatehouse.challenge'), 'still there for the next try');
      const right = await formPost(b, '/auth/mfa', { code: totpCode(secret, clock()), callbackUrl: '/dashboard' });
      assert.equal(right.statusCode, 303);
      assert.equal(right.headers.location, '/dashboard');
      assert.equal(b.jar.has('gatehouse.challenge'), false, 'used up');
      const session = await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: { cookie: b.jar.header() } });
      assert.deepEqual(session.json().session.amr, ['pwd', 'otp', 'mfa']);
    });

    it('answers JSON too (a script in the browser), setting the session cookies', async () => {
      const { email, secret } = await enrolled();
      const b = await browser();
      const signIn = await t.app.inject({ method: 'POST', url: '/api/auth/signin', headers: { origin: origin(), cookie: b.jar.header(), 'x-csrf-token': b.csrfToken }, payload: { email, password: PASSWORD } });
      assert.equal(signIn.json().error, 'MFA_REQUIRED', 'JSON callers get the challenge as JSON');
      // A script finishes it with the token from the JSON, as /api/auth/mfa/verify would, or here with the cookie of a form sign-in.
      await formPost(b, '/api/auth/signin', { email, password: PASSWORD });
      const answer = await t.app.inject({ method: 'POST', url: '/auth/mfa', headers: { origin: origin(), cookie: b.jar.header(), 'x-csrf-token': b.csrfToken }, payload: { code: totpCode(secret, clock()) } });
      assert.equal(answer.statusCode, 200, answer.body);
      assert.deepEqual(Object.keys(answer.json()).sort(), ['expiresAt', 'refreshToken', 'token', 'user']);
      assert.ok(answer.cookies.some((cookie) => cookie.name === 'gatehouse.session'));
    });

    it('ends the sign-in for a missing or expired challenge', async () => {
      const b = await browser();
      const noCookie = await t.app.inject({ method: 'GET', url: '/auth/mfa' });
      assert.equal(noCookie.statusCode, 303);
      assert.match(String(noCookie.headers.location), /^\/auth\/signin\?error=MFA_EXPIRED/);

      const { email, secret } = await enrolled();
      await formPost(b, '/api/auth/signin', { email, password: PASSWORD });
      clock.advance(5 * 60_000);
      const late = await formPost(b, '/auth/mfa', { code: totpCode(secret, clock()) });
      assert.match(String(late.headers.location), /^\/auth\/signin\?error=INVALID_TOKEN/);
      assert.equal(b.jar.has('gatehouse.challenge'), false);
    });

    it('asks for a recent sign-in before the dashboard changes a factor', async () => {
      const email = `pages${++count}@example.com`;
      await createUser(t.services, { email, password: PASSWORD });
      const b = await browser();
      await formPost(b, '/api/auth/signin', { email, password: PASSWORD });
      // Signing in gives the browser a new CSRF token, as the next page load shows it.
      b.csrfToken = (await t.app.inject({ method: 'GET', url: '/api/auth/csrf', headers: { cookie: b.jar.header() } })).json().csrfToken;
      const fresh = await formPost(b, '/dashboard/mfa/totp/setup', {});
      assert.equal(fresh.statusCode, 200);
      assert.match(fresh.body, /<figure class="qr"[^>]*>\s*<svg/);
      clock.advance(11 * 60_000);
      const stale = await formPost(b, '/dashboard/mfa/totp/setup', {});
      assert.equal(stale.statusCode, 403);
      assert.match(stale.body, /REAUTH_REQUIRED/);
    });

    /** The text of the page's alert box, tags removed; null without one. */
    /** A page's error alert as text: the prompt's error summary (its heading left out), or another page's alert. */
    const alertText = (html: string) =>
      (/<div class="alert alert-error error-summary" role="alert"[^>]*>\s*<h2[^>]*>[^<]*<\/h2>([\s\S]*?)<\/div>/.exec(html) ?? /<div class="alert alert-error" role="alert">([\s\S]*?)<\/div>/.exec(html))?.[1]
        ?.replace(/<[^>]+>/g, ' ')
        .replace(/\s+/g, ' ')
        .trim() ?? null;

    /** Chooses `locale` for this browser as the language switcher does (`?lang=`, remembered in a cookie). */
    async function choose(b: { jar: CookieJar }, locale: string) {
      b.jar.store(await t.app.inject({ method: 'GET', url: `/auth/signin?lang=${locale}`, headers: { cookie: b.jar.header() } }));
    }

    it('has a text in every language for each code its pages explain (their keys are built from the code)', () => {
      for (const locale of LOCALES) {
        const i18n = t.services.translations.translator(locale);
        for (const code of [...PROMPT_CODES, 'SOMETHING_ELSE']) assert.doesNotMatch(mfaPromptError(code, i18n).message, /^mfa\./, `${locale} ${code}`);
        for (const code of [...PAGE_ERROR_CODES, 'SOMETHING_ELSE']) {
          const { heading, message } = mfaPageError(code, 600, i18n);
          assert.doesNotMatch(`${heading}|${message}`, /(^|\|)mfa\./, `${locale} ${code}`);
        }
        for (const intro of ['enabled', 'renewed']) assert.doesNotMatch(i18n.t(`mfa.recoveryCodes.intro.${intro}`), /^mfa\./);
      }
    });

    it('asks for the code in the page\'s language, and never shows back an unknown ?error=', async () => {
      const { email } = await enrolled();
      const b = await browser();
      await formPost(b, '/api/auth/signin', { email, password: PASSWORD });
      const get = (url: string, headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url, headers: { cookie: b.jar.header(), ...headers } });

      const english = await get('/auth/mfa');
      assert.match(english.body, /<html lang="en"/);
      assert.match(english.body, /<h1>Two-step verification<\/h1>/);
      assert.match(english.body, /<title>Two-step verification · Gatehouse<\/title>/);

      const german = await get('/auth/mfa?lang=de');
      assert.equal(german.statusCode, 200);
      assert.match(german.body, /<html lang="de"/);
      assert.match(german.body, /<h1>Bestätigung in zwei Schritten<\/h1>/);
      assert.match(german.body, /<summary>Wiederherstellungscode verwenden<\/summary>/);
      assert.match(german.body, /<label for="recovery-code">Wiederherstellungscode<\/label>/);
      assert.doesNotMatch(german.body, /Use a recovery code|Verify</, 'no English left');

      const wrong = await get('/auth/mfa?error=INVALID_CODE', { 'accept-language': 'fr-FR,fr;q=0.9' });
      assert.match(wrong.body, /<html lang="fr"/);
      // At its field: the summary links to it by its label (the message is said once), the field says it and is marked.
      assert.equal(alertText(wrong.body), 'Code Code d’erreur : INVALID_CODE');
      assert.match(wrong.body, /<li><a href="#mfa-code">Code<\/a><\/li>/);
      assert.match(wrong.body, /<p class="field-error" id="mfa-code-error"><span class="visually-hidden">[^<]*<\/span> Ce code n’est pas le bon, ou il a déjà servi\. Vérifiez l’application et réessayez\.<\/p>/);
      assert.equal(wrong.body.split('Ce code n’est pas le bon').length - 1, 1, 'said once');
      assert.match(wrong.body, /<input id="mfa-code" [^>]*aria-invalid="true" aria-describedby="mfa-code-error" autofocus>/);
      assert.doesNotMatch(wrong.body, /<details class="disclosure" open>/, 'the recovery form stays closed');
      // A wrong recovery code: its own field, with its form opened.
      const wrongRecovery = await get('/auth/mfa?error=INVALID_CODE&using=recovery-code');
      assert.match(wrongRecovery.body, /<li><a href="#recovery-code">/);
      assert.match(wrongRecovery.body, /<details class="disclosure" open>/);
      assert.match(wrongRecovery.body, /<input id="recovery-code" [^>]*aria-invalid="true" aria-describedby="recovery-code-error" autofocus>/);
      assert.doesNotMatch(wrongRecovery.body, /<input id="mfa-code" [^>]*aria-invalid/);
      // Too many tries concerns no field: the summary alone.
      const limited = await get('/auth/mfa?error=RATE_LIMITED');
      assert.match(limited.body, /class="error-summary-list">\s*<li>[^<]/);
      assert.doesNotMatch(limited.body, /aria-invalid/);

      const hostile = '"><script>alert(1)</script>';
      const unknown = await get(`/auth/mfa?error=${encodeURIComponent(hostile)}`, { 'accept-language': 'ja' });
      assert.match(unknown.body, /<html lang="ja"/);
      assert.match(unknown.body, /<h1>2 段階認証<\/h1>/);
      assert.equal(alertText(unknown.body), 'コードを確認できませんでした。もう一度お試しください。', 'the general message, and no code');
      assert.doesNotMatch(unknown.body, /<script>|alert\(1\)|<code>/);
    });

    it('sets up an authenticator app in the user\'s language: the setup, its error, the recovery codes, the dashboard section', async () => {
      const email = `pages${++count}@example.com`;
      await createUser(t.services, { email, password: PASSWORD });
      const b = await browser();
      await formPost(b, '/api/auth/signin', { email, password: PASSWORD });
      b.csrfToken = (await t.app.inject({ method: 'GET', url: '/api/auth/csrf', headers: { cookie: b.jar.header() } })).json().csrfToken;
      await choose(b, 'de');

      const setup = await formPost(b, '/dashboard/mfa/totp/setup', {});
      assert.equal(setup.statusCode, 200);
      assert.match(setup.body, /<html lang="de"/);
      assert.match(setup.body, /<h1>Authenticator-App einrichten<\/h1>/);
      assert.match(setup.body, /<figure class="qr" role="img" aria-label="QR-Code für Ihre Authenticator-App – oder geben Sie den Schlüssel unten ein">/);
      assert.match(setup.body, /<label for="mfa-code">Der 6-stellige Code, den die App gerade anzeigt<\/label>/);
      const secret = /id="totp-secret">([A-Z2-7 ]+)</.exec(setup.body)![1]!.replace(/ /g, '');

      const wrong = await formPost(b, '/dashboard/mfa/totp/enable', { code: totpCode(secret, clock(), 5) });
      assert.equal(wrong.statusCode, 200, 'the same setup again');
      // The summary links to the field by its label, and the field carries the message: said once; the wrong code is not shown back.
      assert.equal(alertText(wrong.body), 'Der 6-stellige Code, den die App gerade anzeigt Fehlercode: INVALID_CODE');
      assert.match(wrong.body, /<li><a href="#mfa-code">Der 6-stellige Code, den die App gerade anzeigt<\/a><\/li>/);
      assert.match(wrong.body, /<p class="field-error" id="mfa-code-error">(?:(?!<\/p>)[\s\S])*Dieser Code stimmt nicht\./);
      assert.equal(wrong.body.split('Dieser Code stimmt nicht.').length - 1, 1, 'the message once');
      assert.match(wrong.body, /<p class="field-error" id="mfa-code-error">[\s\S]*?Dieser Code stimmt nicht\./);
      const input = /<input id="mfa-code"[^>]*>/.exec(wrong.body)?.[0] ?? '';
      assert.match(input, / aria-invalid="true"/);
      assert.match(input, / aria-describedby="mfa-code-error totp-secret"/);
      assert.doesNotMatch(input, /value=/, 'the code is never kept');
      assert.equal(/id="totp-secret">([A-Z2-7 ]+)</.exec(wrong.body)![1]!.replace(/ /g, ''), secret, 'the same key');
      const freshInput = /<input id="mfa-code"[^>]*>/.exec(setup.body)?.[0] ?? '';
      assert.match(freshInput, / aria-describedby="totp-secret">$/);
      assert.doesNotMatch(freshInput, /aria-invalid/);

      const enabled = await formPost(b, '/dashboard/mfa/totp/enable', { code: totpCode(secret, clock()) });
      assert.equal(enabled.statusCode, 200);
      assert.match(enabled.body, /<h1>Ihre Wiederherstellungscodes<\/h1>/);
      assert.match(enabled.body, /Ihre Authenticator-App ist eingeschaltet/);
      const download = /href="data:text\/plain;charset=utf-8,([^"]+)" download="gatehouse-recovery-codes.txt">Als Datei herunterladen</.exec(enabled.body);
      assert.ok(download, 'the file, named after the deployment');
      assert.match(decodeURIComponent(download[1]!), /^Wiederherstellungscodes für Gatehouse \(jeder funktioniert einmal\)\n\n/);

      const dashboard = await t.app.inject({ method: 'GET', url: '/dashboard', headers: { cookie: b.jar.header() } });
      assert.match(dashboard.body, /<h2 id="mfa-heading">Bestätigung in zwei Schritten<\/h2>/);
      assert.match(dashboard.body, /Eine Authenticator-App ist eingerichtet\. Noch 10 von 10 Wiederherstellungscodes übrig\./);
      assert.match(dashboard.body, /<button class="button button-danger" type="submit">Authenticator-App entfernen<\/button>/);

      // The dashboard forms' error page, in Japanese, says how recent a sign-in must be in words.
      await choose(b, 'ja');
      clock.advance(11 * 60_000);
      const stale = await formPost(b, '/dashboard/mfa/recovery-codes', { code: totpCode(secret, clock()) });
      assert.equal(stale.statusCode, 403);
      assert.match(stale.body, /<html lang="ja"/);
      assert.match(stale.body, /<h1>先にもう一度サインインしてください<\/h1>/);
      assert.match(stale.body, /10 分以内にダッシュボードに戻ってください。/);
      assert.match(stale.body, /<code>REAUTH_REQUIRED<\/code>/);
    });

    it('shows the admin\'s section of a user in the admin\'s language', async () => {
      const { user } = await enrolled();
      const admin = await createUser(t.services, { email: `admin${++count}@example.com`, password: PASSWORD, roles: ['ADMIN'] });
      const b = await browser();
      await formPost(b, '/api/auth/signin', { email: admin.email, password: PASSWORD });
      const page = await t.app.inject({ method: 'GET', url: `/admin/users/${user.id}?lang=es`, headers: { cookie: b.jar.header() } });
      assert.equal(page.statusCode, 200, page.body);
      assert.match(page.body, /<h2 id="mfa-admin-heading">Verificación en dos pasos<\/h2>/);
      assert.match(page.body, /<dt>Aplicación de autenticación<\/dt><dd>Configurada<\/dd>/);
      assert.match(page.body, /<button class="button button-danger" type="submit" aria-describedby="mfa-reset-hint">Restablecer los segundos factores<\/button>/);
    });

    it('lets only an ADMIN reset a user\'s factors; audited and mailed', async () => {
      const { user, email } = await enrolled();
      const admin = await createUser(t.services, { email: `admin${++count}@example.com`, password: PASSWORD, roles: ['ADMIN'] });
      const token = async (address: string) => (await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: address, password: PASSWORD } })).json().token as string;
      const plain = await createUser(t.services, { email: `plain${++count}@example.com`, password: PASSWORD });
      const reset = (as: string, id: string) => t.app.inject({ method: 'POST', url: `/api/admin/users/${id}/mfa/reset`, headers: { authorization: `Bearer ${as}` } });

      assert.equal((await reset(await token(plain.email), user.id)).statusCode, 403);
      const adminToken = await token(admin.email);
      assert.equal((await reset(adminToken, 'no-such-user')).statusCode, 404);
      const done = await reset(adminToken, user.id);
      assert.equal(done.statusCode, 200, done.body);
      assert.deepEqual(await t.services.mfa.methodsOf(user.id), []);
      assert.equal((await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email, password: PASSWORD } })).statusCode, 200, 'the password alone again');
      const events = await t.services.audit.listEvents({ userId: user.id, type: 'mfa.reset', limit: 5 });
      assert.equal(events.events[0]?.actorUserId, admin.id);
      const mails = await t.services.storage.db.selectFrom('mail_outbox').select('to_address').where('template', '=', 'security-notice').where('to_address', '=', email).execute();
      assert.equal(mails.length, 2, 'told when the app was added and when it was reset');
    });
  });
}
