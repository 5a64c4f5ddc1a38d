/** The impersonation module's mail: an administrator acted as you (files in mail/, texts `impersonation.mail.…`). */
import { join } from 'node:path';
import { defineMailTemplates } from '../mail/templates.ts';

declare module '../mail/templates.ts' {
  interface MailTemplates {
    /** Sent when an impersonation has ended (stopped or expired): when it began and ended, and the administrator's reason. */
    'impersonation-ended': { name: string | null; reason: string; startedAt: number; endedAt: number; dashboardUrl: string };
  }
}

export const impersonationMail = defineMailTemplates({
  'impersonation-ended': {
    dir: join(import.meta.dirname, 'mail'),
    subject: (_data, { i18n, brandName }) => i18n.t('impersonation.mail.impersonation-ended.subject', { brand: brandName }),
    model: (data, mail) => ({ reason: data.reason, startedAt: mail.dateTime(data.startedAt), endedAt: mail.dateTime(data.endedAt), dashboardUrl: data.dashboardUrl }),
  },
});
