/**
 * Mail templates: each module owns its own (the `mailTemplates` slot of module.ts), by name: the
 * files `<dir>/<name>.text.eta` (plain text, nothing escaped) and `<dir>/<name>.html.eta` (every
 * `<%= %>` HTML-escaped), each inside the mail module's layout (`templates/layout.*.eta`, and its
 * `button` for HTML). Each is compiled when a mail first needs it (web/eta-on-first-use.ts; that
 * every one compiles is checked by src/web/templates.test.ts); a name two modules declare stops the start.
 *
 * Every text, the subject included, is a message of the owning module's catalogs (keys
 * `<module>.mail.<template>.…`; both variants of a template share them), rendered in the language
 * the caller chose for the recipient (`MailMessage.locale`). Times are written as that language
 * writes them, in UTC (said so: we do not know the reader's time zone); durations in its words
 * (`Translator.duration`). The layout's texts (greeting, footer, button) are the mail module's.
 */
import { join } from 'node:path';
import { Eta } from 'eta/core';
import { compileOnFirstUse } from '../web/eta-on-first-use.ts';
import { isValidName } from '../users/name.ts';
import { DEFAULT_LOCALE, type Locale } from '../i18n/locales.ts';
import type { Translations, Translator } from '../i18n/translator.ts';

const LAYOUT_DIR = join(import.meta.dirname, 'templates');

/**
 * What each template reads, by its name: each module adds its own where it declares them (its
 * `*.mail.ts` file), as it adds its services to the registry:
 *
 *   declare module '../mail/templates.ts' {
 *     interface MailTemplates { 'magic-link': { name: string | null; signInUrl: string; expiresInMinutes: number } }
 *   }
 *
 * Every `…Url` must be a full link under AUTH_URL (`MailService.link`). Every template reads a
 * `name`: the account's name only when a mail may greet by it (`greetingName` in users/name.ts),
 * else null: the greeting is then a neutral "Hello,".
 */
export interface MailTemplates {}

export type TemplateName = keyof MailTemplates;

/**
 * The changes a `security-notice` tells of (a second factor added, say), by the module that
 * declares them in its `securityNotices` slot: each module adds its own as a union of names.
 */
export interface SecurityChanges {}
export type SecurityChange = SecurityChanges[keyof SecurityChanges];

/** What a template's `subject` and `model` are given: the mail's language and the shared wording. */
export interface MailWording {
  readonly i18n: Translator;
  /** Who the mails say they are from (BRAND_NAME): a name, never user-supplied text. */
  readonly brandName: string;
  /** A time as the mail's language writes it, in UTC: "November 14, 2023 at 10:13 PM UTC". */
  dateTime(epochMs: number): string;
  /** Names joined as the language joins them: "GitHub and Google", "GitHub und Google". */
  list(names: readonly string[]): string;
  /** A name as a mail may show it (spaces collapsed), or null when the name rule refuses it (a bidi override, a line break). */
  name(value: string): string | null;
}

/**
 * One mail a module sends (its `mailTemplates` slot, by name). Its files read the data, with
 * what `model` adds, and what every mail has: `greeting`, `subject`, `brandName`, `authUrl`, `i18n`.
 */
export interface MailTemplate<T extends TemplateName = TemplateName> {
  /** The folder of its two files, `<name>.text.eta` and `<name>.html.eta`. */
  readonly dir: string;
  /** Its subject, in the mail's language: usually `i18n.t('<module>.mail.<name>.subject', { brand: brandName })`. */
  subject(data: MailTemplates[T], mail: MailWording): string;
  /** What its files read besides the data (the data's own fields, formatted, override it). */
  model?(data: MailTemplates[T], mail: MailWording): Record<string, unknown>;
  /** The keys its code builds from names (its files' and code's literal ones are checked by the catalog test): one English lacks stops the start. */
  readonly builtKeys?: readonly string[];
}

/** A module's templates, each typed by the data its name reads (`MailTemplates`). */
export type ModuleMailTemplates = { readonly [T in TemplateName]?: MailTemplate<T> };

