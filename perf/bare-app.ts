/**
 * The unprotected baseline: a bare Fastify app (no logger, no plugins, no hooks) answering the
 * same JSON that a Gatehouse route answers, so `protected ÷ bare` is the price of everything
 * Gatehouse puts in front of and around a handler. Env: PORT, BARE_ROUTES (a JSON object of
 * path -> response body). Listens on 127.0.0.1 only.
 *
 * Each path answers GET, POST and PATCH. A POST body is parsed as Fastify parses JSON, and a form
 * (`application/x-www-form-urlencoded`, what OAuth token requests send) into URLSearchParams,
 * so the baseline of a POST route reads its request as the service must.
 */
import './probe.ts';
import Fastify from 'fastify';

const port = Number(process.env.PORT);
const routes = JSON.parse(process.env.BARE_ROUTES ?? '{}') as Record<string, unknown>;

const app = Fastify({ logger: false });
app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => done(null, new URLSearchParams(body as string)));
for (const [path, body] of Object.entries(routes)) app.route({ method: ['GET', 'POST', 'PATCH'], url: path, handler: async () => body });
app.get('/__ready', async () => ({ ok: true }));
await app.listen({ port, host: '127.0.0.1' });

process.on('SIGTERM', () => {
  void app.close().then(() => process.exit(0));
});
