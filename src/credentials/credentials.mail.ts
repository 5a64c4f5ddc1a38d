/** The credentials module's mails: a password changed, a sign-up with a known address (files in mail/, texts `credentials.mail.…`). */
import { join } from 'node:path';
import { defineMailTemplates } from '../mail/templates.ts';

declare module '../mail/templates.ts' {
  interface MailTemplates {
    /**
     * Sent after a password change or reset; `forgotPasswordUrl` is the forgot-password page, not a
     * token. After a reset, `linkedProviders` names the providers that can still sign in to the
     * account (their configured names) and `reviewUrl` is a page, under a token of its own, where
     * each is removed in one step: a thief who linked one keeps no way in after the owner's reset.
     */
    'password-changed': { name: string | null; changedAt: number; forgotPasswordUrl: string; linkedProviders?: { names: readonly string[]; reviewUrl: string } };
    /**
     * Someone tried to sign up with an address that has an account. `name` is the account's own
     * confirmed name, never one from the sign-up request (a stranger must not be able to put words in it).
     * The links are plain pages: a live reset token must not be minted by an unauthenticated request.
     */
    'signup-existing-account': { name: string | null; signInUrl: string; forgotPasswordUrl: string };
  }
}

const dir = join(import.meta.dirname, 'mail');

export const credentialsMail = defineMailTemplates({
  'password-changed': {
    dir,
    subject: (_data, { i18n, brandName }) => i18n.t('credentials.mail.password-changed.subject', { brand: brandName }),
    model: ({ changedAt, linkedProviders }, mail) => ({
      changedAt: mail.dateTime(changedAt),
      linkedProviders: linkedProviders !== undefined && linkedProviders.names.length > 0 ? { list: mail.list(linkedProviders.names), reviewUrl: linkedProviders.reviewUrl } : null,
    }),
  },
  'signup-existing-account': {
    dir,
    subject: (_data, { i18n, brandName }) => i18n.t('credentials.mail.signup-existing-account.subject', { brand: brandName }),
  },
});
