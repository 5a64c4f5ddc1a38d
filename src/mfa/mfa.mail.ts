/** The changes the MFA module tells an account's owner of (a `security-notice` mail; texts `mfa.mail.security-notice.<change>.…`). */
export const MFA_SECURITY_NOTICES = ['totpAdded', 'totpRemoved', 'recoveryCodesRenewed', 'secondFactorsReset'] as const;

declare module '../mail/templates.ts' {
  interface SecurityChanges {
    mfa: (typeof MFA_SECURITY_NOTICES)[number];
  }
}
