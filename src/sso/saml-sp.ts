/**
 * Gatehouse as a SAML 2.0 service provider for one connection, on `@node-saml/node-saml` (signature
 * checks with `xml-crypto`, decryption with `xml-encryption`: never our own XML signature code).
 * What node-saml checks: a valid signature over the response or over the assertion (either one,
 * from the IdP's certificates; the assertion used is the one the signature covers, and a response
 * with more than one assertion is refused), the issuer, the audience (our entity ID), the validity
 * window with a small skew, and `InResponseTo` against the requests we sent (kept in storage,
 * expiring: `sso_requests`). What we check on top, from the signed assertion: the subject
 * confirmation's `Recipient` is this connection's ACS URL, the response's `Destination` too when
 * present, no DTD in the message, no comment inside the assertion (the NameID comment trick), and the
 * assertion ID is accepted once (`sso_assertions`, shared by every instance).
 */
import type { CacheProvider, Profile, SAML } from '@node-saml/node-saml';
import { loadSamlLibraries, type SamlLibraries } from './saml-libraries.ts';
import type { Clock } from '../lib/clock.ts';
import type { Db } from '../storage/database.ts';
import * as store from './sso.store.ts';
import { hasDocumentType } from './idp-metadata.ts';
import { toPem } from './sp-keys.ts';
import { samlEndpoints } from './sso-endpoints.ts';
import type { SamlSettings, SpSecrets } from './sso.model.ts';

/** How far the IdP's clock may be from ours. */
export const CLOCK_SKEW_MS = 60_000;
/** How long a sign-in may take at the IdP. */
export const REQUEST_TTL_MS = 10 * 60_000;
/** An assertion ID is remembered this long at least past its end (NotOnOrAfter). */
const REPLAY_MARGIN_MS = CLOCK_SKEW_MS + 60_000;
/** Caps how long an assertion ID is remembered (an assertion valid for days is still refused after this). */
const MAX_ASSERTION_LIFETIME_MS = 24 * 3_600_000;
const MAX_RESPONSE_BYTES = 512 * 1024;

// A connection's addresses are declared apart, for the routes that show them (sso-endpoints.ts).
export { samlEndpoints, type SamlEndpoints } from './sso-endpoints.ts';

/** What a checked assertion says of the person. */
export interface SamlAssertion {
  nameId: string;
  attributes: Record<string, string[]>;
}

export type SamlFailure = 'MALFORMED' | 'INVALID_RESPONSE' | 'WRONG_RECIPIENT' | 'REPLAYED' | 'IDP_ERROR';
/** `testId`: the response answers a setup link's test sign-in (see requestCache). */
export type SamlResult = { ok: true; assertion: SamlAssertion; testId: string | null } | { ok: false; reason: SamlFailure; detail: string; testId?: string | null };

export interface SamlConnection {
  id: string;
  idpInitiated: boolean;
  saml: SamlSettings;
  secrets: SpSecrets;
}

/**
 * node-saml's request cache, in storage: the IDs of the AuthnRequests this connection sent, expiring.
 * A request a setup link's test sign-in sent carries its test's id (`testId`); the response that
 * answers it (its InResponseTo, checked by node-saml) is then told as a test (`seen.testId`).
 */
function requestCache(db: Db, connectionId: string, clock: Clock, testId: string | null = null, seen: { testId: string | null } = { testId: null }): CacheProvider {
  return {
    async saveAsync(key, value) {
      const now = clock();
      await store.insertRequest(db, { id: key, connection_id: connectionId, data: JSON.stringify({ kind: 'saml', value, ...(testId !== null && { testId }) }), expires_at: now + REQUEST_TTL_MS });
      return { value, createdAt: now };
    },
    async getAsync(key) {
      const row = await store.findRequest(db, connectionId, key, clock());
      if (row === undefined) return null;
      // node-saml reads the request's instant back (it judges its age itself too).
      const { value, testId: test } = JSON.parse(row.data) as { value?: unknown; testId?: unknown };
      if (typeof test === 'string') seen.testId = test;
      return typeof value === 'string' ? value : null;
    },
    async removeAsync(key) {
      if (key === null) return null;
      return (await store.takeRequest(db, connectionId, key, clock())) ? key : null;
    },
  };
}

