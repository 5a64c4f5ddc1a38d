/**
 * What SSO sign-ins count for (metrics/counted-events.ts). Labels never carry an id (the label rules),
 * so counts are by protocol and outcome; per connection, the audit log has every sign-in
 * (`sso.signin_succeeded|failed`, with the connection's id).
 */
import { codeLabel, type CountedEvent, type CounterDefinition } from '../metrics/counted-events.ts';

export const SSO_COUNTERS: readonly CounterDefinition[] = [
  {
    metric: 'ssoSignins',
    name: 'sso_signins_total',
    help: 'SSO sign-ins, by protocol (saml, oidc) and outcome (`success`, or the refusal code in lower case).',
    labels: { protocol: ['saml', 'oidc', 'unknown'], outcome: 'code' },
  },
];

export const SSO_COUNTED_EVENTS: readonly CountedEvent[] = [
  {
    from: ['sso.signin_succeeded', 'sso.signin_failed'],
    count(event) {
      const protocol = event.details?.['protocol'] === 'saml' || event.details?.['protocol'] === 'oidc' ? (event.details['protocol'] as string) : 'unknown';
      const outcome = event.type === 'sso.signin_succeeded' ? 'success' : codeLabel(event.reason, 'other');
      return [{ metric: 'ssoSignins', labels: { protocol, outcome }, by: 1 }];
    },
  },
];
