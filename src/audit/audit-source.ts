/**
 * Where an audited action came from, and the two sources that are no request's. Its own file,
 * without the store, so that a command can name its source before it loads the services.
 */
import type { Locale } from '../i18n/locales.ts';

/** Where an action came from: who did it (null: nobody signed in, or the CLI) and their client. */
export interface AuditSource {
  actorUserId: string | null;
  ip: string | null;
  userAgent: string | null;
  /** Set for actions not made by a user over our HTTP routes (`registration`: a client registered itself, RFC 7591); recorded in `details.via`. */
  via?: 'cli' | 'bootstrap' | 'registration';
  /**
   * The language of the request (`?lang=` on a page, the language cookie, Accept-Language), when it
   * gave one: mails the action causes use it for a recipient with no stored language, and a sign-up
   * or first sign-in stores it (users/locale.ts). Never recorded in the audit log.
   */
  locale?: Locale;
  /**
   * Reads a cookie of the request (a trusted browser's, for a second-factor waiver:
   * signin/second-factor-waiver.ts). A function, so that the source's JSON (a log line) never holds
   * one; never recorded in the audit log.
   */
  cookie?: (name: string) => string | undefined;
}

/** Gatehouse itself: no actor, no client (housekeeping, tests). */
export const SYSTEM_SOURCE: AuditSource = Object.freeze({ actorUserId: null, ip: null, userAgent: null });

/** An operator at the `gatehouse` command line. */
export const CLI_SOURCE: AuditSource = Object.freeze({ actorUserId: null, ip: null, userAgent: null, via: 'cli' as const });
