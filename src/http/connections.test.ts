import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type AddressInfo } from 'node:net';
import { backends, type TestDatabase } from '../../test/helpers/databases.ts';
import { createTestApp, type TestApp } from '../../test/helpers/app.ts';
import { staticSecurityHeaders } from './security-headers.ts';
import { connectionServerOptions } from './connections.ts';

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Sends `request` as is over a fresh TCP connection and reads until the server closes it. */
function rawExchange(port: number, request: string): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no close within 5 s; received: ${received}`));
    }, 5_000);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('error', () => {}); // the server may reset after answering
    socket.on('close', () => {
      clearTimeout(timer);
      const split = received.indexOf('\r\n\r\n');
      if (split === -1) return reject(new Error(`no HTTP response: ${JSON.stringify(received)}`));
      const [statusLine = '', ...headerLines] = received.slice(0, split).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of headerLines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: received.slice(split + 4) });
    });
    socket.write(request);
  });
}

describe('connections', () => {
  it('checks header and request deadlines often enough to cut a slow client near its deadline', () => {
    const options = connectionServerOptions({ headersTimeoutMs: 10_000, requestTimeoutMs: 20_000, keepAliveTimeoutMs: 72_000, maxConnections: 4_096 });
    assert.equal(options.requestTimeout, 20_000);
    assert.equal(options.http.requestTimeout, 20_000);
    assert.equal(options.http.headersTimeout, 10_000);
    assert.equal(options.keepAliveTimeout, 72_000);
    assert.equal(options.http.connectionsCheckingInterval, 1_000, 'not Node\'s 30 s');
    assert.equal(connectionServerOptions({ headersTimeoutMs: 1_000, requestTimeoutMs: 1_500, keepAliveTimeoutMs: 1_000, maxConnections: 1 }).http.connectionsCheckingInterval, 100);
  });
});

for (const backend of (await backends()).filter((b) => b.name === 'sqlite')) {
  describe(`errors from Node's HTTP parser (over raw TCP) on ${backend.name}`, () => {
    let database: TestDatabase;
    let t: TestApp;
    let port: number;
    let appHeaders: Record<string, string>;

    before(async () => {
      database = await backend.create();
      // https: the headers include HSTS, the fullest set the app sends.
      t = await createTestApp(database, { env: { AUTH_URL: 'https://auth.example.test' } });
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      port = (t.app.server.address() as AddressInfo).port;
      const normal = await t.app.inject({ method: 'GET', url: '/api/health' });
      appHeaders = Object.fromEntries(Object.keys(staticSecurityHeaders(t.config)).map((name) => [name, String(normal.headers[name])]));
    });
    after(async () => {
      await t?.close();
      await database?.drop();
    });

    function assertLikeTheApp(response: RawResponse, status: number, error: string) {
      assert.equal(response.status, status);
      assert.ok('strict-transport-security' in appHeaders && 'content-security-policy' in appHeaders && 'x-frame-options' in appHeaders);
      for (const [name, value] of Object.entries(appHeaders)) assert.equal(response.headers[name], value, `${name} as on every other answer`);
      assert.match(response.headers['x-request-id'] ?? '', /^[0-9a-f-]{36}$/);
      assert.equal(response.headers['content-type'], 'application/json; charset=utf-8');
      assert.equal(Number(response.headers['content-length']), Buffer.byteLength(response.body));
      const body = JSON.parse(response.body) as Record<string, unknown>;
      assert.deepEqual(Object.keys(body).sort(), ['error', 'message'], 'our body shape, nothing more (no stack, no statusCode)');
      assert.equal(body.error, error);
      assert.equal(typeof body.message, 'string');
    }

    it('errors from Node\'s HTTP parser carry the security headers and {error, message}: 400 BAD_REQUEST for a malformed request', async () => {
      assertLikeTheApp(await rawExchange(port, 'GET /api/health HTTP/1.1\r\nHost: localhost\r\nBroken Header Line\r\n\r\n'), 400, 'BAD_REQUEST');
      assertLikeTheApp(await rawExchange(port, 'NOT A REQUEST\r\n\r\n'), 400, 'BAD_REQUEST');
    });

    it('errors from Node\'s HTTP parser carry the security headers and {error, message}: 431 HEADERS_TOO_LARGE for headers over the limit', async () => {
      const response = await rawExchange(port, `GET /api/health HTTP/1.1\r\nHost: localhost\r\nX-Filler: ${'a'.repeat(20 * 1024)}\r\n\r\n`);
      assertLikeTheApp(response, 431, 'HEADERS_TOO_LARGE');
    });

    it('still answers a well-formed request on the same server', async () => {
      const response = await rawExchange(port, 'GET /api/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
      assert.equal(response.status, 200);
    });
  });
}
