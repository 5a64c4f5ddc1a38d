/**
 * The language of a person's mails, end to end (issue 22), with mail delivered by the running
 * outbox worker to a real SMTP server on loopback: a sign-up stores the browser's language and
 * every later mail uses it, whatever the request asking for it says; an account without one takes
 * the language of its first sign-in; a signed-in user's explicit `?lang=` choice is stored, and
 * no other request writes anything; an invitation is in the invitee's language, else the inviter's.
 */
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';
import { smtpEnv, startSmtpServer, type ReceivedMail, type TestSmtpServer } from '../../test/helpers/smtp.ts';
import { formBrowser, postForm } from '../../test/helpers/cookie-jar.ts';
import { resetLink, waitFor } from '../../test/helpers/mail-links.ts';
import { LOCALE_COOKIE } from '../i18n/negotiate.ts';
import type { Locale } from '../i18n/locales.ts';

const AUTH_URL = 'https://auth.example.test';
const PASSWORD = 'correct horse battery staple';

for (const backend of await backends()) {
  describe(`the language of mails on ${backend.name}`, { skip: backend.skip, timeout: 120_000 }, () => {
    let database: TestDatabase;
    let smtp: TestSmtpServer;
    let t: TestApp;
    let count = 0;
    const freshEmail = (label: string) => `${label}${++count}@example.com`;

    before(async () => {
      database = await backend.create();
      smtp = await startSmtpServer();
      t = await createTestApp(database, {
        env: {
          AUTH_URL,
          ...smtpEnv(smtp),
          RATE_LIMIT_ORGANIZATION_INVITATIONS: '1000/1h',
        },
      });
    });
    after(async () => {
      await t?.close();
      await smtp?.stop();
      await database?.drop();
    });
    beforeEach(() => smtp.reset());

    const postJson = (url: string, body: unknown, headers: Record<string, string> = {}) =>
      t.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json', ...headers }, payload: JSON.stringify(body) });
    const mailTo = (to: string, template: RegExp) => waitFor(() => smtp.messages.find((m) => m.rcptTo.includes(to) && template.test(m.subject)), `a mail to ${to} (${template})`);
    const localeOf = async (email: string) => (await t.services.users.findUserByEmail(email))!.locale;

    it('a user who signed up with Accept-Language: de gets German mails, the reset mail too, whatever the reset request says', async () => {
      const email = freshEmail('deutsch');
      const signUp = await postJson('/api/auth/signup', { email, password: PASSWORD, name: 'Dora' }, { 'accept-language': 'de-DE,de;q=0.9,en;q=0.5' });
      assert.equal(signUp.statusCode, 202, signUp.body);
      assert.equal(await localeOf(email), 'de', 'the browser’s language is stored with the account');
      const verify: ReceivedMail = await mailTo(email, /E-Mail-Adresse/);
      assert.equal(verify.subject, 'Bestätigen Sie Ihre E-Mail-Adresse für Gatehouse');
      assert.ok(verify.text.startsWith('Hallo,\n'), verify.text);

      // Asked for in English (another browser, a script): the account's language wins.
      const forgot = await postJson('/api/auth/forgot-password', { email }, { 'accept-language': 'en-US,en;q=0.9' });
      assert.equal(forgot.statusCode, 202, forgot.body);
      const reset = await mailTo(email, /zurücksetzen/);
      assert.equal(reset.subject, 'Passwort für Gatehouse zurücksetzen');
      assert.ok(reset.text.includes('lang gültig'), reset.text);
      assert.ok(reset.html.includes('<html lang="de"'), 'the HTML part says its language');
      // The link is intact and works.
      const link = resetLink(reset);
      assert.equal(link.origin, AUTH_URL);
      const valid = await postJson('/api/auth/reset-password/validate', { token: link.searchParams.get('token') });
      assert.equal(valid.statusCode, 200, valid.body);
    });

    it('an account with no language takes its first sign-in’s (not one that states none), then keeps it', async () => {
      const email = freshEmail('first');
      await createUser(t.services, { email, password: PASSWORD });
      assert.equal(await localeOf(email), null);
      assert.equal((await postJson('/api/auth', { email, password: PASSWORD })).statusCode, 200);
      assert.equal(await localeOf(email), null, 'a client that sends no language stores none');
      // Node's fetch (a server, our own client package) sends `*`; a header of languages we lack says nothing either.
      for (const header of ['*', 'zh-CN,zh;q=0.9']) {
        assert.equal((await postJson('/api/auth', { email, password: PASSWORD }, { 'accept-language': header })).statusCode, 200);
        assert.equal(await localeOf(email), null, `Accept-Language: ${header} stores nothing`);
      }
      assert.equal((await postJson('/api/auth', { email, password: PASSWORD }, { 'accept-language': 'pt-BR,pt;q=0.9' })).statusCode, 200);
      assert.equal(await localeOf(email), 'pt-BR');
      assert.equal((await postJson('/api/auth', { email, password: PASSWORD }, { 'accept-language': 'ja' })).statusCode, 200);
      assert.equal(await localeOf(email), 'pt-BR', 'later sign-ins do not change it');

      // Its mails follow: a request in another language changes nothing.
      await postJson('/api/auth/forgot-password', { email }, { 'accept-language': 'ja' });
      const reset = await mailTo(email, /senha/);
      assert.equal(reset.subject, 'Redefina a senha da sua conta Gatehouse');
    });

    it('a mail to an account without a language is in the language of the request that causes it', async () => {
      const email = freshEmail('nolang');
      await createUser(t.services, { email, password: PASSWORD });
      await postJson('/api/auth/forgot-password', { email }, { cookie: `${LOCALE_COOKIE}=fr` });
      const reset = await mailTo(email, /mot de passe/);
      assert.equal(reset.subject, 'Réinitialisez votre mot de passe Gatehouse');
      assert.equal(await localeOf(email), null, 'asking for a reset stores nothing');
    });

    it('stores a signed-in user’s explicit ?lang= choice, and writes nothing on any other request', async () => {
      const email = freshEmail('chooser');
      const user = await createUser(t.services, { email, password: PASSWORD });
      await t.services.users.setLocale(user.id, 'de');
      const browser = await formBrowser(t.app);
      const signedIn = await postForm(t.app, browser, '/api/auth/signin', { email, password: PASSWORD }, AUTH_URL);
      assert.equal(signedIn.statusCode, 303, signedIn.body);
      const get = (url: string, headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url, headers: { cookie: browser.jar.header(), ...headers } });

      // Count the writes: ordinary requests make none.
      const users = t.services.users;
      const setLocale = users.setLocale;
      const writes: Array<[string, Locale]> = [];
      users.setLocale = (userId, locale, options) => {
        writes.push([userId, locale]);
        return setLocale(userId, locale, options);
      };
      try {
        for (const [url, headers] of [
          ['/dashboard', {}],
          ['/dashboard', { 'accept-language': 'fr' }],
          ['/dashboard', { cookie: `${browser.jar.header()}; ${LOCALE_COOKIE}=es` }],
          ['/auth/signin', { 'accept-language': 'ja' }],
          ['/dashboard?lang=xx', {}],
        ] as const) {
          const response = await get(url, headers);
          assert.ok(response.statusCode < 400, `${url}: ${response.statusCode}`);
        }
        assert.deepEqual(writes, [], 'no write without an explicit choice');
        assert.equal(await localeOf(email), 'de');

        const chosen = await get('/dashboard?lang=ja');
        assert.equal(chosen.statusCode, 200);
        assert.match(chosen.body, /<html lang="ja"/);
        assert.equal(await localeOf(email), 'ja', 'the choice is stored for the mails');
        assert.deepEqual(writes, [[user.id, 'ja']]);

        // On any page, not only the dashboard; a link from another site changes nothing.
        await get('/auth/signin?lang=es');
        assert.equal(await localeOf(email), 'es');
        const crossSite = await get('/dashboard?lang=fr', { 'sec-fetch-site': 'cross-site' });
        assert.match(crossSite.body, /<html lang="fr"/, 'the page still answers in the language asked for');
        assert.equal(await localeOf(email), 'es', 'but a link on another site does not choose the mails’ language');
        assert.equal(crossSite.cookies.find((cookie) => cookie.name === LOCALE_COOKIE), undefined, 'nor is it remembered in the cookie');
        // A sibling subdomain's link or image, and a repeated lang, choose nothing either.
        await get('/dashboard?lang=fr', { 'sec-fetch-site': 'same-site', 'sec-fetch-mode': 'navigate' });
        await get('/dashboard?lang=fr', { 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'no-cors' });
        const repeated = await get('/dashboard?lang=fr&lang=ja');
        assert.doesNotMatch(repeated.body, /<html lang="(fr|ja)"/, 'a repeated lang is no choice for the page');
        assert.equal(await localeOf(email), 'es', 'nor for the mails');
        // The person's own navigation does.
        await get('/dashboard?lang=de', { 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'navigate' });
        assert.equal(await localeOf(email), 'de');
        await get('/dashboard?lang=es', { 'sec-fetch-site': 'none', 'sec-fetch-mode': 'navigate' });
        assert.equal(await localeOf(email), 'es');

        // Without a session: the cookie remembers the choice, no account is touched.
        writes.length = 0;
        const anonymous = await t.app.inject({ method: 'GET', url: '/auth/signin?lang=fr' });
        assert.equal(anonymous.statusCode, 200);
        assert.deepEqual(writes, []);
      } finally {
        users.setLocale = setLocale;
      }

      // The next mail is in the chosen language.
      await postJson('/api/auth/forgot-password', { email });
      const reset = await mailTo(email, /contraseña/);
      assert.equal(reset.subject, 'Restablece tu contraseña de Gatehouse');
    });

    it('an invitation is in the invitee’s language when they have an account, else in the inviter’s', async () => {
      const ownerEmail = freshEmail('owner');
      await createUser(t.services, { email: ownerEmail, password: PASSWORD });
      const token = (await postJson('/api/auth', { email: ownerEmail, password: PASSWORD })).json().token as string;
      const asOwner = (url: string, body: unknown, headers: Record<string, string> = {}) => postJson(url, body, { authorization: `Bearer ${token}`, ...headers });
      const created = await asOwner('/api/organizations', { name: 'Sprachen GmbH' });
      assert.equal(created.statusCode, 201, created.body);
      const invitations = `/api/organizations/${created.json().organization.id as string}/invitations`;

      const member = freshEmail('member');
      const memberUser = await createUser(t.services, { email: member, password: PASSWORD });
      await t.services.users.setLocale(memberUser.id, 'es');
      assert.equal((await asOwner(invitations, { email: member, role: 'MEMBER' }, { 'accept-language': 'de' })).statusCode, 201);
      const toMember = await mailTo(member, /organización/);
      assert.equal(toMember.subject, 'Te han invitado a unirte a una organización en Gatehouse');
      assert.ok(toMember.text.includes('«Sprachen GmbH»'), toMember.text);

      const stranger = freshEmail('stranger');
      assert.equal((await asOwner(invitations, { email: stranger, role: 'MEMBER' }, { 'accept-language': 'de' })).statusCode, 201);
      const toStranger = await mailTo(stranger, /Organisation/);
      assert.equal(toStranger.subject, 'Sie sind eingeladen, einer Organisation bei Gatehouse beizutreten');
      assert.ok(toStranger.text.includes('„Sprachen GmbH“'), toStranger.text);
    });
  });
}
