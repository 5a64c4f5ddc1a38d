/**
 * Counted metrics (`counters` and `countedEvents` in the module contract): a module declares the
 * counters its domain events feed (a name, a help text, each label with its vocabulary) and how
 * each of its events counts (pure functions of the event). The metrics module keeps the registry
 * and the exposition, and the label-safety rules here: a label value comes from a fixed
 * vocabulary only (a list of values, a factor's registered name, a lower-cased reason code, a
 * declared audit event type), never an id, an address, an IP or anything else an event carries
 * about a person; a count whose labels break them is not counted.
 *
 * Nothing here loads prom-client: modules import the helpers and types even when metrics are off.
 */
import type { AuditEvent, AuditEventType } from '../audit/audit.service.ts';
import { FACTOR_NAME } from '../signin/first-factor.ts';

/**
 * What a label's values may be: one of a fixed list; `factor`, a factor's name (a plain word,
 * signin/first-factor.ts) or `unknown`; `code`, a reason code in lower case (`codeLabel`) or a
 * fallback word of the same shape; `event`, an audit event type some module declares.
 */
export type LabelVocabulary = readonly string[] | 'factor' | 'code' | 'event';

/** A counter a module declares; its series appear in /metrics once counted. */
export interface CounterDefinition {
  /** What counts name it by (`signins`), unique among the modules' counters. */
  readonly metric: string;
  /** Its name in the exposition after `gatehouse_` (`signins_total`): lower-case words, ending in `_total`. */
  readonly name: string;
  readonly help: string;
  /** Its labels, in order, each with its vocabulary. */
  readonly labels: Readonly<Record<string, LabelVocabulary>>;
}

/** One increment: the counter, its labels, and by how much. */
export interface Count {
  readonly metric: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly by: number;
}

/** How some of a module's domain events count. */
export interface CountedEvent {
  /** The audit event types it counts (the module's own, or those of the modules it builds on). */
  readonly from: readonly AuditEventType[];
  /** What `event` counts for (none: an empty list). */
  count(event: AuditEvent): readonly Count[];
}

const CODE_LABEL = /^[a-z][a-z0-9_]{0,47}$/;

/** A stable UPPER_SNAKE code, lower-cased; anything else (or nothing) is `fallback`. */
export function codeLabel(reason: string | null | undefined, fallback: string): string {
  return typeof reason === 'string' && /^[A-Z][A-Z0-9_]{0,47}$/.test(reason) ? reason.toLowerCase() : fallback;
}

/** A factor's name as an event records it (a plain word: signin/first-factor.ts), or `unknown`. */
export function factorLabel(value: unknown): string {
  return typeof value === 'string' && FACTOR_NAME.test(value) ? value : 'unknown';
}

/**
 * The counting of a module list: every counter, checked once (names, labels, vocabularies), and
 * what an event (or a count a module makes itself) counts for, only within the rules (a count naming no counter, other labels than its
 * own or a value outside a label's vocabulary is left out, and reported to `onRefused`).
 */
export function eventCounting(
  counters: readonly CounterDefinition[],
  counted: readonly CountedEvent[],
  declaredAuditTypes: readonly string[],
  onRefused: (count: Count, why: string) => void = () => {},
): { readonly types: readonly AuditEventType[]; countsOf(event: AuditEvent): Count[]; admits(count: Count): boolean } {
  const byMetric = new Map<string, CounterDefinition>();
  const names = new Set<string>();
  for (const counter of counters) {
    if (byMetric.has(counter.metric)) throw new Error(`metrics: two counters are named "${counter.metric}"`);
    if (names.has(counter.name)) throw new Error(`metrics: two counters are exposed as "${counter.name}"`);
    if (!/^[a-z][a-z0-9_]*_total$/.test(counter.name)) throw new Error(`metrics: the counter "${counter.name}" must be lower-case words ending in _total`);
    for (const [label, vocabulary] of Object.entries(counter.labels)) {
      if (!/^[a-z][a-z0-9_]*$/.test(label)) throw new Error(`metrics: the label "${label}" of "${counter.name}" must be a lower-case word`);
      if (Array.isArray(vocabulary) && !vocabulary.every((value) => /^[a-z0-9][a-z0-9_.-]{0,63}$/.test(value))) {
        throw new Error(`metrics: the values of the label "${label}" of "${counter.name}" must be lower-case words`);
      }
    }
    byMetric.set(counter.metric, counter);
    names.add(counter.name);
  }
  const declared = new Set(declaredAuditTypes);
  const undeclared = counted.flatMap((entry) => entry.from).filter((type) => !declared.has(type));
  if (undeclared.length > 0) throw new Error(`metrics: events are counted that no module declares: ${[...new Set(undeclared)].join(', ')}`);

  function inVocabulary(value: string, vocabulary: LabelVocabulary): boolean {
    if (vocabulary === 'factor') return FACTOR_NAME.test(value);
    if (vocabulary === 'code') return CODE_LABEL.test(value);
    if (vocabulary === 'event') return declared.has(value);
    return vocabulary.includes(value);
  }

  function whyRefused(count: Count): string | null {
    const counter = byMetric.get(count.metric);
    if (counter === undefined) return 'no such counter';
    if (!(Number.isSafeInteger(count.by) && count.by > 0)) return 'not a positive whole number';
    const expected = Object.keys(counter.labels);
    const given = Object.keys(count.labels);
    if (given.length !== expected.length || !expected.every((label) => Object.hasOwn(count.labels, label))) return `labels ${given.join(',')} are not ${expected.join(',')}`;
    for (const label of expected) {
      const value = count.labels[label];
      if (typeof value !== 'string' || !inVocabulary(value, counter.labels[label]!)) return `the ${label} label is outside its vocabulary`;
    }
    return null;
  }

  const byType = new Map<string, CountedEvent[]>();
  for (const entry of counted) for (const type of new Set(entry.from)) byType.set(type, [...(byType.get(type) ?? []), entry]);
  function admits(count: Count): boolean {
    const why = whyRefused(count);
    if (why !== null) onRefused(count, why);
    return why === null;
  }

  return {
    types: [...byType.keys()] as AuditEventType[],
    countsOf(event) {
      return (byType.get(event.type) ?? []).flatMap((entry) => entry.count(event)).filter(admits);
    },
    /** Whether a count a module makes itself (not from an event: `MetricsService.count`) is within the rules. */
    admits,
  };
}
