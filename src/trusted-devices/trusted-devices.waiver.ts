/**
 * The module's second-factor waiver (signin/second-factor-waiver.ts): a browser carrying a live
 * trusted-device cookie of the user signing in is not asked for the second factor; a second factor
 * met with "Don't ask again on this browser" (the prompt's checkbox, or `rememberDevice` in the
 * JSON verify API) sets that cookie. The cookie is HttpOnly, SameSite=Lax, Path=/, and on https
 * Secure with the `__Host-` prefix, like every Gatehouse cookie (http/cookies.ts); it lives as long
 * as the device, and signing out leaves it (forgetting the device is what ends it).
 */
import { join } from 'node:path';
import type { Config } from '../config.ts';
import { baseCookieOptions } from '../http/cookies.ts';
import type { UserService } from '../users/user.service.ts';
import type { SecondFactorWaiver } from '../signin/second-factor-waiver.ts';
import { createPageRenderer, templatesIn } from '../web/render.ts';
import type { TrustedDevicesService } from './trusted-devices.service.ts';

export const TRUSTED_DEVICE_WAIVER = 'trusted-device';

/** The cookie's name, after the others' (`gatehouse.session`, `gatehouse.challenge`). */
export function trustedDeviceCookieName(config: Pick<Config, 'isSecureOrigin'>): string {
  return `${config.isSecureOrigin ? '__Host-' : ''}gatehouse.trusted-device`;
}

interface WaiverPages {
  'trusted-devices-remember-field': { id: string; days: number };
}

export function createTrustedDeviceWaiver(deps: { trustedDevices: TrustedDevicesService; users: UserService; config: Config }): SecondFactorWaiver {
  const { trustedDevices, users, config } = deps;
  const cookieName = trustedDeviceCookieName(config);
  const pages = createPageRenderer<WaiverPages>(templatesIn(join(import.meta.dirname, 'templates')));
  return {
    name: TRUSTED_DEVICE_WAIVER,
    async waive({ user, source }) {
      const device = await trustedDevices.recognise(user, source.cookie?.(cookieName));
      return device === null ? null : { by: TRUSTED_DEVICE_WAIVER, details: { trustedDeviceId: device.id } };
    },
    async promptField({ page, userId, formId }) {
      const user = await users.findUserById(userId);
      if (user === null || !trustedDevices.isAllowedFor(user)) return null;
      return pages.html(page, 'trusted-devices-remember-field', { title: '', id: `${formId}-remember-device`, days: config.trustedDevices.days });
    },
    async remember(request, reply, user, source) {
      // Not offered to this user: asked for all the same (a JSON client), nothing is trusted.
      if (!trustedDevices.isAllowedFor(user)) return;
      // The sign-in is done: a browser that could not be trusted (storage failing) is asked next time, nothing more.
      try {
        const { value } = await trustedDevices.trust(user, source, request.cookies[cookieName]);
        void reply.setCookie(cookieName, value, { ...baseCookieOptions(config), maxAge: trustedDevices.lifetimeSeconds });
      } catch (error) {
        request.log.warn({ err: error }, 'the browser could not be trusted; its next sign-in asks for the second factor');
      }
    },
  };
}
