import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { loggerOptions, maskSecretsInUrl } from './logging.ts';

describe('logging', () => {
  it('masks secret query parameters in logged URLs', () => {
    assert.equal(maskSecretsInUrl('/auth/reset-password?token=abc123&x=1'), '/auth/reset-password?token=[REDACTED]&x=1');
    assert.equal(maskSecretsInUrl('/cb?code=c0de&state=s7'), '/cb?code=[REDACTED]&state=[REDACTED]');
    assert.equal(maskSecretsInUrl('/plain?page=2'), '/plain?page=2');
    // Regression: encoded names slipped past a match on the literal text.
    assert.equal(maskSecretsInUrl('/x?%74oken=abc&access%5Ftoken=def'), '/x?%74oken=[REDACTED]&access%5Ftoken=[REDACTED]');
    assert.equal(maskSecretsInUrl('/x?token=a%26b=c&n=1'), '/x?token=[REDACTED]&n=1');
    assert.equal(maskSecretsInUrl('/x?%E0%A4%A=1'), '/x?%E0%A4%A=[REDACTED]');
  });

  describe('a server using these options', () => {
    const lines: string[] = [];
    const app = Fastify({
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
      for (const secret of ['hunter2-top-secret', 'body-secret-password', 'refresh-secret', 'url-secret-token', 'bearer-secret-token', 'cookie-secret']) {
        assert.ok(!log.includes(secret), `${secret} leaked into the log`);
      }
    });
  });
});
