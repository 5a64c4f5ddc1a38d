/**
 * Lazy migration (LEGACY_VERIFY_URL), against a stand-in old system on loopback: an address
 * unknown here signs in with the password the old system accepts, and from then on is a Gatehouse
 * account (argon2id, audited `user.created` via `legacy`; the old system is not asked again); a
 * wrong password, an old system that is down, or one that refuses our secret is a wrong password
 * and creates nothing. Off by default. The config refuses a short secret. Over mutual TLS
 * (LEGACY_VERIFY_CLIENT_CERT / _KEY, LEGACY_VERIFY_CA), against a loopback HTTPS server that
 * requires a client certificate its CA issued (certificates made in the test): the certificate is
 * presented, a connection without one is refused, and the files are checked once at start.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes, webcrypto } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, type TestApp } from '../../test/helpers/app.ts';
import { loadConfig } from '../modules.ts';

const SECRET = 'a-shared-secret-with-the-old-system-0123456789';
const OLD_USERS = new Map([['old@example.com', 'the old password 123']]);

describe('lazy migration from a live old system', () => {
  let database: TestDatabase;
  let t: TestApp;
  let oldSystem: Server;
  const asked: Array<{ email: string; authorization: string | undefined }> = [];
  let down = false;

  before(async () => {
    oldSystem = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk));
      request.on('end', () => {
        const { email, password } = JSON.parse(body) as { email: string; password: string };
        asked.push({ email, authorization: request.headers.authorization });
        if (down) return void request.socket.destroy();
        const ok = request.headers.authorization === `Bearer ${SECRET}` && OLD_USERS.get(email) === password;
        response.writeHead(ok ? 200 : 401).end();
      });
    });
    oldSystem.listen(0, '127.0.0.1');
    await once(oldSystem, 'listening');
    database = await createSqliteDatabase();
    const { port } = oldSystem.address() as AddressInfo;
    t = await createTestApp(database, { env: { LEGACY_VERIFY_URL: `http://127.0.0.1:${port}/verify`, LEGACY_VERIFY_SECRET: SECRET } });
  });
  after(async () => {
    await t.close();
    await database.drop();
    oldSystem.close();
  });

  const signIn = (email: string, password: string) => t.app.inject({ method: 'POST', url: '/api/auth', payload: { email, password } });

  it('a wrong password creates nothing; the right one creates the account, which is then Gatehouse\'s own', async () => {
    assert.equal((await signIn('old@example.com', 'not it')).statusCode, 401);
    assert.equal(await t.services.users.findUserByEmail('old@example.com'), null);
    assert.deepEqual(asked.at(-1), { email: 'old@example.com', authorization: `Bearer ${SECRET}` });

    const signedIn = await signIn('Old@Example.com', 'the old password 123');
    assert.equal(signedIn.statusCode, 200, signedIn.body);
    const credentials = await t.services.users.findCredentialsByEmail('old@example.com');
    assert.match(credentials!.passwordHash!, /^\$argon2id\$/);
    const events = await t.services.storage.db.selectFrom('audit_events').select(['type', 'details']).where('user_id', '=', credentials!.id).where('type', '=', 'user.created').execute();
    assert.equal(events.length, 1);
    assert.match(String(events[0]!.details), /legacy/);

    const before = asked.length;
    assert.equal((await signIn('old@example.com', 'the old password 123')).statusCode, 200);
    assert.equal((await signIn('old@example.com', 'not it')).statusCode, 401);
    assert.equal(asked.length, before, 'an account here is never checked against the old system again');
  });

  it('an old system that is down, or an address it does not know, is a wrong password', async () => {
    assert.equal((await signIn('nobody@example.com', 'whatever it is')).statusCode, 401);
    down = true;
    try {
      OLD_USERS.set('late@example.com', 'another old password');
      assert.equal((await signIn('late@example.com', 'another old password')).statusCode, 401);
      assert.equal(await t.services.users.findUserByEmail('late@example.com'), null);
    } finally {
      down = false;
    }
  });

  it('is off by default, and needs a long secret and an https URL in production', () => {
    const base = { NODE_ENV: 'test', AUTH_SECRET: 'x'.repeat(48), DATABASE_URL: 'sqlite::memory:' };
    assert.equal(loadConfig(base).legacyVerify.url, null);
    assert.throws(() => loadConfig({ ...base, LEGACY_VERIFY_URL: 'https://old.example.com/verify', LEGACY_VERIFY_SECRET: 'short' }), /LEGACY_VERIFY_SECRET must be set/);
    assert.throws(() => loadConfig({ ...base, NODE_ENV: 'production', AUTH_URL: 'https://auth.example.com', LEGACY_VERIFY_URL: 'http://old.example.com/verify', LEGACY_VERIFY_SECRET: SECRET }), /LEGACY_VERIFY_URL/);
  });
});

/** A CA, a server certificate for 127.0.0.1 and a client certificate, each issued by the CA (PEM). */
async function testPki() {
  await import('reflect-metadata');
  const x509 = await import('@peculiar/x509');
  x509.cryptoProvider.set(webcrypto as unknown as Crypto);
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
  const notBefore = new Date(Date.now() - 60_000);
  const notAfter = new Date(Date.now() + 86_400_000);
  const serial = () => randomBytes(8).toString('hex').replace(/^./, '1');
  // Node's webcrypto types and the DOM's that @peculiar/x509 names differ only in name.
  const generateKeys = async () => (await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify'])) as unknown as CryptoKeyPair;
  const pemKey = async (key: CryptoKey) => `-----BEGIN PRIVATE KEY-----\n${Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key as unknown as webcrypto.CryptoKey)).toString('base64').replace(/(.{64})/g, '$1\n')}\n-----END PRIVATE KEY-----\n`;
  const caKeys = await generateKeys();
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: 'CN=Old System Test CA',
    notBefore,
    notAfter,
    signingAlgorithm: algorithm,
    keys: caKeys,
    extensions: [new x509.BasicConstraintsExtension(true, undefined, true), new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true)],
  });
  const issue = async (name: string, extensions: InstanceType<typeof x509.Extension>[]) => {
    const keys = await generateKeys();
    const certificate = await x509.X509CertificateGenerator.create({ serialNumber: serial(), subject: name, issuer: ca.subject, notBefore, notAfter, signingAlgorithm: algorithm, publicKey: keys.publicKey, signingKey: caKeys.privateKey, extensions });
    return { cert: certificate.toString('pem'), key: await pemKey(keys.privateKey) };
  };
  const server = await issue('CN=old.internal', [new x509.SubjectAlternativeNameExtension([{ type: 'ip', value: '127.0.0.1' }]), new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth])]);
  const client = await issue('CN=gatehouse', [new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth])]);
  const stranger = await issue('CN=stranger', []);
  return { ca: ca.toString('pem'), server, client, stranger };
}

