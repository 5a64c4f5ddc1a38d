/**
 * The route guard over real HTTP, with raw request lines (so `//admin`, `/admin;x` and `/%61dmin`
 * reach the server exactly as written): every rule and every bypass variant, for every method,
 * with no session, a user and an ADMIN.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, createUser, type TestApp } from '../../test/helpers/app.ts';

const PASSWORD = 'correct horse battery staple';
// Beyond the usual seven: methods Node's parser accepts that a rule keyed on a method list could
// miss (TRACE, QUERY and WebDAV's PROPFIND, MKCOL, SEARCH). The guard must not care which it is.
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE', 'PROPFIND', 'MKCOL', 'SEARCH', 'QUERY'] as const;

interface RawResponse {
  status: number;
  headers: Map<string, string>;
  body: string;
}

/** One request on its own connection, sent byte for byte as given. */
function rawRequest(port: number, method: string, path: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    const chunks: Buffer[] = [];
    socket.setTimeout(5_000, () => socket.destroy(new Error(`timeout: ${method} ${path}`)));
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const [head = '', body = ''] = text.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const entries = lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()] as [string, string]);
      resolve({ status: Number(statusLine.split(' ')[1]), headers: new Map(entries), body });
    });
    const lines = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close', 'Content-Length: 0'];
    for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
    // write, not end: a half-closed socket may be dropped before a slow answer is written
    socket.write(`${lines.join("\r\n")}\r\n\r\n`);
  });
}

const ADMIN_PAGES = ['/admin', '/Admin', '/ADMIN', '/%61dmin', '/admin/.', '//admin', '/./admin', '/dashboard/../admin', '/admin;x', '/admin/users'];
const ADMIN_APIS = ['/api/admin/users', '/api/Admin/users', '/API/ADMIN/users', '/api/%61dmin/users', '/api/admin/./users', '//api//admin/users', '/api/./admin/users', '/api/auth/../admin/users', '/api/admin;x/users', '/api/admin/users/.'];
const USER_PAGES = ['/dashboard', '/dashboard/x', '/Dashboard'];
const USER_APIS = ['/api/things', '/api', '/api/auth/../things'];
const PUBLIC = ['/', '/auth/signin', '/api/health', '/api/auth/csrf', '/api/docs/openapi.json', '/.well-known/jwks.json'];

for (const backend of await backends()) {
  describe(`route guard over HTTP on ${backend.name}`, { skip: backend.skip }, () => {
    let database: TestDatabase;
    let t: TestApp;
    let port: number;
    let userToken: string;
    let adminToken: string;

    before(async () => {
      database = await backend.create();
      t = await createTestApp(database);
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      port = (t.app.server.address() as AddressInfo).port;
      await createUser(t.services, { email: 'user@example.com', password: PASSWORD });
      await createUser(t.services, { email: 'admin@example.com', password: PASSWORD, roles: ['ADMIN'] });
      const signIn = async (email: string) =>
        (await t.app.inject({ method: 'POST', url: '/api/auth', payload: { email, password: PASSWORD } })).json().token as string;
      userToken = await signIn('user@example.com');
      adminToken = await signIn('admin@example.com');
    });
    after(async () => {
      await t?.close();
      await database?.drop();
    });

    const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
    const isSignInRedirect = (r: RawResponse) => r.status === 303 && (r.headers.get('location') ?? '').startsWith('/auth/signin');
    const isDenied = (r: RawResponse) => r.status === 401 || r.status === 403 || isSignInRedirect(r);

    for (const method of METHODS) {
      it(`${method}: without a session, protected API paths are 401 and pages redirect to sign-in`, async () => {
        for (const path of [...ADMIN_APIS, ...USER_APIS]) {
          const response = await rawRequest(port, method, path);
          assert.equal(response.status, 401, `${method} ${path}`);
          if (method !== 'HEAD') assert.equal(JSON.parse(response.body).error, 'UNAUTHENTICATED', `${method} ${path}`);
        }
        for (const path of [...ADMIN_PAGES, ...USER_PAGES]) {
          const response = await rawRequest(port, method, path);
          assert.ok(isSignInRedirect(response), `${method} ${path} -> ${response.status} ${response.headers.get('location')}`);
          const location = response.headers.get('location')!;
          if (method === 'GET' || method === 'HEAD') assert.ok(location.includes('callbackUrl='), `${method} ${path}: comes back after sign-in`);
        }
      });

      it(`${method}: a user without ADMIN is refused every spelling of the admin paths`, async () => {
        for (const path of ADMIN_APIS) {
          const response = await rawRequest(port, method, path, bearer(userToken));
          assert.equal(response.status, 403, `${method} ${path}`);
          if (method !== 'HEAD') assert.equal(JSON.parse(response.body).error, 'FORBIDDEN');
        }
        for (const path of ADMIN_PAGES) {
          const response = await rawRequest(port, method, path, bearer(userToken));
          assert.equal(response.status, 403, `${method} ${path}`);
          assert.match(response.headers.get('content-type') ?? '', /text\/html/);
        }
      });

      it(`${method}: a user passes the guard on the other protected paths`, async () => {
        for (const path of [...USER_PAGES, ...USER_APIS]) {
          const response = await rawRequest(port, method, path, bearer(userToken));
          assert.ok(!isDenied(response), `${method} ${path} -> ${response.status}`);
        }
      });

      it(`${method}: an ADMIN passes the guard everywhere`, async () => {
        for (const path of [...ADMIN_PAGES, ...ADMIN_APIS, ...USER_PAGES, ...USER_APIS]) {
          const response = await rawRequest(port, method, path, bearer(adminToken));
          assert.ok(!isDenied(response), `${method} ${path} -> ${response.status}`);
        }
      });

      it(`${method}: public paths need no session`, async () => {
        for (const path of PUBLIC) {
          const response = await rawRequest(port, method, path);
          assert.ok(!isDenied(response) || path.startsWith('/api/auth') && response.status === 401, `${method} ${path} -> ${response.status}`);
        }
      });
    }

    it('reaches admin content for an ADMIN and never for a user, however the path is spelled', async () => {
      for (const path of ['/api/admin/users', '/api/%61dmin/users']) {
        const asAdmin = await rawRequest(port, 'GET', path, bearer(adminToken));
        assert.equal(asAdmin.status, 200, `${path} for an ADMIN`);
        assert.ok(asAdmin.body.includes('admin@example.com'), `${path}: the user list`);
        const asUser = await rawRequest(port, 'GET', path, bearer(userToken));
        assert.equal(asUser.status, 403, `${path} for a user`);
        assert.ok(!asUser.body.includes('admin@example.com'), `${path} for a user`);
      }
    });

    it('refuses a malformed path with 400, not a guess', async () => {
      const response = await rawRequest(port, 'GET', '/api/ad%00min/users', bearer(userToken));
      assert.equal(response.status, 400);
    });

    it('applies to the session cookie as well as Bearer tokens', async () => {
      const signIn = await t.app.inject({ method: 'POST', url: '/api/auth/signin', payload: { email: 'user@example.com', password: PASSWORD } });
      const cookie = signIn.cookies.map((c) => `${c.name}=${c.value}`).join('; ');
      assert.equal((await rawRequest(port, 'GET', '/Admin', { Cookie: cookie })).status, 403);
      assert.equal((await rawRequest(port, 'GET', '/dashboard', { Cookie: cookie })).status, 200);
    });
  });
}
