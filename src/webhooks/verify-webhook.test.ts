/**
 * `verifyWebhook` (gatehouse-client/webhooks) fails closed on options that would switch its replay
 * check off: a `toleranceSeconds` or `now` that is NaN (say `Number(process.env.UNSET)`) or a
 * negative tolerance is a TypeError, never a pass for a year-old webhook.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { verifyWebhook } from '../../packages/client/src/webhooks.ts';

const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const body = '{"type":"user.created","timestamp":"2026-01-01T00:00:00.000Z","data":{}}';

function signedAt(at: Date) {
  return { 'webhook-id': 'msg_1', 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': new Webhook(secret).sign('msg_1', at, body) };
}

describe('verifyWebhook options', () => {
  it('refuses a NaN tolerance or clock, or a negative tolerance, instead of skipping the timestamp check', async () => {
    const old = signedAt(new Date(Date.now() - 365 * 86_400_000));
    for (const options of [{ toleranceSeconds: Number.NaN }, { now: Number.NaN }, { toleranceSeconds: -1 }]) {
      await assert.rejects(verifyWebhook(body, old, secret, options), TypeError, JSON.stringify(options));
    }
    await assert.rejects(verifyWebhook(body, old, secret), { name: 'WebhookVerificationError', reason: 'TIMESTAMP_TOO_OLD' });
    // A deliberate choice still works: a wide tolerance accepts it, a fresh webhook verifies by default.
    assert.equal((await verifyWebhook(body, old, secret, { toleranceSeconds: Number.POSITIVE_INFINITY })).type, 'user.created');
    assert.equal((await verifyWebhook(body, signedAt(new Date()), secret)).type, 'user.created');
  });
});
