/**
 * A downstream app using `gatehouse-protect` (the built workspace package, `npm run build`), as
 * test/fixtures/downstream-app.mjs does, with an unprotected twin of each route for the baseline:
 *
 * - Fastify: `GET /api/data` behind `toFastifyHook(protector)`, and `GET /open/data`, the same
 *   handler in a scope without the hook.
 * - node:http: the same pair on two servers, `toNodeMiddleware(protector)` in front of one.
 *
 * Both routes of a pair answer the same JSON (the open one with a fixed user of the same shape).
 * Env: GATEHOUSE_URL (the issuer, whose JWKS is fetched on first use), FASTIFY_PORT,
 * NODE_PORT, NODE_OPEN_PORT. Listens on 127.0.0.1 only.
 */
import './probe.ts';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { once } from 'node:events';
import Fastify from 'fastify';
import { createProtector } from 'gatehouse-protect';
import { toFastifyHook } from 'gatehouse-protect/fastify';
import { toNodeMiddleware } from 'gatehouse-protect/node';

const protector = createProtector({ issuer: process.env.GATEHOUSE_URL ?? 'http://127.0.0.1:1' });
/** What the open routes claim as their user: the shape and size a real one has. */
const FIXED_USER = { userId: 'x'.repeat(22), sessionId: 'y'.repeat(22), roles: ['ADMIN'] };

const content = (path: string, user: unknown) => ({ page: path, user });

const fastify = Fastify({ logger: false });
await fastify.register(async (scope) => {
  scope.addHook('onRequest', toFastifyHook(protector) as never);
  scope.get('/api/data', async (request) => content('/api/data', (request as { gatehouse?: unknown }).gatehouse));
});
await fastify.register(async (scope) => {
  scope.get('/open/data', async () => content('/api/data', FIXED_USER));
});
fastify.get('/__ready', async () => ({ ok: true }));
await fastify.listen({ port: Number(process.env.FASTIFY_PORT), host: '127.0.0.1' });

function sendJson(res: ServerResponse, body: unknown): void {
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.end(JSON.stringify(body));
}

const middleware = toNodeMiddleware(protector);
const protectedNode = createServer((req: IncomingMessage, res) => {
  middleware(req, res, (error) => {
    if (error) {
      res.statusCode = 500;
      res.end('middleware error');
      return;
    }
    sendJson(res, content('/api/data', (req as { gatehouse?: unknown }).gatehouse));
  });
});
const openNode = createServer((_req, res) => sendJson(res, content('/api/data', FIXED_USER)));
protectedNode.listen(Number(process.env.NODE_PORT), '127.0.0.1');
openNode.listen(Number(process.env.NODE_OPEN_PORT), '127.0.0.1');
await Promise.all([once(protectedNode, 'listening'), once(openNode, 'listening')]);

process.on('SIGTERM', () => {
  protectedNode.close();
  openNode.close();
  void fastify.close().then(() => process.exit(0));
});
