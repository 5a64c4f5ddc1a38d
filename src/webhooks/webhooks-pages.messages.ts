/** What the webhook pages say about the codes in their URL (see web/messages.ts). */
import { messageFor } from '../web/messages.ts';

/** Codes on `?notice=`: what a form just did. An unknown one shows nothing. */
const NOTICES: Readonly<Record<string, string>> = {
  WEBHOOK_DISABLED: 'The endpoint is disabled: nothing more is sent to it, and its pending deliveries were stopped.',
  WEBHOOK_ENABLED: 'The endpoint is enabled: new events are sent to it again.',
  WEBHOOK_DELETED: 'The endpoint and its deliveries are deleted.',
  WEBHOOK_REDELIVERED: 'The webhook is queued to be sent again, with the same webhook-id.',
};

/** Codes on `?error=`, and of forms sent back: why a form did nothing. */
const ERRORS: Readonly<Record<string, string>> = {
  WEBHOOK_NOT_FOUND: 'There is no such webhook endpoint. It may have been deleted.',
  WEBHOOK_DELIVERY_NOT_FOUND: 'There is no such delivery. It may have been purged.',
  WEBHOOK_URL_INVALID: 'Nothing was saved: the URL is not valid.',
  WEBHOOK_URL_NOT_ALLOWED: 'Nothing was saved: webhooks may not be sent to that URL.',
  WEBHOOK_EVENT_UNKNOWN: 'Nothing was saved: an event type is not one Gatehouse sends.',
  WEBHOOK_ENDPOINT_DISABLED: 'The endpoint is disabled: enable it before redelivering.',
  WEBHOOK_DELIVERY_PENDING: 'That delivery is still pending: it will be tried again by itself.',
  VALIDATION_ERROR: 'Nothing was saved: some fields are not valid.',
  RATE_LIMITED: 'Too many requests. Wait a moment, then try again.',
  SERVICE_UNAVAILABLE: 'The service is temporarily unavailable. Try again shortly.',
};

export function webhooksNoticeMessage(code: string): string | null {
  return messageFor<string | null>(NOTICES, code, null);
}

export function webhooksErrorMessage(code: string): string {
  return messageFor(ERRORS, code, 'That did not work. Please try again.');
}
