/**
 * Bearer credential resolvers (module.ts, `credentialResolvers`): a module added to the list
 * resolves the tokens of its own shape (a prefix); the sessions module's resolver still takes the
 * access tokens; a Bearer token no resolver recognises, or that its resolver refuses, leaves the
 * request unauthenticated even with a good session cookie beside it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createSqliteDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser } from '../../test/helpers/app.ts';
import { access, signedIn } from '../authorization/access.ts';
import { defineModule, type CredentialResolver } from '../module.ts';
import { MODULES } from '../modules.ts';
import { accessTokenResolver, credentialResolverFor } from './request-authentication.ts';
import { cookieNames } from './session-cookie.ts';

const PASSWORD = 'correct horse battery staple';

/**
 * A module with its own kind of key (`tk_…`, whose roles are those it was issued with until its
 * `withCurrentRoles` reads them again, as a jwt-strategy token's) and another (`tf_…`, read fresh
 * by `resolve`), and routes that say who called and how, one for a role.
 */
function keysModule(resolved: string[]) {
  let owner = '';
  let current: readonly string[] | null = ['AUDITOR'];
  return {
    setOwner: (userId: string) => void (owner = userId),
    /** The roles a `tk_good` key's holder has now; null: the key is revoked. */
    setCurrentRoles: (roles: readonly string[] | null) => void (current = roles),
    module: defineModule({
      name: 'test-keys',
      credentialResolvers: () => [
        {
          name: 'test-key',
          recognises: (token) => token.startsWith('tk_'),
          async resolve(token) {
            resolved.push(token);
            if (token !== 'tk_good') return null;
            return { userId: owner, sessionId: 'key:good', roles: ['AUDITOR'], amr: ['key'], authTime: 0, accessTokenExpiresAt: Number.MAX_SAFE_INTEGER };
          },
          withCurrentRoles: async (auth) => current && { ...auth, roles: current },
        },
        {
          name: 'test-fresh-key',
          recognises: (token) => token.startsWith('tf_'),
          resolve: async (token) => (token === 'tf_good' ? { userId: owner, sessionId: 'key:fresh', roles: ['AUDITOR'], amr: ['key'], authTime: 0, accessTokenExpiresAt: Number.MAX_SAFE_INTEGER } : null),
        },
      ],
      routes: [
        {
          scope: 'api',
          register: (app) =>
            app.register(async (scope) => {
              scope.get('/api/test-keys/whoami', { config: { access: access.user() } }, async (request) => {
                const auth = signedIn(request);
                return { userId: auth.userId, sessionId: auth.sessionId, via: auth.via };
              });
              scope.get('/api/test-keys/audit', { config: { access: access.role('AUDITOR') } }, async (request) => ({ roles: signedIn(request).roles, via: signedIn(request).via }));
            }),
        },
      ],
    }),
  };
}

