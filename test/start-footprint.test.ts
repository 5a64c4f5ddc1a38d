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

/** Loaded on first use, each by what needs it (the comment says where). */
const LOADED_WHEN_FIRST_USED = [
  'pg', // a PostgreSQL DATABASE_URL (storage/database.ts)
  'ioredis', // REDIS_URL (http/rate-limit.ts)
  'prom-client', // METRICS_TOKEN or METRICS_PORT (metrics)
  'nodemailer', // EMAIL_SERVER_HOST (mail)
  '@simplewebauthn/server', // the first passkey ceremony (passkeys)
  'oidc-provider', // the first request to the OpenID Provider (oidc-provider)
  'koa',
  'openid-client', // the first sign-in with an OpenID Connect provider (oauth, sso)
  '@node-saml/node-saml', // the first SAML sign-in (sso)
  'bowser', // the first session's device label (sessions/device-label.ts)
  'otpauth', // the first TOTP enrolment or code (mfa/totp.ts)
  'uqr', // the first enrolment's QR code (mfa/qr.ts)
  'bcryptjs', // the first imported bcrypt hash verified (user-import/hash-schemes.ts)
  'mmdb-lib', // the first session listed with GEOIP_DATABASE_FILE set (sessions/place.ts)
];

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
    const exit = await server.child.stop(30_000);
    assert.equal(exit.code, 0, server.child.stderr());
    const loaded = JSON.parse(readFileSync(record, 'utf8')) as string[];
    // The recorder sees the start's own libraries (it would record nothing if it were broken).
    for (const library of ['fastify', 'kysely', 'zod']) assert.ok(loaded.includes(library), `${library} is recorded as loaded`);
    assert.deepEqual(
      LOADED_WHEN_FIRST_USED.filter((library) => loaded.includes(library)),
      [],
      'loaded at start, though only some requests or configurations use them',
    );
  });
});
