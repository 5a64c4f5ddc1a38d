import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import Fastify from 'fastify';
import pino from 'pino';
import { createLogger, lazyRequestLogger, loggerOptions, maskSecretsInUrl, redactSecrets, RequestLogController } from './logging.ts';

/** Secrets at every depth and in every spelling a careless log line might hold them. */
function nestedSecrets() {
  const error = Object.assign(new Error('upstream refused'), { code: 'EUPSTREAM', config: { headers: { Authorization: 'Bearer error-header-secret' } } });
  return {
    secrets: [
      'body-password', 'body-new-password', 'body-current-password', 'capital-authorization', 'set-cookie-secret', 'csrf-header-secret',
      'nested-authorization', 'nested-cookie', 'credentials-token', 'credentials-refresh', 'credentials-access', 'credentials-csrf',
      'client-secret', 'plain-secret', 'id-token-secret', 'access-token-secret', 'refresh-token-secret', 'pkce-verifier-secret',
      'deep-password', 'error-header-secret', 'smtp-pass-secret',
    ],
    shapes: [
      { req: { body: { email: 'ada@example.test', password: 'body-password', newPassword: 'body-new-password', currentPassword: 'body-current-password' } } },
      { headers: { Authorization: 'Bearer capital-authorization', 'Set-Cookie': ['sid=set-cookie-secret'], 'X-CSRF-Token': 'csrf-header-secret', 'content-type': 'application/json' } },
      { request: { headers: { authorization: 'Bearer nested-authorization', cookie: 'sid=nested-cookie' } } },
      { user: { id: 'user-42', credentials: { token: 'credentials-token', refreshToken: 'credentials-refresh', accessToken: 'credentials-access', csrfToken: 'credentials-csrf' } } },
      { provider: { id: 'oidc', clientSecret: 'client-secret', secret: 'plain-secret', tokens: [{ id_token: 'id-token-secret', access_token: 'access-token-secret', REFRESH_TOKEN: 'refresh-token-secret' }], pkce: { code_verifier: 'pkce-verifier-secret' } } },
      { a: { b: { c: { d: { e: { f: { g: { h: { i: { j: { password: 'deep-password' } } } } } } } } } } },
      { err: error },
      { mail: { auth: { user: 'relay', pass: 'smtp-pass-secret' } } },
    ],
  };
}

