/**
 * For tests: a webhook receiver on 127.0.0.1 (node:http) that records every request and answers as
 * told (a status, or holding the request unanswered), and that closes itself when the test ends.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface ReceivedWebhook {
  path: string;
  headers: Record<string, string>;
  body: string;
}

export type Answer = { status: number; body?: string; headers?: Record<string, string> } | 'hold';

export interface Receiver {
  readonly url: string;
  readonly received: ReceivedWebhook[];
  /** How the next requests are answered (default 204). */
  answer(with_: Answer | ((request: ReceivedWebhook) => Answer)): void;
  /** Resolves with the `count`-th request (1-based) once it has arrived; rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedWebhook>;
  close(): Promise<void>;
}

export async function startReceiver(cleanup: (fn: () => unknown) => void, path = '/hooks'): Promise<Receiver> {
  const received: ReceivedWebhook[] = [];
  const held: ServerResponse[] = [];
  const waiters: Array<{ count: number; resolve: (request: ReceivedWebhook) => void }> = [];
  let answer: Answer | ((request: ReceivedWebhook) => Answer) = { status: 204 };
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const headers = Object.fromEntries(Object.entries(request.headers).map(([key, value]) => [key, Array.isArray(value) ? value.join(', ') : (value ?? '')]));
      const entry = { path: request.url ?? '', headers, body: Buffer.concat(chunks).toString('utf8') };
      received.push(entry);
      const how = typeof answer === 'function' ? answer(entry) : answer;
      if (how === 'hold') held.push(response);
      else {
        response.writeHead(how.status, { 'content-type': 'text/plain', ...how.headers });
        response.end(how.body ?? '');
      }
      for (const waiter of waiters.filter((w) => received.length >= w.count)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(received[waiter.count - 1]!);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const close = async () => {
    for (const response of held) response.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  cleanup(close);
  return {
    url: `http://127.0.0.1:${port}${path}`,
    received,
    answer(with_) {
      answer = with_;
    },
    waitFor(count, timeoutMs = 15_000) {
      if (received.length >= count) return Promise.resolve(received[count - 1]!);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`receiver: request ${count} did not arrive within ${timeoutMs} ms (got ${received.length})`)), timeoutMs);
        waiters.push({
          count,
          resolve: (request) => {
            clearTimeout(timer);
            resolve(request);
          },
        });
      });
    },
    close,
  };
}

/**
 * Checks a received webhook's signature with the standardwebhooks library: `Webhook.verify` when
 * its timestamp is now (the real clock), else the library's own `sign` for the timestamp it carries
 * (a test's clock moved on) compared with each signature sent. Returns the parsed body.
 */
export function verifyWithLibrary(request: ReceivedWebhook, secret: string): { type: string; timestamp: string; data: Record<string, unknown> } {
  const webhook = new Webhook(secret);
  const headers = { 'webhook-id': request.headers['webhook-id']!, 'webhook-timestamp': request.headers['webhook-timestamp']!, 'webhook-signature': request.headers['webhook-signature']! };
  const timestamp = Number(headers['webhook-timestamp']);
  if (Math.abs(Date.now() / 1000 - timestamp) < 240) return webhook.verify(request.body, headers) as never;
  const expected = webhook.sign(headers['webhook-id'], new Date(timestamp * 1000), request.body);
  if (!headers['webhook-signature'].split(' ').includes(expected)) throw new Error('No matching signature found');
  return JSON.parse(request.body);
}
