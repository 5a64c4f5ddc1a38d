/**
 * The audit log as people read it: who by address (ids resolved in one query), the device in
 * words ("Chrome on Linux", as the sessions list says it), what happened in words (the admin
 * catalogs name the core types, each module's catalogs the types it declares), details as
 * label/value pairs folded under the row. And the log's filters as the page and the exports read
 * them from the query: address, type, outcome, a UTC date range.
 */
import type { AuditEvent, AuditService } from '../audit/audit.service.ts';
import type { EventFilter } from '../audit/audit.store.ts';
import type { Translator } from '../i18n/translator.ts';
import { deviceLabel } from '../sessions/device-label.ts';
import type { User } from '../users/user.service.ts';
import { formatTime, type TimeText } from '../web/time-text.ts';

/**
 * What the admin area reads of the audit log without waiting: the event types the modules declare
 * (the log's filter, the API's query schema, built as its routes are registered), the module that
 * declares each (for its words) and the condition "signed in / not since" on a users query. The
 * audit service's own members, given to the routes beside the admin service, whose members all
 * wait for its code (admin.module.ts).
 */
export type AdminAuditView = Pick<AuditService, 'eventTypes' | 'eventOwners' | 'hasEventSince'>;

const DAY_MS = 86_400_000;
/** Types that record something refused or gone wrong: the "failures" of the outcome filter. */
const FAILURE_TYPE = /failure|_failed$|reuse_detected|password_locked|auto_disabled/;

export const isFailureType = (type: string): boolean => FAILURE_TYPE.test(type);

/** The log's filters as typed in the page's form (strings; '' for unset). */
export interface EventFilterText {
  email: string;
  type: string;
  outcome: '' | 'success' | 'failure';
  from: string;
  to: string;
}

/** A `YYYY-MM-DD` date as UTC epoch ms, or null when it is not one. */
export function utcDay(text: string): number | null {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return null;
  const ms = Date.parse(`${text}T00:00:00Z`);
  return Number.isNaN(ms) ? null : ms;
}

/**
 * The store's filter for the texts: the address names the account (`findUser`) and the address
 * failed sign-ins tried; `to` includes its whole day. Null when a date is not a date.
 */
export async function toEventFilter(
  text: EventFilterText,
  types: readonly string[],
  findUser: (email: string) => Promise<User | null>,
): Promise<EventFilter | null> {
  const from = text.from === '' ? undefined : utcDay(text.from);
  const to = text.to === '' ? undefined : utcDay(text.to);
  if (from === null || to === null) return null;
  const filter: EventFilter = {};
  if (text.email !== '') {
    const email = text.email.trim().toLowerCase();
    filter.about = { userId: (await findUser(email))?.id ?? null, email };
  }
  if (text.type !== '') filter.type = text.type;
  const failures = types.filter(isFailureType);
  if (text.outcome === 'failure') filter.types = failures;
  if (text.outcome === 'success') filter.excludeTypes = failures;
  if (from !== undefined) filter.from = from;
  if (to !== undefined) filter.to = to + DAY_MS;
  return filter;
}

/** One event as the log's rows show it. */
export interface ReadableEvent {
  id: string;
  createdAt: TimeText;
  type: string;
  /** What happened, in words. */
  what: string;
  isFailure: boolean;
  /** The account's address (or its id when it is gone) with a link; the address a failed sign-in tried. */
  user: { label: string; href: string | null } | null;
  actor: { label: string; href: string } | null;
  ip: string | null;
  /** "Chrome on Linux"; null without a User-Agent. */
  device: string | null;
  userAgent: string | null;
  reason: string | null;
  details: Array<{ name: string; value: string }>;
}

/** "webhook.endpoint_created" -> "webhook endpoint created". */
const typeInWords = (type: string) => type.replace(/[._]+/g, ' ');

/**
 * What happened, in the page's language: the admin catalogs' text for the type
 * (`admin.eventType.<type>`, the core's), else the declaring module's (`<module>.eventType.<type>`,
 * `owners` naming the module of each type), else a generic one naming it.
 */
export function eventWords(type: string, i18n: Pick<Translator, 't'>, owners: ReadonlyMap<string, string>): string {
  const owner = owners.get(type);
  for (const key of [`admin.eventType.${type}`, ...(owner === undefined ? [] : [`${owner}.eventType.${type}`])]) {
    const text = i18n.t(key);
    if (text !== key) return text;
  }
  return i18n.t('admin.eventType.other', { type: typeInWords(type) });
}

function detailValue(value: unknown): string {
  if (Array.isArray(value)) return value.map(detailValue).join(', ');
  if (value !== null && typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** The addresses of the accounts the events name, in one query. */
export async function addressesOf(events: readonly AuditEvent[], findUsersByIds: (ids: readonly string[]) => Promise<User[]>): Promise<Map<string, string>> {
  const ids = new Set<string>();
  for (const event of events) {
    if (event.userId !== null) ids.add(event.userId);
    if (event.actorUserId !== null) ids.add(event.actorUserId);
  }
  const users = ids.size === 0 ? [] : await findUsersByIds([...ids]);
  return new Map(users.map((user) => [user.id, user.email]));
}

export function toReadableEvent(
  event: AuditEvent,
  addresses: ReadonlyMap<string, string>,
  i18n: Pick<Translator, 't' | 'locale'>,
  userHref: (id: string) => string,
  owners: ReadonlyMap<string, string>,
): ReadableEvent {
  const person = (id: string) => ({ label: addresses.get(id) ?? id, href: userHref(id) });
  return {
    id: event.id,
    createdAt: formatTime(event.createdAt, i18n.locale),
    type: event.type,
    what: eventWords(event.type, i18n, owners),
    isFailure: isFailureType(event.type),
    user: event.userId !== null ? person(event.userId) : event.email !== null ? { label: event.email, href: null } : null,
    actor: event.actorUserId === null ? null : person(event.actorUserId),
    ip: event.ip,
    device: deviceLabel(event.userAgent, i18n),
    userAgent: event.userAgent,
    reason: event.reason,
    details: Object.entries(event.details ?? {}).map(([name, value]) => ({ name, value: detailValue(value) })),
  };
}

/** The columns of the CSV export, in order. */
export const EXPORT_COLUMNS = ['time', 'type', 'what', 'outcome', 'user', 'actor', 'ip', 'device', 'reason', 'details'] as const;

/** One exported record: plain strings (never a secret: details are allow-listed when recorded). */
export function exportRecord(event: AuditEvent, readable: ReadableEvent): Record<(typeof EXPORT_COLUMNS)[number], string> {
  return {
    time: new Date(event.createdAt).toISOString(),
    type: event.type,
    what: readable.what,
    outcome: readable.isFailure ? 'failure' : 'success',
    user: readable.user?.label ?? '',
    actor: readable.actor?.label ?? '',
    ip: event.ip ?? '',
    device: readable.device ?? '',
    reason: event.reason ?? '',
    details: event.details === null ? '' : JSON.stringify(event.details),
  };
}

/** A CSV field (RFC 4180), with a leading formula character neutralised for spreadsheets. */
export function csvField(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}
