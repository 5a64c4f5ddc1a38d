/**
 * The MFA policy (MFA_REQUIRED_ROLES), applied to every signed-in request (see `AccessPolicy`):
 * - a holder of a listed role who has no second factor reaches nothing but enrolment: API paths
 *   answer 403 MFA_ENROLLMENT_REQUIRED, pages go to the enrolment page;
 * - the admin area (`/admin`, `/api/admin`) needs a session that used a second factor (`mfa` in
 *   its `amr`): one signed in before the factor was set up answers 403 STEP_UP_REQUIRED until the
 *   user steps up (`POST /api/auth/mfa/step-up`);
 * Off (no cost at all) while MFA_REQUIRED_ROLES is empty.
 *
 * And the step-up policy, always on but only on the paths of sensitive changes (a new password,
 * an administrator's change to a user): a user who has a second factor must have used it in this
 * session within REAUTH_WINDOW (403 REAUTH_REQUIRED otherwise; `POST /api/auth/mfa/step-up`).
 */
import type { AccessPolicy, AccessRefusal } from '../module.ts';
import { isUnder } from '../../packages/protect/src/rules.ts';
import type { Clock } from '../lib/clock.ts';
import type { MfaConfig } from './mfa.config.ts';
import type { MfaService } from './mfa.service.ts';

/** Where a page load goes while enrolment is required (the dashboard's second-factor section). */
export const MFA_ENROLMENT_PAGE = '/dashboard#mfa-heading';

/** What a user who must enrol still reaches: enrolment itself, signing out, and what needs no session. */
const EXEMPT = [
  '/api/auth/mfa',
  '/api/auth/passkeys',
  '/api/auth/session',
  '/api/auth/signout',
  '/api/auth/csrf',
  '/api/auth/refresh',
  '/api/auth/signin',
  '/api/auth/providers',
  '/api/auth/callback',
  '/auth',
  '/dashboard',
  '/assets',
  '/.well-known',
  '/api/health',
  '/api/docs',
] as const;

const ADMIN_AREA = ['/admin', '/api/admin'] as const;
/** Changes that need a recent second factor from a user who has one. */
const SENSITIVE = [
  { methods: ['POST'], prefix: '/api/auth/change-password' },
  { methods: ['DELETE'], prefix: '/api/auth/account' },
  { methods: ['POST'], prefix: '/dashboard/account/delete' },
  { methods: ['PATCH', 'POST', 'DELETE'], prefix: '/api/admin/users' },
  { methods: ['POST'], prefix: '/admin/users' },
  // Adding or removing a factor without a code in the request: a stolen session that never used
  // the user's factor must not add a factor of its own, nor remove theirs. (Removing the app and
  // renewing recovery codes check a code in the request itself.)
  { methods: ['POST'], prefix: '/api/auth/mfa/totp/setup' },
  { methods: ['POST'], prefix: '/api/auth/mfa/totp/enable' },
  { methods: ['POST'], prefix: '/api/auth/passkeys/register' },
  { methods: ['DELETE'], prefix: '/api/auth/passkeys' },
  { methods: ['POST'], prefix: '/dashboard/mfa/totp/setup' },
  { methods: ['POST'], prefix: '/dashboard/mfa/totp/enable' },
  { methods: ['POST'], prefix: '/dashboard/passkeys' },
  // A linked provider is a way in that a password reset leaves: as adding a factor.
  { methods: ['POST'], prefix: '/api/auth/link' },
] as const;

export function createMfaPolicy(deps: { mfa: MfaService; config: MfaConfig; clock: Clock }): AccessPolicy {
  const { mfa, config, clock } = deps;
  const required = new Set(config.requiredRoles);

  return {
    name: 'mfa-required-roles',
    isActive: required.size > 0,
    exemptPrefixes: EXEMPT,
    async check(auth, { path, literalPath }): Promise<AccessRefusal | null> {
      if (!auth.roles.some((role) => required.has(role))) return null;
      const usedSecondFactor = auth.amr.includes('mfa');
      // A session that used a second factor belongs to a user who has one: no query.
      if (!usedSecondFactor && (await mfa.methodsOf(auth.userId)).length === 0) {
        // The dashboard is exempt, so the enrolment section there stays reachable.
        return { code: 'MFA_ENROLLMENT_REQUIRED', redirectTo: MFA_ENROLMENT_PAGE };
      }
      if (ADMIN_AREA.some((prefix) => isUnder(path, prefix) || isUnder(literalPath, prefix)) && !usedSecondFactor) return { code: 'STEP_UP_REQUIRED' };
      return null;
    },
  };
}

export function createStepUpPolicy(deps: { mfa: MfaService; config: MfaConfig; clock: Clock }): AccessPolicy {
  const { mfa, config, clock } = deps;
  return {
    name: 'step-up',
    isActive: true,
    exemptPrefixes: [],
    onlyPrefixes: SENSITIVE.map((rule) => rule.prefix),
    async check(auth, { path, literalPath, method }): Promise<AccessRefusal | null> {
      // Either reading of the path: the stricter answer.
      const isSensitive = SENSITIVE.some((rule) => (rule.methods as readonly string[]).includes(method) && (isUnder(path, rule.prefix) || isUnder(literalPath, rule.prefix)));
      if (!isSensitive) return null;
      const isFresh = auth.amr.includes('mfa') && auth.authTime >= clock() - config.reauthWindowSeconds * 1000;
      if (isFresh) return null;
      // Only a user who has a second factor can be asked for one.
      return (await mfa.methodsOf(auth.userId)).length === 0 ? null : { code: 'REAUTH_REQUIRED' };
    },
  };
}
