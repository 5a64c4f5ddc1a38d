/**
 * `verifyWebhook` against the Standard Webhooks reference library (`standardwebhooks`), both ways:
 * what the library signs verifies here, what `signWebhook` signs verifies with the library's
 * `Webhook.verify`; several signatures (a rotation), the 5-minute tolerance both sides, a changed
 * body, id or timestamp, another secret, missing headers, Node and Fetch header shapes.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { signWebhook, verifyWebhook, WebhookVerificationError } from '../src/webhooks.ts';
import * as entry from '../src/index.ts';

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;
const body = JSON.stringify({ type: 'user.created', timestamp: '2026-11-27T10:00:00.000Z', data: { userId: 'u1', roles: ['ADMIN'] } });

function signed(secret: string, at = Date.now(), id = 'msg_abc', payload = body) {
  const timestamp = Math.floor(at / 1000);
  const signature = new Webhook(secret).sign(id, new Date(timestamp * 1000), payload);
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature };
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof WebhookVerificationError, String(error));
    return error.reason;
  }
  assert.fail('expected a refusal');
}

describe('verifyWebhook (Standard Webhooks)', () => {
  it('is exported from the package entry too', () => {
    assert.equal(entry.verifyWebhook, verifyWebhook);
  });

  it('verifies what the standardwebhooks library signs, and returns the event', async () => {
    const secret = newSecret();
    const event = await verifyWebhook(body, signed(secret), secret);
    assert.deepEqual(event, JSON.parse(body));
    // A Fetch Headers object, and upper-case Node-style names.
    const headers = signed(secret);
    assert.equal((await verifyWebhook(body, new Headers(headers), secret)).type, 'user.created');
    assert.equal((await verifyWebhook(body, Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v])), secret)).type, 'user.created');
  });

  it('signs what the library verifies', async () => {
    const secret = newSecret();
    const timestamp = Math.floor(Date.now() / 1000);
    const signature = await signWebhook(secret, 'msg_x', timestamp, body);
    assert.equal(signature, new Webhook(secret).sign('msg_x', new Date(timestamp * 1000), body));
    assert.deepEqual(new Webhook(secret).verify(body, { 'webhook-id': 'msg_x', 'webhook-timestamp': String(timestamp), 'webhook-signature': signature }), JSON.parse(body));
  });

  it('accepts any one of several signatures (a rotation), and skips other versions', async () => {
    const previous = newSecret();
    const current = newSecret();
    const headers = signed(current);
    const both = { ...headers, 'webhook-signature': `v2,bm9wZQ== ${headers['webhook-signature']} ${signed(previous)['webhook-signature']}` };
    assert.equal((await verifyWebhook(body, both, previous)).type, 'user.created');
    assert.equal((await verifyWebhook(body, both, current)).type, 'user.created');
    assert.equal(await refusal(verifyWebhook(body, both, newSecret())), 'INVALID_SIGNATURE');
  });

  it('refuses a changed body, id or timestamp, and another secret', async () => {
    const secret = newSecret();
    const headers = signed(secret);
    assert.equal(await refusal(verifyWebhook(body.replace('u1', 'u2'), headers, secret)), 'INVALID_SIGNATURE');
    assert.equal(await refusal(verifyWebhook(body, { ...headers, 'webhook-id': 'msg_other' }, secret)), 'INVALID_SIGNATURE');
    assert.equal(await refusal(verifyWebhook(body, { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) - 1) }, secret)), 'INVALID_SIGNATURE');
    assert.equal(await refusal(verifyWebhook(body, headers, newSecret())), 'INVALID_SIGNATURE');
    assert.equal(await refusal(verifyWebhook(body, { ...headers, 'webhook-signature': 'v1,' }, secret)), 'INVALID_SIGNATURE');
  });

  it('refuses timestamps more than 5 minutes away, both ways', async () => {
    const secret = newSecret();
    const now = Date.now();
    assert.equal((await verifyWebhook(body, signed(secret, now - 299_000), secret, { now })).type, 'user.created');
    assert.equal(await refusal(verifyWebhook(body, signed(secret, now - 302_000), secret, { now })), 'TIMESTAMP_TOO_OLD');
    assert.equal(await refusal(verifyWebhook(body, signed(secret, now + 302_000), secret, { now })), 'TIMESTAMP_TOO_NEW');
    assert.equal(await refusal(verifyWebhook(body, { ...signed(secret), 'webhook-timestamp': 'soon' }, secret)), 'INVALID_TIMESTAMP');
    // The library agrees on an old one.
    assert.throws(() => new Webhook(secret).verify(body, signed(secret, now - 302_000)), /too old/);
  });

  it('refuses missing headers and a body that is not an event, and a malformed secret with a TypeError', async () => {
    const secret = newSecret();
    const { 'webhook-signature': _, ...unsigned } = signed(secret);
    assert.equal(await refusal(verifyWebhook(body, unsigned, secret)), 'MISSING_HEADERS');
    assert.equal(await refusal(verifyWebhook('[1]', signed(secret, Date.now(), 'msg_abc', '[1]'), secret)), 'INVALID_PAYLOAD');
    await assert.rejects(verifyWebhook(body, signed(secret), 'whsec_***'), TypeError);
    await assert.rejects(verifyWebhook(body, signed(secret), ''), TypeError);
  });
});
