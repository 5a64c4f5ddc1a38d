/** The organizations module's part of the configuration. */
import type { ConfigSection, RateLimit } from '../config.ts';

/** Who may create an organization (ALLOW_ORGANIZATION_CREATION). */
export const CREATION_POLICIES = ['verified', 'all', 'admins', 'none'] as const;
export type CreationPolicy = (typeof CREATION_POLICIES)[number];

export interface OrganizationsConfig {
  /**
   * `verified` (default): users whose e-mail address is verified; `all`: every signed-in user;
   * `admins`: holders of ADMIN only; `none`: nobody through the API or pages (the CLI and the
   * admin API still can).
   */
  readonly creation: CreationPolicy;
  /** How long an invitation link works (ORGANIZATION_INVITATION_TTL, default 7 days). */
  readonly invitationTtlSeconds: number;
  /** Organizations one user may own (MAX_ORGANIZATIONS_PER_USER): creating another is refused. */
  readonly maxOwnedPerUser: number;
  /** Invitations sent per organization (RATE_LIMIT_ORGANIZATION_INVITATIONS, default 100 a day). */
  readonly invitationsPerOrganization: RateLimit;
  /**
   * Invitations one member sends, over all their organizations
   * (RATE_LIMIT_ORGANIZATION_INVITATIONS_PER_INVITER, default 100 a day): without it, one account
   * owning many organizations multiplies the per-organization limit.
   */
  readonly invitationsPerInviter: RateLimit;
  /**
   * Invitations one address receives, from every organization and inviter together
   * (RATE_LIMIT_ORGANIZATION_INVITATIONS_PER_ADDRESS, default 10 a day), counted by its normal form.
   */
  readonly invitationsPerAddress: RateLimit;
}

declare module '../config.ts' {
  interface Config {
    readonly organizations: OrganizationsConfig;
  }
}

export const organizationsConfigSection: ConfigSection = (read) => ({
  organizations: {
    creation: read.oneOf('ALLOW_ORGANIZATION_CREATION', CREATION_POLICIES, 'verified'),
    invitationTtlSeconds: read.duration('ORGANIZATION_INVITATION_TTL', 7 * 86_400),
    maxOwnedPerUser: read.integer('MAX_ORGANIZATIONS_PER_USER', 100, { min: 1, max: 100_000 }),
    invitationsPerOrganization: read.rateLimit('RATE_LIMIT_ORGANIZATION_INVITATIONS', { points: 100, durationSeconds: 86_400 }),
    invitationsPerInviter: read.rateLimit('RATE_LIMIT_ORGANIZATION_INVITATIONS_PER_INVITER', { points: 100, durationSeconds: 86_400 }),
    invitationsPerAddress: read.rateLimit('RATE_LIMIT_ORGANIZATION_INVITATIONS_PER_ADDRESS', { points: 10, durationSeconds: 86_400 }),
  },
});
