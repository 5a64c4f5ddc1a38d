/** The changes the passkeys module tells an account's owner of (a `security-notice` mail; texts `passkeys.mail.security-notice.<change>.…`). */
export const PASSKEYS_SECURITY_NOTICES = ['passkeyAdded', 'passkeyRemoved'] as const;

declare module '../mail/templates.ts' {
  interface SecurityChanges {
    passkeys: (typeof PASSKEYS_SECURITY_NOTICES)[number];
  }
}
