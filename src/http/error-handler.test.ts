import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { registerErrorHandling } from './error-handler.ts';
import { lazyRequestLogger, loggerOptions } from './logging.ts';
import { createClientErrorHandler } from './connections.ts';

interface LogLine {
  level: number;
  msg: string;
  reqId?: string;
  req?: { url?: string };
  err?: { stack?: string };
  code?: string;
}

const QUIET_LINE = 'connection closed before the whole request was read';
const OUTAGE_LINE = 'dependency unavailable';

describe('error handling: client aborts', () => {
  const lines: LogLine[] = [];
  // As the app is built (app.ts): our logger, our request logger and our answer to parser errors.
  const app = Fastify({
    childLoggerFactory: lazyRequestLogger,
    clientErrorHandler: createClientErrorHandler({ isSecureOrigin: false }),
    logger: {
      ...(loggerOptions({ logLevel: 'debug' }) as object),
      stream: new Writable({
        write(chunk, _encoding, done) {
          lines.push(JSON.parse(String(chunk)) as LogLine);
          done();
        },
      }),
    },
  });
  let port = 0;

  before(async () => {
    registerErrorHandling(app);
    app.post('/body', async () => ({ ok: true }));
    // A database connection reset under a query, after the body was read: still an outage.
    app.post('/dependency', async () => {
      throw Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as AddressInfo).port;
  });
  after(() => app.close());

  /** The request ids Fastify logged for `url`. */
  function requestIds(url: string): Set<string> {
    return new Set(lines.filter((line) => line.req?.url === url && line.reqId !== undefined).map((line) => line.reqId!));
  }

  /** Waits until the error handler has logged its verdict on a request to `url`; returns that request's lines. */
  async function verdictLines(url: string, known: Set<string>): Promise<LogLine[]> {
    const deadline = Date.now() + 5_000;
    for (;;) {
      const ids = [...requestIds(url)].filter((id) => !known.has(id));
      const mine = lines.filter((line) => line.reqId !== undefined && ids.includes(line.reqId));
      if (mine.some((line) => line.msg === QUIET_LINE || line.msg === OUTAGE_LINE || line.msg === 'request failed')) return mine;
      if (Date.now() > deadline) assert.fail(`no verdict logged for ${url}: ${JSON.stringify(mine)}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Starts a JSON POST announcing 100 bytes, sends a few, then goes away as `leave` says. */
  async function abortMidBody(leave: 'reset' | 'end'): Promise<void> {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => {});
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write('POST /body HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"email":');
    await new Promise((resolve) => setTimeout(resolve, 100));
    if (leave === 'reset') socket.resetAndDestroy();
    else socket.end();
  }

  for (const leave of ['reset', 'end'] as const) {
    it(`a client aborting its own request (${leave === 'reset' ? 'ECONNRESET' : 'closing mid-body'}) is not logged as an outage: one quiet info line, no stack`, async () => {
      const known = requestIds('/body');
      const from = lines.length;
      await abortMidBody(leave);
      const mine = await verdictLines('/body', known);
      const quiet = mine.filter((line) => line.msg === QUIET_LINE);
      assert.equal(quiet.length, 1, JSON.stringify(mine));
      assert.equal(quiet[0]!.level, 30, 'info');
      assert.equal(quiet[0]!.code, 'ECONNRESET');
      // Everything logged since the abort, the connection's lines included.
      const since = lines.slice(from);
      assert.ok(since.every((line) => line.level < 40), `nothing at warn or above: ${JSON.stringify(since)}`);
      assert.ok(!since.some((line) => line.msg === OUTAGE_LINE), 'not an outage');
      assert.ok(!JSON.stringify(since).includes('stack'), 'no stack');
      const aboutTheAbort = since.filter((line) => line.level >= 30 && line.msg !== 'incoming request' && line.msg !== 'request completed');
      assert.deepEqual(aboutTheAbort.map((line) => line.msg), [QUIET_LINE], 'one line at info about it, at most');
    });
  }

  it('a dependency resetting its connection after the body was read is still an outage', async () => {
    const known = requestIds('/dependency');
    const response = await fetch(`http://127.0.0.1:${port}/dependency`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(response.status, 503);
    const mine = await verdictLines('/dependency', known);
    const outage = mine.find((line) => line.msg === OUTAGE_LINE);
    assert.ok(outage, JSON.stringify(mine));
    assert.equal(outage.level, 40);
  });
});
