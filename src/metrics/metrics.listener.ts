/**
 * The separate metrics listener (METRICS_PORT on METRICS_HOST, 127.0.0.1 by default): serves only
 * `GET /metrics`, without a token, for a scraper on the host or a private network. A background
 * job: it listens when the app starts serving and closes (with its connections) when the app stops.
 */
import type { Server } from 'node:http';
import { http } from '../lib/node-http.ts';
import type { AddressInfo } from 'node:net';
import type { BackgroundJob } from '../module.ts';
import type { Logger } from '../lib/logger.ts';
import type { MetricsService } from './metrics.service.ts';
import { METRICS_PATH } from './metrics.routes.ts';

export interface MetricsListener extends BackgroundJob {
  /** Where it listens, once started; null before and after. */
  address(): AddressInfo | null;
}

export function createMetricsListener(deps: { metrics: MetricsService; host: string; port: number; logger: Logger }): MetricsListener {
  const { metrics, host, port, logger } = deps;
  let server: Server | null = null;

  function answer(server: Server): void {
    server.on('request', (request, response) => {
      response.setHeader('cache-control', 'no-store');
      response.setHeader('x-content-type-options', 'nosniff');
      const path = (request.url ?? '').split('?')[0];
      if (path !== METRICS_PATH) {
        response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found.\n');
        return;
      }
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        response.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('Method not allowed.\n');
        return;
      }
      metrics.scrape().then(
        (text) => {
          response.writeHead(200, { 'content-type': metrics.contentType });
          response.end(request.method === 'HEAD' ? undefined : text);
        },
        (error: unknown) => {
          logger.error({ err: error }, 'metrics: scrape failed');
          response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('Scrape failed.\n');
        },
      );
    });
  }

  return {
    async start() {
      if (server !== null) return;
      const created = http.createServer({ requestTimeout: 10_000, headersTimeout: 5_000, keepAliveTimeout: 5_000 });
      // A scraper or two: a handful of connections at most.
      created.maxConnections = 32;
      answer(created);
      await new Promise<void>((resolve, reject) => {
        const refuse = (error: NodeJS.ErrnoException) => reject(new Error(`METRICS_PORT: cannot listen on ${host}:${port} (${error.code ?? error.message})`, { cause: error }));
        created.once('error', refuse);
        created.listen({ host, port }, () => {
          created.off('error', refuse);
          created.on('error', (error) => logger.error({ err: error }, 'metrics listener error'));
          resolve();
        });
      });
      server = created;
    },
    async stop() {
      const closing = server;
      if (closing === null) return;
      server = null;
      await new Promise<void>((resolve) => {
        closing.close(() => resolve());
        closing.closeAllConnections();
      });
    },
    address() {
      const address = server?.address();
      return address !== null && typeof address === 'object' ? address : null;
    },
  };
}
