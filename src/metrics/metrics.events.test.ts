/**
 * What each domain event counts for, as the modules declare it (`counters`, `countedEvents`), and
 * the strict exposition parser the metrics tests rely on.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { AuditEvent } from '../audit/audit.service.ts';
import { collectAuditEventTypes, collectCountedEvents, collectCounters } from '../module.ts';
import { MODULES } from '../modules.ts';
import { codeLabel, eventCounting, type Count } from './counted-events.ts';
import { parseExposition } from './exposition.ts';

const event = (fields: Partial<AuditEvent> & { type: string }): AuditEvent => ({
  id: 'e1',
  userId: 'u_7f3a',
  actorUserId: null,
  email: null,
  ip: '203.0.113.9',
  userAgent: 'ua',
  reason: null,
  details: null,
  createdAt: 0,
  ...fields,
});

/** What an event counts for with today's modules (each module's counts, in list order). */
const { countsOf } = eventCounting(collectCounters(MODULES), collectCountedEvents(MODULES), collectAuditEventTypes(MODULES), (count, why) => assert.fail(`${count.metric}: ${why}`));

describe('countsOf', () => {
  it('tells the sign-in method and the second factor from the event', () => {
    assert.deepEqual(countsOf(event({ type: 'signin.success', details: { sessionId: 's', amr: ['pwd'], method: 'password' } })), [
      { metric: 'signins', labels: { method: 'password', outcome: 'success' }, by: 1 },
      { metric: 'sessionsCreated', labels: { method: 'password' }, by: 1 },
    ]);
    assert.deepEqual(countsOf(event({ type: 'signin.success', details: { amr: ['pwd', 'otp', 'mfa'], method: 'password', step: 'second-factor', stepMethod: 'totp' } })).at(-1), {
      metric: 'secondFactor',
      labels: { method: 'otp', outcome: 'success' },
      by: 1,
    });
    assert.deepEqual(countsOf(event({ type: 'signin.success', details: { amr: ['fed', 'hwk', 'mfa'], provider: 'github', method: 'oauth', step: 'second-factor', stepMethod: 'passkey' } })).at(-1), {
      metric: 'secondFactor',
      labels: { method: 'passkey', outcome: 'success' },
      by: 1,
    });
    // A passkey alone is one factor that counts as two: no second-factor outcome.
    const passkey = countsOf(event({ type: 'signin.success', details: { amr: ['hwk', 'user', 'mfa'], passkeyId: 'pk1', method: 'passkey' } }));
    assert.deepEqual(passkey.map((count) => count.metric), ['signins', 'sessionsCreated']);
    assert.deepEqual(passkey[0]!.labels, { method: 'passkey', outcome: 'success' });
  });

  it('counts failures by reason code, second-factor ones apart', () => {
    assert.deepEqual(countsOf(event({ type: 'signin.failure', email: 'a@example.com', reason: 'INVALID_CREDENTIALS', details: { method: 'password' } })), [
      { metric: 'signins', labels: { method: 'password', outcome: 'invalid_credentials' }, by: 1 },
    ]);
    assert.deepEqual(countsOf(event({ type: 'signin.failure', reason: 'ACCOUNT_NOT_LINKED', details: { provider: 'google', method: 'oauth' } }))[0]!.labels, { method: 'oauth', outcome: 'account_not_linked' });
    assert.deepEqual(countsOf(event({ type: 'signin.failure', email: 'a@example.com', reason: 'INVALID_CODE', details: { step: 'second-factor', method: 'totp' } })), [
      { metric: 'secondFactor', labels: { method: 'otp', outcome: 'invalid_code' }, by: 1 },
      { metric: 'signins', labels: { method: 'unknown', outcome: 'invalid_code' }, by: 1 },
    ]);
    assert.deepEqual(countsOf(event({ type: 'signin.failure', reason: 'INVALID_PASSKEY', details: { method: 'passkey', step: 'second-factor' } }))[0]!.labels, {
      method: 'passkey',
      outcome: 'invalid_passkey',
    });
  });

  it('takes the method from the factor the event names: a kind added by a module counts under its own name', () => {
    assert.deepEqual(countsOf(event({ type: 'signin.success', details: { amr: ['otp'], method: 'magic-link' } })), [
      { metric: 'signins', labels: { method: 'magic-link', outcome: 'success' }, by: 1 },
      { metric: 'sessionsCreated', labels: { method: 'magic-link' }, by: 1 },
    ]);
    // A recovery code is a one-time password too; a second factor a module added counts under its method.
    const firstLabels = (counts: Count[]) => counts[0]!.labels as Readonly<Record<string, string>>;
    const secondFactor = (method: string) => firstLabels(countsOf(event({ type: 'signin.failure', reason: 'INVALID_CODE', details: { step: 'second-factor', method } }))).method;
    assert.equal(secondFactor('recovery_code'), 'otp');
    assert.equal(secondFactor('email-code'), 'email-code');
    const metBy = (stepMethod: unknown) => countsOf(event({ type: 'signin.success', details: { amr: ['pwd', 'mfa'], method: 'password', step: 'second-factor', stepMethod } })).at(-1);
    assert.deepEqual(metBy('email-code'), { metric: 'secondFactor', labels: { method: 'email-code', outcome: 'success' }, by: 1 });
    assert.deepEqual(metBy('recovery_code')?.labels, { method: 'otp', outcome: 'success' });
    assert.deepEqual(metBy(undefined)?.labels, { method: 'unknown', outcome: 'success' });
    // Only a plain word becomes a label: anything else an event could carry is `unknown`.
    for (const method of ['Password', 'a@example.com', 'x'.repeat(17), '', 'pass word']) {
      assert.equal(firstLabels(countsOf(event({ type: 'signin.failure', reason: 'INVALID_CREDENTIALS', details: { method } }))).method, 'unknown', method);
    }
    assert.equal(secondFactor('constructor'), 'constructor', 'no inherited property of a lookup table');
  });

  it('counts ended sessions, all of a user’s by their number', () => {
    assert.deepEqual(countsOf(event({ type: 'signout' })), [{ metric: 'sessionsEnded', labels: { reason: 'signout' }, by: 1 }]);
    assert.deepEqual(countsOf(event({ type: 'session.ended', reason: 'REPLACED' })), [{ metric: 'sessionsEnded', labels: { reason: 'replaced' }, by: 1 }]);
    assert.deepEqual(countsOf(event({ type: 'session.ended' })), [{ metric: 'sessionsEnded', labels: { reason: 'ended' }, by: 1 }]);
    assert.deepEqual(countsOf(event({ type: 'refresh.reuse_detected', reason: 'TOKEN_REUSED' })), [{ metric: 'sessionsEnded', labels: { reason: 'token_reused' }, by: 1 }]);
    assert.deepEqual(countsOf(event({ type: 'user.sessions_ended', reason: 'PASSWORD_RESET', details: { count: 3 } })), [
      { metric: 'sessionsEnded', labels: { reason: 'password_reset' }, by: 3 },
    ]);
    assert.deepEqual(countsOf(event({ type: 'mfa.totp_enabled' })), [{ metric: 'mfaChanges', labels: { event: 'mfa.totp_enabled' }, by: 1 }]);
    assert.deepEqual(countsOf(event({ type: 'user.created' })), []);
  });

  it('never makes a label of anything but a code: no address, id or free text', () => {
    assert.equal(codeLabel('someone@example.com', 'other'), 'other');
    assert.equal(codeLabel('Invalid credentials', 'other'), 'other');
    assert.equal(codeLabel(null, 'ended'), 'ended');
    for (const type of ['signin.failure', 'session.ended', 'user.sessions_ended']) {
      const counts = countsOf(event({ type, email: 'someone@example.com', reason: 'u_7f3a@x', details: { provider: 'github', step: 'x' } }));
      for (const count of counts) for (const value of Object.values(count.labels)) assert.doesNotMatch(value, /@|u_7f3a|203\.0/);
    }
  });
});

