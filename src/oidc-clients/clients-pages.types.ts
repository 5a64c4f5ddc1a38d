/** The client registry pages' templates (in `templates/`) and the data each one reads. */
import type { TimeText } from '../web/time-text.ts';
import type { FormView } from '../web/form-errors.ts';

/** A message at the top of a page: what a form just did, or why it did not (as the admin pages show them). */
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
  section: 'clients';
  alerts: PageAlert[];
}

/** The values of the client form, as typed (sent back with the problems when refused). */
export interface ClientFormValues {
  name: string;
  redirectUris: string;
  postLogoutRedirectUris: string;
  isPublic: boolean;
  grantTypes: string[];
  isFirstParty: boolean;
  idTokenSignedResponseAlg: string;
}

export interface ClientListItem {
  href: string;
  id: string;
  name: string;
  type: string;
  grantTypes: string[];
  /** How it came, in words (`oidc-clients.origin.*`). */
  origin: string;
  /** It registered itself (RFC 7591): marked as such. */
  isSelfRegistered: boolean;
  createdAt: TimeText;
  /** The last code or token issued to it (to the hour); null: never. */
  lastUsedAt: TimeText | null;
}

export interface ClientPages {
  'admin-clients': AdminFrame & {
    clients: ClientListItem[];
    csrfToken: string;
    /** The register form's problems after a refusal (summary, field messages, attributes); none for a fresh one. */
    form: FormView;
    /** What the register form shows: empty, or as typed when refused. */
    values: ClientFormValues;
    grantTypeChoices: Array<{ value: string; label: string; id: string }>;
    algChoices: readonly string[];
    createAction: string;
  };
  'admin-client': AdminFrame & {
    csrfToken: string;
    client: {
      id: string;
      name: string;
      type: string;
      isPublic: boolean;
      isFirstParty: boolean;
      redirectUris: string[];
      postLogoutRedirectUris: string[];
      grantTypes: string[];
      /** The APIs it may exchange a person's token for (RFC 8693); editable here for a confidential client an administrator registered. */
      exchangeResources: string[];
      /** Whether the form offers the exchange policy (a confidential client not self-registered). */
      mayExchange: boolean;
      /** The URL of its public keys (private_key_jwt): it has no secret; null: a secret, or public. */
      jwksUri: string | null;
      idTokenSignedResponseAlg: string;
      origin: string;
      isSelfRegistered: boolean;
      lastUsedAt: TimeText | null;
      createdAt: TimeText;
      updatedAt: TimeText;
      secretRotatedAt: TimeText | null;
    };
    /** The edit form's values: the client's, or what was typed when refused. */
    form: { name: string; redirectUris: string; postLogoutRedirectUris: string; exchangeResources: string };
    actions: { update: string; rotateSecret: string; delete: string };
  };
  'admin-client-secret': AdminFrame & {
    heading: string;
    intro: string;
    clientId: string;
    clientName: string;
    clientSecret: string;
    clientHref: string;
  };
}
