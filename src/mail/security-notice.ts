/**
 * The mail module's own template: `security-notice`, a security-relevant change to the account
 * that its owner should hear of. The changes are the other modules' (`securityNotices`: a second
 * factor added, a provider linked…): each has its subject and sentence in its module's catalogs,
 * `<module>.mail.security-notice.<change>.subject` and `.intro` (given `{brand}`, `{time}` and
 * `{provider}`); the frame around them (what to do if it was not you) is this module's.
 */
import { join } from 'node:path';
import type { MailTemplate, SecurityChange } from './templates.ts';

declare module './templates.ts' {
  interface MailTemplates {
    /**
     * `change` names the change (one a module declares in `securityNotices`). `provider` is the
     * configured name of the provider a notice about a linked or unlinked provider is about.
     */
    'security-notice': { name: string | null; change: SecurityChange; changedAt: number; forgotPasswordUrl: string; provider?: string };
  }
}

/** The notice, given the module that declares each change (module.ts `collectSecurityNotices`). */
export function securityNoticeTemplate(changes: ReadonlyMap<string, string>): MailTemplate<'security-notice'> {
  const key = (change: string, text: 'subject' | 'intro') => {
    const module = changes.get(change);
    if (module === undefined) throw new TypeError(`mail: no module declares the security change "${change}"`);
    return `${module}.mail.security-notice.${change}.${text}`;
  };
  return {
    dir: join(import.meta.dirname, 'templates'),
    subject: (data, { i18n, brandName }) => i18n.t(key(data.change, 'subject'), { brand: brandName, provider: data.provider ?? '' }),
    model(data, mail) {
      const changedAt = mail.dateTime(data.changedAt);
      return { changedAt, changeText: mail.i18n.t(key(data.change, 'intro'), { brand: mail.brandName, time: changedAt, provider: data.provider ?? '' }) };
    },
    builtKeys: [...changes.keys()].flatMap((change) => [key(change, 'subject'), key(change, 'intro')]),
  };
}
