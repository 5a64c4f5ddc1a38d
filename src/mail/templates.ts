/**
 * Mail templates: for each name, `templates/<name>.text.eta` (plain text, nothing escaped) and
 * `templates/<name>.html.eta` (every `<%= %>` HTML-escaped), each inside its layout. All are
 * compiled once when the renderer is made, so a broken template fails start-up, not a send.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Eta } from 'eta/core';
import { isValidName } from '../users/name.ts';

const TEMPLATES_DIR = join(import.meta.dirname, 'templates');

/**
 * What each template reads. Every `…Url` must be a full link under AUTH_URL (`MailService.link`).
 * Every `name` is the account's name only when a mail may greet by it (`greetingName` in
 * users/name.ts), else null: the greeting is then a neutral "Hello,".
 */
export interface MailTemplates {
  /** A link that lets the holder set a new password: a secret until it is used or expires. */
  'password-reset': { name: string | null; resetUrl: string; expiresInMinutes: number };
  /** Sent after a password change or reset; the link is the forgot-password page, not a token. */
  'password-changed': { name: string | null; changedAt: number; forgotPasswordUrl: string };
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
   * or removed, say), in the words of the module that made it: `change` completes "… on <time>."
   * (e.g. "An authenticator app was added to your Gatehouse account"); never user-supplied text.
   */
  'security-notice': { name: string | null; subject: string; change: string; changedAt: number; forgotPasswordUrl: string };
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

export const TEMPLATE_NAMES: readonly TemplateName[] = [
  'password-reset',
  'password-changed',
  'verify-email',
  'signup-existing-account',
  'security-notice',
  'organization-invitation',
  'webhook-endpoint-disabled',
];

/** The subject of each template; `security-notice` takes its own from the data. */
const SUBJECTS: Record<Exclude<TemplateName, 'security-notice'>, string> = {
  'password-reset': 'Reset your {brand} password',
  'password-changed': 'Your {brand} password was changed',
  'verify-email': 'Confirm your e-mail address for {brand}',
  'signup-existing-account': 'You already have a {brand} account',
  'organization-invitation': 'You are invited to join an organization on {brand}',
  'webhook-endpoint-disabled': 'A {brand} webhook endpoint was disabled',
};

/** A message ready to send. */
export interface RenderedMail {
  subject: string;
  text: string;
  html: string;
}

export interface MailRenderer {
  render<T extends TemplateName>(template: T, data: MailTemplates[T]): RenderedMail;
}

export function isTemplateName(value: string): value is TemplateName {
  return (TEMPLATE_NAMES as readonly string[]).includes(value);
}

/** `brandName`: who the mails say they are from (BRAND_NAME; Gatehouse by default). */
export function createMailRenderer(options: { authUrl: string; brandName?: string; dir?: string }): MailRenderer {
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

  return {
    render(template, data) {
      const brandName = options.brandName ?? 'Gatehouse';
      // `{brand}` in a fixed subject is the brand's name (a name, never user-supplied text).
      const subject = 'subject' in data ? data.subject : SUBJECTS[template as Exclude<TemplateName, 'security-notice'>].replace('{brand}', brandName);
      const model = { ...presentable(data), subject, authUrl: options.authUrl, brandName };
      return {
        subject,
        text: `${text.render(template, model).trim()}\n`,
        html: html.render(template, model),
      };
    },
  };
}

/**
 * The wording helpers every template shares: a greeting, durations and times in words. A name the
 * name rule refuses (stored before the rule, say: a bidi override, a line break) is never put in
 * a mail: the greeting is then neutral, as without a name.
 */
function presentable(data: MailTemplates[TemplateName]): Record<string, unknown> {
  const model: Record<string, unknown> = { ...data };
  const name = typeof data.name === 'string' && isValidName(data.name) ? data.name.replace(/\s+/g, ' ').trim() : '';
  model.greeting = name === '' ? 'Hello,' : `Hello ${name},`;
  if ('expiresInMinutes' in data) model.expiresIn = formatMinutes(data.expiresInMinutes);
  if ('changedAt' in data) model.changedAt = formatUtc(data.changedAt);
  if ('failingSinceAt' in data) model.failingSince = formatUtc(data.failingSinceAt);
  if ('organizationName' in data) model.organizationName = isValidName(data.organizationName) ? data.organizationName.replace(/\s+/g, ' ').trim() : 'an organization';
  return model;
}

function formatMinutes(minutes: number): string {
  if (minutes % 1440 === 0) return minutes === 1440 ? '24 hours' : `${minutes / 1440} days`;
  if (minutes % 60 === 0) return minutes === 60 ? '1 hour' : `${minutes / 60} hours`;
  return minutes === 1 ? '1 minute' : `${minutes} minutes`;
}

function formatUtc(epochMs: number): string {
  const iso = new Date(epochMs).toISOString();
  return `${iso.slice(0, 10)} at ${iso.slice(11, 16)} UTC`;
}
