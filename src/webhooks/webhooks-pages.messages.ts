/**
 * What the webhook pages say, in the page's language (texts: `messages/*.json`): the codes in
 * their URL (`webhooks.notice.<CODE>`, `webhooks.error.<CODE>`) and each problem of a refused form
 * (`webhooks.problem.*`, by the field and the stable reason of the service's problem, whose English
 * messages are the API's).
 */
import type { PageLanguage } from '../web/render.ts';
import { MAX_URL_LENGTH } from '../http/outbound/target-rules.ts';
import { MAX_DESCRIPTION_LENGTH, MAX_EVENT_TYPES, type EndpointProblem } from './webhooks.model.ts';
import type { PageAlert } from './webhooks-pages.types.ts';

/** What these texts need of the page's language: some name the deployment (`{brand}`). */
type Texts = Pick<PageLanguage, 't' | 'locale' | 'brand'>;

/** Codes on `?notice=`: what a form just did. An unknown one shows nothing. */
export const WEBHOOKS_NOTICE_CODES: ReadonlySet<string> = new Set(['WEBHOOK_DISABLED', 'WEBHOOK_ENABLED', 'WEBHOOK_DELETED', 'WEBHOOK_REDELIVERED']);

/** Codes on `?error=`, and of forms sent back: why a form did nothing. */
export const WEBHOOKS_ERROR_CODES: ReadonlySet<string> = new Set([
  'WEBHOOK_NOT_FOUND',
  'WEBHOOK_DELIVERY_NOT_FOUND',
  'WEBHOOK_URL_INVALID',
  'WEBHOOK_URL_NOT_ALLOWED',
  'WEBHOOK_EVENT_UNKNOWN',
  'WEBHOOK_ENDPOINT_DISABLED',
  'WEBHOOK_DELIVERY_PENDING',
  'VALIDATION_ERROR',
  'RATE_LIMITED',
  'SERVICE_UNAVAILABLE',
]);

/** The notice for `code`, or null for an unknown code (nothing is shown). */
export function webhooksNotice(code: string, i18n: Texts): PageAlert | null {
  return WEBHOOKS_NOTICE_CODES.has(code) ? { isError: false, code, message: i18n.t(`webhooks.notice.${code}`) } : null;
}

/** The error for `code`: an unknown one gets the general message, and its code is never shown back. */
export function webhooksError(code: string, i18n: Texts): PageAlert {
  const known = WEBHOOKS_ERROR_CODES.has(code);
  return { isError: true, code: known ? code : null, message: i18n.t(`webhooks.error.${known ? code : 'default'}`, { brand: i18n.brand.name }) };
}

/** Per field and reason, the key of what is wrong (`webhooks.problem.<field>.<reason>`). */
export const PROBLEM_KEYS: Readonly<Record<EndpointProblem['field'], Partial<Record<EndpointProblem['reason'], string>>>> = {
  url: { URL_INVALID: 'webhooks.problem.url.URL_INVALID', URL_NOT_ALLOWED: 'webhooks.problem.url.URL_NOT_ALLOWED' },
  eventTypes: { INVALID: 'webhooks.problem.eventTypes.INVALID', EVENT_UNKNOWN: 'webhooks.problem.eventTypes.EVENT_UNKNOWN' },
  description: { INVALID: 'webhooks.problem.description.INVALID' },
};

const FIELD_KEYS: Readonly<Record<EndpointProblem['field'], string>> = { url: 'webhooks.field.url', eventTypes: 'webhooks.field.events', description: 'webhooks.field.description' };

/** At most this many unknown event types are named back, each cut to this length (as the service does). */
const SHOWN_UNKNOWN_TYPES = 5;
const SHOWN_TYPE_LENGTH = 64;

/**
 * One line of a refused form's list: the field and what is wrong with it. An unknown event type is
 * named back (the form's own values, escaped by the template); `knownTypes` are those Gatehouse sends.
 */
export function problemText(problem: EndpointProblem, form: { eventTypes: readonly string[] }, knownTypes: readonly string[], i18n: Texts): string {
  const key = Object.hasOwn(PROBLEM_KEYS, problem.field) ? PROBLEM_KEYS[problem.field][problem.reason] : undefined;
  const unknown = [...new Set(form.eventTypes.map((type) => type.trim()))].filter((type) => !knownTypes.includes(type));
  const values = {
    brand: i18n.brand.name,
    maxUrlLength: MAX_URL_LENGTH,
    maxEventTypes: MAX_EVENT_TYPES,
    maxDescriptionLength: MAX_DESCRIPTION_LENGTH,
    count: unknown.length,
    types: new Intl.ListFormat(i18n.locale, { type: 'conjunction' }).format(unknown.slice(0, SHOWN_UNKNOWN_TYPES).map((type) => type.slice(0, SHOWN_TYPE_LENGTH))),
  };
  const text = key === undefined || (problem.reason === 'EVENT_UNKNOWN' && unknown.length === 0) ? problem.message : i18n.t(key, values);
  const field = Object.hasOwn(FIELD_KEYS, problem.field) ? i18n.t(FIELD_KEYS[problem.field]) : problem.field;
  return i18n.t('webhooks.problem.line', { field, problem: text });
}
