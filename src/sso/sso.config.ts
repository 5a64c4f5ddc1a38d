/** The SSO module's part of the configuration. */
import type { ConfigSection, RateLimit } from '../config.ts';

export interface SsoConfig {
  /**
   * IdP metadata URLs and OIDC issuers may be on loopback, private and other non-public addresses
   * (SSO_ALLOW_PRIVATE_TARGETS, default false): an identity provider inside the company network.
   * The cloud metadata addresses stay refused even then.
   */
  readonly allowPrivateTargets: boolean;
  /** Plain http metadata URLs and issuers: only when NODE_ENV is development or test. */
  readonly allowHttp: boolean;
  /** RATE_LIMIT_SSO_SETUP (default 60/15m): requests to a setup link's pages, per IP (the link is a bearer secret: no guessing). */
  readonly setupPerIp: RateLimit;
}

declare module '../config.ts' {
  interface Config {
    readonly sso: SsoConfig;
  }
}

export const ssoConfigSection: ConfigSection = (read, { env }) => ({
  sso: {
    allowPrivateTargets: read.boolean('SSO_ALLOW_PRIVATE_TARGETS', false),
    allowHttp: env === 'development' || env === 'test',
    setupPerIp: read.rateLimit('RATE_LIMIT_SSO_SETUP', { points: 60, durationSeconds: 900 }),
  },
});
