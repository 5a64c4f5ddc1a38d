/**
 * What the MFA module enforces on routes (authorization/route-access.ts), by the routes' own
 * declarations, never by path:
 * - the MFA policy (MFA_REQUIRED_ROLES), on every signed-in routed request: a holder of a listed
 *   role who has no second factor reaches only the routes declared reachable `DURING_ENROLMENT`
 *   (enrolment itself, signing out, the dashboard): API paths answer 403 MFA_ENROLLMENT_REQUIRED,
 *   pages go to the enrolment section; and a route for ADMIN needs a session that used a second
 *   factor (`mfa` in its `amr`): 403 STEP_UP_REQUIRED until the user steps up
 *   (`POST /api/auth/mfa/step-up`). Off (no cost at all) while MFA_REQUIRED_ROLES is empty.
 * - the requirement `RECENT_SECOND_FACTOR`, on the routes that declare it (a new password, an
 *   administrator's change to a user, a new factor…): a user who has a second factor must have
 *   used it in this session within REAUTH_WINDOW (403 REAUTH_REQUIRED otherwise).
 * - the requirement `RECENT_SIGN_IN`: the session signed in (or stepped up) within REAUTH_WINDOW.
 * The rule for "this session used a second factor" is stated once in docs/guides/mfa.md.
 */
import type { AccessPolicy, AccessRefusal, AccessRequirement } from '../module.ts';
import { DURING_ENROLMENT, RECENT_SECOND_FACTOR, RECENT_SIGN_IN } from '../authorization/access.ts';
import { ADMIN_ROLE } from '../users/user.service.ts';
import type { Clock } from '../lib/clock.ts';
import type { MfaConfig } from './mfa.config.ts';
import type { MfaService } from './mfa.service.ts';

/** Where a page load goes while enrolment is required (the dashboard's second-factor section). */
export const MFA_ENROLMENT_PAGE = '/dashboard#mfa-heading';

interface Deps {
  mfa: MfaService;
  config: MfaConfig;
  clock: Clock;
}

export function createMfaPolicy(deps: Deps): AccessPolicy {
  const { mfa, config } = deps;
  const required = new Set(config.requiredRoles);

  return {
    name: 'mfa-required-roles',
    isActive: required.size > 0,
    exemption: DURING_ENROLMENT,
    async check(auth, { access }): Promise<AccessRefusal | null> {
      if (!auth.roles.some((role) => required.has(role))) return null;
      const usedSecondFactor = auth.amr.includes('mfa');
      // A session that used a second factor belongs to a user who has one: no query.
      if (!usedSecondFactor && (await mfa.methodsOf(auth.userId)).length === 0) {
        // The dashboard is reachable during enrolment, so the enrolment section there stays open.
        return { code: 'MFA_ENROLLMENT_REQUIRED', redirectTo: MFA_ENROLMENT_PAGE };
      }
      if (access.who === 'role' && access.role === ADMIN_ROLE && !usedSecondFactor) return { code: 'STEP_UP_REQUIRED' };
      return null;
    },
  };
}

export function createMfaRequirements(deps: Deps): readonly AccessRequirement[] {
  const { mfa, config, clock } = deps;
  const isRecent = (authTime: number) => authTime >= clock() - config.reauthWindowSeconds * 1000;
  return [
    {
      name: RECENT_SECOND_FACTOR,
      async check(auth): Promise<AccessRefusal | null> {
        if (auth.amr.includes('mfa') && isRecent(auth.authTime)) return null;
        // Only a user who has a second factor can be asked for one.
        return (await mfa.methodsOf(auth.userId)).length === 0 ? null : { code: 'REAUTH_REQUIRED' };
      },
    },
    {
      name: RECENT_SIGN_IN,
      async check(auth): Promise<AccessRefusal | null> {
        return isRecent(auth.authTime) ? null : { code: 'REAUTH_REQUIRED' };
      },
    },
  ];
}
