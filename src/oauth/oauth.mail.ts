/**
 * The changes the OAuth module tells an account's owner of (a `security-notice` mail, given the
 * provider's configured name; texts `oauth.mail.security-notice.<change>.…`).
 */
export const OAUTH_SECURITY_NOTICES = ['providerLinked', 'providerUnlinked'] as const;

declare module '../mail/templates.ts' {
  interface SecurityChanges {
    oauth: (typeof OAUTH_SECURITY_NOTICES)[number];
  }
}
