/**
 * Signing in through an organization's SSO connection as a first factor of the sign-in pipeline
 * (signin/first-factor.ts): federated (`fed`), the connection named in the audit log. A challenge
 * (a second factor) keeps the connection, and the sign-in finishes only while it still exists.
 */
import type { FirstFactor, FirstFactorKind } from '../signin/first-factor.ts';
import type { Connection } from './sso.model.ts';

export const SSO_FACTOR = 'sso';

export function ssoFactor(connection: Pick<Connection, 'id' | 'organizationId' | 'protocol'>, provesEmail: boolean): FirstFactor {
  return {
    kind: SSO_FACTOR,
    amr: ['fed'],
    audit: { details: { connectionId: connection.id, organizationId: connection.organizationId, protocol: connection.protocol } },
    provesEmail,
    binding: connection.id,
  };
}

export function ssoFactorKind(findConnection: (id: string) => Promise<Connection | null>): FirstFactorKind {
  return {
    kind: SSO_FACTOR,
    resume: async ({ binding }) => {
      const connection = binding === null ? null : await findConnection(binding);
      return connection === null ? null : ssoFactor(connection, false);
    },
  };
}
