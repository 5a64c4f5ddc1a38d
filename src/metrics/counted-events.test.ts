/**
 * Counted metrics declared by the modules (`counters`, `countedEvents`): the rules the metrics
 * module holds them to (names, labels, vocabularies: a count outside them is not counted, whether
 * an event made it or the module counted itself), the
 * counters of today's modules exactly as documented, and a module added to the list whose counter
 * shows in /metrics, fed by its own domain event.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SYSTEM_SOURCE, type AuditEvent, type AuditEventType } from '../audit/audit.service.ts';
import { collectAuditEventTypes, collectCountedEvents, collectCounters, defineModule, type GatehouseModule } from '../module.ts';
import { MODULES } from '../modules.ts';
import { createSqliteDatabase } from '../../test/helpers/databases.ts';
import { createTestApp } from '../../test/helpers/app.ts';
import { eventCounting, type Count, type CounterDefinition } from './counted-events.ts';
import { parseExposition, valueOf } from './exposition.ts';

const TOKEN = 'metrics-token-for-tests-0123456789abcdef';
const delivered = 'parcel.delivered' as AuditEventType;
const PARCELS: CounterDefinition = { metric: 'parcels', name: 'parcels_delivered_total', help: 'Parcels delivered, by carrier and outcome.', labels: { carrier: ['post', 'courier'], outcome: 'code' } };

/** A module that counts its own domain event in a counter of its own. */
const parcelsModule = (counters: readonly CounterDefinition[] = [PARCELS], name = 'parcels'): GatehouseModule =>
  defineModule({
    name,
    auditEvents: [delivered],
    counters,
    countedEvents: [{ from: [delivered], count: (event) => [{ metric: 'parcels', labels: { carrier: String(event.details?.['carrier']), outcome: String(event.details?.['outcome']) }, by: 1 }] }],
  });

const event = (details: Record<string, unknown>): AuditEvent => ({ id: 'e1', type: delivered, userId: 'u_1', actorUserId: null, email: null, ip: null, userAgent: null, reason: null, details, createdAt: 0 });

