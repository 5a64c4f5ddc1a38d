/**
 * The organization pages with `inject`, on SQLite: a non-member gets the 404 page (never a 403),
 * the forms refuse what the role does not allow and come back with the code, deletion asks for the
 * slug, a signed-out visitor is sent to sign in and back, the pages run no script, and the admin
 * pages are for ADMINs only. Every page speaks the reader's language (English by default), and a
 * code in the URL that is not ours is never shown back.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../../test/helpers/databases.ts';
import { createUser, useTestApp } from '../../test/helpers/app.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { hiddenValue } from '../../test/helpers/pages.ts';
import { CLI_SOURCE } from '../audit/audit.service.ts';
import { randomId, randomSecret, sha256Base64url } from '../lib/random.ts';
import * as store from './organizations.store.ts';
import { uniqueEmail } from './organizations.test-helpers.ts';

const PASSWORD = 'correct horse battery staple';
const [sqlite] = await backends();

describe('organization pages', { timeout: 120_000 }, () => {
  const t = useTestApp(sqlite!);

  /** A browser signed in with the session cookie, and the CSRF token of a page. */
  async function browserFor(email: string) {
    const jar = new CookieJar();
    const signIn = await t.app.inject({ method: 'POST', url: '/api/auth/signin', payload: { email, password: PASSWORD } });
    assert.equal(signIn.statusCode, 200, signIn.body);
    jar.store(signIn);
    const get = async (url: string, headers: Record<string, string> = {}) => {
      const response = await t.app.inject({ method: 'GET', url, headers: { ...headers, cookie: jar.header() } });
      jar.store(response);
      return response;
    };
    const post = async (url: string, fields: Record<string, string>, csrfToken: string) => {
      const response = await t.app.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: t.config.authUrl, cookie: jar.header() },
        payload: new URLSearchParams({ ...fields, csrfToken }).toString(),
      });
      jar.store(response);
      return response;
    };
    return { get, post };
  }

  async function person(label: string, roles: string[] = []) {
    const email = uniqueEmail(label);
    const user = await createUser(t.services, { email, password: PASSWORD, roles });
    return { id: user.id, email, browser: await browserFor(email) };
  }

  it('shows members their organization, hides it from others, and refuses what a role does not allow', async () => {
    const owner = await person('page-owner');
    const member = await person('page-member');
    const stranger = await person('page-stranger');
    const created = await t.services.organizations.create({ name: 'Page Works' }, owner.id, CLI_SOURCE);
    assert.ok(created.ok);
    const { id, slug } = created.organization;
    await t.services.organizations.addMember(id, member.id, 'MEMBER', CLI_SOURCE);

    const ownerPage = await owner.browser.get(`/organizations/${id}`);
    assert.equal(ownerPage.statusCode, 200);
    assert.match(ownerPage.body, /Send invitation/);
    assert.match(ownerPage.body, /Delete organization/);
    assert.doesNotMatch(ownerPage.body, /<script/i, 'no script');
    assert.match(String(ownerPage.headers['content-security-policy']), /script-src 'none'/);

    const memberPage = await member.browser.get(`/organizations/${id}`);
    assert.equal(memberPage.statusCode, 200);
    assert.doesNotMatch(memberPage.body, /Send invitation|Delete organization|Change role/, 'a MEMBER sees no management forms');

    const hidden = await stranger.browser.get(`/organizations/${id}`);
    assert.equal(hidden.statusCode, 404);
    assert.match(hidden.body, /ORGANIZATION_NOT_FOUND/);

    // A MEMBER posting a manager's form comes back with the code; a stranger goes to the dashboard.
    const csrf = hiddenValue(memberPage.body, 'csrfToken');
    const renamed = await member.browser.post(`/organizations/${id}/rename`, { name: 'Mine now' }, csrf);
    assert.equal(renamed.statusCode, 303);
    assert.equal(renamed.headers.location, `/organizations/${id}?error=ORGANIZATION_ROLE_REQUIRED`);
    const strangerCsrf = hiddenValue((await stranger.browser.get('/organizations/new')).body, 'csrfToken');
    const strangerPost = await stranger.browser.post(`/organizations/${id}/invitations`, { email: 'x@example.com', role: 'MEMBER' }, strangerCsrf);
    assert.equal(strangerPost.headers.location, '/dashboard?error=ORGANIZATION_NOT_FOUND');
    assert.equal((await t.services.organizations.get(id, { userId: owner.id }))?.organization.name, 'Page Works');

    // Delete asks for the slug.
    const ownerCsrf = hiddenValue(ownerPage.body, 'csrfToken');
    const wrong = await owner.browser.post(`/organizations/${id}/delete`, { confirm: 'nope' }, ownerCsrf);
    assert.equal(wrong.headers.location, `/organizations/${id}?error=CONFIRMATION_MISMATCH`);
    const shown = await owner.browser.get(`/organizations/${id}?error=CONFIRMATION_MISMATCH`);
    assert.match(shown.body, /Type the organization’s slug exactly/);
    const deleted = await owner.browser.post(`/organizations/${id}/delete`, { confirm: slug }, ownerCsrf);
    assert.equal(deleted.headers.location, '/dashboard?notice=ORGANIZATION_DELETED');
    assert.equal(await t.services.organizations.find(id), null);
  });

  it('sends a signed-out visitor to sign in and back; a refused creation comes back to its form', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/organizations/some-id' });
    assert.equal(page.statusCode, 303);
    assert.equal(page.headers.location, '/auth/signin?callbackUrl=/organizations/some-id');
    const owner = await person('creator');
    const form = await owner.browser.get('/organizations/new');
    const taken = await owner.browser.post('/organizations', { name: 'Twice', slug: 'twice-taken' }, hiddenValue(form.body, 'csrfToken'));
    assert.match(String(taken.headers.location), /^\/organizations\/[A-Za-z0-9_-]+\?notice=ORGANIZATION_CREATED$/);
    const again = await owner.browser.post('/organizations', { name: 'Twice', slug: 'twice-taken' }, hiddenValue(form.body, 'csrfToken'));
    assert.equal(again.headers.location, '/organizations/new?error=SLUG_TAKEN');
    assert.match((await owner.browser.get('/organizations/new?error=SLUG_TAKEN')).body, /Another organization has this slug/);
  });

  it('keeps the admin pages for ADMINs', async () => {
    const user = await person('not-admin');
    const refused = await user.browser.get('/admin/organizations');
    assert.equal(refused.statusCode, 403);
    const admin = await person('page-admin', ['ADMIN']);
    const created = await t.services.organizations.create({ name: 'Admin Visible' }, user.id, CLI_SOURCE);
    assert.ok(created.ok);
    const list = await admin.browser.get('/admin/organizations?query=admin%20visible');
    assert.equal(list.statusCode, 200);
    assert.match(list.body, /Admin Visible/);
    assert.match(list.body, /aria-current="page">Organizations/);
    assert.match(list.body, /aria-describedby="organization-query-hint"/);
    assert.match(list.body, /<p class="hint" id="organization-query-hint">Matches the start of a word of the name or of the slug\. <code>\*text<\/code> finds it anywhere/);
    const one = await admin.browser.get(`/admin/organizations/${created.organization.id}`);
    assert.equal(one.statusCode, 200);
    const removed = await admin.browser.post(`/admin/organizations/${created.organization.id}/delete`, {}, hiddenValue(one.body, 'csrfToken'));
    assert.equal(removed.headers.location, '/admin/organizations?notice=ORGANIZATION_DELETED');
    assert.equal(await t.services.organizations.find(created.organization.id), null);
  });
  /** An invitation to `email` with a token we know (its mail is the mail module's business, tested there). */
  async function pendingInvitation(organizationId: string, email: string, role: string) {
    const token = randomSecret(32);
    const now = Date.now();
    await store.insertInvitation(t.services.storage.db, {
      id: randomId(),
      organization_id: organizationId,
      email,
      role,
      token_hash: sha256Base64url(token),
      invited_by: null,
      created_at: now,
      expires_at: now + 86_400_000,
    });
    return token;
  }

  it('speaks the reader’s language on the member pages, and shows back only codes it knows', async () => {
    const owner = await person('lang-owner');
    const invitee = await person('lang-invitee');
    const stranger = await person('lang-stranger');
    const created = await t.services.organizations.create({ name: 'Sprachschule' }, owner.id, CLI_SOURCE);
    assert.ok(created.ok);
    const { id, slug } = created.organization;
    const token = await pendingInvitation(id, invitee.email, 'ADMIN');

    // English without a choice: the default.
    const english = await owner.browser.get(`/organizations/${id}`);
    assert.match(english.body, /<html lang="en"/);
    assert.match(english.body, /<h2 id="members-heading">Members<\/h2>/);

    // German by Accept-Language: headings, forms, the label with the slug, the known code with its message.
    const german = await owner.browser.get(`/organizations/${id}?error=SLUG_TAKEN`, { 'accept-language': 'de-DE,de;q=0.9' });
    assert.equal(german.statusCode, 200);
    assert.match(german.body, /<html lang="de"/);
    assert.match(german.body, /<h2 id="members-heading">Mitglieder<\/h2>/);
    assert.match(german.body, /Einladung senden/);
    assert.match(german.body, /Als Administrator, bis <time datetime="[^"]+">/, 'the pending invitation, its role in words');
    assert.match(german.body, new RegExp(`Geben Sie zur Bestätigung <code>${slug}</code> ein`));
    assert.match(german.body, /Eine andere Organisation hat schon diesen Slug/);
    assert.match(german.body, /<code>SLUG_TAKEN<\/code>/);
    assert.doesNotMatch(german.body, /Send invitation|Members</, 'no English left');

    // An unknown code: the general message, never the code itself.
    const unknown = await owner.browser.get(`/organizations/${id}?lang=fr&error=NOT_OUR_CODE_42&notice=ALSO_NOT_OURS`);
    assert.match(unknown.body, /<html lang="fr"/);
    assert.match(unknown.body, /Cela n’a pas fonctionné/);
    assert.doesNotMatch(unknown.body, /NOT_OUR_CODE_42|ALSO_NOT_OURS/);
    assert.match((await owner.browser.get(`/organizations/${id}?lang=fr&notice=INVITATION_SENT`)).body, /L’invitation est partie/);

    // The dashboard's section, in Japanese, with the invitation to the invitee.
    const dashboard = await invitee.browser.get('/dashboard?lang=ja');
    assert.match(dashboard.body, /<html lang="ja"/);
    assert.match(dashboard.body, /<h2 id="organizations-heading">組織<\/h2>/);
    assert.match(dashboard.body, /<h3 id="organization-invitations-heading">あなたへの招待<\/h3>/);
    assert.match(dashboard.body, /管理者として、<time datetime="[^"]+">[^<]*UTC<\/time> まで/);

    // The invitation link's page, in Spanish: the organization and role, the date in Spanish; a dead link explains itself.
    const invitation = await t.app.inject({ method: 'GET', url: `/organizations/invitations/accept?${new URLSearchParams({ token, lang: 'es' })}` });
    assert.equal(invitation.statusCode, 200);
    assert.match(invitation.body, /<h1>Invitación<\/h1>/);
    assert.match(invitation.body, /Te han invitado a unirte a <strong>Sprachschule<\/strong> como administrador\./);
    assert.match(invitation.body, /Iniciar sesión para aceptar/);
    const dead = await t.app.inject({ method: 'GET', url: '/organizations/invitations/accept?token=not-a-token&lang=pt-BR' });
    assert.match(dead.body, /Este link de convite não é válido/);
    assert.match(dead.body, /<code>INVITATION_INVALID<\/code>/);

    // The create page in Brazilian Portuguese, and the 404 page in German.
    const create = await owner.browser.get('/organizations/new?lang=pt-BR');
    assert.match(create.body, /<h1 id="create-organization-heading">Criar uma organização<\/h1>/);
    const hidden = await stranger.browser.get(`/organizations/${id}?lang=de`);
    assert.equal(hidden.statusCode, 404);
    assert.match(hidden.body, /<html lang="de"/);
    assert.match(hidden.body, /<h1>Organisation nicht gefunden<\/h1>/);
    assert.match(hidden.body, /<code>ORGANIZATION_NOT_FOUND<\/code>/);
  });

  it('shows the roles in the page’s language, while its forms post the roles themselves', async () => {
    const owner = await person('role-owner');
    const admin = await person('role-admin', ['ADMIN']);
    const member = await person('role-member');
    const billing = await person('role-billing');
    const created = await t.services.organizations.create({ name: 'Rollen GmbH' }, owner.id, CLI_SOURCE);
    assert.ok(created.ok);
    const { id } = created.organization;
    await t.services.organizations.addMember(id, admin.id, 'ADMIN', CLI_SOURCE);
    await t.services.organizations.addMember(id, member.id, 'MEMBER', CLI_SOURCE);
    await t.services.organizations.addMember(id, billing.id, 'BILLING', CLI_SOURCE);
    const invitee = uniqueEmail('role-invitee');
    const token = await pendingInvitation(id, invitee, 'MEMBER');
    /** The words a reader sees: no markup, no attribute (a form's values stay the roles themselves). */
    const visibleText = (html: string) => html.replace(/<(script|style)\b[\s\S]*?<\/\1>/g, ' ').replace(/<[^>]*>/g, ' ');
    const RAW_ROLE = /\b(?:OWNER|ADMIN|MEMBER)\b/;

    const page = await owner.browser.get(`/organizations/${id}?lang=de&notice=OWNERSHIP_TRANSFERRED`);
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /<dt>Ihre Rolle<\/dt><dd>Inhaber<\/dd>/);
    for (const role of ['Inhaber', 'Administrator', 'Mitglied', 'BILLING']) assert.match(page.body, new RegExp(`<td role="cell" data-label="Rolle">${role}</td>`), `the members table says ${role}`);
    assert.match(page.body, /<option value="ADMIN" selected>Administrator<\/option>/, 'the role form posts the role, shown in words');
    assert.match(page.body, /<option value="OWNER">Inhaber<\/option>/);
    assert.match(page.body, /<option value="BILLING" selected>BILLING<\/option>/, 'a custom role as the organization named it');
    assert.match(page.body, /<option value="MEMBER" selected>Mitglied<\/option>/, 'the invitation form');
    assert.match(page.body, /Als Mitglied, bis <time/);
    assert.match(page.body, /Ihre Rolle ist jetzt Administrator\./);
    assert.match(page.body, /Das gewählte Mitglied erhält die Rolle Inhaber, Sie erhalten die Rolle Administrator\./);
    // The organization API keys' section (the api-keys module's) words its role choices the same way.
    assert.match(page.body, /<select id="api-key-role" name="role">\s*<option value="MEMBER">Mitglied<\/option>\s*<option value="ADMIN">Administrator<\/option>/);
    assert.doesNotMatch(visibleText(page.body), RAW_ROLE);

    const dashboard = await admin.browser.get('/dashboard?lang=de');
    assert.match(dashboard.body, /<dt>Ihre Rolle<\/dt><dd>Administrator<\/dd>/);
    const adminPage = await admin.browser.get(`/admin/organizations/${id}?lang=de`);
    assert.equal(adminPage.statusCode, 200);
    for (const role of ['Inhaber', 'Administrator', 'Mitglied', 'BILLING']) assert.match(adminPage.body, new RegExp(`<td role="cell" data-label="Rolle">${role}</td>`), `the admin's members table says ${role}`);
    const invitation = await t.app.inject({ method: 'GET', url: `/organizations/invitations/accept?${new URLSearchParams({ token, lang: 'de' })}` });
    assert.match(invitation.body, /Sie sind eingeladen, <strong>Rollen GmbH<\/strong> als Mitglied beizutreten\./);
    assert.doesNotMatch(visibleText(invitation.body), RAW_ROLE);

    // The form still posts the role itself.
    const changed = await owner.browser.post(`/organizations/${id}/members/role`, { userId: member.id, role: 'ADMIN' }, hiddenValue(page.body, 'csrfToken'));
    assert.equal(changed.headers.location, `/organizations/${id}?notice=ROLE_CHANGED`);
    assert.equal((await t.services.organizations.get(id, { userId: member.id }))?.role, 'ADMIN');
  });

  it('pages the admin list a hundred at a time, keeping the search', async () => {
    const admin = await person('pager-admin', ['ADMIN']);
    const tag = `pager${Date.now().toString(36)}`;
    for (let i = 0; i < 101; i++) {
      const created = await t.services.organizations.create({ name: `${tag} ${String(i).padStart(3, '0')}` }, admin.id, CLI_SOURCE);
      assert.ok(created.ok);
    }
    const first = await admin.browser.get(`/admin/organizations?query=${tag}`);
    assert.equal(first.statusCode, 200);
    assert.equal([...first.body.matchAll(new RegExp(`>${tag} \\d{3}</a>`, 'g'))].length, 100);
    assert.doesNotMatch(first.body, />First page</, 'the first page links no first page');
    const next = /<a class="button button-secondary" href="([^"]+)" rel="next">Next page<\/a>/.exec(first.body)?.[1]?.replaceAll('&amp;', '&');
    assert.ok(next?.includes(`query=${tag}`), `the next page keeps the search: ${next}`);
    const second = await admin.browser.get(next!);
    assert.equal([...second.body.matchAll(new RegExp(`>${tag} \\d{3}</a>`, 'g'))].length, 1, 'the one left');
    assert.doesNotMatch(second.body, /rel="next"/);
    assert.match(second.body, /<a class="button button-secondary" href="\/admin\/organizations\?query=[^"]+">First page<\/a>/);
    const edited = await admin.browser.get(`/admin/organizations?query=${tag}&cursor=not-ours`);
    assert.equal(edited.statusCode, 200, 'a cursor that is not ours shows the first page');
    assert.equal([...edited.body.matchAll(new RegExp(`>${tag} \\d{3}</a>`, 'g'))].length, 100);
  });

  it('speaks the reader’s language on the admin pages', async () => {
    const admin = await person('lang-admin', ['ADMIN']);
    const created = await t.services.organizations.create({ name: 'Admin Sprache' }, admin.id, CLI_SOURCE);
    assert.ok(created.ok);
    const list = await admin.browser.get('/admin/organizations?lang=de&query=admin%20sprache&error=NOT_OUR_CODE_42');
    assert.equal(list.statusCode, 200);
    assert.match(list.body, /<html lang="de"/);
    assert.match(list.body, /<h1>Organisationen<\/h1>/);
    assert.match(list.body, /<label for="organization-query">Organisationen nach Name oder Slug suchen<\/label>/);
    assert.match(list.body, /<th scope="col" role="columnheader">Mitglieder<\/th>/);
    assert.match(list.body, /Findet den Anfang eines Wortes im Namen oder im Slug\. <code>\*text<\/code>/);
    assert.doesNotMatch(list.body, /NOT_OUR_CODE_42/);
    const gone = await admin.browser.get('/admin/organizations?lang=ja&error=ORGANIZATION_NOT_FOUND');
    assert.match(gone.body, /その組織は存在しません/);
    const none = await admin.browser.get('/admin/organizations?lang=ja&query=nothing-matches-this');
    assert.match(none.body, /該当する組織はありません/);
    const one = await admin.browser.get(`/admin/organizations/${created.organization.id}?lang=fr`);
    assert.match(one.body, /<h2 id="members-heading">Membres<\/h2>/);
    assert.match(one.body, /Supprimer l’organisation/);
  });
});
