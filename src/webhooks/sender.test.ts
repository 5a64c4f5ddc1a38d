/**
 * Where webhooks may go (SSRF), with a receiver on 127.0.0.1: non-public addresses refused at
 * registration (URL shape, IP literals in every spelling, localhost) and at connect time against
 * what DNS answered (the address checked is the one connected to: a name that resolves to
 * loopback is refused, even when it resolved to a public address a moment before), the metadata
 * addresses refused even when private targets are allowed, plain http refused in production,
 * redirects not followed, and a receiver that never answers, or answers too slowly (its head a
 * line at a time, or a head and then a body that never ends), or a name that never resolves, cut
 * off at the timeout.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { EnvReader } from '../config/env-reader.ts';
import { checkWebhookUrl, isAllowedAddress } from '../http/outbound/target-rules.ts';
import { createSender, type Resolver } from '../http/outbound/sender.ts';
import { webhooksConfigSection } from './webhooks.config.ts';
import { startReceiver } from './test-receiver.ts';

const STRICT = { allowHttp: true, allowPrivate: false };
const OPEN = { allowHttp: true, allowPrivate: true };
const post = { headers: { 'webhook-id': 'msg_1' }, body: '{"type":"x","timestamp":"t","data":{}}' };

describe('webhook targets', () => {
  it('refuses non-public addresses, in every spelling, unless private targets are allowed', () => {
    const refused = ['127.0.0.1', '10.0.0.1', '172.31.255.255', '192.168.0.10', '169.254.1.1', '100.64.0.1', '0.0.0.0', '0.1.2.3', '224.0.0.251', '255.255.255.255', '::1', '::', 'fe80::1', 'fc00::1', 'fd12:3456::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '64:ff9b::a00:1', '2002:7f00:1::1'];
    for (const address of refused) {
      assert.equal(isAllowedAddress(address, false), false, address);
      assert.equal(isAllowedAddress(address, true), true, `${address} with WEBHOOK_ALLOW_PRIVATE_TARGETS`);
    }
    for (const address of ['8.8.8.8', '93.184.216.34', '2606:4700:4700::1111', '::ffff:8.8.8.8']) assert.equal(isAllowedAddress(address, false), true, address);
    for (const metadata of ['169.254.169.254', 'fd00:ec2::254', '::ffff:169.254.169.254']) assert.equal(isAllowedAddress(metadata, true), false, metadata);
    // IPv4-compatible IPv6 (::a.b.c.d, which ipaddr.js calls unicast) is refused like the address it carries;
    // the metadata address stays refused inside compatible, NAT64 and 6to4 forms even when private targets are allowed.
    for (const address of ['::7f00:1', '::a00:1', '::c0a8:1']) assert.equal(isAllowedAddress(address, false), false, address);
    for (const metadata of ['::a9fe:a9fe', '64:ff9b::a9fe:a9fe', '2002:a9fe:a9fe::1']) assert.equal(isAllowedAddress(metadata, true), false, metadata);
    assert.equal(isAllowedAddress('not an address', true), false);
  });

  it('names the setting that would allow a refused address, and why http is refused', () => {
    const policy = { allowHttp: false, allowPrivate: false, allowPrivateSetting: 'WEBHOOK_ALLOW_PRIVATE_TARGETS' };
    for (const url of ['https://localhost/hook', 'https://127.0.0.1/hook', 'https://[::1]/hook']) {
      const checked = checkWebhookUrl(url, policy);
      assert.ok(!checked.ok && /WEBHOOK_ALLOW_PRIVATE_TARGETS=true allows it/.test(checked.message), url);
    }
    const http = checkWebhookUrl('http://hooks.example.com/x', policy);
    assert.ok(!http.ok && /plain http only when NODE_ENV is development or test/.test(http.message));
    const unnamed = checkWebhookUrl('https://localhost/hook', STRICT);
    assert.ok(!unnamed.ok && !unnamed.message.includes('=true'), 'no setting named when the caller names none');
  });

  it('checks the URL at registration: shape, credentials, IP literals and localhost', () => {
    const reasonOf = (url: string, policy = STRICT) => {
      const check = checkWebhookUrl(url, policy);
      return check.ok ? 'ok' : check.reason;
    };
    assert.equal(reasonOf('https://hooks.example.com/in?x=1'), 'ok');
    for (const url of ['', 'hooks.example.com', 'ftp://hooks.example.com/', 'https://user:pass@hooks.example.com/', 'https://hooks.example.com/#frag', `https://example.com/${'a'.repeat(2100)}`]) assert.equal(reasonOf(url), 'URL_INVALID', url);
    for (const url of ['http://127.0.0.1:8080/', 'https://2130706433/', 'https://0x7f.0.0.1/', 'https://[::1]/', 'https://[::ffff:7f00:1]/', 'https://10.1.1.1/', 'https://localhost/', 'https://api.localhost/', 'https://169.254.169.254/latest']) {
      assert.equal(reasonOf(url), 'URL_NOT_ALLOWED', url);
    }
    assert.equal(reasonOf('https://[::7f00:1]/'), 'URL_NOT_ALLOWED');
    // The limit holds for the URL as stored (percent-encoded), which the delivery checks again.
    assert.equal(reasonOf(`https://hooks.example.com/${'ä'.repeat(1000)}`), 'URL_INVALID');
    assert.equal(reasonOf('http://127.0.0.1:8080/', OPEN), 'ok');
    assert.equal(reasonOf('https://169.254.169.254/', OPEN), 'URL_NOT_ALLOWED');
    assert.equal(reasonOf('http://hooks.example.com/', { allowHttp: false, allowPrivate: true }), 'URL_NOT_ALLOWED');
  });

  it('allows plain http only when NODE_ENV is development or test', () => {
    const section = (env: 'development' | 'test' | 'production', vars: Record<string, string> = {}) => {
      const problems: string[] = [];
      const config = webhooksConfigSection(new EnvReader(vars, problems), { env, isProduction: env === 'production', authUrl: 'https://auth.example.com' }, problems);
      return { config: config.webhooks!, problems };
    };
    assert.equal(section('production').config.allowHttp, false);
    assert.equal(section('development').config.allowHttp, true);
    assert.equal(section('test').config.allowHttp, true);
    const defaults = section('production').config;
    assert.deepEqual({ ...defaults }, { allowPrivateTargets: false, allowHttp: false, disableAfterSeconds: 5 * 86_400, retentionSeconds: 30 * 86_400, pollIntervalMs: 5_000, timeoutMs: 10_000, maxPendingPerEndpoint: 10_000 });
    assert.equal(section('production', { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_DISABLE_AFTER: '2d' }).config.disableAfterSeconds, 2 * 86_400);
    assert.match(section('production', { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'maybe' }).problems.join(), /WEBHOOK_ALLOW_PRIVATE_TARGETS must be true or false/);
    assert.equal(section('production', { WEBHOOK_MAX_PENDING_PER_ENDPOINT: '500' }).config.maxPendingPerEndpoint, 500);
    for (const value of ['0', '9', '1000001', 'lots']) {
      assert.match(section('production', { WEBHOOK_MAX_PENDING_PER_ENDPOINT: value }).problems.join(), /WEBHOOK_MAX_PENDING_PER_ENDPOINT must be an integer from 10 to 1000000/, value);
    }
  });
});

describe('webhook sender', () => {
  it('refuses at connect time a name that resolves to a non-public address; sends nothing', async (t) => {
    const receiver = await startReceiver((fn) => t.after(fn));
    const port = new URL(receiver.url).port;
    const toLoopback: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];
    const mixed: Resolver = async () => [{ address: '93.184.216.34', family: 4 }, { address: '127.0.0.1', family: 4 }];
    for (const resolve of [toLoopback, mixed]) {
      const outcome = await createSender({ policy: STRICT, resolve })({ url: `http://hooks.example.test:${port}/hooks`, ...post });
      assert.deepEqual(outcome, { delivered: false, responseCode: null, error: 'ADDRESS_NOT_ALLOWED', snippet: null });
    }
    // DNS rebinding: public when first asked (say, at registration), loopback at connect.
    let asked = 0;
    const rebinding: Resolver = async () => (asked++ === 0 ? [{ address: '93.184.216.34', family: 4 }] : [{ address: '127.0.0.1', family: 4 }]);
    await rebinding('hooks.example.test');
    assert.equal((await createSender({ policy: STRICT, resolve: rebinding })({ url: `http://hooks.example.test:${port}/hooks`, ...post })).error, 'ADDRESS_NOT_ALLOWED');
    // An IP literal skips DNS: refused by the URL check and by the connected socket's address.
    assert.equal((await createSender({ policy: STRICT })({ url: receiver.url, ...post })).error, 'URL_NOT_ALLOWED');
    assert.equal(receiver.received.length, 0);
  });

  it('connects to the address it checked, with the host name in the Host header', async (t) => {
    const receiver = await startReceiver((fn) => t.after(fn));
    const port = new URL(receiver.url).port;
    const outcome = await createSender({ policy: OPEN, resolve: async () => [{ address: '127.0.0.1', family: 4 }] })({ url: `http://hooks.example.test:${port}/hooks?tenant=1`, ...post });
    assert.deepEqual(outcome, { delivered: true, responseCode: 204, error: null, snippet: null });
    assert.equal(receiver.received[0]!.headers.host, `hooks.example.test:${port}`);
    assert.equal(receiver.received[0]!.path, '/hooks?tenant=1');
    assert.equal(receiver.received[0]!.body, post.body);
  });

  it('does not follow a redirect: a 3xx is a failure, and its target hears nothing', async (t) => {
    const target = await startReceiver((fn) => t.after(fn));
    const receiver = await startReceiver((fn) => t.after(fn));
    receiver.answer({ status: 307, headers: { location: target.url } });
    const outcome = await createSender({ policy: OPEN })({ url: receiver.url, ...post });
    assert.equal(outcome.delivered, false);
    assert.equal(outcome.error, 'REDIRECT_NOT_FOLLOWED');
    assert.equal(outcome.responseCode, 307);
    assert.equal(receiver.received.length, 1);
    assert.equal(target.received.length, 0);
  });

  it('keeps only a short printable snippet of an error answer', async (t) => {
    const receiver = await startReceiver((fn) => t.after(fn));
    receiver.answer({ status: 500, body: `\u0000oops\r\n${'x'.repeat(5000)}` });
    const outcome = await createSender({ policy: OPEN })({ url: receiver.url, ...post });
    assert.equal(outcome.error, 'HTTP_STATUS');
    assert.equal(outcome.responseCode, 500);
    assert.equal(outcome.snippet!.length, 100);
    assert.match(outcome.snippet!, /^oops x+$/);
  });

  it('cuts off a receiver that never answers at the timeout, and reports a refused connection', async (t) => {
    const receiver = await startReceiver((fn) => t.after(fn));
    receiver.answer('hold');
    const started = performance.now();
    const outcome = await createSender({ policy: OPEN, timeoutMs: 1_000 })({ url: receiver.url, ...post });
    assert.equal(outcome.error, 'TIMEOUT');
    assert.ok(performance.now() - started < 5_000);
    await receiver.close();
    assert.equal((await createSender({ policy: OPEN })({ url: receiver.url, ...post })).error, 'CONNECTION_REFUSED');
  });

  it('cuts off at the timeout an answer whose head comes too slowly, whose body never ends, or a name that never resolves', async (t) => {
    /** A TCP receiver that, once the request arrived, writes `answer` to the socket. */
    async function rawReceiver(answer: (socket: Socket) => void): Promise<string> {
      const sockets: Socket[] = [];
      const server = createServer((socket) => {
        sockets.push(socket);
        socket.on('error', () => {});
        socket.once('data', () => answer(socket));
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      t.after(() => {
        server.close();
        for (const socket of sockets) socket.destroy();
      });
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
    }
    /** Writes a line every 50 ms, forever (until the sender hangs up). */
    const trickle = (socket: Socket, first: string, line: string) => {
      socket.write(first);
      const interval = setInterval(() => socket.write(line), 50);
      socket.on('close', () => clearInterval(interval));
    };
    const urls = {
      headLineByLine: await rawReceiver((socket) => trickle(socket, 'HTTP/1.1 200 OK\r\n', 'x-slow: 1\r\n')),
      headThenNothing: await rawReceiver((socket) => socket.write('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n')),
      bodyNeverEnds: await rawReceiver((socket) => trickle(socket, 'HTTP/1.1 500 No\r\ncontent-length: 100000\r\n\r\n', 'x')),
      nameNeverResolves: 'http://hooks.example.test/hooks',
    };
    const send = createSender({ policy: OPEN, timeoutMs: 1_000, resolve: () => new Promise(() => {}) });
    for (const [name, url] of Object.entries(urls)) {
      const started = performance.now();
      const outcome = await send({ url, ...post });
      assert.deepEqual(outcome, { delivered: false, responseCode: null, error: 'TIMEOUT', snippet: null }, name);
      assert.ok(performance.now() - started < 5_000, name);
    }
  });
});
