/**
 * Token exchange (RFC 8693) for a client acting for a person, with openid-client over real HTTP on
 * loopback, on SQLite and PostgreSQL: a person's token for API A, issued through the code flow,
 * exchanged by an agent for a narrower token for API B that gatehouse-protect at B accepts with the
 * person and the acting chain; a second exchange nests `act`; every refusal answers its OAuth
 * error (never a 500); a subject token whose grant ended (the person signed out everywhere) is refused.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import { calculateJwkThumbprint, createRemoteJWKSet, decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, jwtVerify, SignJWT, type JWTPayload } from 'jose';
import { createProtector, SEED_RULES } from '../../packages/protect/src/protect.ts';
import { backends } from '../../test/helpers/databases.ts';
import { authorize, Browser, createRpUser, discover, registerClient, useListeningApp, USER } from '../../test/helpers/oidc-rp.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';
import { ACCESS_TOKEN_TYPE, MAX_ACTORS, TOKEN_EXCHANGE_GRANT } from './token-exchange.ts';

const REDIRECT = 'http://127.0.0.1:1/callback';
const API_A = 'http://127.0.0.1:1/a';
const API_B = 'http://127.0.0.1:1/b';
const API_C = 'http://127.0.0.1:1/c';
/** Shares no scope with A. */
const API_D = 'http://127.0.0.1:1/d';
/** Listed in policies below, but not in OIDC_PROVIDER_RESOURCES. */
const NOT_CONFIGURED = 'http://127.0.0.1:1/not-configured';
const RESOURCES = `${API_A}=read:items write:items delete:items, ${API_B}=read:items write:items, ${API_C}=read:items write:items, ${API_D}=other:thing`;

type Refusal = { status?: number; error?: string; error_description?: string; cause?: Array<{ parameters: Record<string, string> }> };

