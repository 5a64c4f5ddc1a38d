/**
 * What a default instance loads to start (issue 38: idle memory is a budget; perf/analysis.md):
 * the libraries only some requests or some configurations use are loaded when first needed, never
 * by the start. The server runs as `npm start` runs it, with a preload that records every npm
 * package the process loads (test/fixtures/record-loaded-packages.mjs); it is asked for its health
 * and stopped. A library made lazy and then imported at the top of a file again fails here.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomSecret, REPO_ROOT, startGatehouse, startScriptNodeArgs } from './helpers/process.ts';

const RECORDER = resolve(REPO_ROOT, 'test/fixtures/record-loaded-packages.mjs');

/**
 * The direct dependencies a default start may load, and why it needs each: its budget. Every other
 * dependency in package.json is loaded when first used, by what needs it (a PostgreSQL or Redis
 * URL, mail, metrics, the first passkey, TOTP, OpenID, SAML or SCIM request, a webhook delivery, a
 * session's device label, an imported bcrypt hash…), so a new dependency imported at the top of a
 * file fails here until it is made lazy or added below with its reason.
 */
const STARTS_WITH = new Map([
  ['fastify', 'the HTTP server'],
  ['@fastify/cookie', 'cookies on every request'],
  ['@fastify/cors', 'CORS for the API routes'],
  ['@fastify/csrf', 'CSRF tokens for forms'],
  ['@fastify/formbody', 'form posts'],
  ['@fastify/swagger', 'collects the routes as they are registered (the document itself is built at its first request)'],
  ['fastify-type-provider-zod', 'route schemas'],
  ['fast-json-stringify', 'compiled response writers'],
  ['zod', 'config and route schemas'],
  ['kysely', 'storage'],
  ['@node-rs/argon2', 'the admin bootstrap and every sign-in'],
  ['jose', 'signing keys, loaded at start'],
  ['eta', 'page templates'],
  ['intl-messageformat', 'message catalogs'],
  ['negotiator', 'the language of a request'],
  ['helmet', 'security headers'],
  ['ipaddr.js', 'client addresses and trusted proxies'],
  ['pino', 'the log'],
  ['rate-limiter-flexible', 'rate limits, on every route'],
]);

describe('a default start', () => {
  it('loads none of the libraries that are loaded when first used', async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-footprint-'));
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    const record = join(dataDir, 'loaded.json');
    const server = await startGatehouse({
      env: { NODE_ENV: 'development', LOG_LEVEL: 'info', AUTH_SECRET: randomSecret(), DATA_DIR: dataDir, RECORD_LOADED_PACKAGES: record },
      nodeArgs: [...startScriptNodeArgs(), '--import', RECORDER],
      cleanup: (fn) => t.after(fn),
    });
    const health = await fetch(`${server.base}/api/health`);
    assert.equal(health.status, 200);
    // The banner of a store without accounts says how to make the first.
    assert.match(server.child.stderr(), /No users yet\. Create one/);
    const exit = await server.child.stop(30_000);
    assert.equal(exit.code, 0, server.child.stderr());
    const loaded = JSON.parse(readFileSync(record, 'utf8')) as string[];
    const dependencies = Object.keys((JSON.parse(readFileSync(resolve(REPO_ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies);
    // The budget names only dependencies, and each is loaded (the recorder works, and a library made lazy leaves the list).
    assert.deepEqual([...STARTS_WITH.keys()].filter((library) => !dependencies.includes(library)), [], 'listed, but not a dependency');
    assert.deepEqual([...STARTS_WITH.keys()].filter((library) => !loaded.includes(library)), [], 'listed, but no longer loaded at start: take it off the list');
    assert.deepEqual(
      dependencies.filter((library) => loaded.includes(library) && !STARTS_WITH.has(library)),
      [],
      'loaded at start, though only some requests or configurations use them',
    );
    // And those that were made lazy, by name (each is loaded where its comment in the code says).
    for (const library of ['pg', 'ioredis', 'prom-client', 'nodemailer', '@simplewebauthn/server', 'oidc-provider', 'openid-client', '@node-saml/node-saml', 'bowser', 'otpauth', 'uqr', 'bcryptjs', 'mmdb-lib', 'scim2-parse-filter', 'standardwebhooks']) {
      assert.ok(dependencies.includes(library) && !loaded.includes(library), library);
    }
    assert.ok(!loaded.includes('koa'), 'koa (oidc-provider\'s server) is not loaded either');
  });
});

describe('an idle instance', () => {
  it("gives the start's garbage back once it has been idle, and still answers", async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-idle-'));
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    const server = await startGatehouse({
      env: { NODE_ENV: 'development', LOG_LEVEL: 'info', AUTH_SECRET: randomSecret(), DATA_DIR: dataDir, IDLE_MEMORY_RELEASE: '1s' },
      nodeArgs: startScriptNodeArgs(),
      cleanup: (fn) => t.after(fn),
    });
    const released = await server.child.waitForLog((entry) => entry.msg === 'idle memory released', 30_000, 'the idle memory release');
    const { rssBeforeMb, rssAfterMb, pauseMs } = released as { rssBeforeMb: number; rssAfterMb: number; pauseMs: number };
    // About 20 MB on the machines measured (perf/analysis.md, part 3); at least 5 here.
    assert.ok(rssAfterMb <= rssBeforeMb - 5, `resident set ${rssBeforeMb} MB -> ${rssAfterMb} MB`);
    assert.ok(Number.isInteger(pauseMs) && pauseMs >= 0, String(pauseMs));
    assert.equal((await fetch(`${server.base}/api/health`)).status, 200);
    const exit = await server.child.stop(30_000);
    assert.equal(exit.code, 0, server.child.stderr());
  });
});