describe('Bearer credential resolvers', () => {
  it('the first resolver that recognises a token takes it; none: no resolver', () => {
    const resolver = (name: string, prefix: string): CredentialResolver => ({ name, recognises: (token) => token.startsWith(prefix), resolve: async () => null });
    const pick = credentialResolverFor([resolver('first', 'a'), resolver('second', 'ab'), resolver('third', 'c')]);
    assert.equal(pick('abc')?.name, 'first', 'list order');
    assert.equal(pick('cde')?.name, 'third');
    assert.equal(pick('xyz'), undefined);
    assert.throws(() => credentialResolverFor([resolver('twin', 'a'), resolver('twin', 'b')]), /two credential resolvers are named "twin"/);

    const tokens = accessTokenResolver({ authenticate: async () => null, withCurrentRoles: async () => null });
    assert.equal(tokens.name, 'access-token');
    assert.ok(tokens.recognises('eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ4In0.c2ln'));
    assert.ok(!tokens.recognises('tk_good') && !tokens.recognises('gh_abc'));
  });

  it('the sessions module registers the access-token resolver', () => {
    const sessions = MODULES.find((module) => module.name === 'sessions')!;
    const resolvers = sessions.credentialResolvers!({ sessions: { authenticate: async () => null } } as never);
    assert.deepEqual(resolvers.map((resolver) => resolver.name), ['access-token']);
  });

  it('a module added to the list resolves its own tokens; an unknown or refused one never falls back to the cookie', async () => {
    const database = await createSqliteDatabase();
    const resolved: string[] = [];
    const keys = keysModule(resolved);
    const t = await createTestApp(database, { modules: [...MODULES, keys.module] });
    try {
      const user = await createUser(t.services, { email: 'keys@example.com', password: PASSWORD });
      keys.setOwner(user.id);
      const signIn = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: 'keys@example.com', password: PASSWORD } });
      assert.equal(signIn.statusCode, 200, signIn.body);
      const accessToken: string = signIn.json().token;
      const cookie = `${cookieNames(t.config).access}=${accessToken}`;
      const whoami = (headers: Record<string, string>) => t.app.inject({ method: 'GET', url: '/api/test-keys/whoami', headers });

      const byKey = await whoami({ authorization: 'Bearer tk_good' });
      assert.equal(byKey.statusCode, 200, byKey.body);
      assert.deepEqual(byKey.json(), { userId: user.id, sessionId: 'key:good', via: 'bearer' });

      const byToken = await whoami({ authorization: `Bearer ${accessToken}` });
      assert.equal(byToken.statusCode, 200, 'access tokens still go to the sessions module');
      assert.equal(byToken.json().via, 'bearer');
      assert.ok(!resolved.includes(accessToken), 'an access token never reaches the other resolver');

      const byCookie = await whoami({ cookie });
      assert.equal(byCookie.statusCode, 200, byCookie.body);
      assert.equal(byCookie.json().via, 'cookie');

      for (const authorization of ['Bearer tk_revoked', 'Bearer zz_unknown_kind', 'Bearer eyJnot.a.token', 'Basic a2V5czpwYXNzd29yZA==']) {
        const refused = await whoami({ authorization, cookie });
        assert.equal(refused.statusCode, 401, `${authorization}: ${refused.body}`);
        assert.equal(refused.json().error, 'UNAUTHENTICATED');
      }
      assert.deepEqual(resolved, ['tk_good', 'tk_revoked'], 'each token went to its own resolver only');
    } finally {
      await t.close();
      await database.drop();
    }
  });

  it("a role's route judges a key by the roles its resolver says are current (a session's, for an access token)", async () => {
    const database = await createSqliteDatabase();
    const keys = keysModule([]);
    const t = await createTestApp(database, { modules: [...MODULES, keys.module] });
    try {
      const user = await createUser(t.services, { email: 'auditor@example.com', password: PASSWORD });
      keys.setOwner(user.id);
      const audit = (token: string) => t.app.inject({ method: 'GET', url: '/api/test-keys/audit', headers: { authorization: `Bearer ${token}` } });

      const allowed = await audit('tk_good');
      assert.equal(allowed.statusCode, 200, allowed.body);
      assert.deepEqual(allowed.json(), { roles: ['AUDITOR'], via: 'bearer' });
      const fresh = await audit('tf_good');
      assert.equal(fresh.statusCode, 200, `a resolver that reads roles fresh is taken as is: ${fresh.body}`);

      keys.setCurrentRoles([]);
      const demoted = await audit('tk_good');
      assert.equal(demoted.statusCode, 403, 'issued with the role, no longer holding it');
      assert.equal(demoted.json().error, 'FORBIDDEN');
      assert.equal((await t.app.inject({ method: 'GET', url: '/api/test-keys/whoami', headers: { authorization: 'Bearer tk_good' } })).statusCode, 200, 'a route for any user does not ask again');

      keys.setCurrentRoles(null);
      assert.equal((await audit('tk_good')).statusCode, 401, 'revoked since');

      // An access token's current roles are its session's: the user holds no AUDITOR role.
      const signIn = await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: 'auditor@example.com', password: PASSWORD } });
      assert.equal((await audit(signIn.json().token)).statusCode, 403);
    } finally {
      await t.close();
      await database.drop();
    }
  });
});
