/**
 * The SSO setup link end to end through Chromium, against the samlify IdP on loopback and the real
 * org-domains module (a stub DNS server on loopback): the organization's OWNER makes a link on the
 * organization's page; the IT admin, with no account and no session, opens it, sees our SP values,
 * saves the IdP's metadata, runs a test sign-in that shows what the IdP asserted and creates nobody
 * and no session, verifies the domain by its TXT record and creates the SCIM token, which
 * /scim/v2/Users then accepts. Hostile: an expired, a revoked and a tampered link get a 4xx page;
 * a link of one organization cannot verify another's domain. The pages pass axe (serious and
 * critical rules).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { createUser, type TestApp } from '../../test/helpers/app.ts';
import { closeBrowser, launchBrowser, newPage, skipUnlessChromium, type Browser, type Page } from '../../test/helpers/browser.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';
import { OPERATOR } from '../organizations/organizations.model.ts';
import type { StubDnsServer } from '../org-domains/test-dns-server.ts';
import type { TestIdp } from './sso.test-helpers.ts';
import { axeViolations, sendIdpForm, startSsoBrowserStack, type SsoBrowserStack } from './sso-browser.test-helpers.ts';

const PASSWORD = 'correct horse battery staple';
const DOMAIN = 'globex.example';

describe('SSO setup link in the browser', { skip: skipUnlessChromium(), timeout: 180_000 }, () => {
  let browser: Browser | undefined;
  let stack: SsoBrowserStack;
  let served: TestApp;
  let baseURL: string;
  let dns: StubDnsServer;
  let idp: TestIdp;
  let organizationId: string;
  let otherOrganizationId: string;
  let otherDomainId: string;
  /** The connection the IdP answers for (the link's). */
  let connectionId = '';
  const axeFound: string[] = [];

  before(async () => {
    stack = await startSsoBrowserStack(async (url, response) => {
      if (url.pathname !== '/sso') return void response.writeHead(404).end();
      const { id, relayState } = idp.readRequest(url.href);
      const spMetadata = (await served.app.inject({ url: `/sso/saml/${connectionId}/metadata` })).body;
      const samlResponse = await idp.respond(spMetadata, { nameIdXml: `ada@${DOMAIN}`, attributes: { email: [`ada@${DOMAIN}`], name: ['Ada Globex'], groups: ['it-admins', 'staff'] }, inResponseTo: id });
      sendIdpForm(response, `${baseURL}/sso/saml/${connectionId}/acs`, samlResponse, relayState);
    });
    ({ served, baseURL, dns, idp } = stack);

    const owner = await createUser(served.services, { email: 'owner@example.com', password: PASSWORD });
    const org = await served.services.organizations.create({ name: 'Globex' }, owner.id, SYSTEM_SOURCE);
    assert.ok(org.ok);
    organizationId = org.organization.id;
    const other = await served.services.organizations.create({ name: 'Initech' }, owner.id, SYSTEM_SOURCE);
    assert.ok(other.ok);
    otherOrganizationId = other.organization.id;
    const otherDomain = await served.services.orgDomains.add(otherOrganizationId, 'initech.example', OPERATOR, SYSTEM_SOURCE);
    assert.ok(otherDomain.ok);
    otherDomainId = otherDomain.domain.id;
    dns.records.set(otherDomain.domain.challenge.recordName, { TXT: [otherDomain.domain.challenge.recordValue] });
    browser = await launchBrowser();
  });
  after(async () => {
    await closeBrowser(browser);
    await stack?.close();
  });

  async function axe(page: Page, label: string): Promise<void> {
    axeFound.push(...(await axeViolations(page)).map((id) => `${label}: ${id}`));
  }

  /**
   * The IT admin's pages are walked under their real CSP (the test's form must reach the IdP), which
   * keeps axe out: axe checks the same state in a second browser with the same cookies.
   */
  async function axeLike(page: Page, label: string, reach?: (copy: Page) => Promise<void>): Promise<void> {
    const copy = await newPage(browser!, { baseURL, bypassCSP: true });
    try {
      await copy.context().addCookies(await page.context().cookies());
      if (reach === undefined) await copy.goto(page.url());
      else await reach(copy);
      await axe(copy, label);
    } finally {
      await copy.context().close();
    }
  }

  const count = async (table: 'users' | 'sessions' | 'organization_members') => Number((await sql<{ n: number }>`select count(*) as n from ${sql.table(table)}`.execute(served.services.storage.db)).rows[0]!.n);

  it('walks the link: SP values, metadata, a test sign-in that creates nothing, the domain, the SCIM token', async () => {
    // The owner makes the link on the organization's page.
    const ownerPage = await newPage(browser!, { baseURL, bypassCSP: true });
    let url: string;
    try {
      await ownerPage.goto('/auth/signin');
      await ownerPage.fill('#email', 'owner@example.com');
      await ownerPage.fill('#password', PASSWORD);
      await ownerPage.getByRole('button', { name: 'Login' }).click();
      await ownerPage.waitForURL(/\/dashboard/);
      await ownerPage.goto(`/organizations/${organizationId}`);
      await axe(ownerPage, 'organization page');
      await ownerPage.getByRole('button', { name: 'Create a setup link' }).click();
      url = await ownerPage.inputValue('#sso-setup-link-url');
      assert.match(url, new RegExp(`^${baseURL}/sso/setup\\?token=[A-Za-z0-9_-]{43}$`));
      await axe(ownerPage, 'link created');
    } finally {
      await ownerPage.context().close();
    }
    const links = await served.services.sso.setup.list(organizationId, OPERATOR);
    assert.ok(links.ok);
    assert.equal(links.links.length, 1);
    connectionId = links.links[0]!.connectionId;
    const stored = await sql<{ token_hash: string }>`select token_hash from sso_setup_links`.execute(served.services.storage.db);
    assert.ok(!stored.rows.some((row) => url.includes(row.token_hash)), 'only a hash is stored');

    // The IT admin: no account, no session; the pages' own CSP.
    const page = await newPage(browser!, { baseURL });
    try {
      await page.goto(url);
      await page.waitForURL(`${baseURL}/sso/setup`);
      assert.equal(await page.inputValue('#sp-entity-id'), `${baseURL}/sso/saml/${connectionId}/metadata`);
      assert.equal(await page.inputValue('#sp-acs-url'), `${baseURL}/sso/saml/${connectionId}/acs`);
      assert.equal(await page.inputValue('#sp-redirect-uri'), `${baseURL}/sso/oidc/${connectionId}/callback`);
      await axeLike(page, 'setup page (new)');

      await page.fill('#saml-metadata-xml', idp.metadata);
      await page.getByRole('button', { name: 'Save the SAML connection' }).click();
      await page.waitForURL(/notice=connection-saved/);
      assert.match(await page.inputValue('#sp-signing-cert'), /BEGIN CERTIFICATE/);
      const connection = await served.services.sso.connections.get(connectionId);
      assert.equal(connection?.organizationId, organizationId);
      assert.equal(connection?.settings.saml?.idpEntityId, idp.entityId);
      await axeLike(page, 'setup page (saved)');

      // The test sign-in: the IdP's attributes shown; nobody made, no membership, no session.
      const [users, sessions, members] = [await count('users'), await count('sessions'), await count('organization_members')];
      await page.getByRole('button', { name: 'Test sign-in' }).click();
      await page.waitForURL(/127\.0\.0\.1:\d+\/sso\?SAMLRequest=/);
      await page.getByRole('button', { name: 'Approve at the IdP' }).click();
      await page.waitForURL(/\/sso\/setup\/tests\//);
      const shown = (await page.textContent('#setup-test-attributes')) ?? '';
      for (const expected of [`ada@${DOMAIN}`, 'Ada Globex', 'it-admins, staff']) assert.ok(shown.includes(expected), `${expected} in ${shown}`);
      await axeLike(page, 'test result');
      assert.equal(await served.services.users.findUserByEmail(`ada@${DOMAIN}`), null);
      assert.deepEqual([await count('users'), await count('sessions'), await count('organization_members')], [users, sessions, members]);
      assert.ok(!(await page.context().cookies()).some((cookie) => cookie.name.includes('gatehouse.session')), 'no session cookie');

      // The domain: its TXT record shown, then checked against the stub DNS server.
      await page.goto('/sso/setup');
      await page.fill('#setup-domain-name', DOMAIN);
      await page.getByRole('button', { name: 'Add the domain' }).click();
      await page.waitForURL(/notice=domain-added/);
      const recordName = await page.locator('[id^="record-name-"]').inputValue();
      const recordValue = await page.locator('[id^="record-value-"]').inputValue();
      assert.equal(recordName, `_gatehouse-challenge.${DOMAIN}`);

      // Hostile: this link's form, pointed at another organization's domain, reaches nothing.
      await page.locator('form[action="/sso/setup/domains/verify"] input[name="domainId"]').evaluate((input, id) => ((input as HTMLInputElement).value = id), otherDomainId);
      await page.getByRole('button', { name: 'Check the record' }).click();
      await page.waitForSelector('#setup-error');
      assert.match((await page.textContent('#setup-error')) ?? '', /DOMAIN_NOT_FOUND/);
      assert.equal((await served.services.orgDomains.find(otherOrganizationId, otherDomainId))?.status, 'pending');

      dns.records.set(recordName, { TXT: [recordValue] });
      await page.goto('/sso/setup#setup-domain');
      await page.getByRole('button', { name: 'Check the record' }).click();
      await page.waitForURL(/notice=domain-verified/);
      assert.equal((await served.services.orgDomains.findVerified(DOMAIN))?.organizationId, organizationId);

      // The SCIM token, shown once, accepted by the SCIM API.
      await page.getByRole('button', { name: 'Create a SCIM token' }).click();
      const token = await page.inputValue('#scim-token');
      assert.match(token, /^gatehouse_scim_/);
      await axeLike(page, 'SCIM token', async (copy) => {
        await copy.goto('/sso/setup');
        await copy.getByRole('button', { name: 'Create a SCIM token' }).click();
        await copy.waitForSelector('#scim-token');
      });
      const scim = await served.app.inject({ url: '/scim/v2/Users', headers: { authorization: `Bearer ${token}` } });
      assert.equal(scim.statusCode, 200, scim.body);
    } finally {
      await page.context().close();
    }
    const events = await sql<{ type: string; details: string }>`select type, details from audit_events where type like 'sso.setup_%'`.execute(served.services.storage.db);
    assert.deepEqual([...new Set(events.rows.map((row) => row.type))].sort(), ['sso.setup_link_created', 'sso.setup_link_opened', 'sso.setup_test_completed']);
    assert.ok(!JSON.stringify(events.rows).includes(new URL(url).searchParams.get('token')!), 'no token in the audit log');
  });

  it('refuses an expired, a revoked and a tampered link with a 4xx page', async () => {
    const make = async () => {
      const created = await served.services.sso.setup.create(organizationId, {}, OPERATOR, SYSTEM_SOURCE);
      assert.ok(created.ok);
      return created;
    };
    const expired = await make();
    await sql`update sso_setup_links set expires_at = ${Date.now() - 1000} where id = ${expired.link.id}`.execute(served.services.storage.db);
    const revoked = await make();
    assert.ok((await served.services.sso.setup.revoke(organizationId, revoked.link.id, OPERATOR, SYSTEM_SOURCE)).ok);
    const good = await make();
    const token = new URL(good.url).searchParams.get('token')!;
    const tampered = good.url.replace(token, `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`);
    const page = await newPage(browser!, { baseURL, bypassCSP: true });
    try {
      for (const [url, status, code] of [
        [expired.url, 410, 'SSO_SETUP_LINK_EXPIRED'],
        [revoked.url, 410, 'SSO_SETUP_LINK_REVOKED'],
        [tampered, 404, 'SSO_SETUP_LINK_INVALID'],
        [`${baseURL}/sso/setup`, 404, 'SSO_SETUP_LINK_INVALID'],
      ] as const) {
        const response = await page.goto(url);
        assert.equal(response?.status(), status, url);
        assert.match((await page.textContent('#setup-refused')) ?? '', new RegExp(code));
        await axe(page, code);
      }
      // A link revoked while in use stops working at the next step.
      await page.goto(good.url);
      await page.waitForURL(`${baseURL}/sso/setup`);
      assert.ok((await served.services.sso.setup.revoke(organizationId, good.link.id, OPERATOR, SYSTEM_SOURCE)).ok);
      await page.fill('#setup-domain-name', 'late.example');
      await page.getByRole('button', { name: 'Add the domain' }).click();
      await page.waitForSelector('#setup-refused');
      assert.match((await page.textContent('#setup-refused')) ?? '', /SSO_SETUP_LINK_REVOKED/);
      assert.equal(await served.services.orgDomains.find(organizationId, 'late.example'), null);
    } finally {
      await page.context().close();
    }
  });

  it('has no serious accessibility violation on the setup pages', () => {
    assert.deepEqual(axeFound, []);
  });
});
