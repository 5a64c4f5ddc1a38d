/**
 * The modules' token claims read with the session (session-claims.ts), on every backend and with
 * both strategies: a session with an active organization that is an administrator's impersonation
 * shows `org` and `act` exactly as a token issued for it carries them, as the modules' own tables
 * say; the database strategy's check of such a session is one query, claims included; a claim goes
 * at once (database) when its row goes; a session without either has no claims.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodeJwt } from 'jose';
import { backends } from '../../test/helpers/databases.ts';
import { createUser, modulesWithoutJobs, statementsOf, useTestApp, type TestApp } from '../../test/helpers/app.ts';

const PASSWORD = 'correct horse battery staple';
const SOURCE = { actorUserId: null, ip: null, userAgent: null };

async function sessionView(t: TestApp, token: string) {
  const response = await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: { authorization: `Bearer ${token}` } });
  return { status: response.statusCode, claims: (response.json() as { claims?: Record<string, unknown> }).claims ?? {} };
}

for (const backend of await backends()) {
  for (const strategy of ['database', 'jwt'] as const) {
    describe(`token claims read with the session (${backend.name}, SESSION_STRATEGY=${strategy})`, { skip: backend.skip, timeout: 120_000 }, () => {
      // It counts statements: only the sessions module's jobs (the jwt strategy's revocation mirror),
      // and no kept checks (on by default on SQLite; session-check-cache.test.ts tests those).
      const t = useTestApp(backend, { env: { SESSION_STRATEGY: strategy, SESSION_CHECK_CACHE: '0' }, modules: modulesWithoutJobs('sessions') });

      it('an impersonation with an active organization: org and act, the same in the check, the view and every token', async () => {
        const suffix = `${backend.name}-${strategy}`;
        const admin = await createUser(t.services, { email: `claims-admin-${suffix}@example.com`, password: PASSWORD, roles: ['ADMIN'] });
        const member = await createUser(t.services, { email: `claims-member-${suffix}@example.com`, password: PASSWORD });
        const created = await t.services.organizations.create({ name: `Claims ${suffix}` }, member.id, SOURCE);
        assert.ok(created.ok, JSON.stringify(created));
        const organization = created.organization;

        const started = await t.services.impersonation.start({ admin: { userId: admin.id, amr: ['pwd', 'mfa'] }, userId: member.id, reason: 'support ticket', minutes: 15, source: SOURCE, ip: null, userAgent: null });
        assert.ok(started.ok, JSON.stringify(started));
        const sessionId = started.session.sessionId;
        // Issued at the start: the impersonation's row was written with the session, so `act` is in it.
        assert.deepEqual(decodeJwt(started.session.accessToken).act, { sub: admin.id });
        assert.equal(decodeJwt(started.session.accessToken).org, undefined, 'no organization active yet');

        const activated = await t.services.organizations.activate({ userId: member.id, sessionId }, organization.id);
        assert.ok(activated.ok);
        const expected = { org: { id: organization.id, slug: organization.slug, roles: ['OWNER'] }, act: { sub: admin.id } };

        const reissued = await t.services.sessions.reissueAccessToken({ userId: member.id, sessionId });
        assert.ok(reissued !== null);
        const token = reissued.accessToken;
        const payload = decodeJwt(token);
        assert.deepEqual({ org: payload.org, act: payload.act }, expected, 'a token issued now carries both');

        const view = await sessionView(t, token);
        assert.equal(view.status, 200);
        assert.deepEqual(view.claims, expected, 'the session endpoint shows what the token carries');

        if (strategy === 'database') {
          // The check and the view: the session, its user, roles and both modules' claims in one statement.
          const statements = await statementsOf(t, () => sessionView(t, token));
          assert.deepEqual(statements, ['SelectQueryNode'], `one round trip, not ${statements.join(', ')}`);
          // The check reads the claims as they are now: the organization made inactive is gone at once.
          await t.services.organizations.activate({ userId: member.id, sessionId }, null);
          assert.deepEqual((await sessionView(t, token)).claims, { act: { sub: admin.id } });
        } else {
          // The jwt strategy shows the token's claims until the next token.
          await t.services.organizations.activate({ userId: member.id, sessionId }, null);
          assert.deepEqual((await sessionView(t, token)).claims, expected);
          const next = await t.services.sessions.reissueAccessToken({ userId: member.id, sessionId });
          assert.deepEqual((await sessionView(t, next!.accessToken)).claims, { act: { sub: admin.id } });
        }

        // Stopped: the session ends with it, so no token shows `act` any more.
        assert.equal(await t.services.impersonation.stop(sessionId, SOURCE), true);
        assert.equal(await t.services.sessions.reissueAccessToken({ userId: member.id, sessionId }), null);
      });

      it('a plain session has no module claims, in its token or its view', async () => {
        const email = `claims-plain-${backend.name}-${strategy}@example.com`;
        await createUser(t.services, { email, password: PASSWORD });
        const signedIn = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email, password: PASSWORD } });
        assert.equal(signedIn.statusCode, 200, signedIn.body);
        const token = (signedIn.json() as { token: string }).token;
        const payload = decodeJwt(token);
        assert.equal(payload.org, undefined);
        assert.equal(payload.act, undefined);
        const view = await sessionView(t, token);
        assert.equal(view.status, 200);
        assert.deepEqual(view.claims, {});
      });
    });
  }
}
