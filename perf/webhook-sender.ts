/**
 * The baseline of the webhook benchmark (perf/webhooks.ts): what the transport alone allows. On
 * `POST /send?count=N&lanes=L`, each of L lanes sends N webhooks, one at a time, to its own target
 * (TARGETS, a JSON list of `{url, secret}`), signed and sent exactly as the delivery worker sends
 * an attempt (src/webhooks/delivery-worker.ts): `signatureHeader` and `createSender` (a new
 * connection per attempt, the SSRF checks), with a `user.created` body made as the event happens.
 * Nothing is stored: the difference to Gatehouse's figure is the outbox (the event written with
 * its change, claimed, leased and recorded). Answers `{delivered, failed}` when all are sent.
 * Runs pinned to the server's core, with the bench's probe. Env: PORT, TARGETS.
 */
import './probe.ts';
import { createServer } from 'node:http';
import { randomId } from '../src/lib/random.ts';
import { createSender } from '../src/http/outbound/sender.ts';
import { signatureHeader, webhookTimestamp } from '../src/webhooks/signing.ts';
import { webhookBody } from '../src/webhooks/events.ts';

const port = Number(process.env.PORT);
const targets = JSON.parse(process.env.TARGETS ?? '[]') as { url: string; secret: string }[];
// The policy a bench server runs with: http and loopback receivers allowed.
const send = createSender({ policy: { allowHttp: true, allowPrivate: true } });

async function lane(target: { url: string; secret: string }, count: number): Promise<{ delivered: number; failed: number }> {
  let delivered = 0;
  for (let i = 0; i < count; i++) {
    const now = Date.now();
    const messageId = `msg_${randomId()}`;
    const body = webhookBody('user.created', now, { userId: randomId(), roles: [], method: 'admin' });
    const outcome = await send({
      url: target.url,
      headers: { 'webhook-id': messageId, 'webhook-timestamp': webhookTimestamp(now), 'webhook-signature': signatureHeader([target.secret], messageId, now, body) },
      body,
    });
    if (outcome.delivered) delivered++;
  }
  return { delivered, failed: count - delivered };
}

const server = createServer((request, response) => {
  const url = new URL(request.url ?? '/', 'http://127.0.0.1');
  if (request.method === 'GET' && url.pathname === '/__ready') return void response.end();
  if (request.method !== 'POST' || url.pathname !== '/send') {
    response.writeHead(404);
    return void response.end();
  }
  const count = Number(url.searchParams.get('count'));
  const lanes = Math.min(targets.length, Number(url.searchParams.get('lanes')));
  void Promise.all(targets.slice(0, lanes).map((target) => lane(target, count))).then((outcomes) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ delivered: outcomes.reduce((sum, o) => sum + o.delivered, 0), failed: outcomes.reduce((sum, o) => sum + o.failed, 0) }));
  });
});
server.listen(port, '127.0.0.1');

process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
});
