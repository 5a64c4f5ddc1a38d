/**
 * The language a mail to a person is written in: the language stored with their account
 * (`User.locale`), else the language of the request that causes the mail (its `gatehouse.lang`
 * cookie, `?lang=` on a page, or Accept-Language: `AuditSource.locale`), else English. Every
 * caller of `MailService.enqueue` decides it, so no mail goes out in a language nobody chose.
 */
import { DEFAULT_LOCALE, type Locale } from '../i18n/locales.ts';

export function mailLocale(recipient: { readonly locale: Locale | null } | null, request?: { readonly locale?: Locale | undefined }): Locale {
  return recipient?.locale ?? request?.locale ?? DEFAULT_LOCALE;
}
