/**
 * Connection limits on the real server process (HEADERS_TIMEOUT_MS, REQUEST_TIMEOUT_MS,
 * KEEP_ALIVE_TIMEOUT_MS, MAX_CONNECTIONS), set small by env so each case takes seconds: a client
 * that sends slowly or sits idle is cut at its deadline, and past the cap new connections are
 * refused, while everyone else keeps being served.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { serverScratch, startGatehouse, type RunningGatehouse } from './helpers/process.ts';

const HEADERS_TIMEOUT_MS = 1_000;
const REQUEST_TIMEOUT_MS = 2_000;
const KEEP_ALIVE_TIMEOUT_MS = 1_500;
/** Node closes an idle keep-alive socket this long after the timeout it advertises (`server.keepAliveTimeoutBuffer`). */
const NODE_KEEP_ALIVE_BUFFER_MS = 1_000;
/** Node checks the deadlines on a timer (100 ms here), and a loaded test machine is slow: the slack allowed past a deadline. */
const SLACK_MS = 2_500;
/** Far past every deadline above: a connection still open then was never going to be cut. */
const GIVE_UP_MS = 8_000;
const TRICKLE_INTERVAL_MS = 250;

/** GET over a connection of its own (no pooling, so no connection outlives the call); the status, or the error's code. */
function get(port: number, path: string): Promise<number | string> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false, timeout: 5_000 }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'TIMEOUT' })));
    req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    req.end();
  });
}

interface Watched {
  socket: Socket;
  /** Everything the server sent. */
  received(): string;
  /** Milliseconds from `since` to the close; rejects if the server has not closed it by GIVE_UP_MS. */
  closedAfter(since: number): Promise<number>;
}

