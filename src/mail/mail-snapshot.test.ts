/**
 * Every mail, byte for byte: each template in every language, with fixed data (and the variants its
 * model has: a refused name, linked providers, every security change, another brand), rendered and
 * compared with test/fixtures/mail-snapshot.json (a digest of each subject, text and HTML: the mails
 * themselves would make it half a megabyte). It protects the sent mails from an accidental change (a
 * template moved, a key renamed, a helper shared). A change meant to be seen in the mails:
 * `UPDATE_MAIL_SNAPSHOT=1 node --test src/mail/mail-snapshot.test.ts`, and review the fixture's diff.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { mailTemplates, SECURITY_CHANGES, translations } from '../../test/helpers/mail-templates.ts';
import { LOCALES, type Locale } from '../i18n/locales.ts';
import { createMailRenderer, type MailRenderer, type RenderedMail } from './templates.ts';

const SNAPSHOT = join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'mail-snapshot.json');
const AUTH_URL = 'https://auth.example.test';

const renderer = (brandName?: string): MailRenderer => createMailRenderer({ authUrl: AUTH_URL, translations, templates: mailTemplates, ...(brandName !== undefined && { brandName }) });

const url = (path: string) => `${AUTH_URL}${path}?token=a&b=<c>`;
const AT = Date.UTC(2026, 10, 21, 14, 5);

/** Every case, by a label: what it renders. */
const CASES: Record<string, (mail: MailRenderer, locale: Locale) => RenderedMail> = {
  'password-reset': (mail, locale) => mail.render('password-reset', { name: 'Ada', resetUrl: url('/auth/reset-password'), expiresInMinutes: 60 }, locale),
  'password-reset refused name': (mail, locale) => mail.render('password-reset', { name: 'Evil\u202EAda', resetUrl: url('/auth/reset-password'), expiresInMinutes: 30 }, locale),
  'password-invitation': (mail, locale) => mail.render('password-invitation', { name: 'Grace', resetUrl: url('/auth/reset-password'), expiresInMinutes: 60 }, locale),
  'password-changed': (mail, locale) => mail.render('password-changed', { name: null, changedAt: AT, forgotPasswordUrl: url('/auth/forgot-password') }, locale),
  'password-changed linked providers': (mail, locale) =>
    mail.render('password-changed', { name: 'Ada  Lovelace', changedAt: AT, forgotPasswordUrl: url('/auth/forgot-password'), linkedProviders: { names: ['GitHub', 'Google', 'Acme <SSO>'], reviewUrl: url('/auth/review-providers') } }, locale),
  'password-changed no linked providers': (mail, locale) =>
    mail.render('password-changed', { name: 'Ada', changedAt: AT, forgotPasswordUrl: url('/auth/forgot-password'), linkedProviders: { names: [], reviewUrl: url('/auth/review-providers') } }, locale),
  'verify-email': (mail, locale) => mail.render('verify-email', { name: 'Ada', verifyUrl: url('/auth/verify-email'), expiresInMinutes: 1440 }, locale),
  'verify-email minutes': (mail, locale) => mail.render('verify-email', { name: null, verifyUrl: url('/auth/verify-email'), expiresInMinutes: 5 }, locale),
  'signup-existing-account': (mail, locale) => mail.render('signup-existing-account', { name: 'Ada', signInUrl: url('/auth/signin'), forgotPasswordUrl: url('/auth/forgot-password') }, locale),
  ...Object.fromEntries(
    SECURITY_CHANGES.map((change) => [
      `security-notice ${change}`,
      (mail: MailRenderer, locale: Locale) =>
        mail.render('security-notice', { name: 'Ada', change, changedAt: AT, forgotPasswordUrl: url('/auth/forgot-password'), ...(change.startsWith('provider') && { provider: 'GitHub <x>' }) }, locale),
    ]),
  ),
  'organization-invitation': (mail, locale) =>
    mail.render('organization-invitation', { name: null, organizationName: 'Acme  <Labs>', role: 'ADMIN', acceptUrl: url('/organizations/invitations/accept'), expiresInMinutes: 7 * 1440 }, locale),
  'organization-invitation refused name': (mail, locale) =>
    mail.render('organization-invitation', { name: null, organizationName: 'Evil\u202Eorg', role: 'MEMBER', acceptUrl: url('/organizations/invitations/accept'), expiresInMinutes: 60 }, locale),
  'email-signin': (mail, locale) => mail.render('email-signin', { name: 'Ada', purpose: 'signin', linkUrl: url('/auth/email-signin/link'), code: '042917', expiresInMinutes: 10 }, locale),
  'email-signin signup': (mail, locale) => mail.render('email-signin', { name: null, purpose: 'signup', linkUrl: url('/auth/email-signin/link'), code: '70315842', expiresInMinutes: 60 }, locale),
  'webhook-endpoint-disabled': (mail, locale) =>
    mail.render('webhook-endpoint-disabled', { name: 'Ada', endpointId: 'ep1', host: 'hooks.example.com', failingSinceAt: Date.UTC(2026, 10, 20, 8, 0), adminUrl: url('/admin/webhooks/ep1') }, locale),
};

/** A part of a mail as the snapshot keeps it: 64 bits of its SHA-256, enough to see any change. */
const digest = (part: string) => createHash('sha256').update(part).digest('hex').slice(0, 16);

/** Every case in every language with the default brand, and in two languages with a brand to escape. */
function renderEverything(): Record<string, RenderedMail> {
  const all: Record<string, RenderedMail> = {};
  for (const [brand, locales] of [[undefined, LOCALES], ['Acme & Co', ['en', 'ja']]] as const) {
    const mail = renderer(brand);
    for (const locale of locales) {
      for (const [label, render] of Object.entries(CASES)) {
        const { subject, text, html } = render(mail, locale);
        all[`${brand ?? 'default'} | ${locale} | ${label}`] = { subject, text, html };
      }
    }
  }
  return all;
}

describe('mail snapshot', () => {
  it('renders every template in every language exactly as the snapshot has it', () => {
    const rendered = renderEverything();
    const digests = Object.fromEntries(Object.entries(rendered).map(([label, mail]) => [label, { subject: digest(mail.subject), text: digest(mail.text), html: digest(mail.html) }]));
    if (process.env.UPDATE_MAIL_SNAPSHOT === '1') writeFileSync(SNAPSHOT, `${JSON.stringify(digests, null, 1)}\n`);
    const snapshot = JSON.parse(readFileSync(SNAPSHOT, 'utf8')) as Record<string, Record<keyof RenderedMail, string>>;
    assert.deepEqual(Object.keys(digests).sort(), Object.keys(snapshot).sort(), 'the same cases');
    for (const [label, mail] of Object.entries(rendered)) {
      for (const part of ['subject', 'text', 'html'] as const) {
        assert.equal(digests[label]![part], snapshot[label]![part], `${label}: the ${part} changed; it is now:\n${mail[part]}`);
      }
    }
  });
});
