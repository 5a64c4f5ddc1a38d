/** The webhook pages' templates (in `templates/`) and the data each one reads. */
import type { TimeText } from '../web/time-text.ts';
import type { FormView } from '../web/form-errors.ts';

/** A message at the top of a page: what a form just did, or why it did not. */
export interface PageAlert {
  isError: boolean;
  /** Shown small for support; null for a code we do not know (a link's code is never shown back). */
  code: string | null;
  message: string;
  /** What is wrong with each field, for a form sent back. */
  details?: string[];
}

/** What every admin page gives `admin-header.eta` (the admin module's, shared). */
interface AdminFrame {
  section: 'webhooks';
  alerts: PageAlert[];
}

export interface EndpointFormValues {
  url: string;
  description: string;
  eventTypes: string[];
}

export interface EndpointListItem {
  href: string;
  id: string;
  url: string;
  description: string;
  eventTypes: string[];
  state: string;
  createdAt: TimeText;
}

export interface DeliveryItem {
  id: string;
  eventType: string;
  status: string;
  attempts: number;
  lastResponseCode: number | null;
  lastError: string | null;
  lastResponseSnippet: string | null;
  nextAttemptAt: TimeText | null;
  createdAt: TimeText;
  isRedelivery: boolean;
  /** The redeliver form's action; null while pending (or the endpoint is disabled). */
  redeliverAction: string | null;
}

export interface WebhookPages {
  'admin-webhooks': AdminFrame & {
    endpoints: EndpointListItem[];
    csrfToken: string;
    /** The register form's problems after a refusal (summary, field messages, attributes); none for a fresh one. */
    form: FormView;
    /** What the register form shows: empty, or as typed when refused. */
    values: EndpointFormValues;
    /** Each event type an endpoint may ask for; `descriptionKey`: the message describing it, from its declaring module (none: shown by name). */
    eventTypeChoices: Array<{ value: string; id: string; descriptionKey: string | null }>;
    /** How long a delivery is retried, in words ("3 days"). */
    retryWindow: string;
    createAction: string;
  };
  'admin-webhook': AdminFrame & {
    csrfToken: string;
    endpoint: {
      id: string;
      url: string;
      description: string;
      eventTypes: string[];
      isEnabled: boolean;
      state: string;
      failingSince: TimeText | null;
      createdAt: TimeText;
      updatedAt: TimeText;
      secretRotatedAt: TimeText | null;
      previousSecretExpiresAt: TimeText | null;
    };
    deliveries: DeliveryItem[];
    /** How long a rotated-out secret keeps signing too, in words ("24 hours"). */
    secretGrace: string;
    actions: { disable: string; enable: string; rotateSecret: string; delete: string };
  };
  'admin-webhook-secret': AdminFrame & {
    heading: string;
    intro: string;
    endpointId: string;
    url: string;
    secret: string;
    endpointHref: string;
  };
}