async function openSocket(port: number): Promise<Watched> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => {}); // a reset by the server is one of the outcomes under test
  socket.setEncoding('utf8');
  let received = '';
  socket.on('data', (chunk: string) => (received += chunk));
  const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(performance.now())));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('error', reject);
  });
  return {
    socket,
    received: () => received,
    async closedAfter(since) {
      let timer: NodeJS.Timeout | undefined;
      const givenUp = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the server still held the connection after ${GIVE_UP_MS} ms; received: ${JSON.stringify(received)}`)), GIVE_UP_MS);
      });
      try {
        return (await Promise.race([closed, givenUp])) - since;
      } finally {
        clearTimeout(timer);
        socket.destroy();
      }
    },
  };
}

/** Writes one byte every TRICKLE_INTERVAL_MS until the socket closes: never idle, never done. */
function trickle(socket: Socket, byte: string): void {
  const timer = setInterval(() => {
    if (socket.writable) socket.write(byte);
  }, TRICKLE_INTERVAL_MS);
  socket.once('close', () => clearInterval(timer));
}

/** Health checks on fresh connections every 200 ms until `until` settles; their statuses. */
async function pollHealth(port: number, until: Promise<unknown>): Promise<Array<number | string>> {
  const statuses: Array<number | string> = [];
  let done = false;
  void until.finally(() => (done = true)).catch(() => {});
  while (!done) {
    statuses.push(await get(port, '/api/health'));
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return statuses;
}

function assert408(received: string) {
  assert.match(received, /^HTTP\/1\.1 408 /, received);
  assert.match(received, /\r\nx-content-type-options: nosniff\r\n/i, 'with the security headers');
  assert.ok(received.includes('{"error":"REQUEST_TIMEOUT","message":'), received);
}

describe('connection limits of the real server', () => {
  let server: RunningGatehouse;
  const scratch = serverScratch({ after }, 'connections');

  before(async () => {
    server = await startGatehouse({
      env: {
        ...scratch.env,
        HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
        REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
        KEEP_ALIVE_TIMEOUT_MS: String(KEEP_ALIVE_TIMEOUT_MS),
      },
      cleanup: scratch.cleanup,
    });
  });

  it('request bodies are timed out: a body trickling a byte at a time is cut at REQUEST_TIMEOUT_MS (408) while a normal client keeps being served', async () => {
    const slow = await openSocket(server.port);
    const started = performance.now();
    slow.socket.write('POST /api/auth HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{');
    trickle(slow.socket, ' ');
    const closed = slow.closedAfter(started);
    const statuses = await pollHealth(server.port, closed);
    const elapsed = await closed;

    assert.ok(elapsed >= REQUEST_TIMEOUT_MS - 100 && elapsed <= REQUEST_TIMEOUT_MS + SLACK_MS, `cut after ${Math.round(elapsed)} ms`);
    assert408(slow.received());
    assert.ok(statuses.length >= 5, `${statuses.length} health checks during the trickle`);
    assert.deepEqual(new Set(statuses), new Set([200]), `every other client was served: ${statuses.join(', ')}`);
    // Cut by us, not an outage: nothing at warn or above, no stack.
    const loud = server.child.logs().filter((entry) => (entry.level ?? 0) >= 40);
    assert.deepEqual(loud, []);
  });

  it('request headers are timed out: headers trickling a byte at a time are cut at HEADERS_TIMEOUT_MS (408)', async () => {
    const slow = await openSocket(server.port);
    const started = performance.now();
    slow.socket.write('GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
    trickle(slow.socket, 'a');
    const elapsed = await slow.closedAfter(started);
    assert.ok(elapsed >= HEADERS_TIMEOUT_MS - 100 && elapsed <= HEADERS_TIMEOUT_MS + SLACK_MS, `cut after ${Math.round(elapsed)} ms`);
    assert408(slow.received());
  });

  it('a connection that never sends anything is closed at HEADERS_TIMEOUT_MS', async () => {
    const silent = await openSocket(server.port);
    const elapsed = await silent.closedAfter(performance.now());
    assert.ok(elapsed <= HEADERS_TIMEOUT_MS + SLACK_MS, `closed after ${Math.round(elapsed)} ms`);
  });

  it('idle keep-alive connections are closed at KEEP_ALIVE_TIMEOUT_MS', async () => {
    const client = await openSocket(server.port);
    client.socket.write('GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    const answered = await new Promise<number>((resolve) => {
      const check = () => (/\r\n\r\n\{.*\}$/s.test(client.received()) ? resolve(performance.now()) : setTimeout(check, 10));
      check();
    });
    assert.match(client.received(), /^HTTP\/1\.1 200 /);
    assert.doesNotMatch(client.received(), /connection: close/i, 'kept alive');
    const idle = await client.closedAfter(answered);
    assert.ok(idle >= KEEP_ALIVE_TIMEOUT_MS - 100 && idle <= KEEP_ALIVE_TIMEOUT_MS + NODE_KEEP_ALIVE_BUFFER_MS + SLACK_MS, `closed after ${Math.round(idle)} ms idle`);
  });
});

describe('connection cap of the real server', () => {
  const MAX_CONNECTIONS = 3;
  let server: RunningGatehouse;
  const scratch = serverScratch({ after }, 'max-connections');

  before(async () => {
    server = await startGatehouse({ env: { ...scratch.env, MAX_CONNECTIONS: String(MAX_CONNECTIONS) }, cleanup: scratch.cleanup });
  });

  it('at MAX_CONNECTIONS open connections a new one is refused, and served again once they close', async () => {
    assert.equal(await get(server.port, '/api/health'), 200);
    const holders = await Promise.all(Array.from({ length: MAX_CONNECTIONS }, () => openSocket(server.port)));
    try {
      // The kernel completes the handshake before Node accepts: give the server a moment to count them.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const refused = await get(server.port, '/api/health');
      assert.notEqual(refused, 200, 'past the cap');
      assert.ok(typeof refused === 'string', `closed without an answer (${refused})`);
      const warning = await server.child.waitForLog((entry) => entry.msg === 'connection limit reached: new connections are closed (MAX_CONNECTIONS)', 5_000);
      assert.equal(warning.maxConnections, MAX_CONNECTIONS);
    } finally {
      for (const holder of holders) holder.socket.destroy();
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(await get(server.port, '/api/health'), 200, 'served again once below the cap');
  });
});
