/**
 * The trusted-devices switches: their defaults, their bounds, and who may trust a browser under
 * them (the feature off for everyone, or for holders of MFA_REQUIRED_ROLES unless allowed).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../modules.ts';
import { TEST_SECRET } from '../../test/helpers/app.ts';
import { createTrustedDevicesService } from './trusted-devices.service.ts';

const configWith = (env: Record<string, string>) => loadConfig({ AUTH_SECRET: TEST_SECRET, DATA_DIR: mkdtempSync(join(tmpdir(), 'gh-devices-')), ...env });
const serviceWith = (env: Record<string, string>) => {
  const config = configWith(env);
  return createTrustedDevicesService({ db: null as never, clock: Date.now, audit: null as never, codec: null as never, config: config.trustedDevices, requiredRoles: config.mfa.requiredRoles });
};
const member = { roles: ['USER'], disabledAt: null };
const auditor = { roles: ['USER', 'AUDITOR'], disabledAt: null };

describe('trusted-devices configuration', () => {
  it('is on for 30 days by default, and not for holders of MFA_REQUIRED_ROLES', () => {
    assert.deepEqual(configWith({}).trustedDevices, { enabled: true, days: 30, forRequiredRoles: false });
    const service = serviceWith({ MFA_REQUIRED_ROLES: 'AUDITOR' });
    assert.equal(service.lifetimeSeconds, 30 * 86_400);
    assert.equal(service.isAllowedFor(member), true);
    assert.equal(service.isAllowedFor(auditor), false);
    assert.equal(service.isAllowedFor({ ...member, disabledAt: 1 }), false);
  });

  it('MFA_TRUSTED_DEVICES_FOR_REQUIRED_ROLES lets them; MFA_TRUSTED_DEVICES=false lets nobody', () => {
    assert.equal(serviceWith({ MFA_REQUIRED_ROLES: 'AUDITOR', MFA_TRUSTED_DEVICES_FOR_REQUIRED_ROLES: 'true' }).isAllowedFor(auditor), true);
    const off = serviceWith({ MFA_TRUSTED_DEVICES: 'false' });
    assert.equal(off.isAllowedFor(member), false);
  });

  it('MFA_TRUSTED_DEVICE_DAYS is a whole number of days from 1 to 365', () => {
    assert.equal(configWith({ MFA_TRUSTED_DEVICE_DAYS: '7' }).trustedDevices.days, 7);
    for (const bad of ['0', '366', 'soon']) assert.throws(() => configWith({ MFA_TRUSTED_DEVICE_DAYS: bad }), /MFA_TRUSTED_DEVICE_DAYS/);
  });
});
