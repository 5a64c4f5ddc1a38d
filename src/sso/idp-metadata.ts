/**
 * Reading an identity provider's SAML metadata (given as XML, or fetched from its URL under the
 * outbound rules webhooks follow): its entity ID, its single sign-on URL (HTTP-Redirect binding) and
 * its signing certificates. Only these values are kept; the document is never trusted for anything
 * else. A document with a DTD is refused before parsing (no entity of any kind is expanded).
 */
import { loadSamlLibraries } from './saml-libraries.ts';
import { certificateBody } from './sp-keys.ts';
import type { DocumentFetch } from '../http/outbound/fetcher.ts';

const MD = 'urn:oasis:names:tc:SAML:2.0:metadata';
const DS = 'http://www.w3.org/2000/09/xmldsig#';
const REDIRECT_BINDING = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';
export const MAX_METADATA_BYTES = 256 * 1024;

export interface IdpDescription {
  entityId: string;
  ssoUrl: string;
  /** base64 DER bodies. */
  certificates: string[];
}

export type MetadataResult = { ok: true; idp: IdpDescription } | { ok: false; message: string };

/** True when the XML declares a DTD or an entity: SAML messages and metadata never need one. */
export function hasDocumentType(xml: string): boolean {
  return /<!DOCTYPE|<!ENTITY/i.test(xml);
}

export async function parseIdpMetadata(xml: string): Promise<MetadataResult> {
  if (xml.length > MAX_METADATA_BYTES) return { ok: false, message: 'The metadata is too large.' };
  if (hasDocumentType(xml)) return { ok: false, message: 'The metadata declares a DTD, which SAML metadata never needs.' };
  const { DOMParser } = await loadSamlLibraries();
  let failed = false;
  const onError = () => {
    failed = true;
  };
  const doc = new DOMParser({ errorHandler: { error: onError, fatalError: onError, warning: () => undefined } }).parseFromString(xml, 'text/xml');
  const root = doc?.documentElement;
  if (failed || root === null || root === undefined) return { ok: false, message: 'The metadata is not well-formed XML.' };
  const descriptor = root.localName === 'EntityDescriptor' && root.namespaceURI === MD ? root : null;
  if (descriptor === null) return { ok: false, message: 'The metadata must be one EntityDescriptor.' };
  const entityId = descriptor.getAttribute('entityID') ?? '';
  const idp = descriptor.getElementsByTagNameNS(MD, 'IDPSSODescriptor')[0];
  if (entityId.length === 0 || idp === undefined) return { ok: false, message: 'The metadata has no entityID or no IDPSSODescriptor.' };
  const services = Array.from(idp.getElementsByTagNameNS(MD, 'SingleSignOnService'));
  const redirect = services.find((service) => service.getAttribute('Binding') === REDIRECT_BINDING);
  const ssoUrl = redirect?.getAttribute('Location') ?? '';
  if (!isHttpUrl(ssoUrl)) return { ok: false, message: 'The metadata has no SingleSignOnService with the HTTP-Redirect binding.' };
  const certificates: string[] = [];
  for (const key of Array.from(idp.getElementsByTagNameNS(MD, 'KeyDescriptor'))) {
    const use = key.getAttribute('use');
    if (use !== null && use !== '' && use !== 'signing') continue;
    for (const cert of Array.from(key.getElementsByTagNameNS(DS, 'X509Certificate'))) {
      const body = certificateBody(cert.textContent ?? '');
      if (body !== null && !certificates.includes(body)) certificates.push(body);
    }
  }
  if (certificates.length === 0) return { ok: false, message: 'The metadata has no signing certificate.' };
  return { ok: true, idp: { entityId, ssoUrl, certificates } };
}

export function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}

/** Fetches and reads the metadata at `url` (no redirect followed, at most MAX_METADATA_BYTES). */
export async function fetchIdpMetadata(fetch: DocumentFetch, url: string): Promise<MetadataResult> {
  let response: Response;
  try {
    response = await fetch(url, { headers: { accept: 'application/samlmetadata+xml, application/xml, text/xml' } });
  } catch (error) {
    return { ok: false, message: `The metadata could not be fetched: ${error instanceof Error ? error.message : 'refused'}.` };
  }
  if (response.status !== 200) return { ok: false, message: `The metadata URL answered ${response.status}.` };
  return parseIdpMetadata(await response.text());
}
