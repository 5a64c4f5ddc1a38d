/**
 * The receiver of the webhook benchmark (perf/webhooks.ts): one node:http process on loopback that
 * checks every webhook as a real receiver must (the Standard Webhooks signature, by the reference
 * `standardwebhooks` library, with the secret of the path it arrives at), answers 204 (400 when
 * the signature does not verify), and keeps, per measurement window, what the benchmark reads:
 * deliveries (distinct `webhook-id`s per path), refusals, duplicates, and for each delivery the time from
 * its event (the body's `timestamp`) to its receipt.
 *
 * Control (loopback only): `POST /__secrets` `{ "<path>": "whsec_…" }` adds secrets; `POST
 * /__window` starts a new window; `GET /__window` reads the current one. Env: PORT.
 */
import { createServer, type IncomingMessage } from 'node:http';
import { Webhook } from 'standardwebhooks';

/** What `GET /__window` answers. */
export interface ReceiverWindow {
  delivered: number;
  refused: number;
  duplicates: number;
  /** Epoch ms of the earliest event delivered in the window, and of the last receipt. */
  firstEventAt: number | null;
  lastReceivedAt: number | null;
  /** Event to receipt, one per delivery, in ms. */
  latenciesMs: number[];
}

const port = Number(process.env.PORT);
const verifiers = new Map<string, Webhook>();
let window = newWindow();
let seen = new Set<string>();

function newWindow(): ReceiverWindow {
  return { delivered: 0, refused: 0, duplicates: 0, firstEventAt: null, lastReceivedAt: null, latenciesMs: [] };
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

/** Verified and recorded, or refused: the status to answer. */
function receive(path: string, headers: IncomingMessage['headers'], body: string, receivedAt: number): number {
  const verifier = verifiers.get(path);
  const webhookHeaders = { 'webhook-id': String(headers['webhook-id']), 'webhook-timestamp': String(headers['webhook-timestamp']), 'webhook-signature': String(headers['webhook-signature']) };
  let event: { timestamp?: string };
  try {
    if (verifier === undefined) throw new Error('no secret for this path');
    event = verifier.verify(body, webhookHeaders) as { timestamp?: string };
  } catch {
    window.refused++;
    return 400;
  }
  // An event has one webhook-id for every endpoint it goes to: a duplicate is the same id at the same path.
  const id = `${path} ${webhookHeaders['webhook-id']}`;
  if (seen.has(id)) {
    window.duplicates++;
    return 204;
  }
  seen.add(id);
  const eventAt = Date.parse(event.timestamp ?? '');
  window.delivered++;
  window.latenciesMs.push(receivedAt - eventAt);
  window.firstEventAt = Math.min(window.firstEventAt ?? eventAt, eventAt);
  window.lastReceivedAt = receivedAt;
  return 204;
}

const server = createServer((request, response) => {
  void readBody(request).then((body) => {
    const receivedAt = Date.now();
    const path = (request.url ?? '').split('?')[0]!;
    let status = 404;
    let answer = '';
    if (request.method === 'POST' && path.startsWith('/hooks/')) status = receive(path, request.headers, body, receivedAt);
    else if (request.method === 'POST' && path === '/__secrets') {
      for (const [hookPath, secret] of Object.entries(JSON.parse(body) as Record<string, string>)) verifiers.set(hookPath, new Webhook(secret));
      status = 204;
    } else if (request.method === 'POST' && path === '/__window') {
      window = newWindow();
      seen = new Set();
      status = 204;
    } else if (request.method === 'GET' && path === '/__window') {
      status = 200;
      answer = JSON.stringify(window);
    } else if (request.method === 'GET' && path === '/__ready') status = 200;
    response.writeHead(status, answer === '' ? {} : { 'content-type': 'application/json' });
    response.end(answer);
  });
});
server.listen(port, '127.0.0.1');

process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
