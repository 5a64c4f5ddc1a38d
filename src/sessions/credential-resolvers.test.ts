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

/** A module with its own kind of key (`tk_…`), and a route that says who called and how. */
function keysModule(resolved: string[]) {
  let owner = '';
  return {
    setOwner: (userId: string) => void (owner = userId),
    module: defineModule({
      name: 'test-keys',
      credentialResolvers: () => [
        {
          name: 'test-key',
          recognises: (token) => token.startsWith('tk_'),
          async resolve(token) {
            resolved.push(token);
            if (token !== 'tk_good') return null;
            return { userId: owner, sessionId: 'key:good', roles: [], amr: ['key'], authTime: 0, accessTokenExpiresAt: Number.MAX_SAFE_INTEGER };
          },
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

    const tokens = accessTokenResolver({ authenticate: async () => null });
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
});
