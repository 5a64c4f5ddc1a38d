/**
 * SAML sign-in end to end against a real IdP (samlify, its own keys), over the real app on SQLite
 * and PostgreSQL: SP-initiated sign-in (signed response; signed and encrypted assertion), JIT with
 * attribute and group mapping, linking only when both sides verified the address, IdP-initiated
 * only where enabled; and the hostile cases, each refused with nothing created.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { backends } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, useTestApp } from '../../test/helpers/app.ts';
import { formBrowser, postForm } from '../../test/helpers/cookie-jar.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';
import { OPERATOR } from '../organizations/organizations.model.ts';
import { modulesWith, samlId, startTestIdp, testDomainsModule, type AssertionFields, type TestIdp } from './sso.test-helpers.ts';
import type { Connection } from './sso.model.ts';

const verified = new Map<string, string>();

for (const backend of await backends()) {
  describe(`SSO over SAML (${backend.name})`, { skip: backend.skip }, () => {
    const t = useTestApp(backend, { modules: modulesWith(testDomainsModule(verified)) });
    const suffix = `${backend.name}-${Date.now()}`;
    const domain = `acme-${suffix}.test`;
    let idp: TestIdp;
    let connection: Connection;
    let spMetadata: string;
    let organizationId: string;

    async function newConnection(extra: { idpInitiated?: boolean; name?: string } = {}) {
      const created = await t.services.sso.connections.create(
        organizationId,
        { protocol: 'saml', name: extra.name ?? 'Acme IdP', idpMetadataXml: idp.metadata, idpInitiated: extra.idpInitiated ?? false, mapping: { email: 'mail', name: 'displayName', groups: 'memberOf' }, groupRoles: [{ group: 'gatehouse-admins', role: 'ADMIN' }] },
        SYSTEM_SOURCE,
      );
      assert.ok(created.ok, JSON.stringify(created));
      const metadata = await t.app.inject({ method: 'GET', url: `/sso/saml/${created.connection.id}/metadata` });
      assert.equal(metadata.statusCode, 200);
      return { connection: created.connection, spMetadata: metadata.body };
    }

    before(async () => {
      idp = await startTestIdp();
      const owner = await createUser(t.services, { email: `owner-${suffix}@example.com`, password: 'correct horse battery staple' });
      const org = await t.services.organizations.create({ name: 'Acme' }, owner.id, SYSTEM_SOURCE);
      assert.ok(org.ok);
      organizationId = org.organization.id;
      verified.set(domain, organizationId);
      ({ connection, spMetadata } = await newConnection());
    });

    /** SP-initiated: start at our route, read the AuthnRequest at the IdP. */
    async function startSignIn(target = connection, callbackUrl = '/dashboard?from=sso') {
      const browser = await formBrowser(t.app);
      const started = await postForm(t.app, browser, `/sso/${target.id}/start`, { callbackUrl }, new URL(t.config.authUrl).origin);
      assert.equal(started.statusCode, 303, started.body);
      const location = started.headers.location as string;
      assert.ok(location.startsWith(`${new URL(idp.entityId).origin}/sso?`), location);
      return idp.readRequest(location);
    }

    async function post(target: Pick<Connection, 'id'>, samlResponse: string, relayState?: string) {
      const payload = new URLSearchParams({ SAMLResponse: samlResponse, ...(relayState !== undefined && { RelayState: relayState }) }).toString();
      return t.app.inject({ method: 'POST', url: `/sso/saml/${target.id}/acs`, headers: { 'content-type': 'application/x-www-form-urlencoded', origin: new URL(idp.entityId).origin }, payload });
    }

    const emailOf = (label: string) => `${label}@${domain}`;
    const fieldsFor = (label: string, extra: Partial<AssertionFields> = {}): AssertionFields => ({
      nameIdXml: emailOf(label),
      attributes: { mail: [emailOf(label)], displayName: [`User ${label}`], memberOf: ['staff'] },
      ...extra,
    });
    async function userCount(email: string) {
      const rows = await sql<{ n: number | string }>`select count(*) as n from users where email = ${email}`.execute(t.services.storage.db);
      return Number(rows.rows[0]!.n);
    }
    async function assertRefused(response: { statusCode: number; headers: Record<string, unknown> }, email: string) {
      assert.equal(response.statusCode, 303);
      assert.match(String(response.headers.location), /^\/auth\/error\?error=/);
      assert.equal(String(response.headers['set-cookie'] ?? '').includes('gatehouse.session='), false);
      assert.equal(await userCount(email), 0, `no account for ${email}`);
    }

    it('publishes SP metadata with the entity ID, the ACS URL and both certificates', () => {
      assert.match(spMetadata, new RegExp(`entityID="${t.config.authUrl}/sso/saml/${connection.id}/metadata"`));
      assert.match(spMetadata, new RegExp(`Location="${t.config.authUrl}/sso/saml/${connection.id}/acs"`));
      assert.match(spMetadata, /use="signing"/);
      assert.match(spMetadata, /use="encryption"/);
      assert.equal(/PRIVATE KEY/.test(spMetadata), false);
    });

    it('signs in SP-initiated: a new account just in time, a member with the mapped role, RelayState kept', async () => {
      const { id, relayState } = await startSignIn();
      assert.equal(relayState, '/dashboard?from=sso');
      const response = await post(connection, await idp.respond(spMetadata, fieldsFor('jit', { inResponseTo: id, attributes: { mail: [emailOf('jit')], displayName: ['Jay Jit'], memberOf: ['staff', 'gatehouse-admins'] } })), relayState!);
      assert.equal(response.statusCode, 303, response.body);
      assert.equal(response.headers.location, '/dashboard?from=sso');
      assert.match(String(response.headers['set-cookie']), /gatehouse\.session=/);
      const user = await t.services.users.findUserByEmail(emailOf('jit'));
      assert.ok(user);
      assert.equal(user.name, 'Jay Jit');
      assert.notEqual(user.emailVerifiedAt, null, 'the IdP vouches for its organization’s verified domain');
      const membership = await t.services.organizations.get(organizationId, { userId: user.id });
      assert.equal(membership?.role, 'ADMIN');
    });

    it('accepts a signed and encrypted assertion, and a hostile RelayState lands on the dashboard', async () => {
      const { id } = await startSignIn();
      const response = await post(connection, await idp.respond(spMetadata, fieldsFor('encrypted', { inResponseTo: id }), { signAssertion: true, encrypt: true }), 'https://evil.example/steal');
      assert.equal(response.statusCode, 303, response.body);
      assert.equal(response.headers.location, '/dashboard');
      const user = await t.services.users.findUserByEmail(emailOf('encrypted'));
      assert.equal((await t.services.organizations.get(organizationId, { userId: user!.id }))?.role, 'MEMBER');
    });

    it('links an existing account only when the address is verified on both sides', async () => {
      const existing = await createUser(t.services, { email: emailOf('existing'), password: 'correct horse battery staple' });
      const first = await startSignIn();
      const linked = await post(connection, await idp.respond(spMetadata, fieldsFor('existing', { inResponseTo: first.id })));
      assert.equal(linked.statusCode, 303);
      assert.equal(linked.headers.location, '/dashboard');
      const rows = await sql<{ user_id: string }>`select user_id from sso_identities where connection_id = ${connection.id} and subject = ${emailOf('existing')}`.execute(t.services.storage.db);
      assert.equal(rows.rows[0]?.user_id, existing.id);

      // An address outside the organization's verified domains: the IdP does not vouch for it.
      const outsider = `victim-${suffix}@example.com`;
      await createUser(t.services, { email: outsider, password: 'correct horse battery staple' });
      const second = await startSignIn();
      const refused = await post(connection, await idp.respond(spMetadata, { nameIdXml: outsider, attributes: { mail: [outsider] }, inResponseTo: second.id }));
      assert.equal(refused.statusCode, 303);
      assert.equal(refused.headers.location, '/auth/error?error=OAuthAccountNotLinked');
      const identities = await sql<{ n: number | string }>`select count(*) as n from sso_identities where subject = ${outsider}`.execute(t.services.storage.db);
      assert.equal(Number(identities.rows[0]!.n), 0);
    });

    it('refuses IdP-initiated responses unless the connection enables them, then accepts each assertion once', async () => {
      await assertRefused(await post(connection, await idp.respond(spMetadata, fieldsFor('idp-off'))), emailOf('idp-off'));
      const enabled = await newConnection({ idpInitiated: true, name: 'IdP-initiated' });
      const response = await idp.respond(enabled.spMetadata, fieldsFor('idp-on'));
      const accepted = await post(enabled.connection, response);
      assert.equal(accepted.statusCode, 303, accepted.body);
      assert.equal(accepted.headers.location, '/dashboard');
      const replayed = await post(enabled.connection, response);
      assert.equal(replayed.statusCode, 303);
      assert.match(String(replayed.headers.location), /^\/auth\/error/);
      const failures = await sql<{ reason: string }>`select reason from audit_events where type = 'sso.signin_failed' and reason = 'SSO_REPLAYED'`.execute(t.services.storage.db);
      assert.ok(failures.rows.length >= 1);
    });

    it('two instances on one database share the replay store: an assertion is accepted once, even sent to both at once', async () => {
      const second = await createTestApp(t.database, { modules: modulesWith(testDomainsModule(verified)) });
      try {
        const enabled = await newConnection({ idpInitiated: true, name: 'Shared replay store' });
        const response = await idp.respond(enabled.spMetadata, fieldsFor('two-instances'));
        const payload = new URLSearchParams({ SAMLResponse: response }).toString();
        const headers = { 'content-type': 'application/x-www-form-urlencoded' };
        const answers = await Promise.all([t.app, second.app, second.app].map((app) => app.inject({ method: 'POST', url: `/sso/saml/${enabled.connection.id}/acs`, headers, payload })));
        const signedIn = answers.filter((answer) => answer.headers.location === '/dashboard');
        assert.equal(signedIn.length, 1, answers.map((answer) => answer.headers.location).join(' '));
        const later = await second.app.inject({ method: 'POST', url: `/sso/saml/${enabled.connection.id}/acs`, headers, payload });
        assert.match(String(later.headers.location), /^\/auth\/error/);
      } finally {
        await second.close();
      }
    });

    describe('hostile responses, each refused with nothing created', () => {
      it('an unsigned response and assertion', async () => {
        const { id } = await startSignIn();
        const xml = idp.unsignedXml(spMetadata, fieldsFor('unsigned', { inResponseTo: id }));
        await assertRefused(await post(connection, Buffer.from(xml).toString('base64')), emailOf('unsigned'));
      });

      it('signature wrapping: a second assertion inserted beside the signed one', async () => {
        const { id } = await startSignIn();
        const signed = Buffer.from(await idp.respond(spMetadata, fieldsFor('wrap-honest', { inResponseTo: id }), { signAssertion: true }), 'base64').toString('utf8');
        const evil = idp.unsignedXml(spMetadata, fieldsFor('wrap-evil', { inResponseTo: id })).match(/<saml:Assertion[\s\S]*<\/saml:Assertion>/)![0];
        const wrapped = signed.replace(/(<samlp:Status>[\s\S]*?<\/samlp:Status>)/, `$1${evil}`);
        await assertRefused(await post(connection, Buffer.from(wrapped).toString('base64')), emailOf('wrap-evil'));
        assert.equal(await userCount(emailOf('wrap-honest')), 0);
      });

      it('signature wrapping: the signed assertion moved into Extensions, an unsigned one in its place', async () => {
        const { id } = await startSignIn();
        const signed = Buffer.from(await idp.respond(spMetadata, fieldsFor('move-honest', { inResponseTo: id }), { signAssertion: true }), 'base64').toString('utf8');
        const honest = signed.match(/<saml:Assertion[\s\S]*<\/saml:Assertion>/)![0];
        const evil = idp.unsignedXml(spMetadata, fieldsFor('move-evil', { inResponseTo: id })).match(/<saml:Assertion[\s\S]*<\/saml:Assertion>/)![0];
        const moved = signed.replace(honest, evil).replace(/(<saml:Issuer>[^<]*<\/saml:Issuer>)/, `$1<samlp:Extensions>${honest}</samlp:Extensions>`);
        await assertRefused(await post(connection, Buffer.from(moved).toString('base64')), emailOf('move-evil'));
        assert.equal(await userCount(emailOf('move-honest')), 0);
      });

      it('a signed response whose assertion was altered afterwards', async () => {
        const { id } = await startSignIn();
        const signed = Buffer.from(await idp.respond(spMetadata, fieldsFor('altered', { inResponseTo: id })), 'base64').toString('utf8');
        const altered = signed.replaceAll(emailOf('altered'), emailOf('altered-evil'));
        await assertRefused(await post(connection, Buffer.from(altered).toString('base64')), emailOf('altered-evil'));
      });

      it('a wrong audience, a wrong recipient, a wrong destination', async () => {
        for (const [label, extra] of [
          ['audience', { audience: 'https://other-sp.example/metadata' }],
          ['recipient', { recipient: 'https://other-sp.example/acs' }],
          ['destination', { destination: 'https://other-sp.example/acs' }],
        ] as const) {
          const { id } = await startSignIn();
          await assertRefused(await post(connection, await idp.respond(spMetadata, fieldsFor(`wrong-${label}`, { inResponseTo: id, ...extra }))), emailOf(`wrong-${label}`));
        }
      });

      it('an expired assertion, and one not yet valid', async () => {
        const { id } = await startSignIn();
        const past = new Date(Date.now() - 3_600_000);
        await assertRefused(await post(connection, await idp.respond(spMetadata, fieldsFor('expired', { inResponseTo: id, notBefore: new Date(past.getTime() - 60_000), notOnOrAfter: past }))), emailOf('expired'));
        const next = await startSignIn();
        await assertRefused(await post(connection, await idp.respond(spMetadata, fieldsFor('future', { inResponseTo: next.id, notBefore: new Date(Date.now() + 3_600_000), notOnOrAfter: new Date(Date.now() + 7_200_000) }))), emailOf('future'));
      });

      it('a replayed SP-initiated response, and an InResponseTo we never sent', async () => {
        const { id } = await startSignIn();
        const response = await idp.respond(spMetadata, fieldsFor('replay', { inResponseTo: id }));
        assert.equal((await post(connection, response)).headers.location, '/dashboard');
        const again = await post(connection, response);
        assert.match(String(again.headers.location), /^\/auth\/error/);
        await assertRefused(await post(connection, await idp.respond(spMetadata, fieldsFor('unsolicited', { inResponseTo: samlId() }))), emailOf('unsolicited'));
      });

      it('a response for another connection', async () => {
        const other = await newConnection({ name: 'Other' });
        const { id } = await startSignIn(other.connection);
        const forOther = await idp.respond(other.spMetadata, fieldsFor('crossed', { inResponseTo: id }));
        await assertRefused(await post(connection, forOther), emailOf('crossed'));
      });

      it('an XML entity expansion attempt', async () => {
        const { id } = await startSignIn();
        const xml = idp.unsignedXml(spMetadata, fieldsFor('xxe', { inResponseTo: id, nameIdXml: '&lol9;' }));
        const bomb = `<?xml version="1.0"?><!DOCTYPE samlp:Response [<!ENTITY lol "lol"><!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">${Array.from({ length: 8 }, (_, i) => `<!ENTITY lol${i + 2} "${`&lol${i + 1};`.repeat(10)}">`).join('')}<!ENTITY xxe SYSTEM "file:///etc/passwd">]>${xml}`;
        await assertRefused(await post(connection, Buffer.from(bomb).toString('base64')), emailOf('xxe'));
        const external = `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>${idp.unsignedXml(spMetadata, fieldsFor('xxe2', { inResponseTo: id, nameIdXml: '&xxe;' }))}`;
        await assertRefused(await post(connection, Buffer.from(external).toString('base64')), emailOf('xxe2'));
      });

      it('a comment inside the NameID (signed as the IdP would sign it)', async () => {
        const { id } = await startSignIn();
        const victim = emailOf('ceo');
        const nameIdXml = `${victim}<!---->.evil.example`;
        const response = await idp.respond(spMetadata, { nameIdXml, attributes: {}, inResponseTo: id });
        await assertRefused(await post(connection, response), victim);
        assert.equal(await userCount(`${victim}.evil.example`), 0);
      });

      it('garbage and an oversized body are refused without a 500', async () => {
        for (const body of ['not base64 at all %%%', Buffer.from('<samlp:Response').toString('base64')]) {
          const response = await post(connection, body);
          assert.equal(response.statusCode, 303);
          assert.match(String(response.headers.location), /^\/auth\/error/);
        }
        const unknown = await post({ id: 'no-such-connection' }, 'x');
        assert.equal(unknown.statusCode, 303);
      });
    });

    it('enforcement refuses the domain’s passwords (audited SSO_REQUIRED), not an ADMIN’s (break-glass), not SSO itself', async () => {
      const enforcing = await newConnection({ name: 'Enforcing' });
      assert.ok((await t.services.sso.connections.update(enforcing.connection.id, { enforce: true }, SYSTEM_SOURCE)).ok);
      try {
        const worker = await createUser(t.services, { email: emailOf('enforced'), password: 'correct horse battery staple' });
        await createUser(t.services, { email: emailOf('breakglass'), password: 'correct horse battery staple', roles: ['ADMIN'] });
        const refused = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: emailOf('enforced'), password: 'correct horse battery staple' } });
        assert.equal(refused.statusCode, 401);
        const events = await sql<{ reason: string }>`select reason from audit_events where type = 'signin.failure' and user_id = ${worker.id}`.execute(t.services.storage.db);
        assert.deepEqual(events.rows.map((row) => row.reason), ['SSO_REQUIRED']);
        const admin = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: emailOf('breakglass'), password: 'correct horse battery staple' } });
        assert.equal(admin.statusCode, 200, admin.body);
        const outside = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: `owner-${suffix}@example.com`, password: 'correct horse battery staple' } });
        assert.equal(outside.statusCode, 200, 'an address outside the verified domains is not concerned');
        const { id } = await startSignIn();
        const viaSso = await post(connection, await idp.respond(spMetadata, fieldsFor('enforced', { inResponseTo: id })));
        assert.equal(viaSso.headers.location, '/dashboard', 'SSO itself still signs the person in (their verified account is linked)');
      } finally {
        await t.services.sso.connections.delete(enforcing.connection.id, SYSTEM_SOURCE);
      }
    });

    it('keeps the operator able to change the role of an SSO member (never taken to OWNER)', async () => {
      const user = await t.services.users.findUserByEmail(emailOf('jit'));
      const result = await t.services.organizations.setRole(organizationId, OPERATOR, user!.id, 'MEMBER', SYSTEM_SOURCE);
      assert.ok(result.ok);
    });
  });
}
