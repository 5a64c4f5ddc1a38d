/**
 * SSO through Chromium, against the samlify IdP served on loopback (its own origin), with the real
 * org-domains module (the domain verified by a TXT record on a stub DNS server): the sign-in
 * page's "Continue with SSO" finds the organization by the address's verified domain, its page
 * sends the browser to the IdP, whose form posts the signed response back to the ACS: signed in,
 * on the dashboard. IdP-initiated sign-in where the connection enables it. Enforcement: the
 * domain's password sign-in is refused, a Gatehouse ADMIN's is not (break-glass). The new pages
 * pass axe (serious and critical rules) in English and Japanese.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createUser, type TestApp } from '../../test/helpers/app.ts';
import { closeBrowser, launchBrowser, newPage, skipUnlessChromium, type Browser, type Page } from '../../test/helpers/browser.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';
import type { TestIdp } from './sso.test-helpers.ts';
import type { StubDnsServer } from '../org-domains/test-dns-server.ts';
import { OPERATOR } from '../organizations/organizations.model.ts';
import type { Connection } from './sso.model.ts';
import { axeViolations, sendIdpForm, startSsoBrowserStack, type SsoBrowserStack } from './sso-browser.test-helpers.ts';
const PASSWORD = 'correct horse battery staple';
const DOMAIN = 'initrode.example';

describe('SSO in the browser', { skip: skipUnlessChromium(), timeout: 180_000 }, () => {
  let organizationId: string;
  let dns: StubDnsServer;
  let browser: Browser | undefined;
  let stack: SsoBrowserStack;
  let served: TestApp;
  let baseURL: string;
  let idp: TestIdp;
  const spMetadata = new Map<string, string>();
  let connection: Connection;
  let idpInitiated: Connection;
  /** Who the IdP signs in next, and which groups they are in. */
  let next = { email: `jane@${DOMAIN}`, groups: ['engineering'] };

  before(async () => {
    stack = await startSsoBrowserStack(async (url, response) => {
      const respond = async (target: Connection, inResponseTo: string | null, relayState: string | null) => {
        const samlResponse = await idp.respond(spMetadata.get(target.id)!, { nameIdXml: next.email, attributes: { email: [next.email], name: ['Jane Initrode'], groups: next.groups }, inResponseTo });
        sendIdpForm(response, `${baseURL}/sso/saml/${target.id}/acs`, samlResponse, relayState);
      };
      if (url.pathname === '/sso') {
        const { id, relayState } = idp.readRequest(url.href);
        return respond(connection, id, relayState);
      }
      if (url.pathname === '/start') return respond(idpInitiated, null, null);
      response.writeHead(404).end();
    });
    ({ served, baseURL, dns, idp } = stack);

    const owner = await createUser(served.services, { email: 'owner@example.com', password: PASSWORD });
    const org = await served.services.organizations.create({ name: 'Initrode' }, owner.id, SYSTEM_SOURCE);
    assert.ok(org.ok);
    organizationId = org.organization.id;
    const added = await served.services.orgDomains.add(organizationId, DOMAIN, OPERATOR, SYSTEM_SOURCE);
    assert.ok(added.ok, JSON.stringify(added));
    dns.records.set(added.domain.challenge.recordName, { TXT: [added.domain.challenge.recordValue] });
    const verifiedDomain = await served.services.orgDomains.verify(organizationId, added.domain.id, OPERATOR, SYSTEM_SOURCE);
    assert.ok(verifiedDomain.ok, JSON.stringify(verifiedDomain));
    for (const idpInit of [false, true]) {
      const created = await served.services.sso.connections.create(org.organization.id, { protocol: 'saml', name: idpInit ? 'IdP-initiated' : 'Initrode SAML', idpMetadataXml: idp.metadata, idpInitiated: idpInit, groupRoles: [{ group: 'it-admins', role: 'ADMIN' }] }, SYSTEM_SOURCE);
      assert.ok(created.ok);
      spMetadata.set(created.connection.id, (await served.app.inject({ url: `/sso/saml/${created.connection.id}/metadata` })).body);
      if (idpInit) idpInitiated = created.connection;
      else connection = created.connection;
    }
    browser = await launchBrowser();
  });
  after(async () => {
    await closeBrowser(browser);
    await stack?.close();
  });

  const axe = (page: Page): Promise<string[]> => axeViolations(page);

  it('signs in SP-initiated from the sign-in page: discovery by domain, the IdP, back on the dashboard as a new member', async () => {
    const page = await newPage(browser!, { baseURL });
    try {
      next = { email: `jane@${DOMAIN}`, groups: ['engineering', 'it-admins'] };
      await page.goto('/auth/signin');
      await page.fill('#sso-email', next.email);
      await page.getByRole('button', { name: 'Continue with SSO' }).click();
      await page.waitForURL(new RegExp(`/sso/${connection.id}\\?`));
      assert.match(await page.textContent('main') ?? '', /Initrode/);
      await page.getByRole('button', { name: 'Continue with SSO' }).click();
      await page.waitForURL(/127\.0\.0\.1:\d+\/sso\?SAMLRequest=/);
      await page.getByRole('button', { name: 'Approve at the IdP' }).click();
      await page.waitForURL(`${baseURL}/dashboard`);
      assert.match(await page.textContent('body') ?? '', new RegExp(next.email));
      const user = await served.services.users.findUserByEmail(next.email);
      assert.equal((await served.services.organizations.get(organizationId, { userId: user!.id }))?.role, 'ADMIN');
    } finally {
      await page.context().close();
    }
  });

  it('signs in IdP-initiated where the connection allows it', async () => {
    const page = await newPage(browser!, { baseURL });
    try {
      next = { email: `joe@${DOMAIN}`, groups: [] };
      await page.goto(`${new URL(idp.entityId).origin}/start`);
      await page.getByRole('button', { name: 'Approve at the IdP' }).click();
      await page.waitForURL(`${baseURL}/dashboard`);
      assert.match(await page.textContent('body') ?? '', /joe@initrode\.example/);
    } finally {
      await page.context().close();
    }
  });

  it('enforces SSO for the domain’s password sign-ins, but not for a Gatehouse ADMIN (break-glass)', async () => {
    const updated = await served.services.sso.connections.update(connection.id, { enforce: true }, SYSTEM_SOURCE);
    assert.ok(updated.ok);
    await createUser(served.services, { email: `pat@${DOMAIN}`, password: PASSWORD });
    await createUser(served.services, { email: `root@${DOMAIN}`, password: PASSWORD, roles: ['ADMIN'] });
    const page = await newPage(browser!, { baseURL });
    try {
      await page.goto('/auth/signin');
      await page.fill('#email', `pat@${DOMAIN}`);
      await page.fill('#password', PASSWORD);
      await page.getByRole('button', { name: 'Login' }).click();
      await page.waitForURL(/\/auth\/signin\?error=/);
      await page.fill('#email', `root@${DOMAIN}`);
      await page.fill('#password', PASSWORD);
      await page.getByRole('button', { name: 'Login' }).click();
      await page.waitForURL(/\/dashboard|\/admin/);
    } finally {
      await page.context().close();
    }
    const refusals = await served.app.inject({ method: 'POST', url: '/api/auth', payload: { email: `pat@${DOMAIN}`, password: PASSWORD } });
    assert.equal(refusals.statusCode, 401);
  });

  it('has no serious accessibility violation on its pages, in English and Japanese', async () => {
    for (const locale of ['en', 'ja']) {
      const page = await newPage(browser!, { baseURL, bypassCSP: true, locale });
      try {
        const found: string[] = [];
        for (const path of [`/auth/signin?lang=${locale}`, `/sso/${connection.id}?lang=${locale}`, `/sso/unknown?lang=${locale}`]) {
          await page.goto(path);
          found.push(...(await axe(page)).map((id) => `${path}: ${id}`));
        }
        await page.goto(`/auth/signin?lang=${locale}`);
        await page.fill('#sso-email', 'nobody@nowhere.test');
        await page.locator('#sso-signin button').click();
        await page.waitForURL(/\/sso\/discover/);
        found.push(...(await axe(page)).map((id) => `discover (none): ${id}`));
        assert.deepEqual(found, []);
      } finally {
        await page.context().close();
      }
    }
  });
});
