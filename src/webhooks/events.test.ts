/**
 * The table of webhook events: which audit types feed which webhook type, filtered by the types
 * the modules declare (a source joins once its module declares it), and the allow-list of each
 * payload: ids, roles, codes and counts pass; an e-mail, IP, User-Agent, token or anything a
 * details object adds does not.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { AuditEvent } from '../audit/audit.service.ts';
import { collectAuditEventTypes } from '../module.ts';
import { MODULES } from '../modules.ts';
import { EVENT_SOURCES, sourcesFor, WEBHOOK_EVENT_TYPES, webhookBody } from './events.ts';

const event = (type: string, fields: Partial<AuditEvent> = {}): AuditEvent => ({
  id: 'evt1',
  type,
  userId: 'user1',
  actorUserId: null,
  email: 'someone@example.com',
  ip: '203.0.113.9',
  userAgent: 'Browser/1.0',
  reason: null,
  details: null,
  createdAt: Date.UTC(2026, 10, 27),
  ...fields,
});

describe('webhook events table', () => {
  it('maps every webhook type from at least one audit type, and subscribes only to declared ones', () => {
    const produced = new Set(Object.values(EVENT_SOURCES).map((source) => source.type));
    assert.deepEqual([...WEBHOOK_EVENT_TYPES].filter((type) => !produced.has(type)), []);
    const some = sourcesFor(['user.created', 'mfa.totp_enabled', 'passkey.added', 'not.mapped']);
    assert.deepEqual(some, { auditTypes: ['user.created', 'mfa.totp_enabled', 'passkey.added'], webhookTypes: ['user.created', 'mfa.enabled'] });
    // What the modules declare today: every mapped type they declare is subscribed.
    const declared = collectAuditEventTypes(MODULES);
    const all = sourcesFor(declared);
    for (const type of ['user.created', 'signin.success', 'signout', 'password.changed', 'email.verified', 'passkey.removed']) assert.ok(all.auditTypes.includes(type), type);
    assert.ok(all.auditTypes.every((type) => declared.includes(type as never)));
  });

  it('keeps only allow-listed facts in each payload', () => {
    const created = EVENT_SOURCES['user.created']!.data(event('user.created', { actorUserId: 'admin1', details: { roles: ['EDITOR', 'bad role'], signIn: 'password', email: 'x@example.com', passwordHash: 'h' } }));
    assert.deepEqual(created, { userId: 'user1', roles: ['EDITOR'], method: 'admin', actorUserId: 'admin1' });
    const signup = EVENT_SOURCES['user.created']!.data(event('user.created', { details: { via: 'oauth', provider: 'github' } }));
    assert.deepEqual(signup, { userId: 'user1', method: 'oauth', provider: 'github' });
    assert.deepEqual(EVENT_SOURCES['user.roles_changed']!.data(event('user.roles_changed', { details: { before: ['A'], after: ['A', 'B'] } })), { userId: 'user1', fields: ['roles'], roles: ['A', 'B'], previousRoles: ['A'] });
    assert.deepEqual(EVENT_SOURCES['signin.success']!.data(event('signin.success', { details: { sessionId: 's1', amr: ['pwd', 'mfa'], token: 'secret' } })), { userId: 'user1', sessionId: 's1', amr: ['pwd', 'mfa'] });
    assert.deepEqual(EVENT_SOURCES['user.sessions_ended']!.data(event('user.sessions_ended', { reason: 'PASSWORD_RESET', details: { count: 3 } })), { userId: 'user1', allSessions: true, sessionCount: 3, reason: 'PASSWORD_RESET' });
    assert.deepEqual(EVENT_SOURCES['refresh.reuse_detected']!.data(event('refresh.reuse_detected', { details: { sessionId: 's2' } })), { userId: 'user1', sessionId: 's2', reason: 'TOKEN_REUSED' });
    assert.deepEqual(EVENT_SOURCES['mfa.totp_enabled']!.data(event('mfa.totp_enabled')), { userId: 'user1', method: 'totp' });
    assert.deepEqual(EVENT_SOURCES['passkey.added']!.data(event('passkey.added', { details: { passkeyId: 'pk1', keyKind: 'hwk' } })), { userId: 'user1', method: 'passkey', passkeyId: 'pk1' });
    assert.deepEqual(EVENT_SOURCES['mfa.reset']!.data(event('mfa.reset', { actorUserId: 'admin1', details: { totp: true, passkeys: 2 } })), { userId: 'user1', method: 'all', actorUserId: 'admin1' });
    assert.deepEqual(
      EVENT_SOURCES['organization.member.updated']!.data(event('organization.member.updated', { actorUserId: 'admin1', details: { organizationId: 'org1', slug: 'acme', role: 'ADMIN', previousRole: 'MEMBER', name: 'Acme <script>' } })),
      { organizationId: 'org1', slug: 'acme', userId: 'user1', role: 'ADMIN', previousRole: 'MEMBER', actorUserId: 'admin1' },
    );
    for (const [type, source] of Object.entries(EVENT_SOURCES)) {
      const body = webhookBody(source.type, Date.now(), source.data(event(type, { details: { sessionId: 'x', email: 'leak@example.com', resetUrl: 'https://x/reset?token=t', ip: '10.0.0.1' } })));
      for (const leak of ['example.com', '203.0.113.9', 'Browser/1.0', 'token', '10.0.0.1']) assert.ok(!body.includes(leak), `${type} leaks ${leak}`);
    }
  });

  it('writes the body as {type, timestamp, data}', () => {
    assert.equal(webhookBody('user.created', Date.UTC(2026, 10, 27, 10), { userId: 'u' }), '{"type":"user.created","timestamp":"2026-11-27T10:00:00.000Z","data":{"userId":"u"}}');
  });
});