describe('lazy migration over mutual TLS', () => {
  let pki: Awaited<ReturnType<typeof testPki>>;
  let dir: string;
  let oldSystem: HttpsServer;
  let url: string;
  const presented: Array<string | null> = [];
  const files = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  before(async () => {
    pki = await testPki();
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-mtls-'));
    // Asks every client for a certificate its CA issued; a connection without one never reaches the handler.
    oldSystem = createHttpsServer({ cert: pki.server.cert, key: pki.server.key, ca: pki.ca, requestCert: true, rejectUnauthorized: true }, (request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk));
      request.on('end', () => {
        const { email, password } = JSON.parse(body) as { email: string; password: string };
        const name = (request.socket as TLSSocket).getPeerCertificate().subject?.CN;
        presented.push(typeof name === 'string' ? name : null);
        response.writeHead(OLD_USERS.get(email) === password ? 200 : 401).end();
      });
    });
    oldSystem.listen(0, '127.0.0.1');
    await once(oldSystem, 'listening');
    url = `https://127.0.0.1:${(oldSystem.address() as AddressInfo).port}/verify`;
  });
  after(() => {
    oldSystem.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function withApp(env: Record<string, string>, run: (signIn: (email: string, password: string) => Promise<number>, t: TestApp) => Promise<void>) {
    const database = await createSqliteDatabase();
    const t = await createTestApp(database, { env: { LEGACY_VERIFY_URL: url, ...env } });
    try {
      await run(async (email, password) => (await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email, password } })).statusCode, t);
    } finally {
      await t.close();
      await database.drop();
    }
  }

  it('presents the client certificate to an old system that requires one, trusting its private CA; no secret needed', async () => {
    const env = { LEGACY_VERIFY_CLIENT_CERT: files('client.pem', pki.client.cert), LEGACY_VERIFY_CLIENT_KEY: files('client.key', pki.client.key), LEGACY_VERIFY_CA: files('ca.pem', pki.ca) };
    await withApp(env, async (signIn, t) => {
      assert.equal(await signIn('old@example.com', 'not it'), 401);
      assert.equal(await signIn('old@example.com', 'the old password 123'), 200);
      assert.match((await t.services.users.findCredentialsByEmail('old@example.com'))!.passwordHash!, /^\$argon2id\$/);
    });
    assert.deepEqual(presented, ['gatehouse', 'gatehouse']);
  });

  it('without a client certificate the old system refuses the connection: a wrong password, nothing created', async () => {
    presented.length = 0;
    await withApp({ LEGACY_VERIFY_SECRET: SECRET, LEGACY_VERIFY_CA: files('ca-only.pem', pki.ca) }, async (signIn, t) => {
      assert.equal(await signIn('old@example.com', 'the old password 123'), 401);
      assert.equal(await t.services.users.findUserByEmail('old@example.com'), null);
    });
    assert.deepEqual(presented, [], 'the handler never ran');
  });

  it('checks the files once, at start: readable, both halves, a key that is the certificate\'s, https only', () => {
    const base = { NODE_ENV: 'test', AUTH_SECRET: 'x'.repeat(48), DATABASE_URL: 'sqlite::memory:', LEGACY_VERIFY_URL: 'https://old.example.com/verify' };
    const cert = files('c.pem', pki.client.cert);
    const key = files('c.key', pki.client.key);
    assert.equal(loadConfig({ ...base, LEGACY_VERIFY_CLIENT_CERT: cert, LEGACY_VERIFY_CLIENT_KEY: key }).legacyVerify.tls?.cert, pki.client.cert);
    assert.throws(() => loadConfig({ ...base, LEGACY_VERIFY_CLIENT_CERT: cert, LEGACY_VERIFY_CLIENT_KEY: files('other.key', pki.stranger.key) }), /LEGACY_VERIFY_CLIENT_KEY is not the private key of LEGACY_VERIFY_CLIENT_CERT/);
    assert.throws(() => loadConfig({ ...base, LEGACY_VERIFY_CLIENT_CERT: cert }), /LEGACY_VERIFY_CLIENT_CERT and LEGACY_VERIFY_CLIENT_KEY go together/);
    assert.throws(() => loadConfig({ ...base, LEGACY_VERIFY_CLIENT_CERT: join(dir, 'missing.pem'), LEGACY_VERIFY_CLIENT_KEY: key }), /LEGACY_VERIFY_CLIENT_CERT cannot be read \(ENOENT\)/);
    assert.throws(() => loadConfig({ ...base, LEGACY_VERIFY_CLIENT_CERT: key, LEGACY_VERIFY_CLIENT_KEY: cert }), /LEGACY_VERIFY_CLIENT_CERT is not a PEM X.509 certificate/);
    assert.throws(() => loadConfig({ ...base, LEGACY_VERIFY_CA: key, LEGACY_VERIFY_SECRET: SECRET }), /LEGACY_VERIFY_CA is not a PEM X.509 certificate/);
    assert.throws(() => loadConfig({ ...base, LEGACY_VERIFY_URL: 'http://old.example.com/verify', LEGACY_VERIFY_CLIENT_CERT: cert, LEGACY_VERIFY_CLIENT_KEY: key }), /need an https:\/\/ LEGACY_VERIFY_URL/);
    assert.throws(() => loadConfig({ ...base, LEGACY_VERIFY_URL: undefined, LEGACY_VERIFY_CLIENT_CERT: cert, LEGACY_VERIFY_CLIENT_KEY: key }), /used only with LEGACY_VERIFY_URL/);
  });
});
