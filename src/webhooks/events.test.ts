/**
 * The webhook events: the public events the modules declare (`publicEvents`), which audit types
 * feed which webhook type (a module makes public only the audit types it declares), and the
 * allow-list of each payload: ids, roles, codes and counts pass; an e-mail, IP, User-Agent, token
 * or anything a details object adds does not. What the modules declare is compared with the table
 * they replaced (test/helpers/legacy-webhook-events.ts): the same types, the same order, payloads
 * byte for byte. A module added to the list publishes its own event end to end.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { AuditEvent, AuditEventType } from '../audit/audit.service.ts';
import { SYSTEM_SOURCE } from '../audit/audit.service.ts';
import { detailOf, facts, publicCode, publicId, type PublicEventType } from '../audit/public-events.ts';
import { collectPublicEvents, defineModule, type GatehouseModule } from '../module.ts';
import { MODULES } from '../modules.ts';
import { LOCALES } from '../i18n/locales.ts';
import { sourcesFor, webhookBody, type EventSource } from './events.ts';
import { startReceiver, verifyWithLibrary } from './test-receiver.ts';
import * as legacy from '../../test/helpers/legacy-webhook-events.ts';
import { createSqliteDatabase } from '../../test/helpers/databases.ts';
import { createTestApp } from '../../test/helpers/app.ts';

const PUBLIC_EVENTS = collectPublicEvents(MODULES);
/** Audit type -> the webhook event it becomes, as the modules declare it. */
const EVENT_SOURCES: Readonly<Record<string, EventSource>> = Object.fromEntries(PUBLIC_EVENTS.map((event) => [event.from, { type: event.type, data: (audited: AuditEvent) => event.payload(audited) }]));
const WEBHOOK_EVENT_TYPES = sourcesFor(PUBLIC_EVENTS).webhookTypes;
/** The modules' public events made from `from`, in that order. */
const made = (...from: string[]) => sourcesFor(from.flatMap((type) => PUBLIC_EVENTS.filter((event) => event.from === type)));

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
    const some = made('user.created', 'mfa.totp_enabled', 'passkey.added', 'not.mapped');
    assert.deepEqual({ auditTypes: some.auditTypes, webhookTypes: some.webhookTypes }, { auditTypes: ['user.created', 'mfa.totp_enabled', 'passkey.added'], webhookTypes: ['user.created', 'mfa.enabled'] });
    assert.equal(some.sourceOf('not.mapped'), undefined);
    // What the modules declare today: every public event is made from an audit type its module declares.
    const all = sourcesFor(PUBLIC_EVENTS);
    for (const type of ['user.created', 'signin.success', 'signout', 'password.changed', 'email.verified', 'passkey.removed']) assert.ok(all.auditTypes.includes(type), type);
    for (const { from } of PUBLIC_EVENTS) {
      const owner = MODULES.find((module) => module.publicEvents?.some((declared) => declared.from === from));
      assert.ok(owner?.auditEvents?.includes(from), `${from} is declared by ${owner?.name}`);
    }
  });

  it('describes every webhook type, in every language, in words its declaring module gives', () => {
    const { descriptions } = sourcesFor(PUBLIC_EVENTS);
    assert.deepEqual(WEBHOOK_EVENT_TYPES.filter((type) => !descriptions.has(type)), [], 'webhook types without a description');
    const missing: string[] = [];
    for (const type of WEBHOOK_EVENT_TYPES) {
      const key = descriptions.get(type)!;
      const owner = MODULES.find((module) => key.startsWith(`${module.name}.`) && module.publicEvents?.some((declared) => declared.type === type && declared.description === key));
      for (const locale of LOCALES) if (owner === undefined || !Object.hasOwn(owner.messages?.[locale] ?? {}, key)) missing.push(`${type}: ${key} (${locale})`);
    }
    assert.deepEqual(missing, []);
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

describe('the public events the modules declare, against the table they replaced', () => {
  /** Events whose details hold every field any payload reads, good, bad or absent, and more. */
  function samples(type: string): AuditEvent[] {
    const good = {
      roles: ['EDITOR', 'ADMIN'], via: 'signup', provider: 'github', fields: ['name', 'locale'], before: ['A'], after: ['A', 'B'], sessionId: 's_1', amr: ['pwd', 'otp', 'mfa'],
      count: 4, keptSessionId: 's_2', sessionsEnded: 2, passkeyId: 'pk_1', organizationId: 'org_1', slug: 'acme', memberUserId: 'u_2', memberId: 'm_3', role: 'ADMIN', previousRole: 'MEMBER',
      // Since issue 31.2 the sign-in events carry these too: not public (the allow-lists leave them out).
      method: 'password', step: 'second-factor', stepMethod: 'totp',
    };
    const bad = {
      roles: ['bad role', 7], via: 'elsewhere', provider: 'a b', fields: 'name', before: 'A', after: [null], sessionId: 'x'.repeat(200), amr: 'pwd', count: -1, keptSessionId: 'a@b', sessionsEnded: 1.5,
      passkeyId: { id: 1 }, organizationId: '', slug: 'Acme Inc', memberUserId: 5, memberId: null, role: 'owner of all', previousRole: ['MEMBER'], email: 'leak@example.com', token: 't', name: 'Acme <script>',
    };
    const variants: Array<Partial<AuditEvent>> = [
      {},
      { details: good },
      { details: bad },
      { details: { memberId: 'm_4' } },
      { details: { via: 'cli' } },
      { details: { via: 'bootstrap' } },
      { details: { via: 'oauth', provider: 'google' } },
      { actorUserId: 'admin_1', reason: 'ADMIN_ACTION', details: good },
      { actorUserId: 'bad actor', reason: 'a reason with spaces', details: bad },
      { userId: null, actorUserId: 'admin_1', details: { count: 0 } },
    ];
    return variants.map((fields, index) => event(type, { id: `evt${index}`, ...fields }));
  }

  it('makes every old source public, as the same type, in the same order', () => {
    // Modules built since the table (org-domains…) add public events of their own: the old ones are compared.
    const oldSources = new Set(Object.keys(legacy.EVENT_SOURCES));
    const oldTypes = new Set<string>(legacy.WEBHOOK_EVENT_TYPES);
    assert.deepEqual(Object.keys(EVENT_SOURCES).filter((from) => oldSources.has(from)).sort(), [...oldSources].sort());
    for (const [from, source] of Object.entries(legacy.EVENT_SOURCES)) assert.equal(EVENT_SOURCES[from]?.type, source.type, from);
    assert.deepEqual(WEBHOOK_EVENT_TYPES.filter((type) => oldTypes.has(type)), [...legacy.WEBHOOK_EVENT_TYPES]);
    assert.deepEqual(sourcesFor(PUBLIC_EVENTS).auditTypes.filter((type) => oldSources.has(type)).sort(), legacy.sourcesFor(Object.keys(legacy.EVENT_SOURCES)).auditTypes.sort());
  });

  it('builds every payload byte for byte as before, with the same allow-list', () => {
    for (const [from, source] of Object.entries(legacy.EVENT_SOURCES)) {
      for (const sample of samples(from)) {
        const before = legacy.webhookBody(source.type, sample.createdAt, source.data(sample));
        assert.equal(webhookBody(EVENT_SOURCES[from]!.type, sample.createdAt, EVENT_SOURCES[from]!.data(sample)), before, `${from} ${sample.id}`);
      }
    }
  });
});

describe('a module that declares a public event', () => {
  const happened = 'parcel.delivered' as AuditEventType;
  const declared = (publicEvents: readonly PublicEventType[], auditEvents: readonly AuditEventType[] = [happened], name = 'parcels'): GatehouseModule =>
    defineModule({ name, auditEvents, publicEvents });
  const delivered: PublicEventType = {
    type: 'parcel.arrived',
    from: happened,
    order: 500,
    payload: (event) => facts({ userId: publicId(event.userId), carrier: publicCode(detailOf(event, 'carrier')) }),
  };

  it('is refused at start when it makes public what it does not declare, twice, or under two orders', () => {
    assert.throws(() => collectPublicEvents([declared([delivered], [])]), /"parcels" makes the public event "parcel.arrived" from "parcel.delivered", an audit event it does not declare/);
    assert.throws(() => collectPublicEvents([declared([delivered]), declared([{ ...delivered, type: 'parcel.other' }], [], 'others')]), /the public event source "parcel.delivered" is declared by both "parcels" and "others"/);
    const second = 'parcel.returned' as AuditEventType;
    assert.throws(() => collectPublicEvents([declared([delivered, { ...delivered, from: second, order: 501 }], [happened, second])]), /the public event "parcel.arrived" is given two orders/);
    assert.throws(() => collectPublicEvents([declared([{ ...delivered, type: 'Parcel' }])]), /must be lower-case and dotted/);
    assert.deepEqual(collectPublicEvents([declared([{ ...delivered, order: 1 }]), ...MODULES]).map((event) => event.type)[0], 'parcel.arrived', 'by its order');
  });

  it('sends it to the endpoints subscribed to it: its domain event, delivered with its payload', async (test) => {
    const database = await createSqliteDatabase();
    const t = await createTestApp(database, { modules: [...MODULES, declared([delivered])], env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_POLL_INTERVAL_MS: '600000' } });
    test.after(async () => {
      await t.close();
      await database.drop();
    });
    assert.ok(t.services.webhooks.eventTypes.includes('parcel.arrived'));
    assert.ok(t.services.webhooks.subscribedAuditTypes.includes(happened));
    const receiver = await startReceiver((fn) => test.after(fn));
    const created = await t.services.webhooks.create({ url: receiver.url, eventTypes: ['parcel.arrived'] }, SYSTEM_SOURCE);
    assert.ok(created.ok, JSON.stringify(created));
    const other = await startReceiver((fn) => test.after(fn));
    assert.ok((await t.services.webhooks.create({ url: other.url, eventTypes: ['user.created'] }, SYSTEM_SOURCE)).ok);

    await t.services.storage.db.transaction().execute((trx) =>
      t.services.audit.record({ type: happened, userId: 'u_1', source: { ...SYSTEM_SOURCE, ip: '203.0.113.9' }, details: { carrier: 'post', address: 'somewhere' } }, { db: trx }),
    );
    await t.services.webhooks.runOnce();
    await receiver.waitFor(1);
    const sent = verifyWithLibrary(receiver.received[0]!, created.secret);
    assert.equal(sent.type, 'parcel.arrived');
    assert.deepEqual(sent.data, { userId: 'u_1', carrier: 'post' });
    assert.equal(other.received.length, 0, 'not to an endpoint that did not ask for it');
  });
});
