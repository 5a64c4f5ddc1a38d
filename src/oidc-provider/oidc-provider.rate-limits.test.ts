/**
 * The OpenID Provider's per-IP limits, over real HTTP on loopback, on SQLite and PostgreSQL: each
 * limited endpoint is counted under its route whatever the spelling of its path (a trailing slash,
 * upper case, percent-encoded letters, doubled slashes, dot segments, `;` parameters, a fragment),
 * since oidc-provider's router answers some of those spellings as the endpoint itself. A spelling
 * that is not counted must not be served either: once the limit is used up, every spelling
 * answers 429, or is refused before it reaches the provider (404, or 403 from the CSRF check).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { backends } from '../../test/helpers/databases.ts';
import { listeningApp, type ListeningApp } from '../../test/helpers/oidc-rp.ts';
import type { TestDatabase } from '../../test/helpers/databases.ts';
import { OIDC_ROUTES } from './provider-routes.ts';

const REGISTRATION_TOKEN = 'registration-token-0123456789abcdefghijklmnop';
/** Small limits, so that a test uses one up; each is its own counter. */
const LIMITS = { RATE_LIMIT_OIDC_TOKEN: '5/1h', RATE_LIMIT_OIDC_REGISTRATION: '3/1h', RATE_LIMIT_OIDC_USER_CODE: '3/1h' };

/** The endpoints each limit counts (posts to them). */
const CLIENT_ENDPOINTS = [OIDC_ROUTES.token, OIDC_ROUTES.introspection, OIDC_ROUTES.revocation, OIDC_ROUTES.device_authorization, OIDC_ROUTES.pushed_authorization_request];

/** A POST with the request target sent exactly as given (fetch would resolve dot segments), as any HTTP client can send it. */
function rawPost(t: ListeningApp, target: string, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const url = new URL(t.url);
    const outgoing = httpRequest(
      { host: url.hostname, port: url.port, method: 'POST', path: target, headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) } },
      (incoming) => {
        let text = '';
        incoming.setEncoding('utf8');
        incoming.on('data', (chunk: string) => (text += chunk));
        incoming.on('end', () => resolve({ status: incoming.statusCode ?? 0, body: text }));
        incoming.on('error', reject);
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

/**
 * Gatehouse's own answer to a path no route of the bridge takes (`/OIDC/token`: its routes are
 * case-sensitive): our 404, or the CSRF check every other route has. The provider never says these.
 */
function isRefusedBeforeTheProvider(answer: { status: number; body: string }): boolean {
  const code = answer.body.startsWith('{') ? (JSON.parse(answer.body) as { error?: unknown }).error : undefined;
  return (answer.status === 404 && code === 'NOT_FOUND') || (answer.status === 403 && code === 'CSRF_FAILED');
}

/** The ways a path can be written that some router reads as the path itself. */
function spellingsOf(path: string): string[] {
  const segments = path.split('/').slice(1);
  const last = segments.at(-1)!;
  const parent = `/${segments.slice(0, -1).join('/')}`.replace(/\/$/, '');
  const encodedFirst = `%${last.charCodeAt(0).toString(16)}${last.slice(1)}`;
  return [
    `${path}/`,
    `${path}//`,
    `${parent}/${last.toUpperCase()}`,
    `${parent}/${last[0]!.toUpperCase()}${last.slice(1)}`,
    `${parent}/${last.toUpperCase()}/`,
    path.toUpperCase(),
    `${parent}/${encodedFirst}`,
    `${parent}/${encodedFirst.toUpperCase()}`,
    `${parent}/%25${encodedFirst.slice(1)}`,
    `${parent}//${last}`,
    `/${path}`,
    `${parent}/./${last}`,
    `${parent}/x/../${last}`,
    `${path}/.`,
    `${path};x`,
    `${path}#x`,
    `${path}?x=1`,
  ];
}

for (const backend of await backends()) {
  describe(`OpenID Provider rate limits on ${backend.name}`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let t: ListeningApp;
    before(async () => {
      database = await backend.create();
      t = await listeningApp(database, { ...LIMITS, OIDC_PROVIDER_REGISTRATION_TOKEN: REGISTRATION_TOKEN });
    });
    after(async () => {
      await t?.close();
      await database?.drop();
    });

    /**
     * Uses up the limit with served spellings other than the canonical ones (`served`, each
     * checked to be answered by the endpoint, not refused or unknown), then expects the canonical
     * paths and every spelling of them refused: counted under the route, or not served at all.
     */
    async function assertCountedByRoute(paths: readonly string[], served: readonly string[], body: string): Promise<void> {
      for (const target of served) {
        const answer = await rawPost(t, target, body);
        assert.ok(answer.status !== 429 && !isRefusedBeforeTheProvider(answer), `${target} is served (${answer.status} ${answer.body.slice(0, 200)})`);
      }
      for (const path of paths) assert.equal((await rawPost(t, path, body)).status, 429, `${path} after the limit was used up by other spellings`);
      const uncounted: string[] = [];
      for (const target of paths.flatMap(spellingsOf)) {
        const answer = await rawPost(t, target, body);
        if (answer.status === 429 || isRefusedBeforeTheProvider(answer)) continue;
        uncounted.push(`${target}: ${answer.status} ${answer.body.slice(0, 120)}`);
      }
      assert.deepEqual(uncounted, [], 'served but not counted');
    }

    it('regression (issue 30.4): /oidc/token/ and every other spelling of the token, introspection, revocation, device authorization and PAR endpoints count against RATE_LIMIT_OIDC_TOKEN like their canonical paths', async () => {
      await assertCountedByRoute(CLIENT_ENDPOINTS, ['/oidc/token/', '/oidc/TOKEN', '/oidc/token/Introspection/', '/oidc/token/REVOCATION', '/oidc/par/'], 'grant_type=client_credentials&client_id=nobody');
    });

    it('regression (issue 30.4): /device/ and every other spelling of the device page count the user codes posted to it against RATE_LIMIT_OIDC_USER_CODE', async () => {
      await assertCountedByRoute([OIDC_ROUTES.code_verification], ['/device/', '/device/', '/device/'], 'user_code=BCDF-GHJK&xsrf=guess');
    });

    it('regression (issue 30.4): /oidc/reg/ and every other spelling of the registration endpoint count against RATE_LIMIT_OIDC_REGISTRATION', async () => {
      await assertCountedByRoute([OIDC_ROUTES.registration], ['/oidc/reg/', '/oidc/REG', '/oidc/Reg/'], 'redirect_uris=https://rp.example/callback');
    });
  });
}
