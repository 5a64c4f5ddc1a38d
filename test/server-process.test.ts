/**
 * The real server process: `node src/main.ts` started as an operator would, spoken to over real
 * HTTP on loopback, stopped with SIGTERM. Runs on every backend; also covers start-up failures and
 * the development AUTH_SECRET file.
 */
import { after, before, describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose';
import { backends, type TestDatabase } from './helpers/databases.ts';
import { createTestApp } from './helpers/app.ts';
import {
  LISTENING_MESSAGE,
  randomSecret,
  runNode,
  SERVER_ENTRY,
  startGatehouse,
  startNode,
  type ChildEnv,
  type RunningGatehouse,
} from './helpers/process.ts';

const STOP_TIMEOUT_MS = 10_000;
const REQUEST_TIMEOUT_MS = 10_000;
const ALLOWED_CLAIMS = ['iss', 'aud', 'sub', 'sid', 'jti', 'roles', 'amr', 'auth_time', 'iat', 'exp'];

const ADMIN_EMAIL = 'operator@example.test';
const ADMIN_PASSWORD = 'violet-harbour-lantern-42';

interface Json {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

async function getJson(url: string): Promise<Json> {
  const response = await fetch(url, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
}

async function postJson(url: string, body: unknown): Promise<Json> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
}

async function jwksKids(base: string): Promise<string[]> {
  const { status, body } = await getJson(`${base}/.well-known/jwks.json`);
  assert.equal(status, 200);
  const keys = body.keys as Array<{ kid: string }>;
  assert.ok(Array.isArray(keys) && keys.length > 0, 'JWKS publishes at least one key');
  return keys.map((key) => key.kid).sort();
}

/** Parses one Set-Cookie header into its name, value and attributes (names lower-cased). */
function parseSetCookie(header: string): { name: string; value: string; attributes: Map<string, string> } {
  const [pair = '', ...rest] = header.split(';').map((part) => part.trim());
  const eq = pair.indexOf('=');
  const attributes = new Map<string, string>();
  for (const attribute of rest) {
    const at = attribute.indexOf('=');
    if (at === -1) attributes.set(attribute.toLowerCase(), '');
    else attributes.set(attribute.slice(0, at).toLowerCase(), attribute.slice(at + 1));
  }
  return { name: pair.slice(0, eq), value: pair.slice(eq + 1), attributes };
}

function assertNoneLogged(output: string, secrets: Record<string, string>): void {
  for (const [what, secret] of Object.entries(secrets)) {
    assert.ok(secret.length >= 8, `${what} is long enough to search for`);
    assert.ok(!output.includes(secret), `the process output contains the ${what}`);
  }
}

const allBackends = await backends();

for (const backend of allBackends) {
  describe(`server process (${backend.name})`, { skip: backend.skip }, () => {
    const authSecret = randomSecret();
    let database: TestDatabase;
    let dataDir: string;
    let env: ChildEnv;
    let first: RunningGatehouse;
    /** Secrets the server handed out; none may ever appear in its output. */
    const secrets: Record<string, string> = { 'admin password': ADMIN_PASSWORD, AUTH_SECRET: authSecret };
    let adminId: string;
    let firstToken: string;
    let firstKids: string[];
    const suiteCleanups: Array<() => unknown> = [];

    before(async () => {
      database = await backend.create();
      dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-proc-'));
      env = {
        NODE_ENV: 'development',
        LOG_LEVEL: 'info',
        AUTH_SECRET: authSecret,
        DATA_DIR: dataDir,
        DATABASE_URL: database.url,
        ADMIN_EMAIL,
        ADMIN_PASSWORD,
      };
      first = await startGatehouse({ env, cleanup: (fn) => suiteCleanups.push(fn) });
    });

    after(async () => {
      for (const cleanup of suiteCleanups.splice(0)) await cleanup();
      rmSync(dataDir, { recursive: true, force: true });
      await database.drop();
    });

    it('logs the loopback address it listens on', () => {
      assert.equal(first.base, `http://127.0.0.1:${first.port}`);
      assert.equal(first.authUrl, `http://127.0.0.1:${first.port}`);
    });

    it('GET /api/health answers 200 {status: "ok"}', async () => {
      const { status, body } = await getJson(`${first.base}/api/health`);
      assert.equal(status, 200);
      assert.deepEqual(body, { status: 'ok' });
    });

    it('POST /api/auth signs the bootstrapped admin in with a token verifiable by the JWKS', async () => {
      const { status, headers, body } = await postJson(`${first.base}/api/auth`, { email: ADMIN_EMAIL, password: ADMIN_PASSWORD });
      assert.equal(status, 200);
      assert.match(headers.get('content-type') ?? '', /^application\/json/);
      assert.deepEqual(Object.keys(body).sort(), ['expiresAt', 'refreshToken', 'token', 'user']);

      const { token, refreshToken, expiresAt } = body as { token: string; refreshToken: string; expiresAt: string };
      const user = body.user as { id: string; email: string; name: string };
      assert.equal(typeof token, 'string');
      assert.equal(token.split('.').length, 3, 'the token is a compact JWS');
      assert.equal(typeof refreshToken, 'string');
      assert.ok(refreshToken.length >= 16);
      assert.deepEqual(Object.keys(user).sort(), ['email', 'id', 'name']);
      assert.equal(user.email, ADMIN_EMAIL);
      assert.equal(typeof user.id, 'string');
      assert.ok(user.id.length > 0);
      assert.equal(typeof user.name, 'string');

      const JWKS = createRemoteJWKSet(new URL(`${first.base}/.well-known/jwks.json`), { timeoutDuration: REQUEST_TIMEOUT_MS });
      const { payload, protectedHeader } = await jwtVerify(token, JWKS, {
        issuer: first.authUrl,
        audience: first.authUrl,
        algorithms: ['EdDSA'],
      });
      assert.equal(protectedHeader.alg, 'EdDSA');
      firstKids = await jwksKids(first.base);
      assert.ok(firstKids.includes(protectedHeader.kid!), 'signed with a published key');

      assert.equal(payload.iss, first.authUrl);
      assert.equal(payload.aud, first.authUrl);
      assert.equal(payload.sub, user.id);
      assert.deepEqual(payload.roles, ['ADMIN']);
      for (const claim of ['sid', 'jti'] as const) {
        assert.equal(typeof (payload as JWTPayload & Record<string, unknown>)[claim], 'string', `${claim} is a string`);
      }
      assert.equal(typeof payload.iat, 'number');
      assert.equal(typeof payload.exp, 'number');
      assert.ok(payload.exp! > payload.iat!);
      assert.equal(Date.parse(expiresAt), payload.exp! * 1000, 'expiresAt is the token expiry');
      // No personal data: only the documented claims, and the address appears nowhere.
      for (const claim of Object.keys(payload)) assert.ok(ALLOWED_CLAIMS.includes(claim), `unexpected claim "${claim}"`);
      assert.ok(!JSON.stringify(payload).toLowerCase().includes(ADMIN_EMAIL), 'the token carries no e-mail');
      assert.ok(!('email' in payload));

      adminId = user.id;
      firstToken = token;
      secrets['access token'] = token;
      secrets['refresh token'] = refreshToken;
    });

    it('POST /api/auth/signin also sets an HttpOnly, SameSite=Lax session cookie (not Secure on http)', async () => {
      const response = await fetch(`${first.base}/api/auth/signin`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: ADMIN_EMAIL, password: ADMIN_PASSWORD }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      assert.equal(response.status, 200);
      const body = (await response.json()) as { token: string; refreshToken: string; user: { id: string } };
      assert.equal(body.user.id, adminId);
      assert.equal(body.token.split('.').length, 3);
      secrets['second access token'] = body.token;
      secrets['second refresh token'] = body.refreshToken;

      const cookies = response.headers.getSetCookie().map(parseSetCookie);
      const session = cookies.find((cookie) => cookie.name === 'gatehouse.session');
      assert.ok(session, `a gatehouse.session cookie is set (got ${cookies.map((c) => c.name).join(', ') || 'none'})`);
      assert.ok(session.value.length > 0);
      assert.ok(session.attributes.has('httponly'), 'HttpOnly');
      assert.equal(session.attributes.get('samesite')?.toLowerCase(), 'lax');
      assert.equal(session.attributes.get('path'), '/');
      assert.ok(!session.attributes.has('secure'), 'no Secure attribute on an http origin');
      assert.ok(!session.attributes.has('domain'), 'host-only cookie');
      secrets['session cookie'] = decodeURIComponent(session.value);
    });

    it('answers a wrong password and an unknown e-mail with the same 401 INVALID_CREDENTIALS', async () => {
      for (const path of ['/api/auth', '/api/auth/signin']) {
        const wrongPassword = await fetch(`${first.base}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email: ADMIN_EMAIL, password: `${ADMIN_PASSWORD}-wrong` }),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        const unknownEmail = await fetch(`${first.base}${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email: 'nobody@example.test', password: ADMIN_PASSWORD }),
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        assert.equal(wrongPassword.status, 401, path);
        assert.equal(unknownEmail.status, 401, path);
        const wrongBody = (await wrongPassword.json()) as Record<string, unknown>;
        const unknownBody = (await unknownEmail.json()) as Record<string, unknown>;
        assert.equal(wrongBody.error, 'INVALID_CREDENTIALS');
        assert.equal(typeof wrongBody.message, 'string');
        assert.deepEqual(unknownBody, wrongBody, `${path}: identical bodies`);
        assert.deepEqual(wrongPassword.headers.getSetCookie(), [], `${path}: no cookie on failure`);
        assert.deepEqual(unknownEmail.headers.getSetCookie(), [], `${path}: no cookie on failure`);
      }
    });

    it('exits 0 on SIGTERM, and never logged a password, token or secret', async () => {
      const exit = await first.child.stop(STOP_TIMEOUT_MS);
      assert.deepEqual(exit, { code: 0, signal: null });
      const output = first.child.output();
      assert.ok(output.includes('Gatehouse listening'), 'the output was captured');
      assertNoneLogged(output, secrets);
    });

    it('restarts on the same DATA_DIR and database with the same signing keys and one admin', async (t) => {
      const second = await startGatehouse({ env, cleanup: (fn) => t.after(fn) });
      assert.deepEqual(await jwksKids(second.base), firstKids, 'the persisted signing keys are served again');

      // A token from before the restart still verifies against the new process's JWKS.
      const JWKS = createRemoteJWKSet(new URL(`${second.base}/.well-known/jwks.json`), { timeoutDuration: REQUEST_TIMEOUT_MS });
      const { payload } = await jwtVerify(firstToken, JWKS, { issuer: first.authUrl, audience: first.authUrl });
      assert.equal(payload.sub, adminId);

      const signIn = await postJson(`${second.base}/api/auth`, { email: ADMIN_EMAIL, password: ADMIN_PASSWORD });
      assert.equal(signIn.status, 200);
      assert.equal((signIn.body.user as { id: string }).id, adminId, 'the same admin, not a new one');
      const token = signIn.body.token as string;
      assert.ok(firstKids.includes(decodeProtectedHeader(token).kid!), 'signed with a key the first run made');
      assert.equal(decodeProtectedHeader(token).alg, 'EdDSA');
      const verified = await jwtVerify(token, JWKS, { issuer: second.authUrl, audience: second.authUrl });
      assert.deepEqual(verified.payload.roles, ['ADMIN']);

      const exit = await second.child.stop(STOP_TIMEOUT_MS);
      assert.deepEqual(exit, { code: 0, signal: null });
      assertNoneLogged(second.child.output(), {
        'admin password': ADMIN_PASSWORD,
        AUTH_SECRET: authSecret,
        'access token': token,
        'refresh token': signIn.body.refreshToken as string,
      });

      // Exactly one user: the bootstrap did not create the admin a second time.
      const inspector = await createTestApp(database, { env: { AUTH_SECRET: authSecret } });
      t.after(() => inspector.close());
      assert.equal(await inspector.services.users.countUsers(), 1);
    });
  });
}

describe('server start-up failures', () => {
  let dataDir: string;
  before(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-proc-'));
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  /** Starts the server with `env`, expects a refusal naming `variables`, and no echo of `secret`. */
  async function assertRefusesToStart(t: TestContext, env: ChildEnv, variables: string[], secret?: string) {
    const result = await runNode([SERVER_ENTRY], {
      env: { DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env },
      timeoutMs: 15_000,
      cleanup: (fn) => t.after(fn),
    });
    assert.notEqual(result.code, 0);
    assert.equal(result.signal, null, 'exited by itself, not killed at the deadline');
    for (const variable of variables) {
      assert.ok(result.stderr.includes(variable), `stderr names ${variable}:\n${result.stderr}`);
    }
    if (secret !== undefined) assert.ok(!`${result.stdout}${result.stderr}`.includes(secret), 'the value is not echoed');
    assert.ok(!result.stdout.includes('Gatehouse listening'));
  }

  it('names every configuration problem at once and exits non-zero', async (t) => {
    await assertRefusesToStart(t, { NODE_ENV: 'production', AUTH_URL: 'http://example.com', DATABASE_URL: 'mysql://x' }, ['AUTH_SECRET', 'AUTH_URL', 'DATABASE_URL']);
    assert.ok(!existsSync(join(dataDir, 'auth-secret')), 'no secret is generated in production');
  });

  it('refuses an AUTH_SECRET shorter than 32 characters in production, without echoing it', async (t) => {
    const shortSecret = 'short-secret-0123456789';
    await assertRefusesToStart(
      t,
      { NODE_ENV: 'production', AUTH_SECRET: shortSecret, AUTH_URL: 'https://auth.example.com', DATABASE_URL: `sqlite:${join(dataDir, 'short-secret.db')}` },
      ['AUTH_SECRET'],
      shortSecret,
    );
  });

  it('refuses a weak ADMIN_PASSWORD at start, naming the variable but not the value', async (t) => {
    const weak = 'password1234';
    await assertRefusesToStart(
      t,
      {
        NODE_ENV: 'development',
        AUTH_SECRET: randomSecret(),
        AUTH_URL: 'http://127.0.0.1:9',
        DATABASE_URL: `sqlite:${join(dataDir, 'weak-admin.db')}`,
        ADMIN_EMAIL: 'weak-admin@example.test',
        ADMIN_PASSWORD: weak,
      },
      ['ADMIN_PASSWORD'],
      weak,
    );
  });

  // Regression: with PORT=0 and no AUTH_URL, tokens named "http://localhost:0" as issuer and audience.
  it('with PORT=0 and no AUTH_URL, either refuses to start or issues tokens for the port it listens on', async (t) => {
    const env: ChildEnv = {
      NODE_ENV: 'development',
      LOG_LEVEL: 'info',
      AUTH_SECRET: randomSecret(),
      DATA_DIR: dataDir,
      DATABASE_URL: `sqlite:${join(dataDir, 'port-zero.db')}`,
      HOST: '127.0.0.1',
      PORT: '0',
      ADMIN_EMAIL,
      ADMIN_PASSWORD,
    };
    const child = startNode([SERVER_ENTRY], { env, deadlineMs: 60_000, cleanup: (fn) => t.after(fn) });
    // waitForLog rejects when the process exits first: that is the refusal branch.
    const listening = await child.waitForLog((entry) => entry.msg === LISTENING_MESSAGE, 30_000, `"${LISTENING_MESSAGE}"`).catch(() => null);
    if (listening === null) {
      assert.notEqual((await child.exited).code, 0);
      assert.ok(child.stderr().includes('AUTH_URL'), 'a refusal names AUTH_URL');
      return;
    }
    const address = new URL(String(listening.address));
    assert.equal(address.hostname, '127.0.0.1');
    const signIn = await postJson(`${address.origin}/api/auth`, { email: ADMIN_EMAIL, password: ADMIN_PASSWORD });
    assert.equal(signIn.status, 200);
    const { iss, aud } = decodeJwt(signIn.body.token as string);
    await child.stop(STOP_TIMEOUT_MS);
    assert.equal(new URL(String(iss)).port, address.port, `iss ${iss} names the listening port`);
    assert.equal(new URL(String(aud)).port, address.port, `aud ${String(aud)} names the listening port`);
  });

  it('in development without AUTH_SECRET generates DATA_DIR/auth-secret (0600) once, warns, and reuses it', async (t) => {
    const devDataDir = join(dataDir, 'dev', 'data'); // does not exist yet
    const env: ChildEnv = { NODE_ENV: 'development', LOG_LEVEL: 'info', DATA_DIR: devDataDir };
    const secretPath = join(devDataDir, 'auth-secret');

    const first = await startGatehouse({ env, cleanup: (fn) => t.after(fn) });
    assert.ok(existsSync(secretPath), 'the secret file exists');
    assert.equal(statSync(secretPath).mode & 0o777, 0o600);
    const secret = readFileSync(secretPath, 'utf8');
    assert.ok(secret.trim().length >= 32);
    assert.ok(first.child.stderr().includes('AUTH_SECRET'), `a warning names AUTH_SECRET:\n${first.child.stderr()}`);
    const health = await getJson(`${first.base}/api/health`);
    assert.equal(health.status, 200);
    const kids = await jwksKids(first.base);
    assert.deepEqual(await first.child.stop(STOP_TIMEOUT_MS), { code: 0, signal: null });
    assert.ok(!first.child.output().includes(secret.trim()), 'the generated secret is not logged');

    const second = await startGatehouse({ env, cleanup: (fn) => t.after(fn) });
    assert.equal(readFileSync(secretPath, 'utf8'), secret, 'the secret file is unchanged');
    assert.equal(statSync(secretPath).mode & 0o777, 0o600);
    // The signing key is encrypted under the secret: serving it again proves the secret was reused.
    assert.deepEqual(await jwksKids(second.base), kids);
    assert.deepEqual(await second.child.stop(STOP_TIMEOUT_MS), { code: 0, signal: null });
    assert.ok(!second.child.output().includes(secret.trim()), 'the secret is not logged');
  });
});
