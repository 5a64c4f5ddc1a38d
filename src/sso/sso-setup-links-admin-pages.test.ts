/**
 * SSO setup links from the admin area (sso-setup-links-pages.ts, `admin-organization` slot), through
 * `app.inject()` on the real app: the administrators' page of an organization lists its live links
 * with a Revoke button each and a form to create one; the form (with its CSRF token) answers with
 * the link shown once, in the admin area's frame; both are audited with the administrator as actor,
 * as the CLI's are with the operator; a forged form, a member or the organization's OWNER without
 * the ADMIN role are refused; the section is in the page's language.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import { createSqliteDatabase } from '../../test/helpers/databases.ts';
import { createUser, useTestApp } from '../../test/helpers/app.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { assertHtmlPage, hiddenValue, unescapeHtml } from '../../test/helpers/pages.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';
import { OPERATOR } from '../organizations/organizations.model.ts';

const PASSWORD = 'correct horse battery staple';
const FORM = 'application/x-www-form-urlencoded';

describe('SSO setup links on the admin page of an organization', () => {
  const t = useTestApp({ name: 'sqlite', skip: false, create: createSqliteDatabase });
  let origin: string;
  let admin: CookieJar;
  let adminId: string;
  let owner: CookieJar;
  let organizationId: string;
  let page: string;

  async function signIn(email: string, roles: string[]): Promise<{ jar: CookieJar; id: string }> {
    const user = await createUser(t.services, { email, password: PASSWORD, roles });
    const response = await t.app.inject({ method: 'POST', url: '/api/auth/signin', payload: { email, password: PASSWORD } });
    assert.equal(response.statusCode, 200, response.body);
    return { jar: new CookieJar().store(response), id: user.id };
  }

  before(async () => {
    origin = new URL(t.config.authUrl).origin;
    ({ jar: admin, id: adminId } = await signIn('ada@example.com', ['ADMIN']));
    const ownerSignedIn = await signIn('olga@example.com', []);
    owner = ownerSignedIn.jar;
    const org = await t.services.organizations.create({ name: 'Initech' }, ownerSignedIn.id, SYSTEM_SOURCE);
    assert.ok(org.ok);
    organizationId = org.organization.id;
    page = `/admin/organizations/${organizationId}`;
  });

  async function get(url: string, jar: CookieJar) {
    const response = await t.app.inject({ method: 'GET', url, headers: { cookie: jar.header() } });
    jar.store(response);
    return response;
  }
  async function post(url: string, jar: CookieJar, fields: Array<[string, string]>) {
    const response = await t.app.inject({ method: 'POST', url, headers: { 'content-type': FORM, origin, cookie: jar.header() }, payload: new URLSearchParams(fields).toString() });
    jar.store(response);
    return response;
  }
  /** Posts the page's form that posts to `action`, with the page's CSRF token. */
  async function submit(action: string, fields: Array<[string, string]>, jar = admin): Promise<LightMyRequestResponse> {
    const shown = await get(page, jar);
    assert.equal(shown.statusCode, 200, shown.body);
    assert.ok(shown.body.includes(`action="${action}"`), `the page has a form posting to ${action}`);
    return post(action, jar, [['csrfToken', hiddenValue(shown.body, 'csrfToken')], ...fields]);
  }
  const audited = async (type: 'sso.setup_link_created' | 'sso.setup_link_revoked') => (await t.services.audit.listEvents({ type, limit: 10 })).events;

  it('creates a link from the form, shows it once in the admin frame, and audits it with the administrator as actor', async () => {
    const empty = await get(page, admin);
    assertHtmlPage(empty, 'admin organization');
    assert.match(empty.body, /<h2 id="sso-setup-links-heading">Single sign-on setup links<\/h2>/);
    assert.match(empty.body, /No live setup links\./);
    assert.match(empty.body, /<label for="sso-setup-link-days">Works for \(days\)<\/label>/, 'the days field has its label');

    const action = `${page}/sso-setup-links`;
    const created = await submit(action, [['days', '3']]);
    assertHtmlPage(created, 'created');
    assert.match(created.body, /<a href="\/admin\/organizations" aria-current="page">/, 'in the admin frame, under Organizations');
    assert.match(created.body, /send it to the organization&#39;s IT admin|send it to the organization's IT admin/);
    const url = unescapeHtml(/<input id="sso-setup-link-url" type="text" readonly value="([^"]+)"/.exec(created.body)?.[1] ?? '');
    assert.ok(url.startsWith(`${t.config.authUrl}/sso/setup?token=`), url);
    assert.ok(created.body.includes(`href="${page}#sso-setup-links-heading"`), 'a way back to the organization');

    const listed = await t.services.sso.setup.list(organizationId, OPERATOR);
    assert.ok(listed.ok);
    assert.equal(listed.links.length, 1);
    const [link] = listed.links;
    assert.equal(link!.status, 'active');
    assert.ok(Math.abs(link!.expiresAt - link!.createdAt - 3 * 86_400_000) < 1000, 'works for the days asked');
    const [event] = await audited('sso.setup_link_created');
    assert.equal(event?.actorUserId, adminId);
    assert.equal(event?.details?.['linkId'], link!.id);
    assert.ok(!JSON.stringify(event).includes(new URL(url).searchParams.get('token')!), 'never the token');

    // Listed as live, with a Revoke button that names it; the URL itself is never shown again.
    const after = await get(page, admin);
    assert.match(after.body, new RegExp(`<input type="hidden" name="linkId" value="${link!.id}">\\s*<button class="button button-danger" type="submit" aria-describedby="sso-setup-link-${link!.id}">Revoke</button>`));
    assert.ok(!after.body.includes(url) && !after.body.includes(new URL(url).searchParams.get('token')!));
  });

  it('revokes a link from the form: audited, gone from the live list, and refused when opened', async () => {
    const made = await t.services.sso.setup.create(organizationId, {}, OPERATOR, SYSTEM_SOURCE);
    assert.ok(made.ok);
    const revoked = await submit(`${page}/sso-setup-links/revoke`, [['linkId', made.link.id]]);
    assert.equal(revoked.statusCode, 303, revoked.body);
    assert.equal(revoked.headers.location, `${page}#sso-setup-links-heading`);
    const [event] = await audited('sso.setup_link_revoked');
    assert.equal(event?.actorUserId, adminId);
    assert.equal(event?.details?.['linkId'], made.link.id);
    assert.ok(!(await get(page, admin)).body.includes(`value="${made.link.id}"`), 'only live links are listed');
    const opened = await t.services.sso.setup.open(new URL(made.url).searchParams.get('token')!, SYSTEM_SOURCE);
    assert.deepEqual(opened, { ok: false, reason: 'SSO_SETUP_LINK_REVOKED' });

    // Revoked already (or not this organization's): back to the organizations with the code.
    const again = await submit(`${page}/sso-setup-links/revoke`, [['linkId', made.link.id]]);
    assert.equal(again.statusCode, 303);
    assert.equal(again.headers.location, '/admin/organizations?error=SSO_SETUP_LINK_NOT_FOUND');
  });

  it('refuses a forged form, a member, and the OWNER without the ADMIN role', async () => {
    const before = (await audited('sso.setup_link_created')).length;
    const noToken = await post(`${page}/sso-setup-links`, admin, [['days', '1']]);
    assert.equal(noToken.statusCode, 403, 'no CSRF token');
    const ownerPage = await get(`/organizations/${organizationId}`, owner);
    const asOwner = await post(`${page}/sso-setup-links`, owner, [['csrfToken', hiddenValue(ownerPage.body, 'csrfToken')], ['days', '1']]);
    assert.equal(asOwner.statusCode, 403, 'the admin area is for administrators');
    const { jar: member } = await signIn('mel@example.com', []);
    assert.equal((await get(page, member)).statusCode, 403);
    assert.equal((await audited('sso.setup_link_created')).length, before, 'nothing made');
    const badDays = await submit(`${page}/sso-setup-links`, [['days', '365']]);
    assert.ok(badDays.statusCode === 303 || badDays.statusCode === 422, `${badDays.statusCode}`);
    assert.equal((await audited('sso.setup_link_created')).length, before, 'nothing made past SETUP_LINK_MAX_DAYS');
  });

  it('speaks the page’s language', async () => {
    const german = await get(`${page}?lang=de`, admin);
    assert.match(german.body, /<html lang="de"/);
    assert.match(german.body, /Mit einem Einrichtungslink bindet die IT-Administration dieser Organisation/);
  });
});
