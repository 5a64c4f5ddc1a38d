/**
 * Public events (`publicEvents` in the module contract): what a domain (audit) event becomes for
 * the world outside (a webhook today). The module that records the domain event declares it: the
 * public type's name, the audit type it is made from, and its payload, built with an explicit
 * allow-list (ids, role names, method and reason codes, counts) from the helpers below: never a
 * secret, token, hash, link, e-mail address, IP address or User-Agent, whatever the audit event
 * holds. A public type may be made from several audit types (`session.revoked` from a sign-out,
 * an ended session, …), by one module or several; an audit type feeds one public type at most.
 */
import type { AuditEvent, AuditEventType } from './audit.service.ts';

/** A public event's payload: facts only. */
export type PublicEventData = Record<string, string | number | boolean | string[] | null>;

export interface PublicEventType {
  /** The public name receivers subscribe to (`user.created`): lower-case and dotted. */
  readonly type: string;
  /** The domain event it is made from: one the declaring module records (declares in `auditEvents`). */
  readonly from: AuditEventType;
  /**
   * Where the public type goes in the list an endpoint chooses from, smallest first; every
   * declaration of one type gives the same.
   */
  readonly order: number;
  /**
   * What it tells, in one sentence for the administrators choosing an endpoint's events: a key of
   * the declaring module's messages (`users.webhookEvent.created`). The first declaration of a type
   * that gives one is used; a type without one is shown by its name alone.
   */
  readonly description?: string;
  /** The payload: only what the allow-list lets through (`facts`, with the helpers below). */
  payload(event: AuditEvent): PublicEventData;
}

/** Identifiers and codes are short printable tokens; anything else is left out. */
const TOKEN = /^[A-Za-z0-9_.:-]{1,128}$/;
const ROLE = /^[A-Z][A-Z0-9_]{0,63}$/;

/** An identifier (a user's, a session's), or null. */
export function publicId(value: unknown): string | null {
  return typeof value === 'string' && TOKEN.test(value) ? value : null;
}

/** A code (a reason, a method, a slug), or null. */
export function publicCode(value: unknown): string | null {
  return typeof value === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(value) ? value : null;
}

/** A count (a whole number, zero or more), or null. */
export function publicCount(value: unknown): number | null {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null;
}

/** Role names (at most 100), or null when not a list. */
export function publicRoles(value: unknown): string[] | null {
  return Array.isArray(value) ? value.filter((role): role is string => typeof role === 'string' && ROLE.test(role)).slice(0, 100) : null;
}

/** Codes (at most 20), or null when not a list. */
export function publicCodes(value: unknown): string[] | null {
  return Array.isArray(value) ? value.map(publicCode).filter((item): item is string => item !== null).slice(0, 20) : null;
}

/** One of the audit event's details, to pass through one of the helpers above. */
export const detailOf = (event: AuditEvent, key: string): unknown => event.details?.[key];

/** Who did it, when not the user themself (an administrator, the user ending a session elsewhere). */
export const actorOf = (event: AuditEvent): string | null => publicId(event.actorUserId);

/** Leaves out what is null, so a payload has only the facts it carries. */
export function facts(entries: Record<string, string | number | boolean | string[] | null | undefined>): PublicEventData {
  return Object.fromEntries(Object.entries(entries).filter(([, value]) => value !== null && value !== undefined)) as PublicEventData;
}
