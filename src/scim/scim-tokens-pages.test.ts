/**
 * The organization page's SCIM section with `inject`, on SQLite: its OWNERs and ADMINs see the
 * tokens (name, created, last used) and create, rotate and revoke them, the new token shown once
 * and accepted by /scim/v2, the rotated and revoked ones refused there; a MEMBER sees no section
 * and is refused by the forms.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { backends } from '../../test/helpers/databases.ts';
import { createUser, useTestApp } from '../../test/helpers/app.ts';
import { CookieJar } from '../../test/helpers/cookie-jar.ts';
import { hiddenValue } from '../../test/helpers/pages.ts';
import { CLI_SOURCE } from '../audit/audit.service.ts';
import { uniqueEmail } from '../organizations/organizations.test-helpers.ts';

const PASSWORD = 'correct horse battery staple';
const [sqlite] = await backends();

describe('SCIM tokens on the organization page', { timeout: 120_000 }, () => {
  const t = useTestApp(sqlite!);

  async function signedInAs(email: string) {
    const user = await createUser(t.services, { email, password: PASSWORD });
    const jar = new CookieJar().store(await t.app.inject({ method: 'POST', url: '/api/auth/signin', payload: { email, password: PASSWORD } }));
    const request = async (method: 'GET' | 'POST', url: string, fields?: Record<string, string>) => {
      const headers: Record<string, string> = { cookie: jar.header(), ...(fields !== undefined && { 'content-type': 'application/x-www-form-urlencoded', origin: t.config.authUrl }) };
      const response = await t.app.inject({ method, url, headers, ...(fields !== undefined && { payload: new URLSearchParams(fields).toString() }) });
      jar.store(response);
      return response;
    };
    return Object.assign(request, { userId: user.id });
  }
  const scimStatus = async (token: string) => (await t.app.inject({ url: '/scim/v2/Users', headers: { authorization: `Bearer ${token}` } })).statusCode;
  const tokenOn = (body: string) => /id="scim-token-value"[^>]*value="([^"]+)"/.exec(body)?.[1] ?? '';

  it('lets an OWNER or ADMIN create, rotate and revoke tokens; a MEMBER sees nothing', async () => {
    const owner = await signedInAs(uniqueEmail('scim-owner'));
    const member = await signedInAs(uniqueEmail('scim-member'));
    const created = await t.services.organizations.create({ name: 'Directory Co' }, owner.userId, CLI_SOURCE);
    assert.ok(created.ok);
    const id = created.organization.id;
    assert.ok((await t.services.organizations.addMember(id, member.userId, 'MEMBER', CLI_SOURCE)).ok);

    const page = await owner('GET', `/organizations/${id}`);
    assert.equal(page.statusCode, 200);
    assert.ok(page.body.includes('id="scim-tokens-heading"'));
    const csrfToken = hiddenValue(page.body, 'csrfToken');

    const issued = await owner('POST', `/organizations/${id}/scim-tokens`, { name: 'Okta', csrfToken });
    assert.equal(issued.statusCode, 200, issued.body);
    const first = tokenOn(issued.body);
    assert.match(first, /^gatehouse_scim_/);
    assert.equal(await scimStatus(first), 200);

    const listed = await owner('GET', `/organizations/${id}`);
    assert.ok(listed.body.includes('Okta'));
    assert.equal(listed.body.includes(first), false, 'never shown again');
    const [record] = await t.services.scimTokens.list(id);
    assert.ok(record?.lastUsedAt !== null, 'last use recorded');

    const rotated = await owner('POST', `/organizations/${id}/scim-tokens/rotate`, { tokenId: record!.id, csrfToken });
    assert.equal(rotated.statusCode, 200);
    const second = tokenOn(rotated.body);
    assert.equal(await scimStatus(first), 401);
    assert.equal(await scimStatus(second), 200);

    const active = (await t.services.scimTokens.list(id)).find((token) => token.revokedAt === null)!;
    const revoked = await owner('POST', `/organizations/${id}/scim-tokens/revoke`, { tokenId: active.id, csrfToken });
    assert.equal(revoked.statusCode, 303);
    assert.equal(await scimStatus(second), 401);

    const memberPage = await member('GET', `/organizations/${id}`);
    assert.equal(memberPage.statusCode, 200);
    assert.equal(memberPage.body.includes('scim-tokens-heading'), false);
    const refused = await member('POST', `/organizations/${id}/scim-tokens`, { csrfToken: hiddenValue(memberPage.body, 'csrfToken') });
    assert.equal(refused.statusCode, 303);
    assert.match(refused.headers.location as string, /error=ORGANIZATION_ROLE_REQUIRED/);
    assert.equal((await t.services.scimTokens.list(id)).filter((token) => token.revokedAt === null).length, 0);
  });
});
