/**
 * The OpenAPI document and the rendered reference:
 * - `redocly lint` (the `@redocly/cli` devDependency, run as a child process, offline: telemetry
 *   off in `redocly.yaml` and the environment) passes the document with its recommended rules and
 *   the exceptions `redocly.yaml` justifies: no error and no warning at all;
 * - the generic rules of `openapi.ts` hold for every operation (operationId, security from the
 *   route guard, 429 on rate-limited routes, 503 everywhere, both with Retry-After, the body
 *   statuses, described tags), and a documented 429 is what a limited route really answers;
 * - security, 401 and 403 are what each route declares (`app.routeAccess`), the declarations the
 *   access hook enforces;
 * - `GET /api/docs` serves Swagger UI from the package under a nonce CSP with cached assets, and in
 *   Chromium renders the operations with no CSP violation and no request leaving the origin.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { backends, createSqliteDatabase, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, serveTestApp, type ServedTestApp, type TestApp } from '../../test/helpers/app.ts';
import { chromiumAvailability, closeBrowser, launchBrowser, saveScreenshot, watchConsole, withPage, type Browser } from '../../test/helpers/browser.ts';
import { decide } from '../../packages/protect/src/rules.ts';
import { OPENAPI_PATH } from '../app.ts';
import { operationIdFor } from './openapi.ts';
import { collectOpenApiTags, defineModule } from '../module.ts';
import { MODULES } from '../modules.ts';

const REPO_ROOT = resolve(import.meta.dirname, '../..');
const REDOCLY = join(REPO_ROOT, 'node_modules/.bin/redocly');
const LINT_TIMEOUT_MS = 60_000;

interface Operation {
  operationId?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  requestBody?: unknown;
  responses: Record<string, { $ref?: string; headers?: Record<string, unknown> }>;
}
type Document = {
  paths: Record<string, Record<string, Operation>>;
  tags?: { name: string; description?: string }[];
  components: { responses?: Record<string, { headers?: Record<string, unknown> }>; schemas?: Record<string, unknown> };
};

function operations(document: Document): Array<{ method: string; path: string; operation: Operation }> {
  return Object.entries(document.paths).flatMap(([path, item]) => Object.entries(item).map(([method, operation]) => ({ method, path, operation })));
}

/** The response as documented, following a `$ref` to the shared responses. */
function response(document: Document, operation: Operation, status: string) {
  const found = operation.responses[status];
  if (found?.$ref === undefined) return found;
  return document.components.responses?.[found.$ref.replace('#/components/responses/', '')];
}

