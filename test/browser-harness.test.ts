/**
 * Smoke test of the browser harness (test/helpers/browser.ts): Debian's Chromium, driven by
 * playwright-core, loads a form from a throwaway loopback server, fills it, submits it, and sees
 * the server's answer. Skipped with a reason when Chromium is missing outside CI.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  chromiumAvailability,
  closeBrowser,
  launchBrowser,
  saveScreenshot,
  withPage,
  type Browser,
} from './helpers/browser.ts';

const WORD = 'marmalade';
const MAX_BODY_BYTES = 4096;

const HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  // No script may run: the pages work as plain HTML forms.
  'content-security-policy': "default-src 'none'; form-action 'self'",
  'cache-control': 'no-store',
};

const FORM_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Harness form</title></head>
<body>
  <h1>Harness form</h1>
  <form method="post" action="/echo">
    <label for="word">Word</label>
    <input id="word" name="word" type="text" autocomplete="off">
    <button type="submit">Send</button>
  </form>
</body></html>`;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function resultPage(word: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Harness result</title></head>
<body><h1>Harness result</h1><p id="result">You sent: ${escapeHtml(word)}</p></body></html>`;
}

interface SeenRequest {
  method: string;
  path: string;
  remoteAddress: string;
}

function startFormServer(): Promise<{ server: Server; baseURL: string; seen: SeenRequest[] }> {
  const seen: SeenRequest[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'http://127.0.0.1').pathname;
    seen.push({ method: req.method ?? '', path, remoteAddress: req.socket.remoteAddress ?? '' });
    if (req.method === 'GET' && path === '/') {
      res.writeHead(200, HEADERS).end(FORM_PAGE);
      return;
    }
    if (req.method === 'POST' && path === '/echo') {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => {
        body += chunk;
        if (body.length > MAX_BODY_BYTES) req.destroy();
      });
      req.on('end', () => {
        const word = new URLSearchParams(body).get('word') ?? '';
        res.writeHead(200, HEADERS).end(resultPage(word));
      });
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
  });
  server.headersTimeout = 10_000;
  server.requestTimeout = 10_000;
  return new Promise((resolveStart, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolveStart({ server, baseURL: `http://127.0.0.1:${port}`, seen });
    });
  });
}

function closeServer(server: Server | undefined): Promise<void> {
  if (server === undefined || !server.listening) return Promise.resolve();
  server.closeAllConnections();
  return new Promise((resolveClose) => server.close(() => resolveClose()));
}

const chromium = chromiumAvailability();

const suiteOptions = { skip: chromium.ok ? false : chromium.reason, timeout: 90_000 };

describe('browser harness (Debian Chromium + playwright-core)', suiteOptions, () => {
  let browser: Browser | undefined;
  let server: Server | undefined;
  let baseURL = '';
  let seen: SeenRequest[] = [];
  let launchMs = 0;

  before(async () => {
    ({ server, baseURL, seen } = await startFormServer());
    const started = performance.now();
    browser = await launchBrowser();
    launchMs = Math.round(performance.now() - started);
  });

  after(async () => {
    await closeBrowser(browser);
    await closeServer(server);
  });

  it('launches Chromium', (t) => {
    assert.ok(browser, 'the browser launched');
    assert.equal(browser.isConnected(), true);
    t.diagnostic(`Chromium ${browser.version()} launched in ${launchMs} ms`);
  });

  it('fills and submits a form, and sees the answer', async (t) => {
    assert.ok(browser, 'the browser launched');
    await withPage(t, browser, { baseURL }, async (page) => {
      const blockedScripts: string[] = [];
      page.on('console', (message) => blockedScripts.push(message.text()));

      const response = await page.goto('/');
      assert.equal(response?.status(), 200);
      assert.equal(await page.title(), 'Harness form');

      await page.getByLabel('Word').fill(WORD);
      await Promise.all([
        page.waitForURL(`${baseURL}/echo`),
        page.getByRole('button', { name: 'Send' }).click(),
      ]);

      assert.equal(await page.locator('#result').textContent(), `You sent: ${WORD}`);
      assert.deepEqual(blockedScripts, [], 'no console messages (e.g. CSP violations)');

      const path = await saveScreenshot(page, 'browser-harness-result');
      assert.ok(existsSync(path) && statSync(path).size > 0, `screenshot written to ${path}`);
      t.diagnostic(`screenshot: ${path}`);
    });

    const pages = seen.filter((r) => r.path !== '/favicon.ico').map((r) => `${r.method} ${r.path}`);
    assert.deepEqual(pages, ['GET /', 'POST /echo']);
    for (const request of seen) assert.equal(request.remoteAddress, '127.0.0.1');
  });
});
