/**
 * The organization pages with `inject`, on SQLite: a non-member gets the 404 page (never a 403),
 * the forms refuse what the role does not allow and come back with the code, deletion asks for the
 * slug, a signed-out visitor is sent to sign in and back, the pages run no script, and the admin
 * pages are for ADMINs only.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../../test/helpers/databases.ts';
import { createUser, useTestApp } from '../../test/helpers/app.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { hiddenValue } from '../../test/helpers/pages.ts';
import { CLI_SOURCE } from '../audit/audit.service.ts';
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
    const get = async (url: string) => {
      const response = await t.app.inject({ method: 'GET', url, headers: { cookie: jar.header() } });
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
    const one = await admin.browser.get(`/admin/organizations/${created.organization.id}`);
    assert.equal(one.statusCode, 200);
    const removed = await admin.browser.post(`/admin/organizations/${created.organization.id}/delete`, {}, hiddenValue(one.body, 'csrfToken'));
    assert.equal(removed.headers.location, '/admin/organizations?notice=ORGANIZATION_DELETED');
    assert.equal(await t.services.organizations.find(created.organization.id), null);
  });
});