describe('logging', () => {
  it('masks secret query parameters in logged URLs', () => {
    assert.equal(maskSecretsInUrl('/auth/reset-password?token=abc123&x=1'), '/auth/reset-password?token=[REDACTED]&x=1');
    assert.equal(maskSecretsInUrl('/cb?code=c0de&state=s7'), '/cb?code=[REDACTED]&state=[REDACTED]');
    assert.equal(maskSecretsInUrl('/plain?page=2'), '/plain?page=2');
    // Regression: encoded names slipped past a match on the literal text.
    assert.equal(maskSecretsInUrl('/x?%74oken=abc&access%5Ftoken=def'), '/x?%74oken=[REDACTED]&access%5Ftoken=[REDACTED]');
    assert.equal(maskSecretsInUrl('/x?token=a%26b=c&n=1'), '/x?token=[REDACTED]&n=1');
    assert.equal(maskSecretsInUrl('/x?%E0%A4%A=1'), '/x?%E0%A4%A=[REDACTED]');
    // A URL in a query value (a sign-in's way back to an invitation link) has its own secrets masked.
    const nested = maskSecretsInUrl(`/auth/signin?callbackUrl=${encodeURIComponent('/organizations/invitations/accept?token=inv-secret&x=1')}`);
    assert.ok(!nested.includes('inv-secret'), nested);
    assert.equal(decodeURIComponent(nested.split('callbackUrl=')[1]!), '/organizations/invitations/accept?token=[REDACTED]&x=1');
    assert.equal(maskSecretsInUrl('/auth/signin?callbackUrl=%2Fdashboard%3Ftab%3D2'), '/auth/signin?callbackUrl=%2Fdashboard%3Ftab%3D2', 'untouched without a secret');
  });

  describe('redactSecrets', () => {
    it('censors secret-named keys at any depth and in any letter case, without touching its argument', () => {
      const { shapes, secrets } = nestedSecrets();
      const before = JSON.stringify(shapes);
      const redacted = JSON.stringify(redactSecrets(shapes));
      assert.equal(JSON.stringify(shapes), before, 'the caller\'s objects are unchanged');
      for (const secret of secrets) assert.ok(before.includes(secret), secret);
      for (const secret of secrets) assert.ok(!redacted.includes(secret), `${secret} survived`);
      for (const kept of ['ada@example.test', 'user-42', 'application/json', 'relay', 'EUPSTREAM']) assert.ok(redacted.includes(kept), `${kept} was lost`);
    });

    it('returns what holds no secret as it is, and stops at cycles', () => {
      const clean = { user: { id: 'u1', roles: ['ADMIN'] }, when: new Date(0) };
      assert.equal(redactSecrets(clean), clean);
      const cyclic: Record<string, unknown> = { name: 'loop', token: 'cyclic-token' };
      cyclic.self = cyclic;
      const redacted = redactSecrets(cyclic) as Record<string, unknown>;
      assert.equal(redacted.token, '[REDACTED]');
      assert.equal(redacted.self, '[Circular]');
      assert.equal(cyclic.token, 'cyclic-token');
    });
  });

  it('a process logger writes none of the nested secrets, and still logs the error', () => {
    const lines: string[] = [];
    const logger = createLogger({ logLevel: 'info' }, { write: (line: string) => void lines.push(line) });
    const { shapes, secrets } = nestedSecrets();
    for (const shape of shapes) logger.error(shape, 'careless');
    assert.equal(lines.length, shapes.length);
    const log = lines.join('');
    for (const secret of secrets) assert.ok(!log.includes(secret), `${secret} leaked into the log`);
    const errorLine = JSON.parse(lines.find((line) => line.includes('upstream refused'))!) as { err: { type: string; code: string; stack: string } };
    assert.equal(errorLine.err.type, 'Error');
    assert.equal(errorLine.err.code, 'EUPSTREAM');
    assert.match(errorLine.err.stack, /upstream refused/);
  });

  describe('lazyRequestLogger', () => {
    function parentAt(level: string) {
      const lines: Array<Record<string, unknown>> = [];
      const parent = pino({ ...(loggerOptions({ logLevel: level as 'warn' }) as object) }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
      return { parent, lines };
    }

    it('writes nothing below the level, and lines at or above it with the bindings, censored like any line', () => {
      const { parent, lines } = parentAt('warn');
      const log = lazyRequestLogger(parent, { reqId: 'req-1' }, {});
      log.info({ a: 1 }, 'quiet');
      log.debug('quieter');
      assert.equal(lines.length, 0);
      log.warn({ password: 'lazy-secret', user: 'u-1' }, 'loud');
      log.error('louder');
      assert.deepEqual(lines.map((line) => [line.msg, line.reqId, line.level]), [['loud', 'req-1', 40], ['louder', 'req-1', 50]]);
      assert.ok(!JSON.stringify(lines).includes('lazy-secret'));
      assert.equal(lines[0]!.user, 'u-1');
    });

    it("follows a route's own level, and a level set on the request logger", () => {
      const { parent, lines } = parentAt('warn');
      const route = lazyRequestLogger(parent, { reqId: 'req-2' }, { level: 'debug' });
      assert.equal(route.level, 'debug');
      route.debug('route debug');
      route.trace('too fine');
      const request = lazyRequestLogger(parent, { reqId: 'req-3' }, {});
      request.level = 'info';
      request.info('now heard');
      assert.deepEqual(lines.map((line) => [line.msg, line.reqId]), [['route debug', 'req-2'], ['now heard', 'req-3']]);
      assert.equal((request.child({ step: 'x' }) as pino.Logger).bindings().reqId, 'req-3');
    });
  });

  describe('the request line', () => {
    const lines: Array<Record<string, unknown>> = [];
    const raw: string[] = [];
    const app = Fastify({
      childLoggerFactory: lazyRequestLogger,
      logController: new RequestLogController(),
      logger: {
        ...(loggerOptions({ logLevel: 'info' }) as object),
        stream: { write: (line: string) => void (raw.push(line), lines.push(JSON.parse(line) as Record<string, unknown>)) },
      },
    });
    before(async () => {
      // Logs nothing itself: its `request completed` line takes the direct path.
      app.get('/quiet/:id', async () => ({ ok: true }));
      // Logs first: the request's child logger exists, and pino writes the line.
      app.get('/loud/:id', async (request) => {
        request.log.info('handler line');
        return { ok: true };
      });
      app.get('/debug-route', { logLevel: 'debug' }, async () => ({ ok: true }));
      await app.ready();
    });
    after(() => app.close());

    const completed = () => lines.filter((line) => line.msg === 'request completed');

    it('is the line pino writes: same keys in the same order, same values', async () => {
      lines.length = 0;
      // A request logger is made (pino's child) only for the request that logs a line of its own.
      const parent = app.log as unknown as { child: (...args: unknown[]) => unknown };
      const makeChild = parent.child;
      let children = 0;
      parent.child = function (this: unknown, ...args: unknown[]) {
        children += 1;
        return makeChild.apply(this, args);
      };
      try {
        await app.inject({ method: 'GET', url: '/quiet/7?token=quiet-secret&page=2', remoteAddress: '10.0.0.7' });
        assert.equal(children, 0, 'the quiet request\'s line was written directly');
        await app.inject({ method: 'GET', url: '/loud/7?token=loud-secret&page=2', remoteAddress: '10.0.0.7' });
        assert.equal(children, 1, 'the loud request\'s line went through pino');
      } finally {
        parent.child = makeChild;
      }
      const [direct, viaPino] = completed();
      assert.ok(direct && viaPino, 'both requests logged their line');
      assert.deepEqual(Object.keys(direct), Object.keys(viaPino));
      const comparable = (line: Record<string, unknown>) => ({ ...line, time: 0, reqId: 'id', responseTime: 0, req: { ...(line.req as object), url: String((line.req as { url: string }).url).replace(/\/(quiet|loud)\//, '/x/') }, route: String(line.route).replace(/\/(quiet|loud)\//, '/x/') });
      assert.deepEqual(comparable(direct), comparable(viaPino));
      assert.equal((direct.req as { url: string }).url, '/quiet/7?token=[REDACTED]&page=2', 'secrets in the query are masked on both paths');
      assert.equal(direct.route, '/quiet/:id');
      assert.equal(direct.statusCode, 200);
      assert.equal(typeof direct.reqId, 'string');
      assert.equal(typeof direct.time, 'number');
      assert.ok(!raw.join('').includes('quiet-secret') && !raw.join('').includes('loud-secret'));
    });

    it('escapes what the client chose, so a path cannot forge keys or lines', async () => {
      lines.length = 0;
      raw.length = 0;
      await app.inject({ method: 'GET', url: '/quiet/%22%2C%22level%22%3A60?x=%22},{%22msg%22:%22forged' });
      assert.equal(raw.length, 1, 'one line');
      const [line] = completed();
      assert.equal(line?.level, 30);
      assert.equal(line?.msg, 'request completed');
    });

    it('follows the level: nothing below info, and a route with its own level still gets its line', async () => {
      lines.length = 0;
      app.log.level = 'warn';
      try {
        await app.inject({ method: 'GET', url: '/quiet/1' });
        assert.equal(completed().length, 0);
      } finally {
        app.log.level = 'info';
      }
      await app.inject({ method: 'GET', url: '/debug-route' });
      assert.equal(completed().length, 1);
    });
  });

  describe('a server using these options', () => {
    const lines: string[] = [];
    const app = Fastify({
      childLoggerFactory: lazyRequestLogger,
      logger: {
        ...(loggerOptions({ logLevel: 'info' }) as object),
        stream: new Writable({
          write(chunk, _encoding, done) {
            lines.push(String(chunk));
            done();
          },
        }),
      },
    });
    before(async () => {
      app.post('/echo', async (request) => {
        // A handler that carelessly logs the body must still not leak the password.
        request.log.info({ body: request.body, password: 'hunter2-top-secret' }, 'careless');
        return { ok: true };
      });
      app.post('/nested', async (request) => {
        for (const shape of nestedSecrets().shapes) request.log.info({ ...shape, headers: shape.headers ?? request.headers }, 'nested');
        return { ok: true };
      });
      await app.ready();
    });
    after(() => app.close());

    it('never writes passwords, tokens, cookies or Authorization', async () => {
      await app.inject({
        method: 'POST',
        url: '/echo?token=url-secret-token',
        headers: { authorization: 'Bearer bearer-secret-token', cookie: 'gatehouse.session=cookie-secret', 'content-type': 'application/json' },
        payload: { password: 'body-secret-password', refreshToken: 'refresh-secret' },
      });
      const log = lines.join('');
      assert.ok(log.includes('careless'), 'the line was written');
      assert.match(log, /"reqId":"req-[^"]+".*"msg":"careless"/, 'with the request id');
      for (const secret of ['hunter2-top-secret', 'body-secret-password', 'refresh-secret', 'url-secret-token', 'bearer-secret-token', 'cookie-secret']) {
        assert.ok(!log.includes(secret), `${secret} leaked into the log`);
      }
    });

    it('never writes secrets nested at any depth, in request headers or in errors', async () => {
      lines.length = 0;
      await app.inject({
        method: 'POST',
        url: '/nested',
        headers: { Authorization: 'Bearer request-bearer-secret', cookie: 'gatehouse.session=request-cookie-secret', 'content-type': 'application/json' },
        payload: { user: { password: 'payload-password' } },
      });
      const log = lines.join('');
      assert.equal(lines.filter((line) => line.includes('"nested"')).length, nestedSecrets().shapes.length);
      for (const secret of [...nestedSecrets().secrets, 'request-bearer-secret', 'request-cookie-secret']) {
        assert.ok(!log.includes(secret), `${secret} leaked into the log`);
      }
      assert.ok(log.includes('user-42'), 'what is not secret is still logged');
    });
  });
});
