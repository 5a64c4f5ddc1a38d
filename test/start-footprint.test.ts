/**
 * What a default instance loads to start (issue 38: idle memory is a budget; perf/analysis.md):
 * the libraries only some requests or some configurations use are loaded when first needed, never
 * by the start. The server runs as `npm start` runs it, with a preload that records every npm
 * package the process loads (test/fixtures/record-loaded-packages.mjs); it is asked for its health
 * and stopped. A library made lazy and then imported at the top of a file again fails here.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomSecret, REPO_ROOT, startGatehouse, startScriptNodeArgs } from './helpers/process.ts';
import { SIGN_IN_PAGE } from '../src/http/sign-in-redirect.ts';

const RECORDER = resolve(REPO_ROOT, 'test/fixtures/record-loaded-packages.mjs');

/**
 * Module code a default start does not load (lib/deferred-service.ts): the services and stores of
 * the modules only some requests reach, imported at their first call. A file here imported by the
 * start again (a constant taken from a service file by a route file, say) fails the test.
 */
const LOADED_ON_FIRST_USE = [
  // The OpenID clients' registry: the admin API and pages, the provider's client lookups.
  'src/oidc-clients/clients.service.ts',
  'src/oidc-clients/clients.store.ts',
  'src/oidc-clients/exchange-policy.ts',
  // SCIM: a directory's first request, an organization page's SCIM section.
  'src/scim/scim-tokens.service.ts',
  'src/scim/scim-users.service.ts',
  'src/scim/scim-groups.service.ts',
  'src/scim/scim-membership.ts',
  'src/scim/scim-resources.ts',
  'src/scim/scim-filter.ts',
  'src/scim/scim-patch.ts',
  'src/scim/scim.store.ts',
  // Enterprise SSO: the sign-in page's SSO section, the first sign-in (its enforcement step).
  'src/sso/sso.service.ts',
  'src/sso/sso.store.ts',
  'src/sso/sso-connections.ts',
  'src/sso/sso-secrets.ts',
  'src/sso/sso-signin.ts',
  'src/sso/sso-setup.service.ts',
  'src/sso/sso-setup.store.ts',
  'src/sso/saml-sp.ts',
  'src/sso/saml-libraries.ts',
  'src/sso/sp-keys.ts',
  'src/sso/idp-metadata.ts',
  'src/sso/oidc-rp.ts',
  // An organization's verified domains: its page's section, the domain API.
  'src/org-domains/org-domains.service.ts',
  'src/org-domains/org-domains.store.ts',
  'src/org-domains/org-domains.model.ts',
  'src/org-domains/domain-checks.ts',
  // The admin area's service, account deletion and the data export: their first request.
  'src/admin/admin.service.ts',
  'src/account-deletion/account-deletion.service.ts',
  'src/data-export/data-export.service.ts',
  // API keys: a key's first use (its shape is told without them), the keys' page.
  'src/api-keys/api-keys.service.ts',
  'src/api-keys/api-key-use.ts',
  'src/api-keys/api-keys.store.ts',
  'src/api-keys/key-rate-lease.ts',
  // Imported accounts: the first foreign password hash verified (the schemes' names and patterns load at start).
  'src/user-import/hash-schemes.ts',
];

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
    const sourcesRecord = join(dataDir, 'sources.json');
    const server = await startGatehouse({
      env: { NODE_ENV: 'development', LOG_LEVEL: 'info', AUTH_SECRET: randomSecret(), DATA_DIR: dataDir, RECORD_LOADED_PACKAGES: record, RECORD_LOADED_SOURCES: sourcesRecord },
      nodeArgs: [...startScriptNodeArgs(), '--import', RECORDER],
      cleanup: (fn) => t.after(fn),
    });
    const health = await fetch(`${server.base}/api/health`);
    assert.equal(health.status, 200);
    // Ready: what is loaded from here on was loaded by a request. The sign-in page asks the SSO
    // service whether any connection exists: its code is loaded now, from its own chunk.
    const ready = Date.now();
    const signInPage = await fetch(`${server.base}${SIGN_IN_PAGE}`);
    assert.equal(signInPage.status, 200);
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
    // The project's own files: the start loads its modules' declarations (the recorder works: the
    // module files are there) and not the code their services are made of.
    const records = JSON.parse(readFileSync(sourcesRecord, 'utf8')) as Array<{ file: string; at: number }>;
    const sources = records.filter((record) => record.at <= ready).map((record) => record.file);
    const firstUsed = records.filter((record) => record.at > ready).map((record) => record.file);
    assert.ok(firstUsed.includes('src/sso/sso.service.ts') && firstUsed.includes('src/sso/sso.store.ts'), `loaded by the sign-in page: ${firstUsed.join(', ')}`);
    for (const declared of ['src/oidc-clients/oidc-clients.module.ts', 'src/oidc-clients/clients.routes.ts']) assert.ok(sources.includes(declared), declared);
    assert.deepEqual(LOADED_ON_FIRST_USE.filter((file) => existsSync(resolve(REPO_ROOT, file)) && sources.includes(file)), [], 'loaded at start, though imported at first use');
    assert.deepEqual(LOADED_ON_FIRST_USE.filter((file) => !existsSync(resolve(REPO_ROOT, file))), [], 'listed, but no such file');
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
