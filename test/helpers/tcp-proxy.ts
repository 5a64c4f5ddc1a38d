/**
 * A loopback TCP proxy a test puts between Gatehouse and a dependency (PostgreSQL) so it can make
 * the dependency "go away" without touching the real server, which other tests share.
 * - `cut()` stops listening (new connections are refused: ECONNREFUSED) and destroys every open
 *   connection on both sides (the driver sees its sockets die mid-query), as a crashed server.
 * - `stall()` is a black hole instead (a partition, a hung server): connections stay open and new
 *   ones are accepted, but no byte goes either way.
 * - `restore()` undoes either: listens again on the same port, or lets the bytes flow again.
 * `close()` ends it all; register it with `t.after`.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  readonly host: '127.0.0.1';
  readonly port: number;
  /** Whether it is listening and forwarding. */
  readonly isUp: boolean;
  /** Connections accepted since it started (all, across restores). */
  readonly connectionsAccepted: number;
  /** Connections open right now. */
  readonly openConnections: number;
  cut(): Promise<void>;
  stall(): void;
  restore(): Promise<void>;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const pairs = new Set<Pair>();
  let server: Server | null = null;
  let port = 0;
  let accepted = 0;
  let isStalled = false;

  const flow = (pair: Pair) => {
    pair.client.pipe(pair.upstream);
    pair.upstream.pipe(pair.client);
    pair.client.resume();
    pair.upstream.resume();
  };
  const hold = (pair: Pair) => {
    pair.client.unpipe();
    pair.upstream.unpipe();
    pair.client.pause();
    pair.upstream.pause();
  };

  function create(): Server {
    return createServer((client) => {
      accepted++;
      const pair: Pair = { client, upstream: connect({ host: target.host, port: target.port }) };
      pairs.add(pair);
      const drop = () => {
        pair.client.destroy();
        pair.upstream.destroy();
        pairs.delete(pair);
      };
      pair.client.on('error', drop).on('close', drop);
      pair.upstream.on('error', drop).on('close', drop);
      if (isStalled) pair.client.pause();
      else flow(pair);
    });
  }

  async function listen(): Promise<void> {
    const next = create();
    await new Promise<void>((resolve, reject) => {
      next.once('error', reject);
      next.listen(port, '127.0.0.1', () => {
        next.off('error', reject);
        resolve();
      });
    });
    port = (next.address() as { port: number }).port;
    server = next;
  }

  async function stop(): Promise<void> {
    const current = server;
    server = null;
    if (current === null) return;
    const closed = new Promise<void>((resolve) => current.close(() => resolve()));
    // Abruptly, as a crashed server or a cut cable would: no goodbye on the protocol level.
    for (const pair of pairs) {
      pair.client.destroy();
      pair.upstream.destroy();
    }
    pairs.clear();
    await closed;
  }

  await listen();

  return {
    host: '127.0.0.1',
    get port() {
      return port;
    },
    get isUp() {
      return server !== null && !isStalled;
    },
    get connectionsAccepted() {
      return accepted;
    },
    get openConnections() {
      return pairs.size;
    },
    cut: stop,
    stall() {
      isStalled = true;
      for (const pair of pairs) hold(pair);
    },
    async restore() {
      if (isStalled) {
        isStalled = false;
        for (const pair of pairs) flow(pair);
      }
      if (server !== null) return;
      // The port was ours a moment ago; another process taking it in between would be a flake
      // worth seeing, so it is retried briefly and then reported, never silently moved.
      for (let attempt = 1; ; attempt++) {
        try {
          await listen();
          return;
        } catch (error) {
          if (attempt >= 20 || (error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
    },
    close: stop,
  };
}