/** Declares a module's templates; the identity function, for the type checking of each against its name's data. */
export function defineMailTemplates<const M extends ModuleMailTemplates>(templates: M): M {
  return templates;
}

/** A message ready to send. */
export interface RenderedMail {
  subject: string;
  text: string;
  html: string;
}

export interface MailRenderer {
  /** `template` with `data`, in `locale`. */
  render<T extends TemplateName>(template: T, data: MailTemplates[T], locale: Locale): RenderedMail;
  /** Whether a module declares a template of that name. */
  has(template: string): template is TemplateName;
}

/**
 * `templates`: every module's, by name (module.ts `collectMailTemplates`). `brandName`: who the
 * mails say they are from (BRAND_NAME; Gatehouse by default). `translations`: every module's
 * catalogs, merged and checked (the i18n module's `translations` service).
 */
export function createMailRenderer(options: {
  authUrl: string;
  translations: Translations;
  templates: ReadonlyMap<string, MailTemplate>;
  brandName?: string;
  /** The layout's folder (tests). */
  dir?: string;
}): MailRenderer {
  const dir = options.dir ?? LAYOUT_DIR;
  // Plain text keeps every line break as written: blank lines are its only layout.
  const text = new Eta({ autoEscape: false, autoTrim: false });
  const html = new Eta({ autoEscape: true, autoTrim: [false, 'nl'] });
  const textFiles = new Map([['layout', join(dir, 'layout.text.eta')]]);
  const htmlFiles = new Map([
    ['layout', join(dir, 'layout.html.eta')],
    ['button', join(dir, 'button.html.eta')],
  ]);
  for (const [name, template] of options.templates) {
    if (name === 'layout' || name === 'button') throw new Error(`mail: a template may not be named "${name}" (the layout's)`);
    textFiles.set(name, join(template.dir, `${name}.text.eta`));
    htmlFiles.set(name, join(template.dir, `${name}.html.eta`));
  }
  // Each file is compiled when a mail first needs it (web/eta-on-first-use.ts).
  compileOnFirstUse(text, textFiles);
  compileOnFirstUse(html, htmlFiles);
  // A missing key would put the key itself in a subject. Every language has English's keys.
  const english = options.translations.translator(DEFAULT_LOCALE);
  const missing = [...options.templates.values()].flatMap((template) => template.builtKeys ?? []).filter((key) => english.t(key, { brand: '', time: '', provider: '' }) === key);
  if (missing.length > 0) throw new Error(`mail: the catalogs lack ${missing.join(', ')}`);

  return {
    render(name, data, locale) {
      const template = options.templates.get(name) as MailTemplate<typeof name> | undefined;
      if (template === undefined) throw new TypeError('mail: unknown template');
      const brandName = options.brandName ?? 'Gatehouse';
      const mail = wording(options.translations.translator(locale), brandName);
      const subject = template.subject(data, mail);
      const model = { ...data, greeting: greeting(data, mail), ...template.model?.(data, mail), subject, authUrl: options.authUrl, brandName, i18n: mail.i18n };
      return {
        subject,
        text: `${text.render(name, model).trim()}\n`,
        html: html.render(name, model),
      };
    },
    has: (template): template is TemplateName => options.templates.has(template),
  };
}

/**
 * The greeting every mail opens with, in its language. A name the name rule refuses (stored before
 * the rule, say) is never put in a mail: the greeting is then neutral, as without a name.
 */
function greeting(data: { name?: unknown }, mail: MailWording): string {
  const name = typeof data.name === 'string' ? mail.name(data.name) : null;
  return name === null || name === '' ? mail.i18n.t('mail.layout.greeting') : mail.i18n.t('mail.layout.greetingNamed', { name });
}

function wording(i18n: Translator, brandName: string): MailWording {
  return {
    i18n,
    brandName,
    dateTime: (epochMs) => formatDateTime(epochMs, i18n.locale),
    list: (names) => listFormat(i18n.locale).format(names),
    name: (value) => (isValidName(value) ? value.replace(/\s+/g, ' ').trim() : null),
  };
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
