/** The trusted-devices module's part of the configuration. */
import type { ConfigSection } from '../config.ts';

export interface TrustedDevicesConfig {
  /**
   * Whether the second-factor prompt offers "Don't ask again on this browser" (MFA_TRUSTED_DEVICES,
   * default on: the person chooses it per browser, and a browser trusted by a person who may not use
   * it is simply asked as before). Off: nothing is offered, and no cookie waives anything.
   */
  readonly enabled: boolean;
  /** How long a trusted browser skips the second factor (MFA_TRUSTED_DEVICE_DAYS, default 30). */
  readonly days: number;
  /** Whether holders of MFA_REQUIRED_ROLES may trust a browser too (MFA_TRUSTED_DEVICES_FOR_REQUIRED_ROLES, default off). */
  readonly forRequiredRoles: boolean;
}

declare module '../config.ts' {
  interface Config {
    readonly trustedDevices: TrustedDevicesConfig;
  }
}

export const trustedDevicesConfigSection: ConfigSection = (read) => ({
  trustedDevices: {
    enabled: read.boolean('MFA_TRUSTED_DEVICES', true),
    days: read.integer('MFA_TRUSTED_DEVICE_DAYS', 30, { min: 1, max: 365 }),
    forRequiredRoles: read.boolean('MFA_TRUSTED_DEVICES_FOR_REQUIRED_ROLES', false),
  },
});