describe('the OpenAPI document', () => {
  let database: TestDatabase;
  let t: TestApp;
  let document: Document;
  let workDir: string;

  before(async () => {
    const [sqlite] = await backends();
    database = await sqlite!.create();
    t = await createTestApp(database);
    const answer = await t.app.inject({ method: 'GET', url: OPENAPI_PATH });
    assert.equal(answer.statusCode, 200);
    document = answer.json();
    workDir = mkdtempSync(join(tmpdir(), 'gatehouse-openapi-'));
  });
  after(async () => {
    await t?.close();
    await database?.drop();
    if (workDir !== undefined) rmSync(workDir, { recursive: true, force: true });
  });

  it('passes redocly lint (recommended, with the exceptions in redocly.yaml): no error, no warning', async () => {
    const file = join(workDir, 'openapi.json');
    writeFileSync(file, JSON.stringify(document, null, 2));
    // Exit code 1 means problems were found: the JSON on stdout says which.
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [REDOCLY, 'lint', file, '--config', join(REPO_ROOT, 'redocly.yaml'), '--format', 'json', '--max-problems', '1000'], {
      cwd: workDir,
      timeout: LINT_TIMEOUT_MS,
      maxBuffer: 16 * 1024 * 1024,
      env: { PATH: process.env.PATH ?? '', HOME: workDir, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
    }).catch((error: { stdout?: string; stderr?: string; code?: unknown }) => {
      if (typeof error.stdout === 'string' && error.stdout.trim().startsWith('{')) return { stdout: error.stdout, stderr: error.stderr ?? '' };
      throw error;
    });
    let report: { totals: { errors: number; warnings: number }; problems: { ruleId: string; severity: string; message: string; location: { pointer?: string }[] }[] };
    try {
      report = JSON.parse(stdout);
    } catch {
      assert.fail(`redocly printed no JSON report:\n${stdout}\n${stderr}`);
    }
    const problems = report.problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} (${p.location[0]?.pointer ?? ''})`);
    assert.equal(report.totals.errors, 0, problems.join('\n'));
    assert.equal(report.totals.warnings, 0, `a warning must be fixed, or justified as an exception in redocly.yaml:\n${problems.join('\n')}`);
  });

  it('gives every operation a unique camelCase operationId and security from the route guard', () => {
    const ids = new Set<string>();
    for (const { method, path, operation } of operations(document)) {
      const where = `${method.toUpperCase()} ${path}`;
      assert.match(operation.operationId ?? '', /^[a-z]+(?:[A-Z0-9][a-z0-9]*)*$/, where);
      assert.ok(!ids.has(operation.operationId!), `${where}: operationId ${operation.operationId} twice`);
      ids.add(operation.operationId!);
      assert.ok(Array.isArray(operation.security), `${where} has security`);
      const guard = decide(path.replace(/\{([^}]+)\}/g, '$1'), null);
      // The guard's session requirement is always documented; a public path documents a session
      // only when its route says it acts on one (GET /api/auth/session, say).
      if (guard.action === 'deny') assert.deepEqual(operation.security, [{ bearer: [] }], where);
      // Required, not optional (`{}`: a route that reads the session when one is given).
      const signedIn = operation.security!.length > 0 && operation.security!.every((requirement) => Object.keys(requirement).length > 0);
      if (signedIn) assert.ok(operation.responses['401'], `${where}: 401`);
    }
    assert.deepEqual(document.paths['/api/auth']!.post!.security, []);
    assert.deepEqual(document.paths['/.well-known/jwks.json']!.get!.security, []);
    assert.deepEqual(document.paths['/api/health']!.get!.security, []);
    assert.deepEqual(document.paths['/api/auth/session']!.get!.security, [{ bearer: [] }]);
    assert.deepEqual(document.paths['/api/organizations']!.get!.security, [{ bearer: [] }]);
    assert.equal(document.paths['/api/auth/sessions/{id}']!.delete!.operationId, 'deleteAuthSessionsById');
  });

  it('documents security, 401 and 403 as each route declares its access', () => {
    const declared = new Map(t.app.routeAccess.map((route) => [`${route.method} ${route.url}`, route.access]));
    for (const { method, path, operation } of operations(document)) {
      const where = `${method.toUpperCase()} ${path}`;
      const access = declared.get(`${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`);
      assert.ok(access !== undefined, `${where}: a route that declares its access`);
      const needsSession = access.who !== 'anyone';
      const expected = needsSession ? [{ bearer: [] }] : access.readsSession ? [{}, { bearer: [] }] : [];
      assert.deepEqual(operation.security, expected, `${where}: ${access.who}${access.readsSession ? ', reads the session' : ''}`);
      if (needsSession) {
        assert.ok(operation.responses['401'], `${where}: 401`);
        assert.ok(operation.responses['403'], `${where}: 403`);
      } else {
        // A 401 of its own (a wrong password, say) is the route's; never the missing session's.
        assert.notEqual(operation.responses['401']?.$ref, '#/components/responses/Unauthenticated', `${where}: no session needed`);
      }
    }
    // Documented as public until the declarations said otherwise.
    assert.deepEqual(document.paths['/api/auth/signout']!.post!.security, [{}, { bearer: [] }]);
    assert.deepEqual(document.paths['/api/auth/link/{provider}']!.post!.security, [{ bearer: [] }]);
  });

  it('documents 503 with Retry-After everywhere, 429 with Retry-After on every rate-limited route, and the body statuses', () => {
    const limited = [
      'POST /api/auth',
      'POST /api/auth/signin',
      'POST /api/auth/signup',
      'POST /api/auth/refresh',
      'POST /api/auth/forgot-password',
      'POST /api/auth/reset-password/validate',
      'POST /api/auth/reset-password',
      'POST /api/auth/verify-email',
      'POST /api/auth/verify-email/resend',
      'POST /api/auth/signin/{provider}',
      'POST /api/auth/link/{provider}',
    ];
    for (const { method, path, operation } of operations(document)) {
      const where = `${method.toUpperCase()} ${path}`;
      for (const status of ['503', ...(operation.responses['429'] ? ['429'] : [])]) {
        assert.ok(response(document, operation, status)?.headers?.['Retry-After'], `${where}: ${status} with Retry-After`);
      }
      assert.ok(operation.responses['500'], `${where}: 500`);
      assert.ok(Object.keys(operation.responses).some((s) => s.startsWith('4')), `${where}: a 4XX`);
      if (operation.requestBody !== undefined) {
        for (const status of ['400', '413', '415', '422']) assert.ok(operation.responses[status], `${where}: ${status}`);
      }
      if (limited.includes(where)) assert.ok(operation.responses['429'], `${where}: 429`);
    }
  });

  it('names every tag in use, each with a description, and keeps only the schemas it uses', () => {
    const used = new Set(operations(document).flatMap(({ operation }) => operation.tags ?? []));
    const described = collectOpenApiTags(MODULES);
    for (const tag of used) assert.ok(described.get(tag), `tag "${tag}": describe it in the openApiTags of the module that introduces it`);
    assert.deepEqual(document.tags?.map((tag) => tag.name), [...used].sort());
    const schemas = Object.keys(document.components.schemas ?? {});
    assert.ok(schemas.includes('AuthRequest') && schemas.includes('AuthResponse') && schemas.includes('ErrorResponse'), schemas.join(' '));
    assert.ok(!schemas.includes('AuthRequestInput') && !schemas.includes('AuthResponseInput'), 'the variants no route uses are gone');
  });

  it('documents the 429 a limited route answers, with its Retry-After', async () => {
    const limited = await createTestApp(database, { env: { RATE_LIMIT_REFRESH_PER_IP: '1/1m' } });
    try {
      const send = () => limited.app.inject({ method: 'POST', url: '/api/auth/refresh', payload: { refreshToken: 'not-a-real-token-0123456789' } });
      await send();
      const refused = await send();
      assert.equal(refused.statusCode, 429);
      assert.equal(refused.json().error, 'RATE_LIMITED');
      assert.match(String(refused.headers['retry-after']), /^\d+$/);
      assert.ok(document.paths['/api/auth/refresh']!.post!.responses['429']);
    } finally {
      await limited.close();
    }
  });

  it('derives operationIds from the method and the path', () => {
    assert.equal(operationIdFor('get', '/api/auth/session'), 'getAuthSession');
    assert.equal(operationIdFor('post', '/api/auth'), 'postAuth');
    assert.equal(operationIdFor('get', '/.well-known/jwks.json'), 'getWellKnownJwksJson');
    assert.equal(operationIdFor('post', '/api/auth/signin/{provider}'), 'postAuthSigninByProvider');
    assert.equal(operationIdFor('delete', '/api/admin/users/{id}/sessions/{sessionId}'), 'deleteAdminUsersByIdSessionsBySessionId');
    assert.equal(operationIdFor('post', '/api/auth/forgot-password'), 'postAuthForgotPassword');
  });
});

describe('GET /api/docs', () => {
  let database: TestDatabase;
  let t: TestApp;
  before(async () => {
    database = await createSqliteDatabase();
    t = await createTestApp(database);
  });
  after(async () => {
    await t?.close();
    await database?.drop();
  });

  it('is Swagger UI from our own assets, under a nonce CSP without unsafe-inline or unsafe-eval', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/api/docs' });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    assert.equal(page.headers['cache-control'], 'no-store');
    const csp = String(page.headers['content-security-policy']);
    const nonce = /script-src 'nonce-([A-Za-z0-9+/=]+)'/.exec(csp)?.[1];
    assert.ok(nonce, csp);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:\/\/(?!localhost:3000)/);
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.notEqual(nonce, /'nonce-([^']+)'/.exec(String((await t.app.inject({ method: 'GET', url: '/api/docs' })).headers['content-security-policy']))?.[1], 'a fresh nonce each time');
    const html = page.body;
    assert.match(html, new RegExp(`data-url="${OPENAPI_PATH.replace(/\./g, '\\.')}"`));
    const scripts = [...html.matchAll(/<script([^>]*)>/g)].map((match) => match[1]!);
    assert.equal(scripts.length, 2);
    for (const script of scripts) {
      assert.match(script, new RegExp(`nonce="${nonce.replace(/[+/=]/g, '\\$&')}"`));
      assert.match(script, /src="\/api\/docs\/assets\/[a-z-]+\.js\?v=[\w-]+"/);
    }
    assert.doesNotMatch(html, /(?:src|href)="(?:https?:)?\/\//, 'nothing from another origin');
  });

  it('serves the assets with long caching, gzip and ETag revalidation; nothing else', async () => {
    const html = (await t.app.inject({ method: 'GET', url: '/api/docs' })).body;
    const bundle = /src="(\/api\/docs\/assets\/swagger-ui-bundle\.js\?v=[\w-]+)"/.exec(html)![1]!;
    const plain = await t.app.inject({ method: 'GET', url: bundle });
    assert.equal(plain.statusCode, 200);
    assert.match(String(plain.headers['content-type']), /^text\/javascript/);
    assert.match(String(plain.headers['cache-control']), /public, max-age=31536000, immutable/);
    assert.ok(plain.body.includes('SwaggerUIBundle'));
    assert.ok(!plain.body.includes('sourceMappingURL='), 'no link to a source map that is not served');
    const zipped = await t.app.inject({ method: 'GET', url: bundle, headers: { 'accept-encoding': 'gzip, br' } });
    assert.equal(zipped.headers['content-encoding'], 'gzip');
    assert.equal(gunzipSync(zipped.rawPayload).toString('utf8'), plain.body);
    const again = await t.app.inject({ method: 'GET', url: bundle, headers: { 'if-none-match': String(plain.headers.etag) } });
    assert.equal(again.statusCode, 304);
    const css = await t.app.inject({ method: 'GET', url: '/api/docs/assets/swagger-ui.css' });
    assert.match(String(css.headers['content-type']), /^text\/css/);
    for (const url of ['/api/docs/assets/swagger-ui-bundle.js.map', '/api/docs/assets/package.json', '/api/docs/assets/constructor']) {
      const refused = await t.app.inject({ method: 'GET', url });
      assert.equal(refused.statusCode, 404, url);
      assert.equal(refused.json().error, 'NOT_FOUND');
    }
    // A path that climbs out reads, to the route guard, as /api/package.json: no session, no entry.
    assert.equal((await t.app.inject({ method: 'GET', url: '/api/docs/assets/..%2f..%2fpackage.json' })).statusCode, 401);
  });
});

const chromium = chromiumAvailability();

describe('the API reference in Chromium', { skip: chromium.ok ? false : chromium.reason, timeout: 120_000 }, () => {
  let browser: Browser | undefined;
  let server: ServedTestApp | undefined;
  let baseURL = '';

  before(async () => {
    browser = await launchBrowser();
    server = await serveTestApp();
    baseURL = server.baseURL;
  });
  after(async () => {
    await closeBrowser(browser);
    await server?.close();
  });

  it('renders the operations, with no CSP violation and no request leaving the origin', async (t) => {
    assert.ok(browser);
    await withPage(t, browser, { baseURL }, async (page) => {
      const problems = watchConsole(page);
      const requests: string[] = [];
      page.on('request', (request) => requests.push(request.url()));
      // Anything not for our origin is refused, so a request that tried to leave would also fail the page.
      await page.context().route('**/*', (route) => (new URL(route.request().url()).origin === baseURL ? route.continue() : route.abort()));
      // Run by the browser before the page's own scripts (not subject to its CSP): records every violation.
      await page.addInitScript({
        content: `globalThis.__violations = [];
          document.addEventListener('securitypolicyviolation', (event) => globalThis.__violations.push(event.violatedDirective + ' ' + event.blockedURI));`,
      });

      // Swagger UI renders only the operations near the viewport (some 200 in all): a deep link
      // scrolls to one operation and opens it, as a reader following a link from the docs would.
      await page.goto('/api/docs#/auth/postAuth');
      const operation = page.locator('#operations-auth-postAuth');
      await operation.getByText('Sign in with e-mail and password; returns a JWT').waitFor({ timeout: 45_000 });
      if (!(await operation.evaluate((element) => element.classList.contains('is-open')))) await operation.getByRole('button').first().click();
      // Its responses render from the document (429 with Retry-After).
      await operation.getByText('Retry-After').first().waitFor();
      t.diagnostic(`screenshot: ${await saveScreenshot(page, 'api-docs')}`);

      const violations = await page.evaluate(() => (globalThis as unknown as { __violations: string[] }).__violations);
      assert.deepEqual(violations, [], 'no CSP violation');
      assert.deepEqual(problems, [], 'no console error or warning, no failed request');
      const foreign = requests.filter((url) => !url.startsWith('data:') && new URL(url).origin !== baseURL);
      assert.deepEqual(foreign, [], 'every request stays on the origin');
      assert.ok(requests.some((url) => url.startsWith(`${baseURL}${OPENAPI_PATH}`)), 'the page loaded the document');
    });
  });
});

describe('the OpenAPI tags', () => {
  it('are described by the modules that introduce them, each by one', () => {
    assert.match(collectOpenApiTags(MODULES).get('admin') ?? '', /^Administration/);
    const tag = { name: 'twice', description: 'Twice.' };
    assert.throws(() => collectOpenApiTags([defineModule({ name: 'one', openApiTags: [tag] }), defineModule({ name: 'two', openApiTags: [tag] })]), /"twice" is declared by both "one" and "two"/);
  });
});