describe('parseExposition', () => {
  const valid = '# HELP a_total A.\n# TYPE a_total counter\na_total{x="1",y="q\\"\\\\\\n"} 2\n# TYPE h histogram\nh_bucket{le="1"} 1\nh_bucket{le="+Inf"} 2\nh_sum 3\nh_count 2\n';

  it('reads families, samples, escaped label values and histograms', () => {
    const families = parseExposition(valid);
    assert.equal(families.get('a_total')?.type, 'counter');
    assert.equal(families.get('a_total')?.help, 'A.');
    assert.deepEqual(families.get('a_total')?.samples[0], { name: 'a_total', labels: { x: '1', y: 'q"\\\n' }, value: 2 });
    assert.equal(families.get('h')?.samples.length, 4);
  });

  it('refuses what Prometheus would refuse', () => {
    for (const text of [
      'a_total 1\n', // no TYPE
      '# TYPE a counter\n# TYPE a counter\na 1\n', // declared twice
      '# TYPE a counter\na{x="1} 1\n', // unterminated
      '# TYPE a counter\na{x="1",x="2"} 1\n', // label twice
      '# TYPE a counter\na 1\na 2\n', // series twice
      '# TYPE a counter\na one\n', // not a number
      '# TYPE a counter\na{x="\\t"} 1\n', // bad escape
      '# TYPE a counter\na_sum 1\n', // not a counter's sample
      '# TYPE h histogram\nh_bucket{le="1"} 1\nh_count 1\n', // no +Inf
      '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_count 1\n', // decreasing
      '# TYPE a counter\na 1', // no final line feed
      '# TYPE 1a counter\n', // bad name
    ]) {
      assert.throws(() => parseExposition(text), /line \d+/, text);
    }
  });
});
