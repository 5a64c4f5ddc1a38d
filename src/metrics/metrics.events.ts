/**
 * What the domain events count for: sign-ins by method and outcome, second-factor outcomes, changes
 * to second factors, sessions started and ended. Pure functions of an event, giving label values
 * from fixed vocabularies only (the factors' registered names, lower-cased reason codes): never an
 * id, an address, an IP or anything else an event carries about a person.
 */
import type { AuditEvent, AuditEventType } from '../audit/audit.service.ts';
import { FACTOR_NAME } from '../signin/first-factor.ts';

/** The events the metrics module subscribes to. */
export const COUNTED_EVENTS = [
  'signin.success',
  'signin.failure',
  'signout',
  'session.ended',
  'user.sessions_ended',
  'refresh.reuse_detected',
  'mfa.totp_enabled',
  'mfa.totp_disabled',
  'mfa.recovery_codes_renewed',
  'mfa.reset',
  'passkey.added',
  'passkey.removed',
] as const satisfies readonly AuditEventType[];

/** The step name of the second factor in the sign-in pipeline (mfa/second-factor.ts). */
const SECOND_FACTOR_STEP = 'second-factor';

/**
 * How the first factor was proved: its registered kind (`password`, `oauth` for a provider,
 * `passkey`, and those of modules added later), or `unknown`.
 */
export type SignInMethod = string;

/**
 * A second factor's label: `otp` for the methods that prove a one-time password (RFC 8176: an
 * authenticator app, a recovery code), else the method as registered (`passkey`).
 */
const SECOND_FACTOR_LABELS: ReadonlyMap<string, string> = new Map([
  ['totp', 'otp'],
  ['recovery_code', 'otp'],
]);

/** One increment: the metric, its labels, and by how much. */
export type Count =
  | { readonly metric: 'signins'; readonly labels: { readonly method: SignInMethod; readonly outcome: string }; readonly by: 1 }
  | { readonly metric: 'secondFactor'; readonly labels: { readonly method: string; readonly outcome: string }; readonly by: 1 }
  | { readonly metric: 'mfaChanges'; readonly labels: { readonly event: string }; readonly by: 1 }
  | { readonly metric: 'sessionsCreated'; readonly labels: { readonly method: SignInMethod }; readonly by: 1 }
  | { readonly metric: 'sessionsEnded'; readonly labels: { readonly reason: string }; readonly by: number };

/** A stable UPPER_SNAKE code, lower-cased; anything else (or nothing) is `fallback`. */
export function codeLabel(reason: string | null | undefined, fallback: string): string {
  return typeof reason === 'string' && /^[A-Z][A-Z0-9_]{0,47}$/.test(reason) ? reason.toLowerCase() : fallback;
}

function detail(event: AuditEvent, key: string): unknown {
  return event.details?.[key];
}

/** A factor's name as an event records it (a plain word: signin/first-factor.ts), or `unknown`. */
function factorName(value: unknown): string {
  return typeof value === 'string' && FACTOR_NAME.test(value) ? value : 'unknown';
}

/**
 * The factor a sign-in event records as `method`: the first factor's kind (the pipeline, and each
 * first factor's own refusals, record it), or on a failed second factor that one's method.
 */
export function signInMethod(event: AuditEvent): SignInMethod {
  return factorName(detail(event, 'method'));
}

function secondFactorLabel(method: unknown): string {
  const name = factorName(method);
  return SECOND_FACTOR_LABELS.get(name) ?? name;
}

/** What `event` counts for; nothing for an event this module does not count. */
export function countsOf(event: AuditEvent): Count[] {
  switch (event.type) {
    case 'signin.success': {
      const method = signInMethod(event);
      const counts: Count[] = [
        { metric: 'signins', labels: { method, outcome: 'success' }, by: 1 },
        { metric: 'sessionsCreated', labels: { method }, by: 1 },
      ];
      // A second factor was met after the first: the sign-in resumed after its challenge, met by
      // `stepMethod` (a first factor that is two in one, a passkey alone, has none).
      if (detail(event, 'step') === SECOND_FACTOR_STEP) {
        counts.push({ metric: 'secondFactor', labels: { method: secondFactorLabel(detail(event, 'stepMethod')), outcome: 'success' }, by: 1 });
      }
      return counts;
    }
    case 'signin.failure': {
      const outcome = codeLabel(event.reason, 'other');
      if (detail(event, 'step') === SECOND_FACTOR_STEP) {
        // There, `method` is the second factor's (the first factor is not recorded on a failed second one).
        return [
          { metric: 'secondFactor', labels: { method: secondFactorLabel(detail(event, 'method')), outcome }, by: 1 },
          { metric: 'signins', labels: { method: 'unknown', outcome }, by: 1 },
        ];
      }
      return [{ metric: 'signins', labels: { method: signInMethod(event), outcome }, by: 1 }];
    }
    case 'signout':
      return [{ metric: 'sessionsEnded', labels: { reason: 'signout' }, by: 1 }];
    case 'session.ended':
      return [{ metric: 'sessionsEnded', labels: { reason: codeLabel(event.reason, 'ended') }, by: 1 }];
    case 'refresh.reuse_detected':
      return [{ metric: 'sessionsEnded', labels: { reason: 'token_reused' }, by: 1 }];
    case 'user.sessions_ended': {
      const count = detail(event, 'count');
      const by = typeof count === 'number' && Number.isSafeInteger(count) && count > 0 ? count : 1;
      return [{ metric: 'sessionsEnded', labels: { reason: codeLabel(event.reason, 'all_ended') }, by }];
    }
    case 'mfa.totp_enabled':
    case 'mfa.totp_disabled':
    case 'mfa.recovery_codes_renewed':
    case 'mfa.reset':
    case 'passkey.added':
    case 'passkey.removed':
      return [{ metric: 'mfaChanges', labels: { event: event.type }, by: 1 }];
    default:
      return [];
  }
}
