/**
 * Hostile and malformed access tokens: every one is refused with 401 UNAUTHENTICATED, never a 500,
 * and no key URL in a token is ever fetched.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, generateKeyPair, exportJWK, base64url, type JWTPayload, type JWTHeaderParameters } from 'jose';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';

const PASSWORD = 'correct horse battery staple';

function unsigned(header: object, payload: object): string {
  const encode = (value: object) => base64url.encode(JSON.stringify(value));
  return `${encode(header)}.${encode(payload)}.`;
}

for (const backend of await backends()) for (const strategy of ['database', 'jwt'] as const) {
  describe(`hostile access tokens (${strategy} strategy, ${backend.name})`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let t: TestApp;
    let valid: string;
    let claims: JWTPayload;
    let kid: string;
    let keyServer: Server;
    let keyServerHits = 0;
    let keyUrl: string;

    before(async () => {
      database = await backend.create();
      t = await createTestApp(database, { env: { SESSION_STRATEGY: strategy } });
      await createUser(t.services, { email: 'alice@example.com', password: PASSWORD });
      valid = (await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email: 'alice@example.com', password: PASSWORD } })).json().token;
      const [header, payload] = valid.split('.');
      kid = JSON.parse(Buffer.from(header!, 'base64url').toString()).kid;
      claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
      // A loopback server standing in for an attacker's key URL: it must never be asked.
      keyServer = createServer((_request, response) => {
        keyServerHits++;
        response.end('{"keys":[]}');
      });
      await new Promise<void>((resolve) => keyServer.listen(0, '127.0.0.1', resolve));
      keyUrl = `http://127.0.0.1:${(keyServer.address() as AddressInfo).port}/jwks.json`;
    });
    after(async () => {
      await new Promise((resolve) => keyServer?.close(resolve));
      await t?.close();
      await database?.drop();
    });

    async function expectRefused(token: string, name: string) {
      const response = await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: { authorization: `Bearer ${token}` } });
      assert.equal(response.statusCode, 401, `${name}: ${response.body}`);
      assert.equal(response.json().error, 'UNAUTHENTICATED', name);
    }

    async function signWith(key: Parameters<SignJWT['sign']>[0], header: JWTHeaderParameters, payload: JWTPayload = claims) {
      return new SignJWT(payload).setProtectedHeader(header).sign(key);
    }

    it('accepts the genuine token (the baseline the others are measured against)', async () => {
      const response = await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: { authorization: `Bearer ${valid}` } });
      assert.equal(response.statusCode, 200);
    });

    it('refuses alg "none" and unsigned tokens', async () => {
      await expectRefused(unsigned({ alg: 'none', typ: 'at+jwt', kid }, claims), 'alg none');
      await expectRefused(unsigned({ alg: 'None', typ: 'at+jwt', kid }, claims), 'alg None');
      await expectRefused(`${valid.split('.').slice(0, 2).join('.')}.`, 'signature stripped');
    });

    it('refuses an HMAC keyed with our public key (algorithm confusion)', async () => {
      const keys = (await t.app.inject({ method: 'GET', url: '/.well-known/jwks.json' })).json().keys as Array<Record<string, string>>;
      const ed = keys.find((key) => key.alg === 'EdDSA')!;
      const rsa = keys.find((key) => key.alg === 'RS256')!;
      for (const secret of [base64url.decode(ed.x!), new TextEncoder().encode(JSON.stringify(ed)), base64url.decode(rsa.n!), new TextEncoder().encode(JSON.stringify(rsa))]) {
        for (const alg of ['HS256', 'HS512']) {
          await expectRefused(await signWith(secret, { alg, typ: 'at+jwt', kid }), `${alg} with the public key`);
        }
      }
    });

    it('refuses tokens signed by any key that is not ours, whatever kid they claim', async () => {
      const ed = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
      const rsa = await generateKeyPair('RS256');
      const ec = await generateKeyPair('ES256');
      await expectRefused(await signWith(ed.privateKey, { alg: 'EdDSA', typ: 'at+jwt', kid }), 'foreign Ed25519 key, our kid');
      await expectRefused(await signWith(rsa.privateKey, { alg: 'RS256', typ: 'at+jwt', kid }), 'RS256');
      await expectRefused(await signWith(ec.privateKey, { alg: 'ES256', typ: 'at+jwt', kid }), 'ES256');
      await expectRefused(await signWith(ed.privateKey, { alg: 'EdDSA', typ: 'at+jwt', kid: 'unknown' }), 'unknown kid');
      await expectRefused(await signWith(ed.privateKey, { alg: 'EdDSA', typ: 'at+jwt', kid: '../../../../etc/passwd' }), 'kid as a path');
      await expectRefused(await signWith(ed.privateKey, { alg: 'EdDSA', typ: 'at+jwt' }), 'no kid');
    });

    it('never fetches or trusts keys named by the token (jku, x5u, jwk)', async () => {
      const attacker = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
      const attackerJwk = await exportJWK(attacker.publicKey);
      await expectRefused(await signWith(attacker.privateKey, { alg: 'EdDSA', typ: 'at+jwt', kid, jku: keyUrl }), 'jku');
      await expectRefused(await signWith(attacker.privateKey, { alg: 'EdDSA', typ: 'at+jwt', kid, x5u: keyUrl }), 'x5u');
      await expectRefused(await signWith(attacker.privateKey, { alg: 'EdDSA', typ: 'at+jwt', kid, jwk: attackerJwk }), 'embedded jwk');
      await expectRefused(await signWith(attacker.privateKey, { alg: 'EdDSA', typ: 'at+jwt', jwk: attackerJwk }), 'embedded jwk, no kid');
      assert.equal(keyServerHits, 0, 'no key URL was fetched');
    });

    it('refuses a tampered payload (roles raised to ADMIN) under the original signature', async () => {
      const [header, , signature] = valid.split('.');
      const payload = base64url.encode(JSON.stringify({ ...claims, roles: ['ADMIN'] }));
      await expectRefused(`${header}.${payload}.${signature}`, 'tampered roles');
    });

    it('refuses tokens with the wrong issuer, audience, type, time window or claims', async () => {
      const now = Math.floor(Date.now() / 1000);
      // Signed with the real key, so only the claim checks can refuse them.
      const key = t.services.keys.current();
      const sign = (payload: JWTPayload, header: Partial<JWTHeaderParameters> = {}) =>
        signWith(key.privateKey, { alg: 'EdDSA', typ: 'at+jwt', kid: key.kid, ...header }, payload);
      await expectRefused(await sign({ ...claims, iss: 'https://evil.example' }), 'wrong iss');
      await expectRefused(await sign({ ...claims, aud: 'another-app' }), 'wrong aud');
      await expectRefused(await sign({ ...claims, exp: now - 60 }), 'expired');
      await expectRefused(await sign({ ...claims, nbf: now + 600 }), 'not yet valid');
      await expectRefused(await sign({ ...claims, sid: undefined }), 'no sid');
      await expectRefused(await sign({ ...claims, sub: undefined }), 'no sub');
      await expectRefused(await sign({ ...claims, exp: undefined }), 'no exp');
      await expectRefused(await sign({ ...claims, roles: 'ADMIN' }), 'roles not a list');
      await expectRefused(await sign({ ...claims, sid: 'some-other-session' }), 'a session that does not exist');
      await expectRefused(await sign(claims, { typ: 'JWT' }), 'typ JWT (an ID token, say)');
      // jose will not sign with an unknown critical header, so sign the bytes ourselves.
      const critInput = `${base64url.encode(JSON.stringify({ alg: 'EdDSA', typ: 'at+jwt', kid: key.kid, crit: ['x-unknown'], 'x-unknown': true }))}.${base64url.encode(JSON.stringify(claims))}`;
      const critSignature = new Uint8Array(await crypto.subtle.sign('Ed25519', key.privateKey, new TextEncoder().encode(critInput)));
      await expectRefused(`${critInput}.${base64url.encode(critSignature)}`, 'unknown crit');
      const good = await sign(claims);
      const response = await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: { authorization: `Bearer ${good}` } });
      assert.equal(response.statusCode, 200, 'the same claims, untouched, pass: the refusals above are the checks');
    });

    it('refuses garbage of any size with 401, never 500', async () => {
      const garbage = [
        'a',
        '...',
        'a.b',
        'a.b.c.d.e',
        `${'A'.repeat(10)}.${'B'.repeat(10)}.${'C'.repeat(10)}`,
        `${base64url.encode('not json')}.${base64url.encode('{}')}.abc`,
        `${base64url.encode('[]')}.${base64url.encode('{}')}.abc`,
        `${base64url.encode('{"alg":"EdDSA","typ":"at+jwt","kid":' + JSON.stringify(kid) + '}')}.${base64url.encode('null')}.${valid.split('.')[2]}`,
        `${valid}x`,
        `${'x'.repeat(5000)}.${'y'.repeat(5000)}.${'z'.repeat(5000)}`,
        `${'e'.repeat(200_000)}`,
      ];
      for (const token of garbage) await expectRefused(token, `garbage of length ${token.length}`);
      for (const header of ['Bearer  ', 'Bearer \u00ff\u00fe', `Bearer ${valid} extra`, 'bearer', `Token ${valid}`]) {
        const response = await t.app.inject({ method: 'GET', url: '/api/auth/session', headers: { authorization: header } });
        assert.equal(response.statusCode, 401, header.slice(0, 40));
      }
    });
  });
}
