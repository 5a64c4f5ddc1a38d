/**
 * Issue 32 (item 3): docs/guides/oidc-machine-client.md works as written against a local http
 * Gatehouse. The guide's `gatehouse clients create` command registers the caller with the CLI; the
 * guide's `caller.mjs` (test/helpers/guides.ts) is written to a temporary directory as it is and
 * run with this repository's Node and its openid-client, with the variables the guide names: it
 * discovers a live Gatehouse on plain http, gets a client-credentials token for the API and calls
 * the API, which verifies the token as the guide's API does (EdDSA, `typ` at+jwt, `iss`, `aud`)
 * and answers with the caller. With NODE_ENV=production the same file refuses the http issuer:
 * the allowance for plain http is development-only.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { createSqliteDatabase, type TestDatabase } from '../helpers/databases.ts';
import { TEST_SECRET } from '../helpers/app.ts';
import { listeningApp, type ListeningApp } from '../helpers/oidc-rp.ts';
import { REPO_ROOT, runCli, runNode } from '../helpers/process.ts';
import { gatehouseCommand, guideFile } from '../helpers/guides.ts';

const GUIDE = join(REPO_ROOT, 'docs/guides/oidc-machine-client.md');

describe('docs/guides/oidc-machine-client.md: caller.mjs, as written, against a local http Gatehouse', () => {
  let database: TestDatabase | undefined;
  let gatehouse: ListeningApp | undefined;
  let api: Server | undefined;
  let apiUrl: string;
  let work: string | undefined;
  let caller: string;
  let env: Record<string, string>;
  let clientId: string;

  before(async () => {
    // The API first: Gatehouse lists its URL in OIDC_PROVIDER_RESOURCES.
    api = createServer((req, res) => {
      void answer(req.url ?? '', req.headers.authorization ?? '').then(({ status, body }) => {
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      });
    });
    await new Promise<void>((resolve) => api!.listen(0, '127.0.0.1', resolve));
    apiUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}/api`;

    database = await createSqliteDatabase();
    gatehouse = await listeningApp(database, { OIDC_PROVIDER_RESOURCES: `${apiUrl}=read:items write:items` });
    // The guide's registration command, run with Gatehouse's CLI on Gatehouse's database and data.
    const command = gatehouseCommand(GUIDE, 'clients create');
    const registered = await runCli(command, { env: { NODE_ENV: 'development', AUTH_URL: gatehouse.url, AUTH_SECRET: TEST_SECRET, DATA_DIR: gatehouse.config.dataDir, DATABASE_URL: database.url }, timeoutMs: 60_000 });
    assert.equal(registered.code, 0, `gatehouse ${command.join(' ')} failed:\n${registered.stdout}${registered.stderr}`);
    const printed = JSON.parse(registered.stdout) as { issuer: string; clientId: string; clientSecret: string };
    clientId = printed.clientId;
    env = { GATEHOUSE_URL: printed.issuer, API_URL: apiUrl, GATEHOUSE_CLIENT_ID: clientId, GATEHOUSE_CLIENT_SECRET: printed.clientSecret };

    // The guide's file, byte for byte, where it finds openid-client (this repository's).
    work = mkdtempSync(join(tmpdir(), 'gatehouse-machine-client-guide-'));
    caller = join(work, 'caller.mjs');
    writeFileSync(caller, guideFile(GUIDE, 'caller.mjs'));
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(work, 'node_modules'), 'dir');
  });

  after(async () => {
    await new Promise((resolve) => api?.close(resolve));
    await gatehouse?.close();
    await database?.drop();
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  /** The API: GET /api/items with a token Gatehouse issued for it, verified as the guide's API does. */
  async function answer(url: string, authorization: string): Promise<{ status: number; body: unknown }> {
    if (url !== '/api/items') return { status: 404, body: { error: 'NOT_FOUND' } };
    const match = /^Bearer (\S+)$/i.exec(authorization);
    if (!match) return { status: 401, body: { error: 'INVALID_TOKEN' } };
    try {
      const { payload } = await jwtVerify(match[1]!, createRemoteJWKSet(new URL(`${gatehouse!.url}/.well-known/jwks.json`)), {
        issuer: gatehouse!.url,
        audience: apiUrl,
        typ: 'at+jwt',
        algorithms: ['EdDSA'],
      });
      return { status: 200, body: { caller: payload.client_id, scope: payload.scope } };
    } catch {
      return { status: 401, body: { error: 'INVALID_TOKEN' } };
    }
  }

  it('gets a client-credentials token for the API from http Gatehouse and calls the API with it', async () => {
    const ran = await runNode([caller], { env, cwd: work, timeoutMs: 30_000 });
    assert.equal(ran.code, 0, `node caller.mjs failed:\n${ran.stdout}${ran.stderr}`);
    assert.equal(ran.stdout, `200 ${JSON.stringify({ caller: clientId, scope: 'read:items' })}\n`);
  });

  it('refuses the http issuer with NODE_ENV=production (plain http is for development only)', async () => {
    const ran = await runNode([caller], { env: { ...env, NODE_ENV: 'production' }, cwd: work, timeoutMs: 30_000 });
    assert.notEqual(ran.code, 0, `caller.mjs ran against http with NODE_ENV=production:\n${ran.stdout}`);
    assert.match(ran.stderr, /only requests to HTTPS are allowed/);
    assert.equal(ran.stdout, '');
  });
});
