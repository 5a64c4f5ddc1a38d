/** The webhooks module's mail: to the administrators, an endpoint disabled (files in mail/, texts `webhooks.mail.…`). */
import { join } from 'node:path';
import { defineMailTemplates } from '../mail/templates.ts';

declare module '../mail/templates.ts' {
  interface MailTemplates {
    /**
     * To the administrators: a webhook endpoint kept failing for days and was disabled. Names the
     * endpoint by id and host only (never its secret or full URL with a query).
     */
    'webhook-endpoint-disabled': { name: string | null; endpointId: string; host: string; failingSinceAt: number; adminUrl: string };
  }
}

const dir = join(import.meta.dirname, 'mail');

export const webhooksMail = defineMailTemplates({
  'webhook-endpoint-disabled': {
    dir,
    subject: (_data, { i18n, brandName }) => i18n.t('webhooks.mail.webhook-endpoint-disabled.subject', { brand: brandName }),
    model: (data, mail) => ({ failingSince: mail.dateTime(data.failingSinceAt) }),
  },
});