for (const backend of await backends()) {
  describe(`Token exchange (RFC 8693) on ${backend.name}`, { skip: backend.skip }, () => {
    const server = useListeningApp(backend, { OIDC_PROVIDER_RESOURCES: RESOURCES });
    let userId: string;
    let app: client.Configuration;
    let agent: { clientId: string; config: client.Configuration };
    let downstream: { clientId: string; config: client.Configuration };

    /** A person's token for API A (read, write and delete), through the code flow of a first-party app. */
    async function personToken(): Promise<{ access_token: string; payload: JWTPayload }> {
      const flow = await authorize(new Browser(server.get().url), app, { redirectUri: REDIRECT, scope: 'openid read:items write:items delete:items', resource: API_A });
      const tokens = await client.authorizationCodeGrant(app, flow.callback, { pkceCodeVerifier: flow.codeVerifier, expectedState: flow.state, expectedNonce: flow.nonce }, { resource: API_A });
      return { access_token: tokens.access_token, payload: decodeJwt(tokens.access_token) };
    }

    const exchange = (config: client.Configuration, subjectToken: string, parameters: Record<string, string>) =>
      client.genericGrantRequest(config, TOKEN_EXCHANGE_GRANT, { subject_token: subjectToken, subject_token_type: ACCESS_TOKEN_TYPE, ...parameters });

    /** The exchange is refused with `error` (a 400, or 401 for client authentication), never a server error. */
    async function refused(config: client.Configuration, subjectToken: string, parameters: Record<string, string>, error: string, why?: RegExp): Promise<void> {
      await assert.rejects(exchange(config, subjectToken, parameters), (problem: Refusal) => {
        // A failed client authentication is a 401 with its challenge (WWW-Authenticate), which openid-client reads.
        const code = problem.error ?? problem.cause?.[0]?.parameters.error;
        assert.equal(code, error, `${code}: ${problem.error_description}`);
        assert.equal(problem.status, error === 'invalid_client' ? 401 : 400);
        if (why !== undefined) assert.match(problem.error_description ?? '', why);
        return true;
      });
    }

    before(async () => {
      await server.setup();
      const t = server.get();
      userId = (await createRpUser(t)).id;
      const registered = await registerClient(t, { name: 'Web app', redirectUris: [REDIRECT], isFirstParty: true, grantTypes: ['authorization_code', 'client_credentials'] });
      app = await discover(t.url, registered.clientId, registered.clientSecret);
      const agentClient = await registerClient(t, { name: 'Agent', grantTypes: ['client_credentials'], exchangeResources: [API_B, API_D, NOT_CONFIGURED] });
      agent = { clientId: agentClient.clientId, config: await discover(t.url, agentClient.clientId, agentClient.clientSecret) };
      // API B only exchanges what it receives: no grant type of its own.
      const downstreamClient = await registerClient(t, { name: 'API B', grantTypes: [], exchangeResources: [API_C] });
      downstream = { clientId: downstreamClient.clientId, config: await discover(t.url, downstreamClient.clientId, downstreamClient.clientSecret) };
    });
    after(() => server.teardown());

    it('discovery lists the grant (OpenID discovery and RFC 8414 alike)', async () => {
      for (const path of ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']) {
        const metadata = (await (await fetch(`${server.get().url}${path}`)).json()) as { grant_types_supported: string[] };
        assert.ok(metadata.grant_types_supported.includes(TOKEN_EXCHANGE_GRANT), path);
      }
    });

    it('an agent exchanges a person’s token for API A into a narrower one for API B, which gatehouse-protect at B accepts with the person and the agent as actor; a second exchange nests act', async () => {
      const t = server.get();
      const subject = await personToken();
      const answer = await exchange(agent.config, subject.access_token, { resource: API_B, scope: 'read:items' });
      assert.equal(answer.issued_token_type, ACCESS_TOKEN_TYPE);
      assert.equal(answer.token_type, 'bearer');
      assert.equal(answer.scope, 'read:items');
      const jwks = createRemoteJWKSet(new URL(`${t.url}/.well-known/jwks.json`));
      const { payload, protectedHeader } = await jwtVerify(answer.access_token, jwks, { issuer: t.url, audience: API_B, typ: 'at+jwt' });
      assert.equal(protectedHeader.alg, 'EdDSA');
      assert.equal(payload.sub, userId);
      assert.equal(payload.client_id, agent.clientId);
      assert.equal(payload.scope, 'read:items');
      assert.deepEqual(payload.act, { sub: agent.clientId });
      assert.ok(payload.exp! <= subject.payload.exp!, 'never outlives the subject token');

      // The API B verifies it with gatehouse-protect: the person, the agent, and who acted.
      const protector = createProtector({ issuer: t.url, audience: API_B, rules: { ...SEED_RULES, scopeRequirements: [{ prefix: '/api/items', scopes: ['read:items'] }] } });
      const request = new Request('http://127.0.0.1:1/api/items', { headers: { authorization: `Bearer ${answer.access_token}` } });
      const seen = await protector.evaluate(request);
      assert.equal(seen.denial, null);
      assert.equal(seen.user?.userId, userId);
      assert.deepEqual(seen.user?.actors, [agent.clientId]);
      assert.deepEqual(seen.client && { clientId: seen.client.clientId, scopes: seen.client.scopes, actors: seen.client.actors }, { clientId: agent.clientId, scopes: ['read:items'], actors: [agent.clientId] });
      // A's token itself names no actor.
      const atA = await createProtector({ issuer: t.url, audience: API_A }).authenticate(new Request(`${API_A}/items`, { headers: { authorization: `Bearer ${subject.access_token}` } }));
      assert.deepEqual(atA?.actors, []);

      // B, a client itself, calls C for the person with what it was given: a chain.
      const chained = await exchange(downstream.config, answer.access_token, { audience: API_C });
      const second = decodeJwt(chained.access_token);
      assert.equal(second.aud, API_C);
      assert.equal(second.sub, userId);
      assert.equal(second.scope, 'read:items', 'no scope asked: what the subject token and C share');
      assert.deepEqual(second.act, { sub: downstream.clientId, act: { sub: agent.clientId } });
      assert.ok(second.exp! <= payload.exp!);
      const atC = await createProtector({ issuer: t.url, audience: API_C }).authenticate(new Request(`${API_C}/x`, { headers: { authorization: `Bearer ${chained.access_token}` } }));
      assert.deepEqual(atC?.actors, [downstream.clientId, agent.clientId]);

      // Each exchange is audited, about the person.
      const events = (await t.services.audit.listEvents({ userId, type: 'oidc_client.token_exchanged', limit: 10 })).events;
      const details = events.map((event) => event.details).reverse();
      assert.deepEqual(details.slice(-2), [
        { clientId: agent.clientId, subjectClientId: app.clientMetadata().client_id, fromAudience: API_A, toAudience: API_B, scopes: ['read:items'], priorActors: [] },
        { clientId: downstream.clientId, subjectClientId: agent.clientId, fromAudience: API_B, toAudience: API_C, scopes: ['read:items'], priorActors: [agent.clientId] },
      ]);
    });

    it('binds the exchanged token to the agent’s key when the request carries a DPoP proof', async () => {
      const subject = await personToken();
      const keys = await generateKeyPair('ES256', { extractable: true });
      const answer = await client.genericGrantRequest(
        agent.config,
        TOKEN_EXCHANGE_GRANT,
        { subject_token: subject.access_token, subject_token_type: ACCESS_TOKEN_TYPE, resource: API_B },
        { DPoP: client.getDPoPHandle(agent.config, keys) },
      );
      assert.equal(answer.token_type, 'dpop');
      const claims = decodeJwt(answer.access_token) as JWTPayload & { cnf?: { jkt?: string } };
      assert.equal(claims.cnf?.jkt, await calculateJwkThumbprint(await exportJWK(keys.publicKey)));
      assert.deepEqual(claims.act, { sub: agent.clientId });
    });

    it('refuses to widen: a scope the subject token lacks, a scope the target lacks, or no shared scope at all (invalid_scope)', async () => {
      const subject = await personToken();
      await refused(agent.config, subject.access_token, { resource: API_B, scope: 'read:items delete:items' }, 'invalid_scope');
      await refused(agent.config, subject.access_token, { resource: API_B, scope: 'read:items admin:all' }, 'invalid_scope');
      await refused(agent.config, subject.access_token, { resource: API_D }, 'invalid_scope');
      const narrowed = await exchange(agent.config, subject.access_token, { resource: API_B, scope: 'read:items' });
      await refused(downstream.config, narrowed.access_token, { resource: API_C, scope: 'write:items' }, 'invalid_scope');
    });

    it('refuses a target the client may not exchange to, one not in OIDC_PROVIDER_RESOURCES, none or two targets', async () => {
      const subject = await personToken();
      await refused(agent.config, subject.access_token, { resource: API_C }, 'invalid_target');
      await refused(agent.config, subject.access_token, { resource: NOT_CONFIGURED }, 'invalid_target');
      await refused(agent.config, subject.access_token, { resource: API_B, audience: API_C }, 'invalid_target');
      await refused(agent.config, subject.access_token, {}, 'invalid_request');
      await refused(agent.config, subject.access_token, { resource: API_B, subject_token_type: 'urn:ietf:params:oauth:token-type:id_token' }, 'invalid_request');
      await refused(agent.config, subject.access_token, { resource: API_B, actor_token: 'x', actor_token_type: ACCESS_TOKEN_TYPE }, 'invalid_request');
      await refused(agent.config, subject.access_token, { resource: API_B, requested_token_type: 'urn:ietf:params:oauth:token-type:refresh_token' }, 'invalid_request');
    });

    it('refuses an expired, tampered or foreign subject token, a Gatehouse session token, a machine’s own token and a chain too long (invalid_request)', async () => {
      const t = server.get();
      const subject = await personToken();
      const header = decodeProtectedHeader(subject.access_token);
      const ours = t.services.keys.current();
      const sign = (payload: JWTPayload, key: Parameters<SignJWT['sign']>[0] = ours.privateKey, kid: string = ours.kid) =>
        new SignJWT(payload).setProtectedHeader({ alg: 'EdDSA', typ: 'at+jwt', kid }).sign(key);
      assert.equal(header.kid, ours.kid, 'the test signs as the provider does');
      const now = Math.floor(Date.now() / 1000);
      // Signed by us, but expired (beyond the clock tolerance).
      await refused(agent.config, await sign({ ...subject.payload, iat: now - 3600, exp: now - 600 }), { resource: API_B }, 'invalid_request', /not an unexpired access token/);
      // The same, unexpired, is taken (what the refusals below change is all that is wrong with them).
      await exchange(agent.config, await sign({ ...subject.payload, iat: now }), { resource: API_B });
      // Its payload changed (more scopes) under the original signature.
      const [encodedHeader, , signature] = subject.access_token.split('.');
      const widened = Buffer.from(JSON.stringify({ ...subject.payload, scope: 'read:items write:items delete:items admin:all' })).toString('base64url');
      await refused(agent.config, `${encodedHeader}.${widened}.${signature}`, { resource: API_B }, 'invalid_request');
      // The same claims signed by another key under our kid, and by another issuer.
      const { privateKey: foreign } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
      await refused(agent.config, await sign(subject.payload, foreign), { resource: API_B }, 'invalid_request');
      await refused(agent.config, await sign({ ...subject.payload, iss: 'https://elsewhere.example' }), { resource: API_B }, 'invalid_request');
      // Gatehouse's own session token (for its API, no client) is not a token for an API of the provider.
      const browser = new Browser(t.url);
      const signIn = await browser.fetch('/api/auth/signin', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: USER.email, password: USER.password }) });
      const { accessToken } = (await signIn.json()) as { accessToken: string };
      await refused(agent.config, accessToken, { resource: API_B }, 'invalid_request');
      // The web app's own token (client credentials) speaks for no person.
      const machine = await client.clientCredentialsGrant(app, { resource: API_A, scope: 'read:items' });
      await refused(agent.config, machine.access_token, { resource: API_B }, 'invalid_request', /speaks for no person/);
      // A chain of MAX_ACTORS acting parties already: no further exchange.
      let act: Record<string, unknown> | undefined;
      for (let index = 0; index < MAX_ACTORS; index += 1) act = { sub: `actor-${index}`, ...(act !== undefined && { act }) };
      await refused(agent.config, await sign({ ...subject.payload, act }), { resource: API_B }, 'invalid_request', /chain/);
      await refused(agent.config, 'not-a-token', { resource: API_B }, 'invalid_request');
    });

    it('gatehouse-protect refuses a token whose act claim is malformed or too deep, and reads a well-formed one', async () => {
      const t = server.get();
      const subject = await personToken();
      const { kid, privateKey } = t.services.keys.current();
      const signed = (act: unknown) => new SignJWT({ ...subject.payload, aud: API_B, act }).setProtectedHeader({ alg: 'EdDSA', typ: 'at+jwt', kid }).sign(privateKey);
      const protector = createProtector({ issuer: t.url, audience: API_B });
      const seen = async (act: unknown) => protector.authenticate(new Request('http://127.0.0.1:1/x', { headers: { authorization: `Bearer ${await signed(act)}` } }));
      assert.deepEqual((await seen({ sub: 'outer', act: { sub: 'inner' } }))?.actors, ['outer', 'inner']);
      let deep: Record<string, unknown> = { sub: 'first' };
      for (let index = 0; index < 10; index += 1) deep = { sub: `actor-${index}`, act: deep };
      for (const act of ['agent', ['agent'], { act: { sub: 'x' } }, { sub: '' }, { sub: 'a', act: 'b' }, deep]) assert.equal(await seen(act), null, JSON.stringify(act));
    });

    it('refuses a client without an exchange policy, a public client and a wrong secret; a public or self-registered client cannot be given a policy', async () => {
      const t = server.get();
      const subject = await personToken();
      const plain = await registerClient(t, { name: 'No policy', grantTypes: ['client_credentials'] });
      await refused(await discover(t.url, plain.clientId, plain.clientSecret), subject.access_token, { resource: API_B }, 'unauthorized_client');
      const spa = await registerClient(t, { name: 'Browser app', isPublic: true, redirectUris: [REDIRECT] });
      await refused(await discover(t.url, spa.clientId), subject.access_token, { resource: API_B }, 'unauthorized_client');
      await refused(await discover(t.url, agent.clientId, 'not-the-secret'), subject.access_token, { resource: API_B }, 'invalid_client');

      const publicWithPolicy = await t.services.oidcClients.create({ name: 'Public', isPublic: true, redirectUris: [REDIRECT], exchangeResources: [API_B] }, SYSTEM_SOURCE);
      assert.deepEqual(!publicWithPolicy.ok && publicWithPolicy.problems.map((problem) => problem.reason), ['EXCHANGE_PUBLIC']);
      const selfRegistered = await t.services.oidcClients.createRegistered({ name: 'Registered', grantTypes: ['client_credentials'] }, { clientId: 'self-registered-agent', clientSecret: 'secret-of-the-self-registered-agent' }, { ...SYSTEM_SOURCE, via: 'registration' });
      assert.ok(selfRegistered.ok);
      const update = await t.services.oidcClients.update('self-registered-agent', { exchangeResources: [API_B] }, SYSTEM_SOURCE);
      assert.deepEqual(!update.ok && update.reason === 'INVALID_CLIENT' && update.problems.map((problem) => problem.reason), ['EXCHANGE_SELF_REGISTERED']);
      // A policy emptied: the grant goes with it.
      const shortLived = await registerClient(t, { name: 'Short-lived', grantTypes: ['client_credentials'], exchangeResources: [API_B] });
      const shortConfig = await discover(t.url, shortLived.clientId, shortLived.clientSecret);
      await exchange(shortConfig, subject.access_token, { resource: API_B });
      assert.ok((await t.services.oidcClients.update(shortLived.clientId, { exchangeResources: [] }, SYSTEM_SOURCE)).ok);
      await refused(shortConfig, subject.access_token, { resource: API_B }, 'unauthorized_client');
    });

    it('refuses a subject token whose grant ended: the person signed out everywhere', async () => {
      const t = server.get();
      const subject = await personToken();
      await exchange(agent.config, subject.access_token, { resource: API_B });
      await t.services.sessions.endAllSessions(userId);
      await refused(agent.config, subject.access_token, { resource: API_B }, 'invalid_request', /grant has ended/);
    });
  });
}
