/**
 * Signing in with a provider (GitHub, Google, OpenID Connect) as a first factor of the sign-in
 * pipeline (signin/first-factor.ts): federated (`fed`), the provider named in the audit log. A
 * challenge keeps the provider, and the sign-in it began finishes as a sign-in with that provider.
 */
import type { FirstFactor, FirstFactorKind } from '../signin/first-factor.ts';

export const PROVIDER_FACTOR = 'oauth';

/** The first factor of a sign-in with `provider`; `provesEmail` when it vouched for the account's own address. */
export function providerFactor(provider: string, provesEmail: boolean): FirstFactor {
  return { kind: PROVIDER_FACTOR, amr: ['fed'], audit: { details: { provider } }, provesEmail, binding: provider };
}

export const providerFactorKind: FirstFactorKind = {
  kind: PROVIDER_FACTOR,
  // The address was stamped verified, if the provider proved it, when the sign-in began.
  resume: async ({ binding }) => (binding === null ? null : providerFactor(binding, false)),
};
