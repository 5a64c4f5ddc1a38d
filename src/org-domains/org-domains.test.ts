/**
 * Organization domains end to end, over the real app (SQLite and PostgreSQL), with a stub DNS
 * server on loopback (DOMAINS_DNS_SERVER) and a local web server for the well-known file: a claim
 * gets its record; verification succeeds with the right TXT record and fails (with its code, audited)
 * with a wrong or missing one or a failing server; a domain is verified by one organization at most;
 * only the organization's OWNERs and ADMINs (and administrators, over the admin API) manage it;
 * discovery by domain and by address (IDN in punycode); removal frees the domain; verification is
 * rate-limited; the audit log and webhooks never carry the token.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { backends } from '../../test/helpers/databases.ts';
import { createSignedInUser, useTestApp } from '../../test/helpers/app.ts';
import { api, assertError } from '../organizations/organizations.test-helpers.ts';
import { startStubDnsServer, type StubDnsServer } from './test-dns-server.ts';
import { normaliseDomain } from './domain-name.ts';
import { collectPublicEvents } from '../module.ts';
import { MODULES } from '../modules.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';

const PASSWORD = 'correct horse battery staple';

describe('domain names', () => {
  it('accepts registrable names in their ASCII form and refuses the rest', () => {
    assert.equal(normaliseDomain('  Example.COM. '), 'example.com');
    assert.equal(normaliseDomain('bücher.example'), 'xn--bcher-kva.example');
    assert.equal(normaliseDomain('xn--bcher-kva.example'), 'xn--bcher-kva.example');
    assert.equal(normaliseDomain('mail.acme.co.uk'), 'mail.acme.co.uk');
    for (const refused of ['com', 'co.uk', 'github.io', '127.0.0.1', '[::1]', '::1', 'localhost', 'printer.local', 'a..b.com', '-a.com', 'a_b.com', 'example.123', 'exa mple.com', '', 'a'.repeat(64) + '.com', 'http://example.com', 'user@example.com']) {
      assert.equal(normaliseDomain(refused), null, refused);
    }
  });
});

for (const backend of await backends()) {
  describe(`organization domains (${backend.name})`, { skip: backend.skip }, () => {
    let dns: StubDnsServer;
    let web: http.Server;
    const files = new Map<string, { status: number; body: string }>();
    const env: Record<string, string> = { DOMAINS_ALLOW_PRIVATE_TARGETS: 'true', RATE_LIMIT_DOMAIN_VERIFY: '1000/1h' };
    before(async () => {
      dns = await startStubDnsServer();
      web = http.createServer((request, response) => {
        const file = request.url === '/.well-known/gatehouse-domain-verification' ? files.get((request.headers.host ?? '').replace(/:\d+$/, '')) : undefined;
        response.writeHead(file?.status ?? 404, { 'content-type': 'text/plain' }).end(file?.body ?? 'not found');
      });
      web.listen(0, '127.0.0.1');
      await once(web, 'listening');
      env.DOMAINS_DNS_SERVER = dns.address;
      env.DOMAINS_HTTP_CHECK_PORT = String((web.address() as AddressInfo).port);
    });
    after(async () => {
      await dns?.close();
      web?.close();
    });
    const t = useTestApp(backend, { env });

    let count = 0;
    const unique = (name: string) => `${name}-${++count}-${backend.name}`;
    const email = (name: string) => `${unique(name)}@example.com`;
    async function organizationWith(owner: { token: string }, members: Array<{ id: string; role: string }> = []) {
      const created = await api(t, owner.token).post('/api/organizations', { name: unique('Org') });
      assert.equal(created.statusCode, 201, created.body);
      const id = created.json().organization.id as string;
      for (const member of members) {
        const added = await t.services.organizations.addMember(id, member.id, member.role, SYSTEM_SOURCE);
        assert.ok(added.ok, JSON.stringify(added));
      }
      return id;
    }
    const publish = (domain: { challenge: { recordName: string; recordValue: string } }, value = domain.challenge.recordValue) => dns.records.set(domain.challenge.recordName, { TXT: ['v=spf1 -all', value] });
    async function auditOf(type: string) {
      return (await t.services.audit.listEvents({ type, limit: 50 })).events;
    }

    it('claims a domain, shows the record, and verifies it with the right TXT record only', async () => {
      const owner = await createSignedInUser(t, { email: email('owner'), password: PASSWORD });
      const orgId = await organizationWith(owner);
      const call = api(t, owner.token);
      const name = `${unique('acme')}.example`;
      const added = await call.post(`/api/organizations/${orgId}/domains`, { domain: name.toUpperCase() });
      assert.equal(added.statusCode, 201, added.body);
      const domain = added.json().domain;
      assert.equal(domain.domain, name);
      assert.equal(domain.status, 'pending');
      assert.equal(domain.challenge.recordName, `_gatehouse-challenge.${name}`);
      assert.match(domain.challenge.recordValue, /^gatehouse-domain-verification=[A-Za-z0-9_-]{32}$/);
      assertError(await call.post(`/api/organizations/${orgId}/domains`, { domain: name }), 409, 'DOMAIN_ALREADY_ADDED');
      assertError(await call.post(`/api/organizations/${orgId}/domains`, { domain: 'co.uk' }), 422, 'DOMAIN_INVALID');
      assertError(await call.post(`/api/organizations/${orgId}/domains`, { domain: '10.0.0.1' }), 422, 'DOMAIN_INVALID');

      const verify = () => call.post(`/api/organizations/${orgId}/domains/${domain.id}/verify`, {});
      // Nothing published: NXDOMAIN.
      assertError(await verify(), 422, 'DOMAIN_RECORD_NOT_FOUND');
      // A record with another value.
      publish(domain, 'gatehouse-domain-verification=somebody-else');
      assertError(await verify(), 422, 'DOMAIN_RECORD_MISMATCH');
      // The DNS server failing.
      dns.failing.add(domain.challenge.recordName);
      assertError(await verify(), 502, 'DOMAIN_CHECK_FAILED');
      dns.failing.delete(domain.challenge.recordName);
      assert.equal(await t.services.orgDomains.findVerified(name), null);

      publish(domain);
      const verified = await verify();
      assert.equal(verified.statusCode, 200, verified.body);
      assert.equal(verified.json().domain.status, 'verified');
      assert.equal(verified.json().domain.verifiedMethod, 'dns');
      assert.ok(dns.asked.includes(`${domain.challenge.recordName} TXT`));
      // Verifying again answers it as it is.
      assert.equal((await verify()).statusCode, 200);

      const found = await t.services.orgDomains.findVerified(name.toUpperCase());
      assert.deepEqual(found && { organizationId: found.organizationId, domain: found.domain }, { organizationId: orgId, domain: name });
      assert.equal((await t.services.orgDomains.findVerifiedForEmail(`Someone@${name.toUpperCase()}`))?.organizationId, orgId);
      assert.equal(await t.services.orgDomains.findVerifiedForEmail(`someone@sub.${name}`), null);

      const failures = (await auditOf('org_domain.verification_failed')).filter((event) => event.details?.domainId === domain.id);
      assert.deepEqual(failures.map((event) => event.reason).sort(), ['DOMAIN_CHECK_FAILED', 'DOMAIN_RECORD_MISMATCH', 'DOMAIN_RECORD_NOT_FOUND']);
      const token = domain.challenge.recordValue.split('=')[1];
      for (const type of ['org_domain.added', 'org_domain.verified', 'org_domain.verification_failed']) {
        const events = (await auditOf(type)).filter((event) => event.details?.domainId === domain.id);
        assert.ok(events.length > 0, type);
        assert.ok(!JSON.stringify(events).includes(token), `${type} carries no token`);
        assert.equal(events[0]!.actorUserId, owner.id);
      }
      // The webhook payload: ids, the domain, the method.
      const verifiedEvent = (await auditOf('org_domain.verified')).find((event) => event.details?.domainId === domain.id)!;
      const payload = collectPublicEvents(MODULES).find((event) => event.from === 'org_domain.verified')!.payload(verifiedEvent);
      assert.deepEqual(payload, { organizationId: orgId, domainId: domain.id, domain: name, actorUserId: owner.id, method: 'dns' });
    });

    it('lets one organization at most verify a domain; removing it frees the domain', async () => {
      const first = await createSignedInUser(t, { email: email('first'), password: PASSWORD });
      const second = await createSignedInUser(t, { email: email('second'), password: PASSWORD });
      const firstOrg = await organizationWith(first);
      const secondOrg = await organizationWith(second);
      const name = `${unique('shared')}.example`;
      const mine = (await api(t, first.token).post(`/api/organizations/${firstOrg}/domains`, { domain: name })).json().domain;
      publish(mine);
      assert.equal((await api(t, first.token).post(`/api/organizations/${firstOrg}/domains/${mine.id}/verify`)).statusCode, 200);

      // The second organization may claim it, but not verify it, even with its own record published.
      const theirs = await api(t, second.token).post(`/api/organizations/${secondOrg}/domains`, { domain: name });
      assert.equal(theirs.statusCode, 201, theirs.body);
      const theirDomain = theirs.json().domain;
      dns.records.set(theirDomain.challenge.recordName, { TXT: [mine.challenge.recordValue, theirDomain.challenge.recordValue] });
      assertError(await api(t, second.token).post(`/api/organizations/${secondOrg}/domains/${theirDomain.id}/verify`), 409, 'DOMAIN_CLAIMED_ELSEWHERE');
      assert.equal((await t.services.orgDomains.findVerified(name))?.organizationId, firstOrg);

      // Removed by the first: the second verifies it.
      const removed = await api(t, first.token).delete(`/api/organizations/${firstOrg}/domains/${mine.id}`);
      assert.equal(removed.statusCode, 200, removed.body);
      assert.equal(await t.services.orgDomains.findVerified(name), null);
      assert.equal((await api(t, second.token).post(`/api/organizations/${secondOrg}/domains/${theirDomain.id}/verify`)).statusCode, 200);
      assert.equal((await t.services.orgDomains.findVerified(name))?.organizationId, secondOrg);
      assert.ok((await auditOf('org_domain.removed')).some((event) => event.details?.domainId === mine.id && event.details?.wasVerified === true));
      assertError(await api(t, first.token).delete(`/api/organizations/${firstOrg}/domains/${mine.id}`), 404, 'DOMAIN_NOT_FOUND');
    });

    it('lets one of two organizations verifying the same domain at once win, and adds a claim once', async () => {
      const first = await createSignedInUser(t, { email: email('racer'), password: PASSWORD });
      const second = await createSignedInUser(t, { email: email('racer'), password: PASSWORD });
      const orgs = [await organizationWith(first), await organizationWith(second)];
      const tokens = [first.token, second.token];
      const name = `${unique('race')}.example`;
      const claims = await Promise.all(orgs.map(async (orgId, index) => (await api(t, tokens[index]!).post(`/api/organizations/${orgId}/domains`, { domain: name })).json().domain));
      dns.records.set(claims[0].challenge.recordName, { TXT: claims.map((claim) => claim.challenge.recordValue) });
      const answers = await Promise.all(orgs.map((orgId, index) => api(t, tokens[index]!).post(`/api/organizations/${orgId}/domains/${claims[index].id}/verify`)));
      assert.deepEqual(answers.map((answer) => answer.statusCode).sort(), [200, 409], answers.map((answer) => answer.body).join('\n'));
      const winner = answers.findIndex((answer) => answer.statusCode === 200);
      assert.equal((await t.services.orgDomains.findVerified(name))?.organizationId, orgs[winner]);

      const again = `${unique('twice')}.example`;
      const adds = await Promise.all([1, 2].map(() => api(t, first.token).post(`/api/organizations/${orgs[0]}/domains`, { domain: again })));
      assert.deepEqual(adds.map((answer) => answer.statusCode).sort(), [201, 409], adds.map((answer) => answer.body).join('\n'));
    });

    it('lets only the organization’s OWNERs and ADMINs manage its domains, and administrators over the admin API', async () => {
      const owner = await createSignedInUser(t, { email: email('owner'), password: PASSWORD });
      const admin = await createSignedInUser(t, { email: email('orgadmin'), password: PASSWORD });
      const member = await createSignedInUser(t, { email: email('member'), password: PASSWORD });
      const stranger = await createSignedInUser(t, { email: email('stranger'), password: PASSWORD });
      const operator = await createSignedInUser(t, { email: email('operator'), password: PASSWORD, roles: ['ADMIN'] });
      const orgId = await organizationWith(owner, [{ id: admin.id, role: 'ADMIN' }, { id: member.id, role: 'MEMBER' }]);
      const base = `/api/organizations/${orgId}/domains`;
      const added = await api(t, admin.token).post(base, { domain: `${unique('team')}.example` });
      assert.equal(added.statusCode, 201, added.body);
      const domainId = added.json().domain.id as string;
      assertError(await api(t, member.token).get(base), 403, 'ORGANIZATION_ROLE_REQUIRED');
      assertError(await api(t, member.token).post(base, { domain: `${unique('m')}.example` }), 403, 'ORGANIZATION_ROLE_REQUIRED');
      assertError(await api(t, member.token).post(`${base}/${domainId}/verify`), 403, 'ORGANIZATION_ROLE_REQUIRED');
      assertError(await api(t, member.token).delete(`${base}/${domainId}`), 403, 'ORGANIZATION_ROLE_REQUIRED');
      assertError(await api(t, stranger.token).get(base), 404, 'ORGANIZATION_NOT_FOUND');
      assertError(await api(t, operator.token).get(base), 404, 'ORGANIZATION_NOT_FOUND');
      assert.equal((await t.app.inject({ method: 'GET', url: base })).statusCode, 401);
      // The admin API: for ADMIN holders only.
      const adminBase = `/api/admin/organizations/${orgId}/domains`;
      assert.equal((await api(t, owner.token).get(adminBase)).statusCode, 403);
      const listed = await api(t, operator.token).get(adminBase);
      assert.equal(listed.statusCode, 200, listed.body);
      assert.deepEqual(listed.json().domains.map((domain: { id: string }) => domain.id), [domainId]);
      const byAdmin = await api(t, operator.token).post(adminBase, { domain: `${unique('ops')}.example` });
      assert.equal(byAdmin.statusCode, 201, byAdmin.body);
      publish(byAdmin.json().domain);
      assert.equal((await api(t, operator.token).post(`${adminBase}/${byAdmin.json().domain.id}/verify`, { method: 'dns' })).statusCode, 200);
      assert.equal((await api(t, operator.token).delete(`${adminBase}/${domainId}`)).statusCode, 200);
      assertError(await api(t, operator.token).get('/api/admin/organizations/nope/domains'), 404, 'ORGANIZATION_NOT_FOUND');
      assertError(await api(t, operator.token).post(`${adminBase}/${domainId}/verify`, { method: 'ftp' }), 422, 'VALIDATION_ERROR');
    });

    it('verifies by the well-known file, fetched under the outbound rules', async () => {
      const owner = await createSignedInUser(t, { email: email('owner'), password: PASSWORD });
      const orgId = await organizationWith(owner);
      const name = `${unique('files')}.example`;
      const domain = (await api(t, owner.token).post(`/api/organizations/${orgId}/domains`, { domain: name })).json().domain;
      assert.equal(domain.challenge.fileUrl, `https://${name}/.well-known/gatehouse-domain-verification`);
      const verify = () => api(t, owner.token).post(`/api/organizations/${orgId}/domains/${domain.id}/verify`, { method: 'http' });
      // The host does not resolve.
      assertError(await verify(), 502, 'DOMAIN_CHECK_FAILED');
      dns.records.set(name, { A: ['127.0.0.1'] });
      assertError(await verify(), 422, 'DOMAIN_RECORD_NOT_FOUND');
      files.set(name, { status: 200, body: 'gatehouse-domain-verification=wrong\n' });
      assertError(await verify(), 422, 'DOMAIN_RECORD_MISMATCH');
      files.set(name, { status: 200, body: `${domain.challenge.fileContent}\n` });
      const verified = await verify();
      assert.equal(verified.statusCode, 200, verified.body);
      assert.equal(verified.json().domain.verifiedMethod, 'http');
      // A host on the cloud metadata address is never fetched.
      const other = (await api(t, owner.token).post(`/api/organizations/${orgId}/domains`, { domain: `${unique('meta')}.example` })).json().domain;
      dns.records.set(other.domain, { A: ['169.254.169.254'] });
      assertError(await api(t, owner.token).post(`/api/organizations/${orgId}/domains/${other.id}/verify`, { method: 'http' }), 502, 'DOMAIN_CHECK_FAILED');
    });
  });
}

describe('organization domains: limits and settings', () => {
  it('rate-limits verification per organization, and refuses the http method when it is off', async () => {
    const [backend] = await backends();
    const dns = await startStubDnsServer();
    const { createTestApp } = await import('../../test/helpers/app.ts');
    const database = await backend!.create();
    const t = await createTestApp(database, { env: { DOMAINS_DNS_SERVER: dns.address, RATE_LIMIT_DOMAIN_VERIFY: '2/1h', DOMAINS_HTTP_CHECK: 'false' } });
    try {
      const owner = await createSignedInUser(t, { email: 'limits@example.com', password: PASSWORD });
      const orgId = (await api(t, owner.token).post('/api/organizations', { name: 'Limits' })).json().organization.id as string;
      const domain = (await api(t, owner.token).post(`/api/organizations/${orgId}/domains`, { domain: 'limits.example' })).json().domain;
      assert.equal(domain.challenge.fileUrl, null);
      const verify = (method = 'dns') => api(t, owner.token).post(`/api/organizations/${orgId}/domains/${domain.id}/verify`, { method });
      assertError(await verify('http'), 422, 'DOMAIN_METHOD_UNAVAILABLE');
      assertError(await verify(), 422, 'DOMAIN_RECORD_NOT_FOUND');
      assertError(await verify(), 422, 'DOMAIN_RECORD_NOT_FOUND');
      const limited = await verify();
      assertError(limited, 429, 'RATE_LIMITED');
      assert.ok(Number(limited.headers['retry-after']) > 0);
    } finally {
      await t.close();
      await database.drop();
      await dns.close();
    }
  });

  it('refuses a DNS server that is not an address and port, and the http port outside development and tests', async () => {
    const { loadConfig } = await import('../modules.ts');
    const base = { AUTH_SECRET: 'x'.repeat(48), DATA_DIR: '/tmp' };
    assert.throws(() => loadConfig({ ...base, NODE_ENV: 'test', DOMAINS_DNS_SERVER: 'dns.example:53' }), /DOMAINS_DNS_SERVER must be an IP address and port/);
    assert.throws(() => loadConfig({ ...base, NODE_ENV: 'production', AUTH_URL: 'https://auth.example.com', DOMAINS_HTTP_CHECK_PORT: '8080' }), /DOMAINS_HTTP_CHECK_PORT is for development and tests only/);
    assert.equal(loadConfig({ ...base, NODE_ENV: 'test', DOMAINS_DNS_SERVER: '[::1]:5353' }).orgDomains.dnsServer, '[::1]:5353');
    assert.equal(loadConfig({ ...base, NODE_ENV: 'test', DOMAINS_DNS_SERVER: '10.0.0.53' }).orgDomains.dnsServer, '10.0.0.53:53');
  });
});
