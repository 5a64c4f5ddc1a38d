/**
 * Enforcement: for an address in a verified domain of an organization whose SSO connection enforces,
 * every first factor but SSO (a password, a mailed link, a passkey, another provider) is refused at
 * this sign-in step, with `SSO_REQUIRED` in the audit log.
 * Break-glass: a Gatehouse administrator (role ADMIN) is not refused, so that an IdP outage or a
 * broken connection never locks out the people who fix it. Set MFA_REQUIRED_ROLES=ADMIN so that such a
 * sign-in still needs a second factor (docs/guides/sso.md).
 */
import type { SignInStep } from '../signin/signin-pipeline.ts';
import { ADMIN_ROLE } from '../users/user.service.ts';
import { SSO_FACTOR } from './sso-factor.ts';

export const SSO_ENFORCEMENT_STEP = 'sso-enforcement';

export function ssoEnforcementStep(isEnforcedFor: (email: string) => Promise<boolean>): SignInStep {
  return {
    name: SSO_ENFORCEMENT_STEP,
    async decide({ user, factor }) {
      if (factor.kind === SSO_FACTOR || user.roles.includes(ADMIN_ROLE)) return { action: 'continue' };
      return (await isEnforcedFor(user.email)) ? { action: 'refuse', reason: 'SSO_REQUIRED' } : { action: 'continue' };
    },
  };
}