describe('counted metrics', () => {
  it('holds the declarations to the rules: names, labels, declared events', () => {
    const counting = (counters: readonly CounterDefinition[], declared: readonly string[] = [delivered]) => () => eventCounting(counters, collectCountedEvents([parcelsModule()]), declared);
    assert.throws(counting([{ ...PARCELS, name: 'parcels_delivered' }]), /must be lower-case words ending in _total/);
    assert.throws(counting([{ ...PARCELS, name: 'Parcels_total' }]), /must be lower-case words ending in _total/);
    assert.throws(counting([{ ...PARCELS, labels: { 'Carrier name': 'code' } }]), /the label "Carrier name" of "parcels_delivered_total" must be a lower-case word/);
    assert.throws(counting([{ ...PARCELS, labels: { carrier: ['Post Office'] } }]), /must be lower-case words/);
    assert.throws(counting([PARCELS, { ...PARCELS, metric: 'other' }]), /two counters are exposed as "parcels_delivered_total"/);
    assert.throws(counting([PARCELS], []), /events are counted that no module declares: parcel.delivered/);
    assert.throws(() => collectCounters([parcelsModule(), parcelsModule([PARCELS], 'others')]), /the counter "parcels" is declared by both "parcels" and "others"/);
  });

  it('counts only within a label’s vocabulary, and only the labels the counter has', () => {
    const refused: string[] = [];
    const { types, countsOf } = eventCounting([PARCELS], collectCountedEvents([parcelsModule()]), [delivered], (count: Count, why) => refused.push(`${count.metric}: ${why}`));
    assert.deepEqual(types, [delivered]);
    assert.deepEqual(countsOf(event({ carrier: 'post', outcome: 'left_at_door' })), [{ metric: 'parcels', labels: { carrier: 'post', outcome: 'left_at_door' }, by: 1 }]);
    for (const details of [{ carrier: 'u_7f3a', outcome: 'ok' }, { carrier: 'post', outcome: 'someone@example.com' }, { carrier: 'post', outcome: 'LEFT' }]) assert.deepEqual(countsOf(event(details)), [], JSON.stringify(details));
    assert.deepEqual(refused, ['parcels: the carrier label is outside its vocabulary', 'parcels: the outcome label is outside its vocabulary', 'parcels: the outcome label is outside its vocabulary']);
    assert.deepEqual(countsOf({ ...event({}), type: 'user.created' }), []);
  });

  it('holds a count a module makes itself (no event: MetricsService.count) to the same rules', () => {
    const refused: string[] = [];
    const { admits } = eventCounting([PARCELS], collectCountedEvents([parcelsModule()]), [delivered], (count: Count, why) => refused.push(`${count.metric}: ${why}`));
    assert.equal(admits({ metric: 'parcels', labels: { carrier: 'courier', outcome: 'signed' }, by: 1 }), true);
    assert.equal(admits({ metric: 'parcels', labels: { carrier: 'u_7f3a', outcome: 'signed' }, by: 1 }), false);
    assert.equal(admits({ metric: 'parcels', labels: { carrier: 'post' }, by: 1 }), false);
    assert.equal(admits({ metric: 'letters', labels: {}, by: 1 }), false);
    assert.deepEqual(refused, ['parcels: the carrier label is outside its vocabulary', 'parcels: labels carrier are not carrier,outcome', 'letters: no such counter']);
  });

  it('today’s modules declare the documented counters, with their help texts and labels', () => {
    const counters = collectCounters(MODULES);
    assert.deepEqual(Object.fromEntries(counters.map((counter) => [counter.name, Object.keys(counter.labels)])), {
      sessions_ended_total: ['reason'],
      signins_total: ['method', 'outcome'],
      sessions_created_total: ['method'],
      second_factor_total: ['method', 'outcome'],
      mfa_changes_total: ['event'],
      api_key_authentications_total: ['via', 'outcome'],
      api_key_changes_total: ['event', 'kind'],
      sso_signins_total: ['protocol', 'outcome'],
    });
    assert.doesNotThrow(() => eventCounting(counters, collectCountedEvents(MODULES), collectAuditEventTypes(MODULES)));
  });

  it('a module’s counter shows in /metrics, fed by its domain event', async (test) => {
    const database = await createSqliteDatabase();
    const t = await createTestApp(database, { modules: [...MODULES, parcelsModule()], env: { METRICS_TOKEN: TOKEN } });
    test.after(async () => {
      await t.close();
      await database.drop();
    });
    const record = (details: Record<string, unknown>) => t.services.audit.record({ type: delivered, userId: 'u_7f3a', source: SYSTEM_SOURCE, details }, { db: t.services.storage.db });
    await record({ carrier: 'post', outcome: 'left_at_door' });
    await record({ carrier: 'post', outcome: 'left_at_door' });
    await record({ carrier: 'courier', outcome: 'signed' });
    await record({ carrier: 'u_7f3a', outcome: 'signed' });

    const response = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(response.statusCode, 200);
    const families = parseExposition(response.body);
    const family = families.get('gatehouse_parcels_delivered_total');
    assert.equal(family?.type, 'counter');
    assert.equal(family?.help, 'Parcels delivered, by carrier and outcome.');
    assert.equal(valueOf(families, 'gatehouse_parcels_delivered_total', { carrier: 'post', outcome: 'left_at_door' }), 2);
    assert.equal(valueOf(families, 'gatehouse_parcels_delivered_total', { carrier: 'courier', outcome: 'signed' }), 1);
    assert.equal(family?.samples.length, 2, 'nothing outside the vocabulary');
    assert.doesNotMatch(response.body, /u_7f3a/);
    // The modules' counters beside it, as documented.
    assert.equal(families.get('gatehouse_signins_total')?.help, 'Sign-in outcomes, by first-factor method (password, oauth, passkey, unknown) and outcome (`success`, or the refusal code in lower case).');
  });
});
