/**
 * What the client registry pages say, in the page's language (texts: `messages/*.json`): the codes
 * in their URL (`oidc-clients.notice.<CODE>`, `oidc-clients.error.<CODE>`) and each problem of a
 * refused form (`oidc-clients.problem.<REASON>`, by the stable reason of client-rules.ts, whose
 * English messages are the API's).
 */
import type { Translator } from '../i18n/translator.ts';
import { DEVICE_CODE_GRANT, GRANT_TYPES, ID_TOKEN_ALGS, MAX_EXCHANGE_RESOURCES, MAX_NAME_LENGTH, MAX_URI_LENGTH, MAX_URIS, type ClientProblem, type ClientProblemReason } from './client-rules.ts';
import type { PageAlert } from './clients-pages.types.ts';

type Texts = Pick<Translator, 't'>;

/** Codes on `?notice=`: what a form just did. An unknown one shows nothing. */
export const CLIENTS_NOTICE_CODES: ReadonlySet<string> = new Set(['CLIENT_REGISTERED', 'CLIENT_DELETED', 'CLIENT_SAVED']);

/** Codes on `?error=`, and of forms sent back: why a form did nothing. */
export const CLIENTS_ERROR_CODES: ReadonlySet<string> = new Set([
  'CLIENT_NOT_FOUND',
  'PUBLIC_CLIENT_HAS_NO_SECRET',
  'KEY_CLIENT_HAS_NO_SECRET',
  'INVALID_REDIRECT_URI',
  'INVALID_CLIENT_METADATA',
  'VALIDATION_ERROR',
  'RATE_LIMITED',
  'SERVICE_UNAVAILABLE',
]);

/** The notice for `code`, or null for an unknown code (nothing is shown). */
export function clientsNotice(code: string, i18n: Texts): PageAlert | null {
  return CLIENTS_NOTICE_CODES.has(code) ? { isError: false, code, message: i18n.t(`oidc-clients.notice.${code}`) } : null;
}

/** The error for `code`: an unknown one gets the general message, and its code is never shown back. */
export function clientsError(code: string, i18n: Texts): PageAlert {
  const known = CLIENTS_ERROR_CODES.has(code);
  return { isError: true, code: known ? code : null, message: i18n.t(`oidc-clients.error.${known ? code : 'default'}`) };
}

/** Every reason the rules give, each with its text (`oidc-clients.problem.<REASON>`): a new reason does not compile until it has one. */
export const PROBLEM_REASONS: Readonly<Record<ClientProblemReason, true>> = {
  NAME_REQUIRED: true,
  NAME_TOO_LONG: true,
  NAME_INVALID: true,
  REDIRECT_URI_REQUIRED: true,
  TOO_MANY_URIS: true,
  INVALID_URI: true,
  HTTPS_REQUIRED: true,
  FRAGMENT_NOT_ALLOWED: true,
  WILDCARD_NOT_ALLOWED: true,
  CUSTOM_SCHEME_PUBLIC_ONLY: true,
  CUSTOM_SCHEME_NOT_REVERSE_DOMAIN: true,
  LOOPBACK_HTTPS_NOT_ALLOWED: true,
  GRANT_TYPE_REQUIRED: true,
  GRANT_TYPE_REFUSED: true,
  UNKNOWN_GRANT_TYPE: true,
  CLIENT_CREDENTIALS_PUBLIC: true,
  REFRESH_TOKEN_WITHOUT_GRANT: true,
  GRANT_TYPE_NOT_FOR_OPEN_REGISTRATION: true,
  UNSUPPORTED_ALG: true,
  TOO_MANY_RESOURCES: true,
  EXCHANGE_PUBLIC: true,
  EXCHANGE_SELF_REGISTERED: true,
  KEYS_NOT_FOR_PUBLIC: true,
};

/** The values some problems name: the rules' limits and choices. */
const PROBLEM_VALUES = {
  maxName: MAX_NAME_LENGTH,
  maxUris: MAX_URIS,
  maxUriLength: MAX_URI_LENGTH,
  grantTypes: GRANT_TYPES.join(', '),
  deviceCode: DEVICE_CODE_GRANT,
  algs: ID_TOKEN_ALGS.join(', '),
  maxResources: MAX_EXCHANGE_RESOURCES,
} as const;

/** The form's fields as a problem names them (`redirectUris.1` is that list's second line). */
const FIELD_KEYS: Readonly<Record<string, { list: string; item?: string }>> = {
  name: { list: 'oidc-clients.field.name' },
  redirectUris: { list: 'oidc-clients.field.redirectUris', item: 'oidc-clients.field.redirectUri' },
  postLogoutRedirectUris: { list: 'oidc-clients.field.postLogoutRedirectUris', item: 'oidc-clients.field.postLogoutRedirectUri' },
  grantTypes: { list: 'oidc-clients.field.grantTypes' },
  idTokenSignedResponseAlg: { list: 'oidc-clients.field.idTokenSignedResponseAlg' },
  exchangeResources: { list: 'oidc-clients.field.exchangeResources' },
};

/** One line of a refused form's list: the field (a URI list's line by its URI) and what is wrong with it. */
export function problemText(problem: ClientProblem, form: { redirectUris: readonly string[]; postLogoutRedirectUris: readonly string[] }, i18n: Texts): string {
  const [field = '', index] = problem.field.split('.');
  const keys = Object.hasOwn(FIELD_KEYS, field) ? FIELD_KEYS[field]! : null;
  // The rules drop repeated URIs before they count: the index is into the list without them.
  const uri = index === undefined ? undefined : [...new Set(field === 'redirectUris' ? form.redirectUris : form.postLogoutRedirectUris)][Number(index)];
  const label = keys === null ? problem.field : keys.item !== undefined && uri !== undefined ? i18n.t(keys.item, { uri }) : i18n.t(keys.list);
  const text = Object.hasOwn(PROBLEM_REASONS, problem.reason) ? i18n.t(`oidc-clients.problem.${problem.reason}`, PROBLEM_VALUES) : problem.message;
  return i18n.t('oidc-clients.problem.line', { field: label, problem: text });
}
