/** The error codes the trusted-devices module answers with (see `defineErrorCodes` in errors.ts). */
import { defineErrorCodes } from '../errors.ts';

export const TRUSTED_DEVICES_ERRORS = defineErrorCodes('trusted-devices', {
  TRUSTED_DEVICE_NOT_FOUND: { status: 404, message: 'You have no trusted browser with that id.' },
});

type TrustedDevicesErrorCodes = typeof TRUSTED_DEVICES_ERRORS;
declare module '../errors.ts' {
  interface ErrorCodes extends TrustedDevicesErrorCodes {}
}
