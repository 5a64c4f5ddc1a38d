/** The error codes the webhooks module's routes answer with (see `defineErrorCodes` in errors.ts). */
import { defineErrorCodes } from '../errors.ts';

export const WEBHOOKS_ERRORS = defineErrorCodes('webhooks', {
  WEBHOOK_NOT_FOUND: { status: 404, message: 'There is no webhook endpoint with that id.' },
  WEBHOOK_DELIVERY_NOT_FOUND: { status: 404, message: 'There is no webhook delivery with that id.' },
  WEBHOOK_URL_INVALID: { status: 422, message: 'The URL is not an absolute http(s) URL without credentials or fragment: see `errors`.' },
  WEBHOOK_URL_NOT_ALLOWED: { status: 422, message: 'Webhooks may not be sent to that URL (plain http in production, or a private, loopback or link-local address).' },
  WEBHOOK_EVENT_UNKNOWN: { status: 422, message: 'An event type is not one Gatehouse sends: see `errors`.' },
  WEBHOOK_ENDPOINT_DISABLED: { status: 409, message: 'The webhook endpoint is disabled: enable it first.' },
  WEBHOOK_DELIVERY_PENDING: { status: 409, message: 'The delivery is still pending: it will be tried again by itself.' },
});

type WebhooksErrorCodes = typeof WEBHOOKS_ERRORS;
declare module '../errors.ts' {
  interface ErrorCodes extends WebhooksErrorCodes {}
}