async function samlFor(db: Db, authUrl: string, connection: SamlConnection, clock: Clock, cache: CacheProvider = requestCache(db, connection.id, clock)): Promise<SAML> {
  const endpoints = samlEndpoints(authUrl, connection.id);
  const { SAML, ValidateInResponseTo } = await loadSamlLibraries();
  return new SAML({
    issuer: endpoints.entityId,
    audience: endpoints.entityId,
    callbackUrl: endpoints.acsUrl,
    entryPoint: connection.saml.idpSsoUrl,
    idpIssuer: connection.saml.idpEntityId,
    idpCert: connection.saml.idpCertificates.map(toPem),
    // A signature over the response or over the assertion, checked by node-saml; never neither.
    wantAssertionsSigned: false,
    wantAuthnResponseSigned: false,
    acceptedClockSkewMs: CLOCK_SKEW_MS,
    // IdP-initiated responses carry no InResponseTo: accepted only where the connection allows them.
    validateInResponseTo: connection.idpInitiated ? ValidateInResponseTo.ifPresent : ValidateInResponseTo.always,
    requestIdExpirationPeriodMs: REQUEST_TTL_MS,
    cacheProvider: cache,
    privateKey: connection.secrets.spSigningKey,
    signatureAlgorithm: 'sha256',
    decryptionPvk: connection.secrets.spEncryptionKey,
    identifierFormat: null,
    disableRequestedAuthnContext: true,
  });
}

export function createSamlServiceProvider(deps: { db: Db; authUrl: string; clock: Clock }) {
  const { db, authUrl, clock } = deps;
  return {
    /** The IdP's URL with a signed AuthnRequest (HTTP-Redirect binding); its ID is stored for InResponseTo. */
    async authorizeUrl(connection: SamlConnection, relayState: string, testId: string | null = null): Promise<string> {
      return (await samlFor(db, authUrl, connection, clock, requestCache(db, connection.id, clock, testId))).getAuthorizeUrlAsync(relayState, undefined, {});
    },

    /** This connection's SP metadata (signed AuthnRequests, the encryption certificate). */
    async metadata(connection: SamlConnection): Promise<string> {
      return (await samlFor(db, authUrl, connection, clock)).generateServiceProviderMetadata(connection.saml.spEncryptionCert, connection.saml.spSigningCert);
    },

    /** Checks a POSTed `SAMLResponse` for this connection: the assertion, or why it was refused. */
    async validate(connection: SamlConnection, samlResponse: string): Promise<SamlResult> {
      if (samlResponse.length === 0 || samlResponse.length > MAX_RESPONSE_BYTES) return { ok: false, reason: 'MALFORMED', detail: 'empty or too large' };
      const xml = Buffer.from(samlResponse, 'base64').toString('utf8');
      if (hasDocumentType(xml)) return { ok: false, reason: 'MALFORMED', detail: 'DTD in the message' };
      const raw = parseRaw(xml, (await loadSamlLibraries()).DOMParser);
      if (raw === null) return { ok: false, reason: 'MALFORMED', detail: 'not well-formed' };
      if (raw.hasCommentInAssertion) return { ok: false, reason: 'MALFORMED', detail: 'comment inside the assertion' };
      const endpoints = samlEndpoints(authUrl, connection.id);
      if (raw.destination !== null && raw.destination !== endpoints.acsUrl) return { ok: false, reason: 'WRONG_RECIPIENT', detail: 'Destination is not this connection' };
      let profile: Profile | null;
      const seen = { testId: null as string | null };
      try {
        ({ profile } = await (await samlFor(db, authUrl, connection, clock, requestCache(db, connection.id, clock, null, seen))).validatePostResponseAsync({ SAMLResponse: samlResponse }));
      } catch (error) {
        const detail = error instanceof Error ? error.message.slice(0, 200) : 'refused';
        return { ok: false, reason: error instanceof Error && error.name === 'SamlStatusError' ? 'IDP_ERROR' : 'INVALID_RESPONSE', detail, testId: seen.testId };
      }
      const { testId } = seen;
      if (profile === null || typeof profile.nameID !== 'string' || profile.nameID.length === 0) return { ok: false, reason: 'INVALID_RESPONSE', detail: 'no subject', testId };
      const signed = readSigned(profile);
      if (signed === null) return { ok: false, reason: 'INVALID_RESPONSE', detail: 'no assertion ID', testId };
      if (!signed.recipients.includes(endpoints.acsUrl) || signed.recipients.some((recipient) => recipient !== endpoints.acsUrl)) {
        return { ok: false, reason: 'WRONG_RECIPIENT', detail: 'Recipient is not this connection', testId };
      }
      const now = clock();
      const expiresAt = Math.min(Math.max(signed.notOnOrAfter ?? now, now) + REPLAY_MARGIN_MS, now + MAX_ASSERTION_LIFETIME_MS);
      if (!(await store.recordAssertion(db, connection.id, signed.assertionId, expiresAt, now))) return { ok: false, reason: 'REPLAYED', detail: 'assertion ID seen before', testId };
      return { ok: true, assertion: { nameId: profile.nameID, attributes: attributesOf(profile) }, testId };
    },
  };
}

