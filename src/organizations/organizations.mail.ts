/** The organizations module's mail: an invitation to join one (files in mail/, texts `organizations.mail.…`). */
import { join } from 'node:path';
import { defineMailTemplates } from '../mail/templates.ts';

declare module '../mail/templates.ts' {
  interface MailTemplates {
    /**
     * An invitation to join an organization, sent to an address that may or may not have an
     * account (the mail is the same either way). `organizationName` is the organization's name as
     * its members set it (checked by the name rule, as a person's name is: one it refuses makes the
     * mail say "an organization"); the link is a secret until it is used, revoked or expires.
     * `name` is always null: the invitee is not known.
     */
    'organization-invitation': { name: null; organizationName: string; role: string; acceptUrl: string; expiresInMinutes: number };
  }
}

const dir = join(import.meta.dirname, 'mail');

export const organizationsMail = defineMailTemplates({
  'organization-invitation': {
    dir,
    subject: (_data, { i18n, brandName }) => i18n.t('organizations.mail.organization-invitation.subject', { brand: brandName }),
    model: (data, mail) => ({ expiresIn: mail.i18n.duration(data.expiresInMinutes * 60), organizationName: mail.name(data.organizationName) }),
  },
});
