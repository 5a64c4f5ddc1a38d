/**
 * Mail templates: for each name, `templates/<name>.text.eta` (plain text, nothing escaped) and
 * `templates/<name>.html.eta` (every `<%= %>` HTML-escaped), each inside its layout. All are
 * compiled once when the renderer is made, so a broken template fails start-up, not a send.
 *
 * Every text, the subject included, is a message of the mail module's catalogs
 * (`messages/<locale>.json`, keys `mail.<template>.…`; both variants of a template share them),
 * rendered in the language the caller chose for the recipient (`MailMessage.locale`). Times are
 * written as that language writes them, in UTC (said so: we do not know the reader's time zone);
 * durations in its words (`Translator.duration`).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Eta } from 'eta/core';
import { isValidName } from '../users/name.ts';
import { DEFAULT_LOCALE, type Locale } from '../i18n/locales.ts';
import type { Translations, Translator } from '../i18n/translator.ts';

const TEMPLATES_DIR = join(import.meta.dirname, 'templates');

/**
 * What each template reads. Every `…Url` must be a full link under AUTH_URL (`MailService.link`).
 * Every `name` is the account's name only when a mail may greet by it (`greetingName` in
 * users/name.ts), else null: the greeting is then a neutral "Hello,".
 */
export interface MailTemplates {
  /** A link that lets the holder set a new password: a secret until it is used or expires. */
  'password-reset': { name: string | null; resetUrl: string; expiresInMinutes: number };
  /**
   * Sent after a password change or reset; `forgotPasswordUrl` is the forgot-password page, not a
   * token. After a reset, `linkedProviders` names the providers that can still sign in to the
   * account (their configured names) and `reviewUrl` is a page, under a token of its own, where
   * each is removed in one step: a thief who linked one keeps no way in after the owner's reset.
   */
  'password-changed': { name: string | null; changedAt: number; forgotPasswordUrl: string; linkedProviders?: { names: readonly string[]; reviewUrl: string } };
  /** A link that confirms the address: a secret until used. */
  'verify-email': { name: string | null; verifyUrl: string; expiresInMinutes: number };
  /**
   * Someone tried to sign up with an address that has an account. `name` is the account's own
   * confirmed name, never one from the sign-up request (a stranger must not be able to put words in it).
   * The links are plain pages: a live reset token must not be minted by an unauthenticated request.
   */
  'signup-existing-account': { name: string | null; signInUrl: string; forgotPasswordUrl: string };
  /**
   * A security-relevant change to the account that the owner should hear of (a second factor added
   * or removed, say): `change` names it, and the catalog has its subject and sentence
   * (`mail.security-notice.<change>.subject` / `.intro`). `provider` is the configured name of the
   * provider a `providerLinked` / `providerUnlinked` notice is about.
   */
  'security-notice': { name: string | null; change: SecurityChange; changedAt: number; forgotPasswordUrl: string; provider?: string };
  /**
   * An invitation to join an organization, sent to an address that may or may not have an
   * account (the mail is the same either way). `organizationName` is the organization's name as
   * its members set it (checked by the name rule, as a person's name is); the link is a secret
   * until it is used, revoked or expires. `name` is always null: the invitee is not known.
   */
  'organization-invitation': { name: null; organizationName: string; role: string; acceptUrl: string; expiresInMinutes: number };
  /**
   * To the administrators: a webhook endpoint kept failing for days and was disabled. Names the
   * endpoint by id and host only (never its secret or full URL with a query).
   */
  'webhook-endpoint-disabled': { name: string | null; endpointId: string; host: string; failingSinceAt: number; adminUrl: string };
}

export type TemplateName = keyof MailTemplates;

/** The changes a `security-notice` tells of; each has its texts in the catalogs. */
export const SECURITY_CHANGES = ['totpAdded', 'totpRemoved', 'recoveryCodesRenewed', 'secondFactorsReset', 'passkeyAdded', 'passkeyRemoved', 'providerLinked', 'providerUnlinked'] as const;
export type SecurityChange = (typeof SECURITY_CHANGES)[number];

export const TEMPLATE_NAMES: readonly TemplateName[] = [
  'password-reset',
  'password-changed',
  'verify-email',
  'signup-existing-account',
  'security-notice',
  'organization-invitation',
  'webhook-endpoint-disabled',
];

/** A message ready to send. */
export interface RenderedMail {
  subject: string;
  text: string;
  html: string;
}

export interface MailRenderer {
  /** `template` with `data`, in `locale`. */
  render<T extends TemplateName>(template: T, data: MailTemplates[T], locale: Locale): RenderedMail;
}

export function isTemplateName(value: string): value is TemplateName {
  return (TEMPLATE_NAMES as readonly string[]).includes(value);
}

/**
 * `brandName`: who the mails say they are from (BRAND_NAME; Gatehouse by default). `translations`:
 * every module's catalogs, merged and checked (the i18n module's `translations` service).
 */
