/** The verification module's mail: the link that confirms an address (files in mail/, texts `verification.mail.…`). */
import { join } from 'node:path';
import { defineMailTemplates } from '../mail/templates.ts';

declare module '../mail/templates.ts' {
  interface MailTemplates {
    /** A link that confirms the address: a secret until used. */
    'verify-email': { name: string | null; verifyUrl: string; expiresInMinutes: number };
  }
}

const dir = join(import.meta.dirname, 'mail');

export const verificationMail = defineMailTemplates({
  'verify-email': {
    dir,
    subject: (_data, { i18n, brandName }) => i18n.t('verification.mail.verify-email.subject', { brand: brandName }),
    model: (data, { i18n }) => ({ expiresIn: i18n.duration(data.expiresInMinutes * 60) }),
  },
});
