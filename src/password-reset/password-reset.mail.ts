/** The password-reset module's mail: the link that sets a new password (files in mail/, texts `password-reset.mail.…`). */
import { join } from 'node:path';
import { defineMailTemplates } from '../mail/templates.ts';

declare module '../mail/templates.ts' {
  interface MailTemplates {
    /** A link that lets the holder set a new password: a secret until it is used or expires. */
    'password-reset': { name: string | null; resetUrl: string; expiresInMinutes: number };
    /** An administrator added the account: the same kind of link, to choose its first password, worded as an invitation. */
    'password-invitation': { name: string | null; resetUrl: string; expiresInMinutes: number };
  }
}

const dir = join(import.meta.dirname, 'mail');

export const passwordResetMail = defineMailTemplates({
  'password-reset': {
    dir,
    subject: (_data, { i18n, brandName }) => i18n.t('password-reset.mail.password-reset.subject', { brand: brandName }),
    model: (data, { i18n }) => ({ expiresIn: i18n.duration(data.expiresInMinutes * 60) }),
  },
  'password-invitation': {
    dir,
    subject: (_data, { i18n, brandName }) => i18n.t('password-reset.mail.password-invitation.subject', { brand: brandName }),
    model: (data, { i18n }) => ({ expiresIn: i18n.duration(data.expiresInMinutes * 60) }),
  },
});