export function createMailRenderer(options: { authUrl: string; translations: Translations; brandName?: string; dir?: string }): MailRenderer {
  const dir = options.dir ?? TEMPLATES_DIR;
  // Plain text keeps every line break as written: blank lines are its only layout.
  const text = new Eta({ autoEscape: false, autoTrim: false });
  const html = new Eta({ autoEscape: true, autoTrim: [false, 'nl'] });
  const load = (eta: Eta, name: string, kind: 'text' | 'html') => eta.loadTemplate(name, readFileSync(join(dir, `${name}.${kind}.eta`), 'utf8'));
  load(text, 'layout', 'text');
  load(html, 'layout', 'html');
  load(html, 'button', 'html');
  for (const name of TEMPLATE_NAMES) {
    load(text, name, 'text');
    load(html, name, 'html');
  }
  // The keys made from names (the templates' literal ones are checked by the catalog test): a
  // missing one would put the key itself in a subject. Every language has English's keys.
  const english = options.translations.translator(DEFAULT_LOCALE);
  const builtKeys = [
    ...TEMPLATE_NAMES.filter((name) => name !== 'security-notice').map((name) => `mail.${name}.subject`),
    ...SECURITY_CHANGES.flatMap((change) => [`mail.security-notice.${change}.subject`, `mail.security-notice.${change}.intro`]),
  ];
  const missing = builtKeys.filter((key) => english.t(key, { brand: '', time: '', provider: '' }) === key);
  if (missing.length > 0) throw new Error(`mail: the catalogs lack ${missing.join(', ')}`);

  return {
    render(template, data, locale) {
      const brandName = options.brandName ?? 'Gatehouse';
      const i18n = options.translations.translator(locale);
      // `{brand}` is the brand's name (a name, never user-supplied text); a value, never parsed as ICU.
      const subject = 'change' in data ? i18n.t(`mail.security-notice.${data.change}.subject`, { brand: brandName, provider: data.provider ?? '' }) : i18n.t(`mail.${template}.subject`, { brand: brandName });
      const model = { ...presentable(data, i18n, brandName), subject, authUrl: options.authUrl, brandName, i18n };
      return {
        subject,
        text: `${text.render(template, model).trim()}\n`,
        html: html.render(template, model),
      };
    },
  };
}

/**
 * The wording every template shares, in the mail's language: a greeting, durations and times in
 * words. A name the name rule refuses (stored before the rule, say: a bidi override, a line break)
 * is never put in a mail: the greeting is then neutral, as without a name; so is an organization's
 * (the invitation then says "an organization").
 */
function presentable(data: MailTemplates[TemplateName], i18n: Translator, brandName: string): Record<string, unknown> {
  const model: Record<string, unknown> = { ...data };
  const name = typeof data.name === 'string' && isValidName(data.name) ? data.name.replace(/\s+/g, ' ').trim() : '';
  model.greeting = name === '' ? i18n.t('mail.layout.greeting') : i18n.t('mail.layout.greetingNamed', { name });
  if ('expiresInMinutes' in data) model.expiresIn = i18n.duration(data.expiresInMinutes * 60);
  if ('changedAt' in data) model.changedAt = formatDateTime(data.changedAt, i18n.locale);
  if ('failingSinceAt' in data) model.failingSince = formatDateTime(data.failingSinceAt, i18n.locale);
  if ('organizationName' in data) model.organizationName = isValidName(data.organizationName) ? data.organizationName.replace(/\s+/g, ' ').trim() : null;
  if ('change' in data) model.changeText = i18n.t(`mail.security-notice.${data.change}.intro`, { brand: brandName, time: model.changedAt as string, provider: data.provider ?? '' });
  if ('linkedProviders' in data && data.linkedProviders !== undefined && data.linkedProviders.names.length > 0) {
    model.linkedProviders = { list: listFormat(i18n.locale).format(data.linkedProviders.names), reviewUrl: data.linkedProviders.reviewUrl };
  } else {
    model.linkedProviders = null;
  }
  return model;
}

/** "GitHub and Google", "GitHub und Google", "GitHub、Google": built once per language. */
const listFormats = new Map<Locale, Intl.ListFormat>();

function listFormat(locale: Locale): Intl.ListFormat {
  let format = listFormats.get(locale);
  if (format === undefined) {
    format = new Intl.ListFormat(locale, { style: 'long', type: 'conjunction' });
    listFormats.set(locale, format);
  }
  return format;
}

/** Built once per language: "November 14, 2023 at 10:13 PM UTC", "14. November 2023 um 22:13 UTC". */
const dateTimeFormats = new Map<Locale, Intl.DateTimeFormat>();

function formatDateTime(epochMs: number, locale: Locale): string {
  let format = dateTimeFormats.get(locale);
  if (format === undefined) {
    format = new Intl.DateTimeFormat(locale, { year: 'numeric', month: 'long', day: 'numeric', hour: 'numeric', minute: '2-digit', timeZone: 'UTC', timeZoneName: 'short' });
    dateTimeFormats.set(locale, format);
  }
  return format.format(epochMs);
}