export type SamlServiceProvider = ReturnType<typeof createSamlServiceProvider>;

/** What we read of the message ourselves (node-saml reads the rest): its Destination, and comments inside an assertion. */
function parseRaw(xml: string, DOMParser: SamlLibraries['DOMParser']): { destination: string | null; hasCommentInAssertion: boolean } | null {
  let failed = false;
  const onError = () => {
    failed = true;
  };
  const doc = new DOMParser({ errorHandler: { error: onError, fatalError: onError, warning: () => undefined } }).parseFromString(xml, 'text/xml');
  const root = doc?.documentElement;
  if (failed || root === null || root === undefined) return null;
  const destination = root.localName === 'Response' ? root.getAttribute('Destination') : null;
  let hasCommentInAssertion = false;
  const visit = (node: Node, inAssertion: boolean) => {
    const here = inAssertion || (node.nodeType === 1 && (node as Element).localName === 'Assertion');
    if (here && node.nodeType === 8) hasCommentInAssertion = true;
    for (let child = node.firstChild; child !== null; child = child.nextSibling) visit(child, here);
  };
  visit(root as unknown as Node, false);
  return { destination: destination === '' ? null : destination, hasCommentInAssertion };
}

type XmlJs = Record<string, unknown>;
const first = (value: unknown): XmlJs | undefined => (Array.isArray(value) ? (value[0] as XmlJs | undefined) : undefined);
const attrs = (node: XmlJs | undefined): Record<string, string> => (node?.['$'] as Record<string, string> | undefined) ?? {};

/** From the signed assertion (as node-saml parsed it): its ID, its subject confirmations' Recipients, its end. */
function readSigned(profile: Profile): { assertionId: string; recipients: string[]; notOnOrAfter: number | null } | null {
  const assertion = (profile.getAssertion?.() as XmlJs | undefined)?.['Assertion'] as XmlJs | undefined;
  const assertionId = attrs(assertion)['ID'];
  if (assertion === undefined || assertionId === undefined || assertionId.length === 0 || assertionId.length > 256) return null;
  const subject = first(assertion['Subject']);
  const confirmations = (subject?.['SubjectConfirmation'] as XmlJs[] | undefined) ?? [];
  const data = confirmations.map((confirmation) => attrs(first(confirmation['SubjectConfirmationData'])));
  const ends = [...data.map((item) => item['NotOnOrAfter']), attrs(first(assertion['Conditions']))['NotOnOrAfter']].filter((value): value is string => value !== undefined).map(Date.parse).filter(Number.isFinite);
  return { assertionId, recipients: data.map((item) => item['Recipient'] ?? ''), notOnOrAfter: ends.length === 0 ? null : Math.max(...ends) };
}

function attributesOf(profile: Profile): Record<string, string[]> {
  const result: Record<string, string[]> = {};
  const source = (profile['attributes'] ?? {}) as Record<string, unknown>;
  for (const [name, value] of Object.entries(source)) {
    const values = (Array.isArray(value) ? value : [value]).filter((item): item is string => typeof item === 'string');
    if (values.length > 0) result[name] = values;
  }
  return result;
}
